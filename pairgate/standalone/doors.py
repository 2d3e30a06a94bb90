"""The gate's doors that print: merge-check and the three CI validators."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pairgate.standalone.ci_job import NotProven, prove_job
from pairgate.standalone.config import CONFIG_ENV, Config, load_config
from pairgate.standalone.errors import ConfigError, Context, Exit, PairgateError, UsageError, report
from pairgate.standalone.gate import gate_merge
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.gitlab_env import gitlab_client
from pairgate.standalone.gitlab_once import first_attempt_transport
from pairgate.standalone.scope import ROSTER_FILENAME, load_automation_families, roster_path
from pairgate.standalone.verdict import Check, GateVerdict

if TYPE_CHECKING:
    import argparse

__all__ = ["arg_parser", "run_merge_check", "validator_main"]

# The doors. merge-check (the package CLI and ``python3 ownership.py merge-check``) and the three
# validators print the same verdict; only what each treats as a failure differs.

# Where a read token passed on stdin came from, as an error about it names it.
STDIN_READ_TOKEN = "the CI variable the component's read-token-variable input names"

VALIDATOR_CHECKS: dict[str, str | None] = {
    "validate-mr-carries-ownership-record": "record",
    "validate-mr-approval-at-head": "approval",
    "validate-mr-merge-check": None,  # the whole verdict, as merge-check gives it
}


def arg_parser(prog: str, description: str | None = None) -> argparse.ArgumentParser:
    """argparse whose usage errors are UsageErrors, so ``report`` prints them (exit 2).
    argparse is imported here rather than at the top: the merge hook reads no arguments, and
    importing it cost each of its decisions a millisecond."""
    import argparse

    class ArgParser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:
            raise UsageError(f"{self.format_usage().rstrip()}\n{self.prog}: error: {message}")

    return ArgParser(prog=prog, description=description)


def print_verdict(
    verdict: GateVerdict,
    ctx: Context,
    *,
    json_out: bool,
    verbose: bool,
) -> int:
    """merge-check's output and exit code: 0 pass (or not gated), 1 refused."""
    if json_out:
        print(json.dumps(verdict.as_json(), indent=2), file=ctx.stdout)
    else:
        print(verdict.message, file=ctx.stdout if verdict.allowed else ctx.stderr)
        if verdict.in_scope and verdict.basis:  # said once: what its independence rests on
            print(f"note: {verdict.basis}", file=ctx.stderr)
        for warning in verdict.warnings:
            print(f"warning: {warning}", file=ctx.stderr)
    if verbose:
        for line in _verbose_lines(verdict):
            print(line, file=ctx.stderr)
    return Exit.OK if verdict.allowed else Exit.REFUSED


def _verbose_lines(verdict: GateVerdict) -> list[str]:
    cited = ", ".join(f"#{i}" for i in verdict.cited_issues) or "none"
    lines = [
        f"merge request: {verdict.project}!{verdict.iid}, head {verdict.head_sha}",
        f"scope: {verdict.scope} ({verdict.scope_detail})",
        f"cited tracker issues: {cited}",
        f"ownership record: {verdict.record.code}: {verdict.record.message}",
        f"approval at head: {verdict.approval.code}: {verdict.approval.message}",
    ]
    return lines


def run_merge_check(
    ctx: Context,
    config: Config,
    client: GitLab,
    *,
    mr: int,
    mr_project: str,
    json_out: bool,
    verbose: bool,
) -> int:
    """``merge-check --mr <iid> --mr-project <p>``: the gate's verdict, as a command."""
    try:
        verdict = gate_merge(client, config, mr_project, mr, now=ctx.now())
    except PairgateError as exc:
        message = f"merge-check: could not decide, so no pass: {exc.message}"
        if json_out:  # a machine reading --json gets a verdict on every exit code
            undecided = {
                "allowed": False,
                "in_scope": None,
                "verdict": "undecided",
                "message": message,
                "mr": {"project": mr_project, "iid": mr},
            }
            print(json.dumps(undecided, indent=2), file=ctx.stdout)
        raise PairgateError(message) from exc
    if verdict.in_scope and verdict.mr_state == "merged":
        return _merged(verdict, config, ctx, json_out=json_out)
    return print_verdict(verdict, ctx, json_out=json_out, verbose=verbose)


def _merged(verdict: GateVerdict, config: Config, ctx: Context, *, json_out: bool) -> int:
    """merge-check on a merge request that already merged: no "may merge" (exit 1, nothing is
    left to pass), what it merged with, and what is left on the ledger."""
    cli, tracker = config.cli, config.tracker_project
    ref = f"{verdict.project}!{verdict.iid}"
    if verdict.allowed:
        how = (
            f"It merged with {verdict.approved_by}'s approval of {verdict.approved_sha} "
            f"({tracker}#{verdict.approval_issue}, note {verdict.approval_note})."
        )
    else:
        how = f"No approval that counts names its head ({verdict.code})."
    issues = [str(i) for i in verdict.cited_issues] or ["<issue>"]
    message = (
        f"{ref} is already merged: nothing is left to merge. {how} What is left is the "
        f"ledger: its holder closes each cited issue ({'; '.join(f'{cli} close {i}' for i in issues)}), "
        f"or {cli} sync --apply closes every issue whose merge request merged at an approved "
        f"head; {cli} waiting says who owes the move."
    )
    if json_out:
        doc = verdict.as_json() | {"allowed": False, "verdict": "merged", "message": message}
        print(json.dumps(doc, indent=2), file=ctx.stdout)
    else:
        print(message, file=ctx.stderr)
    return Exit.REFUSED


def validator_main(
    name: str,
    argv: Sequence[str] | None = None,
    ctx: Context | None = None,
    stdin: TextIO | None = None,
) -> int:
    """A CI validator: the verdict for the merge request of this merge request pipeline.

    The configuration comes from PAIRGATE_CONFIG only. The instance and the merge request come
    from what the job token proves (``GET /job``), and every CI variable must agree with it
    (ci_job.py). The tokens come from stdin (``--tokens-on-stdin``: the job token, then the
    read token), else from CI_JOB_TOKEN and the CI variable ``--read-token-variable`` names
    (else <env_prefix>_TASK_API_TOKEN). Exit 0 pass, 1 refused, 2 could not decide.
    """
    ctx = ctx or Context()
    check_name = VALIDATOR_CHECKS[name]
    try:
        args = _validator_parser(name).parse_args(list(sys.argv[1:] if argv is None else argv))
        if not ctx.env.get(CONFIG_ENV, "").strip():
            raise ConfigError(
                f"{name}: {CONFIG_ENV} is not set: the validators read their configuration "
                f"from the file it names, and from nowhere else"
            )
        config = load_config(ctx.env)
        job_token, read_token, read_source = _tokens(ctx.env, config, args, stdin or sys.stdin)
        proven = prove_job(ctx.env, job_token, pinned=args.gitlab_url)
        # The client talks to the proven instance only: no URL variable is read again. It
        # never writes, so no glab it might run is given the job's environment.
        client = gitlab_client(
            proven.api_url,
            "CI_SERVER_URL",
            read_token=read_token,
            read_token_source=read_source,
            transport=first_attempt_transport,
        )
        families = load_automation_families(roster_path(config, args.automation_families))
        verdict = gate_merge(
            client, config, proven.project, proven.iid, families=families, now=ctx.now()
        )
        if verdict.in_scope and verdict.head_sha != proven.head:
            raise NotProven(
                f"this pipeline ran for {proven.head}, but the head of {verdict.project}!"
                f"{verdict.iid} is now {verdict.head_sha}: only a pipeline at the head decides"
            )
    except Exception as exc:  # the validators' one translation point: never a pass
        print(f"{name}: could not decide; this job fails closed.", file=ctx.stderr)
        return report(exc, ctx, program=name)
    head = f" at {verdict.head_sha}" if verdict.head_sha else ""
    print(
        f"{name}: {verdict.project}!{verdict.iid}{head} (pipeline {proven.pipeline_id} on "
        f"{proven.server_url}, as the job token proves)",
        file=ctx.stdout,
    )
    for warning in verdict.warnings:
        print(f"warning: {warning}", file=ctx.stdout)
    if verdict.in_scope and verdict.basis and check_name != "record":
        print(f"note: {verdict.basis}", file=ctx.stdout)  # what independence rests on, once
    check = (
        Check(verdict.allowed, verdict.code, verdict.message)
        if check_name is None
        else getattr(verdict, check_name)
    )
    if not check.ok:
        print(f"FAILED: {check.message}", file=ctx.stdout)
        print(f"Background: {config.handoff_doc}.", file=ctx.stdout)
        return Exit.REFUSED
    if check.code == "never-approved" and check_name == "approval":
        print(
            f"passed: {verdict.project}!{verdict.iid} has no approval yet, and this job fails "
            f"only an approval that does not count (not independent, or no longer what was "
            f"reviewed). merge-check and the merge hook still require an independent approval "
            f"at the head.",
            file=ctx.stdout,
        )
    else:
        print(f"passed: {check.message}", file=ctx.stdout)
    return Exit.OK


def _validator_parser(name: str) -> argparse.ArgumentParser:
    parser = arg_parser(f"{name}.py", validator_main.__doc__)
    parser.add_argument(
        "--read-token-variable",
        metavar="NAME",
        help="the CI variable holding a token that can read the tracker's issue notes",
    )
    parser.add_argument(
        "--tokens-on-stdin",
        action="store_true",
        help="read CI_JOB_TOKEN, then the read token, one a line from stdin (the components' "
        "form: no secret on a command line or in the environment)",
    )
    parser.add_argument(
        "--gitlab-url",
        metavar="URL",
        default="",
        help="the instance this job must run on (the tracker-held pipeline pins it); empty: "
        "CI_SERVER_URL, which must agree with CI_API_V4_URL",
    )
    parser.add_argument(
        "--automation-families",
        type=Path,
        metavar="PATH",
        help=f"the automation roster (default: the {ROSTER_FILENAME} beside ownership.py)",
    )
    return parser


def _tokens(
    env: Mapping[str, str], config: Config, args: argparse.Namespace, stdin: TextIO
) -> tuple[str, str, str]:
    """(job token, read token, where the read token came from)."""
    if args.tokens_on_stdin:
        job_token, read_token = ([*stdin.read().splitlines(), "", ""])[:2]
        if not read_token.strip():
            raise ConfigError(
                "the read token (the second line on stdin) is empty: the component passes the "
                "CI variable its read-token-variable input names, so add it as a masked CI/CD "
                "variable holding a token that can read the tracker's issues (CI_JOB_TOKEN "
                "cannot read issue notes)"
            )
        return job_token.strip(), read_token.strip(), STDIN_READ_TOKEN
    job_token = env.get("CI_JOB_TOKEN", "")
    if args.read_token_variable:
        variable = args.read_token_variable
        return job_token, _ci_token(env, variable), variable
    variable = config.env_name("TASK_API_TOKEN")
    read_token = env.get(variable, "").strip()
    if not read_token:
        raise ConfigError(
            f"no read token: name its CI variable with --read-token-variable, pass it on stdin "
            f"(--tokens-on-stdin), or set {variable}"
        )
    return job_token, read_token, variable


def _ci_token(env: Mapping[str, str], variable: str) -> str:
    token = env.get(variable, "").strip()
    if not token:
        raise ConfigError(
            f"the CI variable {variable} (the component's read-token-variable input) is not set "
            f"or is empty in this pipeline: add it as a masked CI/CD variable holding a token "
            f"that can read the tracker's issues (CI_JOB_TOKEN cannot read issue notes)"
        )
    return token
