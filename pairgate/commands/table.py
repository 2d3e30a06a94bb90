"""The command table: every command of the command line, declared once.

A row says what ``pairgate --help`` lists (name, help), what the command takes (its argument
function, in ``arguments.py``, or ``watch.py`` and ``evidence.py`` for those families), which
handler runs it (by import path, imported only when the command runs, so --help imports no
handler) and what main prepares before calling it. ``parser.py`` builds the subcommands from
the rows, in this order, and ``main.py`` dispatches through them.

A handler takes keyword arguments only: one per flag of its command (the parser's
destinations), and the context main passes: ``ctx`` always; ``config`` when the row reads the
configuration; ``client`` when it reads GitLab; ``verbose`` only when it keeps it (main uses
--verbose itself for the client line); ``dispatch`` when it dispatches command lines itself.
``tests/test_command_table.py`` holds every handler to that.
"""

from __future__ import annotations

from pairgate.commands import arguments, evidence, watch

# typing.TYPE_CHECKING without importing typing, which costs every start (mypy and ruff read
# any name TYPE_CHECKING as it): the names below are for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    Arguments = Callable[[Any], None]  # adds a command's flags to its argparse parser
    Writes = bool | Callable[[Mapping[str, Any]], bool]
    ReadsConfig = bool | Callable[[Mapping[str, Any]], bool]


class Command:
    """One row. ``handler`` is ``"module:function"``; a row with subcommands and no handler is
    a family, and one of its subcommands is required."""

    __slots__ = (
        "arguments",
        "description",
        "dispatches",
        "handler",
        "help",
        "keeps_verbose",
        "name",
        "reads_config",
        "reads_gitlab",
        "subcommand_metavar",
        "subcommands",
        "writes",
    )

    def __init__(
        self,
        name: str,
        help: str,
        handler: str | None,
        arguments: Arguments | None = None,
        *,
        reads_config: ReadsConfig = True,
        reads_gitlab: bool = False,
        writes: Writes = False,
        keeps_verbose: bool = False,
        dispatches: bool = False,
        description: str | None = None,
        subcommands: tuple[Command, ...] = (),
        subcommand_metavar: str = "<subcommand>",
    ) -> None:
        self.name = name
        self.help = help
        self.handler = handler  # "module:function", imported when the command runs
        self.arguments = arguments
        # main loads it, and runs the currency check first; a predicate of the flags when only
        # some runs need it (the handler is then given None on the others)
        self.reads_config = reads_config
        self.reads_gitlab = reads_gitlab  # main builds the GitLab client (needs the config)
        self.writes = writes  # a STALE copy refuses a writing run; a predicate of the flags
        self.keeps_verbose = keeps_verbose
        self.dispatches = dispatches
        self.description = help if description is None else description
        self.subcommands = subcommands
        self.subcommand_metavar = subcommand_metavar
        if reads_gitlab and not reads_config:
            raise ValueError(f"{name}: main builds the GitLab client from the configuration")

    def __repr__(self) -> str:
        return f"Command({self.name!r})"

    def reads_config_with(self, flags: Mapping[str, Any]) -> bool:
        """Does a run with these flags read the configuration?"""
        return self.reads_config(flags) if callable(self.reads_config) else self.reads_config

    def writes_with(self, flags: Mapping[str, Any]) -> bool:
        """Does a run with these flags write? (The currency check refuses it on a STALE copy.)"""
        return self.writes(flags) if callable(self.writes) else self.writes


def unless_only_checking(flags: Mapping[str, Any]) -> bool:
    """A deploy command writes, unless it only compares (--check) or lists (--list)."""
    return not flags["check"] and not flags.get("list", False)


def when_fixing(flags: Mapping[str, Any]) -> bool:
    """doctor writes only with --fix, and not with --dry-run."""
    return bool(flags["fix"]) and not flags["dry_run"]


def unless_listing(flags: Mapping[str, Any]) -> bool:
    """A listing of the files a command deploys needs no configuration."""
    return not flags.get("list", False)


def when_filing_issues(flags: Mapping[str, Any]) -> bool:
    """The audit writes only the issues it files."""
    return bool(flags["file_issues"])


LEDGER = "pairgate.commands.ledger"
CONSTRAINTS = "pairgate.commands.constraints"
FREEZE = "pairgate.commands.freeze"

# In the order --help lists them.
COMMANDS: tuple[Command, ...] = (
    # Getting started first: a round in one command, a GitLab to try it on, a deployment.
    Command(
        "demo",
        "play one whole round against an embedded sandbox",
        "pairgate.commands.demo:demo",
        arguments.demo,
        reads_config=False,
        dispatches=True,  # it plays a round through main's own dispatcher
    ),
    Command(
        "sandbox",
        "serve a GitLab stand-in on loopback until SIGINT or SIGTERM",
        "pairgate.commands.sandbox:serve",
        arguments.sandbox,
        reads_config=False,
        subcommands=(
            Command(
                "push",
                "put a git repository's HEAD on a running sandbox's branch, under its own id",
                "pairgate.commands.sandbox_tools:push",
                arguments.sandbox_push,
                reads_config=False,
            ),
            Command(
                "variable",
                "add a masked CI/CD variable to a running sandbox's project, as its maintainer",
                "pairgate.commands.sandbox_tools:variable",
                arguments.sandbox_variable,
                reads_config=False,
            ),
            Command(
                "merge",
                "press a running sandbox's merge button for a merge request, once its "
                "pipelines have run",
                "pairgate.commands.sandbox_tools:merge",
                arguments.sandbox_merge,
                reads_config=False,
            ),
        ),
        subcommand_metavar="{push,variable,merge}",
    ),
    Command(
        "init",
        "ask GitLab what a configuration needs and write a deployment's files into a directory",
        "pairgate.commands.init:init",
        arguments.init,
        reads_config=False,
    ),
    Command(
        "claim",
        "take an unowned issue",
        f"{LEDGER}:claim",
        arguments.claim,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "handoff",
        "OFFER the issue to another agent, bound to the merge request's head commit",
        f"{LEDGER}:handoff",
        arguments.handoff,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "accept",
        "take an offer made to you",
        f"{LEDGER}:accept",
        arguments.issue_verb,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "decline",
        "return an offer to its sender (a new pipeline re-judges each MR citing the issue)",
        f"{LEDGER}:decline",
        arguments.issue_verb,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "release",
        "drop the issue, with no successor (a new pipeline re-judges each MR citing it)",
        f"{LEDGER}:release",
        arguments.issue_verb,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "approve",
        "approve the merge request at its exact head, and offer the issue back to the lead",
        "pairgate.commands.approve:approve",
        arguments.approve,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "withdraw",
        "take back your approval: no door counts it, its offer back is voided, the review "
        "bot's approval is removed on GitLab, and a new pipeline re-judges the merge request "
        "(from your own session: one that wrote as another name is refused)",
        "pairgate.commands.withdraw:withdraw",
        arguments.withdraw,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "merge-check",
        "is the merge request's head the commit an independent approval named?",
        "pairgate.commands.gate:merge_check",
        arguments.merge_check,
        reads_gitlab=True,
        keeps_verbose=True,  # its verdict says more under --verbose
    ),
    Command(
        "audit",
        "every merge in the window that went around the merge gate, judged as merge-check "
        "would have judged it at the moment of the merge",
        "pairgate.commands.audit:audit",
        arguments.audit,
        reads_gitlab=True,
        writes=when_filing_issues,
    ),
    Command(
        "doctor",
        "every way around the merge gate the gated projects' settings leave open, with the fix; "
        "--fix applies what the API can",
        "pairgate.commands.doctor:doctor",
        arguments.doctor,
        reads_gitlab=True,
        writes=when_fixing,
    ),
    Command(
        "status",
        "holder, role, pending offer, approvals and the open MRs citing it",
        "pairgate.commands.status:status",
        arguments.status,
        reads_gitlab=True,
    ),
    Command(
        "board",
        "every labelled issue in one pass",
        "pairgate.commands.board:board",
        arguments.board,
        reads_gitlab=True,
    ),
    Command(
        "waiting",
        "who owes the next move",
        "pairgate.commands.waiting:waiting",
        arguments.waiting,
        reads_gitlab=True,
    ),
    Command(
        "close",
        "close the issue, if nothing is outstanding (no open MR cites it, shared-in projects' included; then re-judges any MR citing it)",
        f"{LEDGER}:close",
        arguments.issue_verb,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "sync",
        "close what an independent approval merged (a dry run unless --apply)",
        "pairgate.commands.sync:sync",
        arguments.sync,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "freeze",
        "declare a window in which other agents' writes inside the scope are refused (a new "
        "pipeline re-judges each open MR it reaches)",
        f"{FREEZE}:freeze",
        arguments.freeze,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "thaw",
        "lift the window you declared",
        f"{FREEZE}:thaw",
        arguments.verb,
        reads_gitlab=True,
        writes=True,
    ),
    Command(
        "identity",
        "does anyone else answer to my name?",
        "pairgate.commands.identity:identity",
        arguments.identity,
        reads_gitlab=True,
    ),
    Command(
        "impose",
        "render a standing constraint's clause (imposed by --as, or the agent identity)",
        f"{CONSTRAINTS}:impose",
        arguments.impose,
    ),
    Command(
        "lift-check",
        "may a relayed lift of a constraint stand?",
        f"{CONSTRAINTS}:lift_check",
        arguments.lift_check,
    ),
    Command(
        "deploy-agents",
        "render the agent definitions into a directory as <agent_identity_prefix>-<role>.md",
        "pairgate.commands.deploy_agents:deploy_agents",
        arguments.deploy_agents,
        writes=unless_only_checking,
    ),
    Command(
        "deploy-hooks",
        "copy the merge hook and the files it runs into a hooks directory",
        "pairgate.commands.deploy_hooks:deploy_hooks",
        arguments.deploy_hooks,
        reads_config=unless_listing,
        writes=unless_only_checking,
    ),
    Command(
        "deploy-pipeline",
        "render the tracker-held pipeline (the gate jobs, and the project's own CI file as a "
        "child pipeline) and the gate's files; write them, or publish them to the tracker in "
        "one commit",
        "pairgate.commands.deploy_pipeline:deploy_pipeline",
        arguments.deploy_pipeline,
        writes=unless_only_checking,
    ),
    Command(
        "watch",
        "poll GitLab (and take its webhooks) and deliver merge request and ledger events to the "
        "agent who owes the next move",
        "pairgate.commands.watcher:watch",
        watch.watch,
        reads_gitlab=True,
    ),
    # inbox reads its own configuration, so that as a Claude Code hook every failure is exit 1
    # (shown, passed), never exit 2 (which would block the prompt or the stop).
    Command(
        "inbox",
        "your pending batches of GitLab events; ack one when handled",
        "pairgate.commands.inbox:inbox",
        watch.inbox,
        reads_config=False,
        subcommands=(
            Command(
                "ack",
                "acknowledge a batch you have handled",
                "pairgate.commands.inbox:inbox_ack",
                watch.inbox_ack,
                reads_config=False,
                description="acknowledge a batch you have handled (only its recipient may, "
                "from a session that wrote and acknowledged as no other name)",
            ),
        ),
        subcommand_metavar="ack",
    ),
    Command(
        "evidence",
        evidence.HELP,
        None,
        subcommands=(
            Command(
                "run",
                evidence.RUN_HELP,
                "pairgate.commands.evidence_run:run_evidence",
                evidence.run,
            ),
            Command(
                "plan",
                evidence.PLAN_HELP,
                "pairgate.commands.evidence_report:plan_evidence",
                evidence.plan,
            ),
            Command(
                "report",
                evidence.REPORT_HELP,
                "pairgate.commands.evidence_report:report_evidence",
                evidence.report,
            ),
            Command(
                "rerun",
                evidence.RERUN_HELP,
                "pairgate.commands.evidence_rerun:rerun_evidence",
                evidence.rerun,
                reads_gitlab=True,  # the offer, from the issue's ledger
            ),
        ),
    ),
    Command(
        "graph",
        "draw the issue's round (Mermaid by default)",
        "pairgate.commands.graph:graph",
        arguments.graph,
        reads_gitlab=True,
    ),
)


def command_rows(
    rows: tuple[Command, ...] = COMMANDS, *, prefix: str = ""
) -> list[tuple[str, Command]]:
    """Every row with its full name (``evidence run``), families and subcommands included."""
    found = []
    for row in rows:
        name = f"{prefix}{row.name}"
        found.append((name, row))
        found += command_rows(row.subcommands, prefix=f"{name} ")
    return found
