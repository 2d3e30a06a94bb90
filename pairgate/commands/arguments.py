"""Each command's argument function: the flags it adds to its subcommand's parser.

The command table (``table.py``) names one per command. Building the parser imports this module
and nothing else of a command, so it stays light: argparse and the shared flags below,
no domain module. --help reads no configuration, so a value a deployment configures is spelled
as the key it comes from (the specification: --help works in a fresh install).
"""

from __future__ import annotations

import argparse

from pairgate.standalone.audit_flags import add_audit_arguments, add_project_filter

AGENT_ENV = "<env_prefix>_AGENT_ID"
ISSUE_HELP = "the tracker issue's number (its iid, as in #12)"
TRACKER = "<tracker_project>"
CLI = "<cli_command>"

Parser = argparse.ArgumentParser

# typing.TYPE_CHECKING without importing typing, which costs every start (mypy and ruff read
# any name TYPE_CHECKING as it): the names below are for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def path(value: str) -> Path:
    """argparse's type for a path flag: pathlib is imported when a path is given, so building
    the parser (every start, and --help) does not import it."""
    from pathlib import Path

    return Path(value)


def issue_number(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an issue number (a positive integer)")
    return int(text)


# The flags several commands share. A command adds them first, as its first flags.


def as_agent(p: Parser) -> None:
    p.add_argument(
        "--as",
        dest="as_agent",
        metavar="AGENT",
        help=f"act as this agent identity (default: {AGENT_ENV}; unset is an error)",
    )


def verbose(p: Parser) -> None:
    p.add_argument(
        "--verbose", action="store_true", help="say which GitLab URL and transport were used"
    )


def json_out(p: Parser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON with stable keys")


def verb(p: Parser) -> None:
    """A ledger verb's common flags: who acts, and --verbose."""
    as_agent(p)
    verbose(p)


def reader(p: Parser) -> None:
    """A reading command's common flags: --verbose and --json."""
    verbose(p)
    json_out(p)


def issue(p: Parser) -> None:
    p.add_argument("issue", type=issue_number, metavar="ISSUE", help=ISSUE_HELP)


def reason(p: Parser, *, required: bool = False) -> None:
    group = p.add_mutually_exclusive_group(required=required)
    group.add_argument("--reason", metavar="TEXT", help="why, in the note")
    group.add_argument(
        "--reason-file",
        metavar="PATH",
        type=path,
        help="read the reason from a file (use this for text that quotes commands)",
    )


def issue_verb(p: Parser) -> None:
    """accept, decline, release and close: a verb on one issue, with no flag of its own."""
    verb(p)
    issue(p)


# The ledger's verbs.


def claim(p: Parser) -> None:
    issue_verb(p)
    p.add_argument(
        "--role",
        required=True,
        choices=["lead", "review"],
        help="the role you take it in (as review, your approval still needs an offer of the "
        "merge request from another agent, accepted first)",
    )


def handoff(p: Parser) -> None:
    issue_verb(p)
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
        help="the merge request's iid (default: the one open MR citing the issue, in the group or "
        "a project shared into it)",
    )
    p.add_argument(
        "--mr-project", metavar="PROJECT", help=f"the merge request's project (default: {TRACKER})"
    )
    p.add_argument("--supersede", type=int, metavar="NOTE_ID", help="replace this pending offer")
    p.add_argument(
        "--evidence",
        type=path,
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


def approve(p: Parser) -> None:
    issue_verb(p)
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
        type=path,
        metavar="FILE",
        help=f"your re-run ({CLI} evidence rerun --out FILE) of the offer's mutant and one of "
        "your own, at --sha: the approval records it (without it, it records no re-run)",
    )


def withdraw(p: Parser) -> None:
    verb(p)
    issue(p)
    p.add_argument(
        "--approval", required=True, type=int, metavar="NOTE_ID", help="the approval's note"
    )
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--reason", metavar="TEXT", help="what is wrong with it, in the note")
    group.add_argument(
        "--reason-file", metavar="PATH", type=path, help="read the reason from a file"
    )


def sync(p: Parser) -> None:
    verb(p)
    p.add_argument(
        "issues",
        nargs="*",
        type=issue_number,
        metavar="ISSUE",
        help="only these (default: every labelled issue)",
    )
    p.add_argument("--apply", action="store_true", help="close them; without it, only say which")


def freeze(p: Parser) -> None:
    issue_verb(p)
    p.add_argument(
        "--scope",
        required=True,
        metavar="board|issue|issue:<iid>|mr:<iid>",
        help="what to freeze; mr:<iid> is the open MR with that iid citing the issue (in the group "
        "or a project shared into it), else the tracker's; mr:<project>!<iid> names its project",
    )
    reason(p, required=True)
    p.add_argument(
        "--minutes", type=int, default=30, metavar="N", help="how long it lasts (default: 30)"
    )


# The gate and the readers.


def merge_check(p: Parser) -> None:
    reader(p)
    p.add_argument("--mr", required=True, type=int, metavar="IID", help="the merge request's iid")
    p.add_argument(
        "--mr-project",
        required=True,
        metavar="PROJECT",
        help="required: an MR iid is not unique across projects",
    )


def audit(p: Parser) -> None:
    reader(p)
    add_audit_arguments(p)  # the flat door's flags too (python3 ownership.py audit)


def doctor(p: Parser) -> None:
    reader(p)
    add_project_filter(p)
    p.add_argument(
        "--fix",
        action="store_true",
        help="first close what the API can, as a Maintainer (<env_prefix>_DEPLOY_TOKEN): "
        "pipelines must succeed, skipped pipelines not successful, the CI/CD configuration "
        "file, forking off, pipeline variables restricted, the branch protections; print each "
        "change before and after, then check",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="with --fix: print the calls --fix would make, and make none",
    )
    p.add_argument(
        "--pipeline",
        metavar="PATH",
        help="with --fix: the tracker's pipeline file (deploy-pipeline --publish PATH); each "
        "gated project's CI/CD configuration file becomes PATH@<tracker_project>",
    )


def status(p: Parser) -> None:
    reader(p)
    issue(p)


def board(p: Parser) -> None:
    reader(p)
    p.add_argument("--closed", action="store_true", help="include closed issues")


def waiting(p: Parser) -> None:
    reader(p)
    p.add_argument("--agent", metavar="AGENT", help="only this agent's moves (default: everyone's)")


def identity(p: Parser) -> None:
    as_agent(p)
    reader(p)


def graph(p: Parser) -> None:
    reader(p)
    issue(p)
    p.add_argument(
        "--format",
        choices=["mermaid", "dot"],
        default="mermaid",
        help="Mermaid (GitLab renders it; the default) or Graphviz dot",
    )


# Standing constraints.


def impose(p: Parser) -> None:
    as_agent(p)
    clause = p.add_mutually_exclusive_group(required=True)
    clause.add_argument("--text", metavar="TEXT", help="the constraint's clause")
    clause.add_argument(
        "--text-file",
        metavar="PATH",
        type=path,
        help="read the clause from a file (use this for text that quotes commands)",
    )


def lift_check(p: Parser) -> None:
    json_out(p)
    p.add_argument(
        "--lift-from", required=True, metavar="AGENT", help="who the relayed lift came from"
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--constraint-file", metavar="F", type=path, help="the constraint's clause, from a file"
    )
    group.add_argument("--constraint-text", metavar="T", help="the constraint's clause")


# The deployment's files.


def check(p: Parser) -> None:
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 on drift")


def deploy_agents(p: Parser) -> None:
    p.add_argument(
        "--target",
        required=True,
        type=path,
        metavar="DIR",
        help="the deployment's agents directory",
    )
    check(p)


def deploy_hooks(p: Parser) -> None:
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--target", type=path, metavar="DIR", help="the hooks directory to install into"
    )
    mode.add_argument(
        "--list", action="store_true", help="print <deployed name><TAB><source path> per file"
    )
    check(p)


def deploy_pipeline(p: Parser) -> None:
    p.add_argument("--target", type=path, metavar="FILE", help="write the pipeline file here")
    p.add_argument(
        "--gate-out",
        type=path,
        metavar="DIR",
        help="write the gate directory's files here (the assembled ownership.py, the three "
        "validators, the configuration and the roster: what the gate jobs fetch)",
    )
    p.add_argument(
        "--publish",
        dest="publish_path",
        metavar="PATH",
        help="commit the pipeline at PATH and the gate files under --gate-dir to the tracker's "
        "default branch, in one commit, with <env_prefix>_DEPLOY_TOKEN (a Maintainer's); "
        "prints the CI/CD configuration file value PATH@<tracker_project>",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 naming each file that is missing or differs (locally, or "
        "on the tracker's default branch with --publish)",
    )
    p.add_argument(
        "--image",
        required=True,
        help="the gate jobs' image (python3 >= 3.11 with requests, jsonschema, pyyaml), pinned "
        "by digest (...@sha256:<64 hex>); no variable",
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


def sandbox(p: Parser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1 (loopback)")
    p.add_argument("--port", type=int, default=0, help="default: 0, a free port")
    p.add_argument("--state", type=path, metavar="FILE", help="load and save the world here")
    p.add_argument(
        "--config-out",
        type=path,
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
    p.add_argument(
        "--runner",
        nargs="?",
        const="gitlab-ci-local",
        choices=["gitlab-ci-local"],
        help="run every pipeline the projects' CI configuration makes, with gitlab-ci-local "
        "(default: none runs; pipelines come from the sandbox job list)",
    )
    p.add_argument(
        "--gitlab-ci-local",
        metavar="PATH",
        help="the gitlab-ci-local to run (default: .cache/gitlab-ci-local, then PATH)",
    )
    p.add_argument(
        "--runner-shared-home",
        action="store_true",
        help="give every job one HOME, as a shell runner's user has (default: a fresh HOME and "
        "work directory for each job)",
    )


def _sandbox_url(p: Parser) -> None:
    p.add_argument(
        "--url",
        required=True,
        metavar="URL",
        help="the running sandbox (its ready line's url, such as http://127.0.0.1:8765)",
    )


def sandbox_push(p: Parser) -> None:
    _sandbox_url(p)
    p.add_argument(
        "--repo",
        type=path,
        default=".",
        metavar="DIR",
        help="the git repository whose HEAD is pushed (default: .); the sandbox's commit gets "
        "HEAD's id and its files (files only the branch has stay), and its runner checks the "
        "commit out from here",
    )
    p.add_argument("--project", required=True, metavar="PROJECT", help="such as acme/app")
    p.add_argument(
        "--branch",
        required=True,
        metavar="BRANCH",
        help="the branch to move (made from main when absent); its open merge requests follow",
    )


def sandbox_variable(p: Parser) -> None:
    _sandbox_url(p)
    p.add_argument("--project", required=True, metavar="PROJECT", help="such as acme/app")
    p.add_argument("--key", required=True, metavar="NAME", help="the variable's name")
    p.add_argument("--value", required=True, metavar="VALUE", help="its value (masked)")


def sandbox_merge(p: Parser) -> None:
    _sandbox_url(p)
    p.add_argument("--project", required=True, metavar="PROJECT", help="such as acme/app")
    p.add_argument("--mr", type=int, required=True, metavar="IID", help="the merge request")
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long to wait for the runner to finish its pipelines first (default: 300)",
    )


def demo(p: Parser) -> None:
    p.add_argument(
        "--ci",
        action="store_true",
        help="play it through the CI door: the sandbox runs the tracker-held pipeline with "
        "gitlab-ci-local and the merge API obeys it (needs gitlab-ci-local; the plain demo "
        "does not)",
    )


def init(p: Parser) -> None:
    json_out(p)
    p.add_argument(
        "--target", required=True, type=path, metavar="DIR", help="where to write (made if absent)"
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
        type=issue_number,
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
    p.add_argument(
        "--claude-settings",
        dest="claude_settings_file",
        type=path,
        metavar="FILE",
        help="merge the merge hook's and the inbox's registrations into this Claude Code "
        "settings file (such as .claude/settings.json), keeping every key it has; an invalid "
        "JSON file is refused",
    )
