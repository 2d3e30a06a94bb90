"""The command line's parser: every command with its exact flags and their help.

--help reads no configuration, so nothing here does either; main.py dispatches what it parses.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pairgate.standalone.errors import UsageError

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
    from pairgate.standalone.audit_door import add_audit_arguments, add_project_filter

    add_audit_arguments(p)

    p = command(
        "doctor",
        "every way around the merge gate the gated projects' settings leave open, with the fix",
        parents=(verbose, json_out),
    )
    add_project_filter(p)

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
    p.add_argument(
        "--evidence-image",
        metavar="IMAGE",
        help="add the mr-evidence job (rerun-mr-evidence), which re-runs an offer's mutants at "
        "the merge request's head, with this image: the project's test image with pairgate, "
        "git and bubblewrap",
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
