"""merge-check and the validators against the sandbox: output, exit codes, failing closed."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.doors import validator_main
from pairgate.standalone.entry import standalone_main
from pairgate.standalone.errors import Context
from tests.kit.gate_cases import (
    approved_at_head,
    ci_variables,
    never_approved,
    self_approval_only,
    shared_in_never_approved,
)
from tests.kit.names import FIXTURE_CONFIG, ROOT
from tests.kit.run import run_cli
from tests.kit.world import World

RECORD, APPROVAL = "validate-mr-carries-ownership-record", "validate-mr-approval-at-head"


def env(sandbox: RunningSandbox, **extra: str) -> dict[str, str]:
    return {
        "PAIRGATE_CONFIG": str(FIXTURE_CONFIG),
        "PAIRGATE_TEST_GITLAB_URL": sandbox.url,
        "PAIRGATE_TEST_TASK_API_TOKEN": sandbox.info["users"]["agents"]["read_token"],
        **extra,
    }


def merge_check(sandbox: RunningSandbox, mr: tuple[str, int], *flags: str):  # type: ignore[no-untyped-def]
    argv = ["merge-check", "--mr", str(mr[1]), "--mr-project", mr[0], *flags]
    return run_cli(argv, env(sandbox))


def test_a_pass_prints_the_merge_command_on_stdout(sandbox: RunningSandbox) -> None:
    mr = approved_at_head(World(sandbox))
    result = merge_check(sandbox, mr)
    head = World(sandbox).head({"project": mr[0], "iid": mr[1]})
    assert result.code == 0 and "may merge" not in result.err
    assert result.out.strip().endswith(f"glab mr merge {mr[1]} -R {mr[0]} --sha {head}")


def test_a_refusal_says_what_to_run_on_stderr(sandbox: RunningSandbox) -> None:
    result = merge_check(sandbox, self_approval_only(World(sandbox)))
    assert (result.code, result.out) == (1, "")
    assert "self-approval by acme-solo" in result.err
    assert "pairgate handoff 2 --to <reviewer> --role review --sha" in result.err


def test_json_has_the_documented_keys(sandbox: RunningSandbox) -> None:
    result = merge_check(sandbox, never_approved(World(sandbox)), "--json")
    assert result.code == 1
    verdict = json.loads(result.out)
    assert verdict["verdict"] == "never-approved" and verdict["allowed"] is False
    assert verdict["record"] == {"ok": True, "code": "claimed"}
    assert verdict["approval"] == {"ok": True, "code": "never-approved"}
    assert verdict["mr"] == {"project": "acme/app", "iid": 1}


def test_verbose_says_which_gitlab_and_why(sandbox: RunningSandbox) -> None:
    result = merge_check(sandbox, never_approved(World(sandbox)), "--verbose")
    assert f"GitLab API {sandbox.api_url} (from PAIRGATE_TEST_GITLAB_URL)" in result.err
    assert "scope: in-scope (acme/app is in group acme)" in result.err
    assert "cited tracker issues: #2" in result.err


@pytest.mark.parametrize(
    ("build", "path"),
    [
        (approved_at_head, r"/merge_requests/\d+$"),
        (approved_at_head, r"/issues/\d+/notes"),
        (shared_in_never_approved, r"/groups/100/projects"),
    ],
)
@pytest.mark.parametrize("status", [403, 404])
def test_any_read_error_is_could_not_decide_never_a_pass(
    sandbox: RunningSandbox, build: object, path: str, status: int
) -> None:
    mr = build(World(sandbox))  # type: ignore[operator]
    sandbox.fault(method="GET", path=path, status=status, count=50)
    result = merge_check(sandbox, mr)
    assert (result.code, result.out) == (2, "")
    assert "merge-check: could not decide, so no pass: " in result.err
    assert f"HTTP {status}" in result.err


def validator(name: str, environment: dict[str, str], *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = validator_main(name, list(argv), Context(env=environment, stdout=out, stderr=err))
    return code, out.getvalue(), err.getvalue()


def ci_env(sandbox: RunningSandbox, mr: tuple[str, int], **extra: str) -> dict[str, str]:
    """A gate job's environment in a merge request pipeline of ``mr`` (a running sandbox job)."""
    return {
        "PAIRGATE_CONFIG": str(FIXTURE_CONFIG),
        "GATE_READ_TOKEN": sandbox.info["users"]["agents"]["read_token"],
        **ci_variables(sandbox, mr),
        **extra,
    }


@pytest.mark.parametrize("name", [RECORD, APPROVAL])
def test_a_validator_reads_pairgate_config_only(sandbox: RunningSandbox, name: str) -> None:
    environment = ci_env(sandbox, approved_at_head(World(sandbox)))
    del environment["PAIRGATE_CONFIG"]
    code, out, err = validator(name, environment, "--read-token-variable", "GATE_READ_TOKEN")
    assert (code, out) == (2, "")
    assert "PAIRGATE_CONFIG is not set" in err and "fails closed" in err


@pytest.mark.parametrize(
    ("unset", "says"),
    [
        ("CI_MERGE_REQUEST_IID", "CI_MERGE_REQUEST_IID is '', not a number"),
        ("CI_MERGE_REQUEST_PROJECT_PATH", "CI_MERGE_REQUEST_PROJECT_PATH is '', but the job token"),
        ("CI_JOB_TOKEN", "CI_JOB_TOKEN is empty: only a running job's own token proves its job"),
        ("CI_API_V4_URL", "CI_SERVER_URL and CI_API_V4_URL are not both set"),
    ],
)
def test_a_validator_outside_a_merge_request_pipeline_cannot_decide(
    sandbox: RunningSandbox, unset: str, says: str
) -> None:
    environment = ci_env(sandbox, approved_at_head(World(sandbox)))
    del environment[unset]
    code, _, err = validator(RECORD, environment, "--read-token-variable", "GATE_READ_TOKEN")
    assert code == 2 and says in err, err


def test_an_empty_read_token_variable_is_named(sandbox: RunningSandbox) -> None:
    environment = ci_env(sandbox, approved_at_head(World(sandbox)), GATE_READ_TOKEN=" ")
    code, _, err = validator(APPROVAL, environment, "--read-token-variable", "GATE_READ_TOKEN")
    assert code == 2 and "the CI variable GATE_READ_TOKEN" in err


def test_a_malformed_roster_the_validator_is_told_is_an_error(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    roster = tmp_path / "roster.py"
    roster.write_text("import os\n", encoding="utf-8")
    environment = ci_env(sandbox, approved_at_head(World(sandbox)))
    code, _, err = validator(
        RECORD,
        environment,
        "--read-token-variable",
        "GATE_READ_TOKEN",
        "--automation-families",
        str(roster),
    )
    assert code == 2 and "malformed automation roster" in err


def test_standalone_usage_errors_exit_2() -> None:
    err = io.StringIO()
    ctx = Context(env={}, stdout=io.StringIO(), stderr=err)
    assert standalone_main(["merge-check", "--mr", "x"], ctx) == 2
    assert "--mr: invalid int value" in err.getvalue()


@pytest.mark.parametrize("name", [RECORD, APPROVAL])
def test_a_validator_finds_ownership_beside_it_under_a_safe_path_python(
    tmp_path: Path, name: str
) -> None:
    # An image may set PYTHONSAFEPATH, which keeps a script's own directory off sys.path: the
    # validator still imports the ownership.py beside it, and fails closed with exit 2, not 1.
    shutil.copy(ROOT / "pairgate" / "ownership.py", tmp_path)
    shutil.copy(ROOT / "validators" / f"{name}.py", tmp_path)
    environment = {"PATH": os.environ["PATH"], "PYTHONSAFEPATH": "1"}
    script = str(tmp_path / f"{name}.py")
    result = subprocess.run(
        [sys.executable, "-B", script], env=environment, cwd="/", capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    assert "PAIRGATE_CONFIG is not set" in result.stderr
