"""The gate's doors that print: merge-check and the two CI validators."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pairgate.standalone.config import CONFIG_ENV, Config, load_config
from pairgate.standalone.errors import ConfigError, Context, Exit, PairgateError, UsageError, report
from pairgate.standalone.gate import gate_merge
from pairgate.standalone.gitlab import GitLab, gitlab_from_env
from pairgate.standalone.scope import ROSTER_FILENAME, load_automation_families, roster_path
from pairgate.standalone.verdict import Check, GateVerdict

# The three doors. merge-check (the package CLI and ``python3 ownership.py merge-check``) and the
# two validators print the same verdict; only what each treats as a failure differs.

VALIDATOR_CHECKS = {
    "validate-mr-carries-ownership-record": "record",
    "validate-mr-approval-at-head": "approval",
}


class _ArgParser(argparse.ArgumentParser):
    """argparse whose usage errors are UsageErrors, so ``report`` prints them (exit 2)."""

    def error(self, message: str) -> Any:
        raise UsageError(f"{self.format_usage().rstrip()}\n{self.prog}: error: {message}")


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
        raise PairgateError(f"merge-check: could not decide, so no pass: {exc.message}") from exc
    return print_verdict(verdict, ctx, json_out=json_out, verbose=verbose)


def validator_main(name: str, argv: Sequence[str] | None = None, ctx: Context | None = None) -> int:
    """A CI validator: the verdict for the merge request of this merge request pipeline.

    The configuration comes from PAIRGATE_CONFIG only; the merge request from
    CI_MERGE_REQUEST_PROJECT_PATH and CI_MERGE_REQUEST_IID; the read token from the CI variable
    ``--read-token-variable`` names. Exit 0 pass, 1 refused, 2 could not decide.
    """
    ctx = ctx or Context()
    check_name = VALIDATOR_CHECKS[name]
    try:
        parser = _ArgParser(prog=f"{name}.py", description=validator_main.__doc__)
        parser.add_argument(
            "--read-token-variable",
            metavar="NAME",
            help="the CI variable holding a token that can read the tracker's issue notes",
        )
        parser.add_argument(
            "--automation-families",
            type=Path,
            metavar="PATH",
            help=f"the automation roster (default: the {ROSTER_FILENAME} beside ownership.py)",
        )
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if not ctx.env.get(CONFIG_ENV, "").strip():
            raise ConfigError(
                f"{name}: {CONFIG_ENV} is not set: the validators read their configuration "
                f"from the file it names, and from nowhere else"
            )
        config = load_config(ctx.env)
        project, iid = _ci_merge_request(ctx.env, name)
        env = dict(ctx.env)
        if args.read_token_variable:
            env[config.env_name("TASK_API_TOKEN")] = _ci_token(ctx.env, args.read_token_variable)
        client = gitlab_from_env(config, env)
        families = load_automation_families(roster_path(config, args.automation_families))
        verdict = gate_merge(client, config, project, iid, families=families, now=ctx.now())
    except Exception as exc:  # the validators' one translation point: never a pass
        print(f"{name}: could not decide; this job fails closed.", file=ctx.stderr)
        return report(exc, ctx.stderr)
    check: Check = getattr(verdict, check_name)
    head = f" at {verdict.head_sha}" if verdict.head_sha else ""
    print(f"{name}: {verdict.project}!{verdict.iid}{head}", file=ctx.stdout)
    for warning in verdict.warnings:
        print(f"warning: {warning}", file=ctx.stdout)
    if not check.ok:
        print(f"FAILED: {check.message}", file=ctx.stdout)
        print(f"Background: {config['handoff_doc']}.", file=ctx.stdout)
        return Exit.REFUSED
    if check.code == "never-approved":
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


def _ci_merge_request(env: Mapping[str, str], name: str) -> tuple[str, int]:
    project = env.get("CI_MERGE_REQUEST_PROJECT_PATH", "").strip()
    iid = env.get("CI_MERGE_REQUEST_IID", "").strip()
    if not project or not iid.isdigit():
        raise UsageError(
            f"{name}: CI_MERGE_REQUEST_PROJECT_PATH and CI_MERGE_REQUEST_IID are not both set: "
            f"this validator runs in a merge request pipeline "
            f'(rules: if $CI_PIPELINE_SOURCE == "merge_request_event")'
        )
    return project, int(iid)


def _ci_token(env: Mapping[str, str], variable: str) -> str:
    token = env.get(variable, "").strip()
    if not token:
        raise ConfigError(
            f"the CI variable {variable} (the component's read-token-variable input) is not set "
            f"or is empty in this pipeline: add it as a masked CI/CD variable holding a token "
            f"that can read the tracker's issues (CI_JOB_TOKEN cannot read issue notes)"
        )
    return token
