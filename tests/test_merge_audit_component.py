"""The merge-audit component, run by gitlab-ci-local against the sandbox as a scheduled pipeline:
it fetches its three files from the tracker at one commit and runs the audit, isolated."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.audit_cases import by_curl_without_approval, through_the_gate
from tests.kit.gcl import Pipeline, fake_python, gitlab_ci_local
from tests.kit.names import FIXTURE_CONFIG, FIXTURES, ROOT
from tests.kit.world import World

pytestmark = pytest.mark.slow

JOB = "pairgate-merge-audit"
TEMPLATE = ROOT / "templates" / "merge-audit" / "template.yml"
INPUTS: dict[str, Any] = {
    "image": "python:3.11-slim",
    "runner-tags": ["pairgate"],
    "tracker-project": "acme/tracker",
    "env-prefix": "PAIRGATE_TEST",
    "read-token-variable": "AUDIT_READ_TOKEN",
    "write-token-variable": "AUDIT_WRITE_TOKEN",
    "reader-path": "gate/ownership.py",
    "config-path": "gate/pairgate-config.json",
    "roster-path": "gate/automation_mr_families.py",
    "days": 7,
    "file-issues": True,
}
TRACKER_FILES = {
    "gate/ownership.py": ROOT / "pairgate" / "ownership.py",
    "gate/pairgate-config.json": FIXTURE_CONFIG,
    "gate/automation_mr_families.py": FIXTURES / "automation_mr_families.py",
}


def consumer(path: Path, inputs: dict[str, Any], extra: dict[str, Any] | None = None) -> Path:
    target = path / "templates" / "merge-audit"
    target.mkdir(parents=True)
    shutil.copy(TEMPLATE, target / "template.yml")
    include = {"component": "$CI_SERVER_FQDN/$CI_PROJECT_PATH/merge-audit@$CI_COMMIT_SHA"}
    document = {"include": [{**include, "inputs": inputs}], **(extra or {})}
    (path / ".gitlab-ci.yml").write_text(yaml.safe_dump(document), encoding="utf-8")
    git = ["git", "-c", "user.name=audit", "-c", "user.email=audit@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run([*git, "commit", "-qm", "consumer"], cwd=path, check=True)
    return path


def publish(sandbox: RunningSandbox) -> None:
    """The deployment's publish, eight days ago: it is a push to the tracker's default branch
    without a merge request, which the audit reports inside its window (a week)."""
    files = {path: source.read_text(encoding="utf-8") for path, source in TRACKER_FILES.items()}
    sandbox.advance_clock(-8 * 86400)
    sandbox.commit("main", files, project="acme/tracker", message="Deploy the audit")
    sandbox.advance_clock(8 * 86400)


def run(
    repo: Path,
    sandbox: RunningSandbox,
    *,
    schema: bool = False,
    python: Path | None = None,
    **variables: str,
) -> Pipeline:
    """The scheduled pipeline. Its python3 is this interpreter, or the one in the directory
    ``python`` names. ``schema`` checks the configuration against GitLab's CI schema first (as
    in tests/kit/gcl.py: a quarter of a second a run, so only the tests of a configuration not
    checked yet ask for it)."""
    values = {
        "CI_PIPELINE_SOURCE": "schedule",
        "CI_SERVER_URL": sandbox.url,
        "CI_API_V4_URL": sandbox.api_url,
        "AUDIT_READ_TOKEN": sandbox.info["users"]["agents"]["read_token"],
        "AUDIT_WRITE_TOKEN": sandbox.token("agents"),
        **variables,
    }
    argv = [gitlab_ci_local(), "--force-shell-executor", "--shell-executor-no-image"]
    if not schema:
        argv.append("--no-json-schema-validation")
    argv += ["--ignore-predefined-vars", "CI_PIPELINE_SOURCE,CI_API_V4_URL,CI_SERVER_URL"]
    for name, value in values.items():
        argv += ["--variable", f"{name}={value}"]
    home = repo.parent / "home"
    home.mkdir(exist_ok=True)
    first = python or Path(sys.executable).parent
    env = {"PATH": f"{first}:{os.environ['PATH']}", "HOME": str(home)}
    proc = subprocess.run(
        argv, cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return Pipeline(proc.returncode, proc.stdout + proc.stderr)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The consumer, made once for the module (three git programs); no run happens in it."""
    return consumer(tmp_path_factory.mktemp("checkout") / "consumer", INPUTS)


@pytest.fixture
def repo(checkout: Path, tmp_path: Path) -> Path:
    """A copy of that consumer, git directory and all, for one test's runs."""
    return Path(shutil.copytree(checkout, tmp_path / "consumer", symlinks=True))


def audit_issues(sandbox: RunningSandbox) -> list[dict[str, Any]]:
    path = "/projects/acme%2Ftracker/issues"
    return list(sandbox.api("GET", path, params={"labels": "pairgate::audit", "state": "all"}))


def test_a_merge_around_the_gate_fails_the_scheduled_job_and_is_filed_once(
    repo: Path, sandbox: RunningSandbox
) -> None:
    publish(sandbox)
    world = World(sandbox)
    through_the_gate(world)
    mr, _ = by_curl_without_approval(world)
    first = run(repo, sandbox)
    assert first.job(JOB) == "FAIL" and first.code == 1, first.output
    lines = first.lines(JOB)
    assert f"FINDING {mr['project']}!{mr['iid']} merged at" in lines, first.output
    assert "(opened now)" in lines and "fetched 3 files from acme/tracker at" in lines
    second = run(repo, sandbox)
    assert second.job(JOB) == "FAIL" and "(already filed)" in second.lines(JOB)
    assert len(audit_issues(sandbox)) == 1


def test_a_clean_window_passes(repo: Path, sandbox: RunningSandbox) -> None:
    publish(sandbox)
    through_the_gate(World(sandbox))
    result = run(repo, sandbox, schema=True)  # and GitLab's CI schema accepts the job
    assert result.job(JOB) == "PASS" and result.code == 0, result.output
    assert "0 finding(s)" in result.lines(JOB)


def test_an_old_python_in_the_image_is_a_clear_error(
    repo: Path, sandbox: RunningSandbox, tmp_path: Path
) -> None:
    publish(sandbox)
    old = fake_python(
        tmp_path / "old", 'case " $* " in *" -V "*) echo "Python 3.9.2";; esac\nexit 1'
    )
    result = run(repo, sandbox, python=old)
    assert result.job(JOB) == "FAIL" and result.code == 1, result.output
    assert "merge-audit: the job image has Python 3.9.2; the audit needs python3 >= 3.11" in (
        result.output
    )
    assert "Traceback" not in result.output


def test_an_image_without_the_modules_is_a_clear_error(
    repo: Path, sandbox: RunningSandbox, tmp_path: Path
) -> None:
    publish(sandbox)
    bare = fake_python(tmp_path / "bare", f'exec {sys.executable} -S "$@"')  # no site-packages
    result = run(repo, sandbox, python=bare)
    assert result.job(JOB) == "FAIL" and result.code == 1, result.output
    assert "merge-audit: the job image's python3 lacks: requests jsonschema yaml" in result.output
    assert "Traceback" not in result.output


def test_the_files_come_from_one_commit_and_nothing_else_is_fetched(
    repo: Path, sandbox: RunningSandbox
) -> None:
    publish(sandbox)
    sandbox.clear_requests()
    run(repo, sandbox)
    log = sandbox.requests()
    heads = [r for r in log if r["path"].endswith("/repository/branches/main")]
    files = [r for r in log if "/repository/files/" in r["path"]]
    sha = sandbox.api("GET", "/projects/acme%2Ftracker/repository/branches/main")["commit"]["id"]
    assert len(heads) == 1 and len(files) == 3
    assert all(f"ref={sha}" in str(r["query"]) for r in files), files


def test_global_variables_and_defaults_do_not_reach_the_job(
    tmp_path: Path, sandbox: RunningSandbox
) -> None:
    """A pipeline file's global variables and default: keywords: the job inherits neither, and
    the audit runs in an environment of its own."""
    extra = {
        "variables": {"PAIRGATE_TEST_GITLAB_URL": "http://127.0.0.1:9", "PYTHONPATH": "/evil"},
        "default": {"before_script": ["echo INHERITED-BEFORE-SCRIPT"]},
    }
    repo = consumer(tmp_path / "consumer", INPUTS, extra)
    publish(sandbox)
    through_the_gate(World(sandbox))
    result = run(repo, sandbox, schema=True)  # a configuration of its own: GitLab's schema too
    assert result.job(JOB) == "PASS", result.output
    assert "INHERITED-BEFORE-SCRIPT" not in result.output


def test_a_fetched_configuration_naming_another_tracker_is_refused(
    repo: Path, sandbox: RunningSandbox
) -> None:
    publish(sandbox)
    config = FIXTURE_CONFIG.read_text(encoding="utf-8").replace("PAIRGATE_TEST", "OTHER")
    sandbox.commit("main", {"gate/pairgate-config.json": config}, project="acme/tracker")
    result = run(repo, sandbox)
    assert result.job(JOB) == "FAIL"
    assert "refused: the configuration fetched from acme/tracker" in result.output
    assert "env_prefix 'OTHER'" in result.output


def test_an_unset_write_token_with_file_issues_is_a_clear_failure(
    repo: Path, sandbox: RunningSandbox
) -> None:
    publish(sandbox)
    result = run(repo, sandbox, AUDIT_WRITE_TOKEN="")
    assert result.job(JOB) == "FAIL"
    assert "the CI variable AUDIT_WRITE_TOKEN (input write-token-variable) is not set" in (
        result.output
    )


def test_the_job_runs_only_in_scheduled_pipelines(repo: Path, sandbox: RunningSandbox) -> None:
    preview = subprocess.run(
        [gitlab_ci_local(), "--preview"], cwd=repo, capture_output=True, text=True, check=True
    )
    job = yaml.safe_load(preview.stdout.split("\n---\n", 1)[-1])[JOB]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    assert job["inherit"] == {"default": False, "variables": False}
    assert job["variables"] == {"GIT_STRATEGY": "none"} and job["allow_failure"] is False
    result = run(repo, sandbox, CI_PIPELINE_SOURCE="merge_request_event")
    assert "starting shell" not in result.output


def test_every_input_is_required() -> None:
    spec = next(yaml.safe_load_all(TEMPLATE.read_text(encoding="utf-8")))
    inputs = spec["spec"]["inputs"]
    assert sorted(inputs) == sorted(INPUTS)
    assert [name for name, declared in inputs.items() if "default" in declared] == []


@pytest.mark.parametrize("name", ["read-token-variable", "days", "file-issues"])
def test_a_missing_input_is_an_invalid_pipeline(
    tmp_path: Path, sandbox: RunningSandbox, name: str
) -> None:
    repo = consumer(tmp_path / "consumer", {k: v for k, v in INPUTS.items() if k != name})
    result = run(repo, sandbox)
    assert result.code == 1
    assert f"`{name}` input: required value has not been provided" in result.output


def test_an_input_that_could_break_out_of_the_job_text_is_refused(
    tmp_path: Path, sandbox: RunningSandbox
) -> None:
    inputs = {**INPUTS, "tracker-project": 'acme/tracker"; import os; os.system("id")  #'}
    repo = consumer(tmp_path / "consumer", inputs)
    result = run(repo, sandbox)
    assert result.code == 1 and "does not match required regex" in (result.output)
