"""The pairgate command line: it parses and dispatches, nothing else.

Every command is registered here with its exact flags. Each handler lives in a command module
(``pairgate/commands/``), takes explicit keyword arguments and returns an exit code. Expected
failures are ``PairgateError``s; ``ownership.report`` is the one place that turns them into a
message and an exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pairgate.standalone.errors import Context, Exit, UsageError, report

# Values a deployment configures are spelled as the key they come from, because --help reads no
# configuration (the specification: it works in a fresh install).
AGENT_ENV = "<env_prefix>_AGENT_ID"
ISSUE_HELP = "the tracker issue's number (its iid, as in #12)"
TRACKER = "<tracker_project>"
CLI = "<cli_command>"

# argparse's own dests that are not handler arguments.
_META = ("command", "reads_config", "writes")


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors raised as UsageError (exit 2) instead of printed and exited,
    so the one translation point sees them too."""

    def error(self, message: str) -> Any:
        raise UsageError(f"{self.format_usage().rstrip()}\n{self.prog}: error: {message}")


def _issue(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an issue number (a positive integer)")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pairgate",
        description=(
            "Run two coding agents as a pair on one GitLab issue: an ownership ledger kept in "
            "the issue's notes, and a merge gate that refuses a merge unless an independent "
            "approval names the merge request's current head. Configuration: the JSON file "
            "PAIRGATE_CONFIG names, else pairgate-config.json beside ownership.py."
        ),
        epilog=(
            "Exit codes: 0 done or pass; 1 refused by the protocol (or drift, for --check); "
            "2 usage, configuration or environment error. --help and --version read no "
            "configuration; every other command except sandbox and demo reads it first."
        ),
    )
    parser.add_argument(
        "--version",
        action="store_true",
        help="print the installed distribution's version and exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=_Parser)

    as_agent = _Parser(add_help=False)
    as_agent.add_argument(
        "--as",
        dest="as_agent",
        metavar="AGENT",
        help=f"act as this agent identity (default: {AGENT_ENV}; unset is an error)",
    )
    verbose = _Parser(add_help=False)
    verbose.add_argument(
        "--verbose", action="store_true", help="say which GitLab URL and transport were used"
    )
    json_out = _Parser(add_help=False)
    json_out.add_argument("--json", action="store_true", help="print JSON with stable keys")

    def command(
        name: str,
        help_text: str,
        *,
        parents: Sequence[_Parser] = (),
        reads_config: bool = True,
        writes: bool = False,
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, parents=list(parents))
        p.set_defaults(reads_config=reads_config, writes=writes)
        return p

    def reason(p: argparse.ArgumentParser, *, required: bool = False) -> None:
        group = p.add_mutually_exclusive_group(required=required)
        group.add_argument("--reason", metavar="TEXT", help="why, in the note")
        group.add_argument(
            "--reason-file",
            metavar="PATH",
            type=Path,
            help="read the reason from a file (use this for text that quotes commands)",
        )

    verb = (as_agent, verbose)

    p = command("claim", "take an unowned issue", parents=verb, writes=True)
    p.add_argument("issue", type=_issue, metavar="ISSUE", help=ISSUE_HELP)
    p.add_argument(
        "--role", required=True, choices=["lead", "review"], help="the role you take it in"
    )

    p = command(
        "handoff",
        "OFFER the issue to another agent, bound to the merge request's head commit",
        parents=verb,
        writes=True,
    )
    p.add_argument("issue", type=_issue, metavar="ISSUE", help=ISSUE_HELP)
    p.add_argument("--to", required=True, metavar="AGENT", help="the identity the receiver runs as")
    p.add_argument(
        "--role", required=True, choices=["lead", "review"], help="the role the receiver takes"
    )
    p.add_argument("--sha", required=True, help="the merge request's full head SHA")
    reason(p)
    p.add_argument(
        "--mr",
        type=int,
        metavar="IID",
        help="the merge request's iid (default: the one open MR in the group citing the issue)",
    )
    p.add_argument(
        "--mr-project", metavar="PROJECT", help=f"the merge request's project (default: {TRACKER})"
    )
    p.add_argument("--supersede", type=int, metavar="NOTE_ID", help="replace this pending offer")
    p.add_argument(
        "--evidence",
        type=Path,
        metavar="FILE",
        help=f"the mutation evidence ({CLI} evidence run --out FILE) at --sha, every mutant "
        "killed: the note shows its table and patches (without it, the offer is marked as "
        "having no mutation evidence)",
    )
    p.add_argument(
        "--new-identity",
        action="store_true",
        help="allow a --to name outside the identity grammar and the issue's trail",
    )

    for name, text in (
        ("accept", "take an offer made to you"),
        ("decline", "return an offer to its sender"),
        ("release", "drop the issue, with no successor"),
    ):
        p = command(name, text, parents=verb, writes=True)
        p.add_argument("issue", type=_issue, metavar="ISSUE", help=ISSUE_HELP)

    p = command(
        "approve",
        "approve the merge request at its exact head, and offer the issue back to the lead",
        parents=verb,
        writes=True,
    )
    p.add_argument("issue", type=_issue, metavar="ISSUE", help=ISSUE_HELP)
    p.add_argument("--mr", required=True, type=int, metavar="IID", help="the merge request's iid")
    p.add_argument("--sha", required=True, help="the full head SHA you reviewed")
    p.add_argument("--to", required=True, metavar="LEAD", help="the lead the issue goes back to")
    p.add_argument(
        "--mr-project", metavar="PROJECT", help=f"the merge request's project (default: {TRACKER})"
    )
    reason(p)
    p.add_argument(
        "--not-covering",
        action="append",
        default=[],
        metavar="ITEM",
        help="something this approval does not cover (repeatable)",
    )
    p.add_argument(
        "--server-approval-only",
        action="store_true",
        help="repeat only the GitLab-side approval of a ledger approval already at this SHA",
    )
    p.add_argument("--supersede", type=int, metavar="NOTE_ID", help="replace this pending offer")
    p.add_argument(
        "--evidence",
        type=Path,
        metavar="FILE",
        help=f"your re-run ({CLI} evidence rerun --out FILE) of the offer's mutant and one of "
        "your own, at --sha: the approval records it (without it, it records no re-run)",
    )

    p = command(
        "withdraw",
        "take back your approval: no door counts it, its offer back is voided, and the review "
        "bot's approval is removed on GitLab",
        parents=verb,
        writes=True,
    )
    p.add_argument("issue", type=_issue)
    p.add_argument(
        "--approval", required=True, type=int, metavar="NOTE_ID", help="the approval's note"
    )
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--reason", metavar="TEXT", help="what is wrong with it, in the note")
    group.add_argument(
        "--reason-file", metavar="PATH", type=Path, help="read the reason from a file"
    )

    p = command(
        "merge-check",
        "is the merge request's head the commit an independent approval named?",
        parents=(verbose, json_out),
    )
    p.add_argument("--mr", required=True, type=int, metavar="IID", help="the merge request's iid")
    p.add_argument(
        "--mr-project",
        required=True,
        metavar="PROJECT",
        help="required: an MR iid is not unique across projects",
    )

    p = command(
        "audit",
        "every merge in the window that went around the merge gate, judged as merge-check "
        "would have judged it at the moment of the merge",
        parents=(verbose, json_out),
    )
    # The audit's flags are the flat door's too (python3 ownership.py audit): one definition.
    from pairgate.standalone.audit_door import add_audit_arguments

    add_audit_arguments(p)

    p = command(
        "doctor",
        "every way around the merge gate the gated projects' settings leave open, with the fix",
        parents=(verbose, json_out),
    )
    p.add_argument(
        "--project",
        dest="projects",
        action="append",
        default=[],
        metavar="PROJECT",
        help="only this gated project (repeatable; default: every project in the group's listing)",
    )

    p = command(
        "status",
        "holder, role, pending offer, approvals and MRs",
        parents=(verbose, json_out),
    )
    p.add_argument("issue", type=_issue, metavar="ISSUE", help=ISSUE_HELP)

    p = command(
        "board",
        "every labelled issue in one pass",
        parents=(verbose, json_out),
    )
    p.add_argument("--closed", action="store_true", help="include closed issues")

    p = command("waiting", "who owes the next move", parents=(verbose, json_out))
    p.add_argument("--agent", metavar="AGENT", help="only this agent's moves (default: everyone's)")

    p = command(
        "close",
        "close the issue, if nothing is outstanding",
        parents=verb,
        writes=True,
    )
    p.add_argument("issue", type=_issue, metavar="ISSUE", help=ISSUE_HELP)

    p = command(
        "sync",
        "close what an independent approval merged (a dry run unless --apply)",
        parents=verb,
        writes=True,
    )
    p.add_argument(
        "issues",
        nargs="*",
        type=_issue,
        metavar="ISSUE",
        help="only these (default: every labelled issue)",
    )
    p.add_argument("--apply", action="store_true", help="close them; without it, only say which")

    p = command(
        "freeze",
        "declare a window in which other agents' writes inside the scope are refused",
        parents=verb,
        writes=True,
    )
    p.add_argument("issue", type=_issue, metavar="ISSUE", help=ISSUE_HELP)
    p.add_argument(
        "--scope", required=True, metavar="board|issue|issue:<iid>|mr:<iid>", help="what to freeze"
    )
    reason(p, required=True)
    p.add_argument(
        "--minutes", type=int, default=30, metavar="N", help="how long it lasts (default: 30)"
    )

    command("thaw", "lift the window you declared", parents=verb, writes=True)
    command(
        "identity",
        "does anyone else answer to my name?",
        parents=(as_agent, verbose, json_out),
    )

    p = command(
        "impose",
        "render a standing constraint's clause (imposed by --as, or the agent identity)",
        parents=(as_agent,),
    )
    clause = p.add_mutually_exclusive_group(required=True)
    clause.add_argument("--text", metavar="TEXT", help="the constraint's clause")
    clause.add_argument(
        "--text-file",
        metavar="PATH",
        type=Path,
        help="read the clause from a file (use this for text that quotes commands)",
    )

    p = command("lift-check", "may a relayed lift of a constraint stand?", parents=(json_out,))
    p.add_argument(
        "--lift-from", required=True, metavar="AGENT", help="who the relayed lift came from"
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--constraint-file", metavar="F", type=Path, help="the constraint's clause, from a file"
    )
    group.add_argument("--constraint-text", metavar="T", help="the constraint's clause")

    p = command(
        "deploy-agents",
        "render the agent definitions into a directory as <agent_identity_prefix>-<role>.md",
    )
    p.add_argument(
        "--target",
        required=True,
        type=Path,
        metavar="DIR",
        help="the deployment's agents directory",
    )
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 on drift")

    p = command(
        "deploy-hooks",
        "copy the merge hook and the files it runs into a hooks directory",
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--target", type=Path, metavar="DIR", help="the hooks directory to install into"
    )
    mode.add_argument(
        "--list", action="store_true", help="print <deployed name><TAB><source path> per file"
    )
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 on drift")

    p = command(
        "deploy-pipeline",
        "render the tracker-held pipeline: the gate jobs, and the project's own CI file as a "
        "child pipeline",
    )
    p.add_argument(
        "--target", required=True, type=Path, metavar="FILE", help="the pipeline file to write"
    )
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 on drift")
    p.add_argument(
        "--image",
        required=True,
        help="the gate jobs' image (python3 >= 3.11 with requests, jsonschema, pyyaml)",
    )
    p.add_argument(
        "--runner-tag",
        required=True,
        action="append",
        metavar="TAG",
        help="a runner tag of the gate jobs (repeatable; at least one)",
    )
    p.add_argument(
        "--read-token-variable",
        required=True,
        metavar="NAME",
        help="the masked CI/CD variable holding a token that reads the tracker's repository "
        "and issues",
    )
    p.add_argument(
        "--gate-dir",
        required=True,
        metavar="DIR",
        help="the tracker repository's directory holding ownership.py, pairgate-config.json, "
        "automation_mr_families.py and the three validators",
    )
    p.add_argument(
        "--gitlab-url",
        metavar="URL",
        help="the instance the gate jobs must run on (default: <env_prefix>_GITLAB_URL)",
    )

    from pairgate.commands.evidence import add_parser as add_evidence_parser
    from pairgate.commands.watch import add_parser as add_watch_parsers

    add_watch_parsers(sub)
    add_evidence_parser(sub)

    p = command("graph", "draw the issue's round (Mermaid by default)", parents=(json_out,))
    p.add_argument("issue", type=_issue, metavar="ISSUE", help=ISSUE_HELP)
    p.add_argument(
        "--format",
        choices=["mermaid", "dot"],
        default="mermaid",
        help="Mermaid (GitLab renders it; the default) or Graphviz dot",
    )

    p = command(
        "sandbox",
        "serve a GitLab stand-in on loopback until SIGINT or SIGTERM",
        reads_config=False,
    )
    p.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1 (loopback)")
    p.add_argument("--port", type=int, default=0, help="default: 0, a free port")
    p.add_argument("--state", type=Path, metavar="FILE", help="load and save the world here")
    p.add_argument(
        "--config-out",
        type=Path,
        metavar="FILE",
        help="write a pairgate configuration for it, and beside it the files it names (agent "
        "texts, liveness oracle, review-bot token, automation roster, _hooklib.sh)",
    )
    p.add_argument(
        "--with-example",
        action="store_true",
        help="create a claimable tracker issue and an acme/app MR citing it (ids in the ready "
        "line)",
    )

    p = command(
        "init",
        "ask GitLab what a configuration needs and write a deployment's files into a directory",
        parents=(json_out,),
        reads_config=False,
    )
    p.add_argument(
        "--target", required=True, type=Path, metavar="DIR", help="where to write (made if absent)"
    )
    p.add_argument(
        "--tracker-project",
        required=True,
        metavar="GROUP/PROJECT",
        help="the project whose issues hold the ledger; its group is the gated group",
    )
    p.add_argument(
        "--review-bot-user",
        required=True,
        metavar="USERNAME",
        help="the second account, which approves on GitLab",
    )
    p.add_argument(
        "--renovate-user",
        required=True,
        metavar="USERNAME",
        help="the account Renovate opens merge requests as",
    )
    p.add_argument(
        "--agents-user",
        metavar="USERNAME",
        help="the account the agents post as (default: the token's own account)",
    )
    p.add_argument(
        "--env-prefix",
        default="PAIRGATE",
        metavar="PREFIX",
        help="the prefix of every variable pairgate reads; also how init reads GitLab now "
        "(<PREFIX>_TASK_API_TOKEN, <PREFIX>_GITLAB_URL; default: PAIRGATE)",
    )
    p.add_argument(
        "--identity-prefix",
        metavar="PREFIX",
        help="agent identities are <PREFIX>-lead and so on (default: from the group's name)",
    )
    p.add_argument("--cli-command", default="pairgate", metavar="NAME", help="default: pairgate")
    p.add_argument(
        "--generic-issue",
        type=_issue,
        metavar="ISSUE",
        help="the tracker issue unattended automation cites (default: none)",
    )
    p.add_argument(
        "--handoff-doc",
        default="docs/agent-handoff.md",
        metavar="PATH_OR_URL",
        help="where the protocol doc is (default: docs/agent-handoff.md)",
    )
    p.add_argument(
        "--hooks-dir",
        default=".claude/hooks",
        metavar="DIR",
        help="where the merge hook will be deployed (default: .claude/hooks)",
    )

    command(
        "demo",
        "play one whole round against an embedded sandbox",
        reads_config=False,
    )
    return parser


def command_names() -> list[str]:
    """Every registered command, in the order --help lists them."""
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


Handler = Callable[..., int]

# The copy main measures when it is given no origin: the checkout this file is in, unless
# <env_prefix>_CHECKOUT names the deployment's checkout (an installed copy is in none).
_OWN_FILE = Path(__file__).resolve()

# The commands whose handler is given the GitLab client main builds (``client=``).
_READS_GITLAB = frozenset(
    {"claim", "handoff", "accept", "decline", "release", "approve", "withdraw", "merge-check"}
    | {"status", "board", "waiting", "close", "sync", "freeze", "thaw", "identity", "graph"}
    | {"watch", "audit", "doctor"}
    | {"evidence"}  # evidence rerun reads the offer from the issue's ledger
)
# The one handler that uses --verbose beyond the client line main prints.
_KEEPS_VERBOSE = frozenset({"merge-check"})


def handler_for(command: str) -> Handler:
    """The handler of ``command``, imported on demand: a run pays for the one module it uses,
    and --help for none."""
    if command in ("claim", "handoff", "accept", "decline", "release", "close"):
        from pairgate.commands import ledger

        verbs: dict[str, Handler] = {
            "claim": ledger.claim,
            "handoff": ledger.handoff,
            "accept": ledger.accept,
            "decline": ledger.decline,
            "release": ledger.release,
            "close": ledger.close,
        }
        return verbs[command]
    if command == "approve":
        from pairgate.commands.approve import approve

        return approve
    if command == "withdraw":
        from pairgate.commands.withdraw import withdraw

        return withdraw
    if command == "merge-check":
        from pairgate.commands.gate import merge_check

        return merge_check
    if command == "audit":
        from pairgate.commands.audit import audit

        return audit
    if command == "doctor":
        from pairgate.commands.doctor import doctor

        return doctor
    if command == "status":
        from pairgate.commands.status import status

        return status
    if command == "board":
        from pairgate.commands.board import board

        return board
    if command == "waiting":
        from pairgate.commands.waiting import waiting

        return waiting
    if command == "sync":
        from pairgate.commands.sync import sync

        return sync
    if command in ("freeze", "thaw"):
        from pairgate.commands.freeze import freeze, thaw

        return freeze if command == "freeze" else thaw
    if command == "identity":
        from pairgate.commands.identity import identity

        return identity
    if command in ("impose", "lift-check"):
        from pairgate.commands.constraints import impose, lift_check

        return impose if command == "impose" else lift_check
    if command == "graph":
        from pairgate.commands.graph import graph

        return graph
    if command == "deploy-agents":
        from pairgate.commands.deploy_agents import deploy_agents

        return deploy_agents
    if command == "deploy-hooks":
        from pairgate.commands.deploy_hooks import deploy_hooks

        return deploy_hooks
    if command == "deploy-pipeline":
        from pairgate.commands.deploy_pipeline import deploy_pipeline

        return deploy_pipeline
    if command == "sandbox":
        from pairgate.sandbox.cli import serve

        return serve
    if command == "watch":
        from pairgate.commands.watcher import watch

        return watch
    if command == "inbox":
        from pairgate.commands.inbox import inbox

        return inbox
    if command == "evidence":
        from pairgate.commands.evidence_run import evidence

        return evidence
    if command == "init":
        from pairgate.commands.init import init

        return init
    if command == "demo":
        from pairgate.commands.demo import demo

        return demo
    raise UsageError(f"pairgate: no handler for {command!r}")  # a registration bug


def _writes(args: argparse.Namespace) -> bool:
    """Does this run write? The deploy commands write unless they only compare or list."""
    if args.command in ("deploy-agents", "deploy-hooks", "deploy-pipeline"):
        return not args.check and not getattr(args, "list", False)
    if args.command == "audit":  # it writes only the issues it files
        return bool(args.file_issues)
    return bool(args.writes)


def run(argv: Sequence[str], ctx: Context, *, measured: Path | None) -> int:
    """Parse ``argv`` and run its command; the one dispatcher (the demo calls it too).
    ``measured`` is the checkout the currency check measures, None for no check."""
    try:
        try:
            # --help prints and exits inside argparse; keep it on the injected stream.
            with contextlib.redirect_stdout(ctx.stdout):
                args = build_parser().parse_args(list(argv))
        except SystemExit as done:
            return int(done.code or 0)
        if args.version:
            from pairgate.version import installed_version

            print(f"pairgate {installed_version()}", file=ctx.stdout)
            return Exit.OK
        if args.command is None:
            build_parser().print_help(ctx.stdout)
            return Exit.ERROR
        kwargs = {k: v for k, v in vars(args).items() if k not in (*_META, "version")}
        if args.reads_config:
            from pairgate.standalone.config import load_config

            kwargs["config"] = config = load_config(ctx.env)
            if measured is not None:
                named = ctx.env.get(config.env_name("CHECKOUT"), "").strip()
                if measured == _OWN_FILE and named:  # an explicit origin= always wins
                    measured = _checked_origin(named)
                from pairgate.currency import check_currency

                check_currency(
                    measured,
                    config,
                    command=args.command,
                    writes=_writes(args),
                    env=ctx.env,
                    stderr=ctx.stderr,
                    now=ctx.now(),
                    verbose=bool(kwargs.get("verbose")),
                )
            if args.command in _READS_GITLAB:
                from pairgate.standalone.gitlab import gitlab_from_env

                kwargs["client"] = client = gitlab_from_env(config, ctx.env)
                if kwargs.get("verbose"):
                    print(client.describe(), file=ctx.stderr)
        if args.command not in _KEEPS_VERBOSE:
            kwargs.pop("verbose", None)
        if args.command == "demo":  # it plays a round through this same dispatcher
            kwargs["dispatch"] = lambda words, inner: run(words, inner, measured=None)
        return int(handler_for(args.command)(ctx=ctx, **kwargs))
    except BrokenPipeError:
        # The reader of our output went away (``pairgate board | head``): its choice, not
        # an error, so no message and no traceback.
        return Exit.OK
    except Exception as exc:
        return report(exc, ctx.stderr)


def main(
    argv: Sequence[str] | None = None,
    *,
    origin: str | Path | None = None,
    ctx: Context | None = None,
) -> int:
    """Run one command. ``origin`` names the checkout the currency check measures (see the
    README: "Which checkout the currency check measures"); without it, the checkout this file
    is in. The check runs before every command that reads the configuration."""
    ctx = ctx or Context()
    measured = _OWN_FILE if origin is None else _checked_origin(origin)
    return run(sys.argv[1:] if argv is None else argv, ctx, measured=measured)


def _checked_origin(origin: object) -> Path:
    """A given origin is always the one measured; one that cannot name a checkout raises."""
    if not isinstance(origin, (str, Path)):
        raise TypeError(f"origin must be a str or a Path, not {type(origin).__name__}")
    if not str(origin).strip():
        raise ValueError("origin must not be blank")
    path = Path(origin)
    if not path.is_absolute():
        raise ValueError(f"origin must be an absolute path, not {str(origin)!r}")
    return path.resolve()


def console_main() -> None:
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # What is left in the buffer has nowhere to go; point stdout at /dev/null so the
        # interpreter's own last flush does not complain about it either.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code)


if __name__ == "__main__":
    console_main()
