"""The pairgate command line: it parses and dispatches, nothing else.

Every command is registered here with its exact flags. Each handler lives in a command module
(``pairgate/commands/``), takes explicit keyword arguments and returns an exit code. Expected
failures are ``PairgateError``s; ``ownership.report`` is the one place that turns them into a
message and an exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pairgate import ownership
from pairgate.currency import check_currency
from pairgate.ownership import Context, Exit, UsageError

# Values a deployment configures are spelled as the key they come from, because --help reads no
# configuration (the specification: it works in a fresh install).
AGENT_ENV = "<env_prefix>_AGENT_ID"
TRACKER = "<tracker_project>"
CLI = "<cli_command>"

# argparse's own dests that are not handler arguments.
_META = ("command", "handler", "reads_config", "writes")


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
        handler: str,
        help_text: str,
        *,
        parents: Sequence[_Parser] = (),
        reads_config: bool = True,
        writes: bool = False,
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, parents=list(parents))
        p.set_defaults(handler=handler, reads_config=reads_config, writes=writes)
        return p

    def reason(p: argparse.ArgumentParser) -> None:
        group = p.add_mutually_exclusive_group()
        group.add_argument("--reason", metavar="TEXT", help="why, in the note")
        group.add_argument(
            "--reason-file",
            metavar="PATH",
            type=Path,
            help="read the reason from a file (use this for text that quotes commands)",
        )

    verb = (as_agent, verbose)

    p = command(
        "claim", "commands.ledger:claim", "take an unowned issue", parents=verb, writes=True
    )
    p.add_argument("issue", type=_issue)
    p.add_argument("--role", required=True, choices=["lead", "review"])

    p = command(
        "handoff",
        "commands.ledger:handoff",
        "OFFER the issue to another agent, bound to the merge request's head commit",
        parents=verb,
        writes=True,
    )
    p.add_argument("issue", type=_issue)
    p.add_argument("--to", required=True, metavar="AGENT", help="the identity the receiver runs as")
    p.add_argument("--role", required=True, choices=["lead", "review"])
    p.add_argument("--sha", required=True, help="the merge request's full head SHA")
    reason(p)
    p.add_argument("--mr", type=int, metavar="IID", help="default: the one open MR citing it")
    p.add_argument("--mr-project", metavar="PROJECT", help=f"default: {TRACKER}")
    p.add_argument("--supersede", type=int, metavar="NOTE_ID", help="replace this pending offer")
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
        p = command(name, f"commands.ledger:{name}", text, parents=verb, writes=True)
        p.add_argument("issue", type=_issue)

    p = command(
        "approve",
        "commands.ledger:approve",
        "approve the merge request at its exact head, and offer the issue back to the lead",
        parents=verb,
        writes=True,
    )
    p.add_argument("issue", type=_issue)
    p.add_argument("--mr", required=True, type=int, metavar="IID")
    p.add_argument("--sha", required=True, help="the full head SHA you reviewed")
    p.add_argument("--to", required=True, metavar="LEAD", help="the lead the issue goes back to")
    p.add_argument("--mr-project", metavar="PROJECT", help=f"default: {TRACKER}")
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

    p = command(
        "merge-check",
        "commands.gate:merge_check",
        "is the merge request's head the commit an independent approval named?",
        parents=(verbose, json_out),
    )
    p.add_argument("--mr", required=True, type=int, metavar="IID")
    p.add_argument(
        "--mr-project",
        required=True,
        metavar="PROJECT",
        help="required: an MR iid is not unique across projects",
    )

    p = command(
        "status",
        "commands.ledger:status",
        "holder, role, pending offer, approvals and MRs",
        parents=(verbose, json_out),
    )
    p.add_argument("issue", type=_issue)

    p = command(
        "board",
        "commands.board:board",
        "every labelled issue in one pass",
        parents=(verbose, json_out),
    )
    p.add_argument("--closed", action="store_true", help="include closed issues")

    p = command(
        "waiting", "commands.waiting:waiting", "who owes the next move", parents=(verbose, json_out)
    )
    p.add_argument("--agent", metavar="AGENT", help="only this agent's moves")

    p = command(
        "close",
        "commands.ledger:close",
        "close the issue, if nothing is outstanding",
        parents=verb,
        writes=True,
    )
    p.add_argument("issue", type=_issue)

    p = command(
        "sync",
        "commands.sync:sync",
        "close what an independent approval merged (a dry run unless --apply)",
        parents=verb,
        writes=True,
    )
    p.add_argument("issues", nargs="*", type=_issue, metavar="ISSUE")
    p.add_argument("--apply", action="store_true", help="close them; without it, only say which")

    p = command(
        "freeze",
        "commands.freeze:freeze",
        "declare a window in which other agents' writes inside the scope are refused",
        parents=verb,
        writes=True,
    )
    p.add_argument("issue", type=_issue)
    p.add_argument(
        "--scope", required=True, metavar="board|issue|issue:<iid>|mr:<iid>", help="what to freeze"
    )
    p.add_argument("--reason", required=True, metavar="TEXT")
    p.add_argument("--minutes", type=int, default=30, metavar="N", help="default: 30")

    command(
        "thaw", "commands.freeze:thaw", "lift the window you declared", parents=verb, writes=True
    )
    command(
        "identity",
        "commands.identity:identity",
        "does anyone else answer to my name?",
        parents=(as_agent, verbose, json_out),
    )

    p = command(
        "impose",
        "commands.constraints:impose",
        "render a standing constraint's clause (imposed by --as, or the agent identity)",
        parents=(as_agent,),
    )
    p.add_argument("--text", required=True, metavar="TEXT")

    p = command(
        "lift-check",
        "commands.constraints:lift_check",
        "may a relayed lift of a constraint stand?",
        parents=(json_out,),
    )
    p.add_argument("--lift-from", required=True, metavar="AGENT")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--constraint-file", metavar="F", type=Path)
    group.add_argument("--constraint-text", metavar="T")

    p = command(
        "deploy-agents",
        "deploy_agents:deploy_agents",
        "render the agent definitions into a directory as <agent_identity_prefix>-<role>.md",
    )
    p.add_argument("--target", required=True, type=Path, metavar="DIR")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 on drift")

    p = command(
        "deploy-hooks",
        "deploy_hooks:deploy_hooks",
        "copy the merge hook and the files it runs into a hooks directory",
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--target", type=Path, metavar="DIR")
    mode.add_argument(
        "--list", action="store_true", help="print <deployed name><TAB><source path> per file"
    )
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 on drift")

    p = command(
        "graph",
        "commands.graph:graph",
        "draw the issue's round (Mermaid by default)",
        parents=(json_out,),
    )
    p.add_argument("issue", type=_issue)
    p.add_argument("--format", choices=["mermaid", "dot"], default="mermaid")

    p = command(
        "sandbox",
        "sandbox.cli:serve",
        "serve a GitLab stand-in on loopback until SIGINT or SIGTERM",
        reads_config=False,
    )
    p.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1 (loopback)")
    p.add_argument("--port", type=int, default=0, help="default: 0, a free port")
    p.add_argument("--state", type=Path, metavar="FILE", help="load and save the world here")
    p.add_argument(
        "--config-out", type=Path, metavar="FILE", help="write a pairgate configuration for it"
    )

    command(
        "demo",
        "commands.demo:demo",
        "play one whole round against an embedded sandbox",
        reads_config=False,
    )
    return parser


def command_names() -> list[str]:
    """Every registered command, in the order --help lists them."""
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


def _resolve(handler: str) -> Callable[..., int]:
    module, _, func = handler.partition(":")
    handler_func: Callable[..., int] = getattr(importlib.import_module(f"pairgate.{module}"), func)
    return handler_func


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
    measured = Path(__file__).resolve() if origin is None else _checked_origin(origin)
    try:
        try:
            # --help prints and exits inside argparse; keep it on the injected stream.
            with contextlib.redirect_stdout(ctx.stdout):
                args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
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
            kwargs["config"] = config = ownership.load_config(ctx.env)
            check_currency(
                measured,
                config,
                command=args.command,
                writes=args.writes,
                env=ctx.env,
                stderr=ctx.stderr,
            )
        return int(_resolve(args.handler)(ctx=ctx, **kwargs))
    except Exception as exc:
        return ownership.report(exc, ctx.stderr)


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
    sys.exit(main())


if __name__ == "__main__":
    console_main()
