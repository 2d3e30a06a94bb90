"""The CI/CD Catalog component, run by gitlab-ci-local against the sandbox.

A consumer repository includes ``mr-ownership-gate`` the way GitLab's docs say a component tests
itself (``$CI_SERVER_FQDN/$CI_PROJECT_PATH/<name>@$CI_COMMIT_SHA``, which gitlab-ci-local reads
from the working tree); the tracker repository in the sandbox holds the five files the jobs
fetch. The jobs run in the local shell, so this machine's python3 stands for the job image.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pairgate.sandbox.testing import RunningSandbox
from tests.conftest import FIXTURE_CONFIG, FIXTURES, ROOT
from tests.gate_world import (
    World,
    approval_one_push_behind,
    approved_at_head,
    never_approved,
    outside_the_group,
    self_approval_only,
    unclaimed_issue,
)

pytestmark = pytest.mark.slow

RECORD, APPROVAL = "validate-mr-carries-ownership-record", "validate-mr-approval-at-head"
TEMPLATE = ROOT / "templates" / "mr-ownership-gate" / "template.yml"
INPUTS = {
    "image": "python:3.11-slim",
    "runner-tags": ["pairgate", "linux"],
    "tracker-project": "acme/tracker",
    "env-prefix": "PAIRGATE_TEST",
    "read-token-variable": "GATE_READ_TOKEN",
    "reader-path": "gate/ownership.py",
    "config-path": "gate/pairgate-config.json",
    "roster-path": "gate/automation_mr_families.py",
    "record-validator-path": f"gate/{RECORD}.py",
    "approval-validator-path": f"gate/{APPROVAL}.py",
}
TRACKER_FILES = {
    "gate/ownership.py": ROOT / "pairgate" / "ownership.py",
    "gate/pairgate-config.json": FIXTURE_CONFIG,
    "gate/automation_mr_families.py": FIXTURES / "automation_mr_families.py",
    f"gate/{RECORD}.py": ROOT / "validators" / f"{RECORD}.py",
    f"gate/{APPROVAL}.py": ROOT / "validators" / f"{APPROVAL}.py",
}


def gitlab_ci_local() -> str:
    """gitlab-ci-local as scripts/test installs it, else from PATH. Absent under CI it is a
    failure, not a skip: CI must never pass by not running the component."""
    local = ROOT / ".cache" / "gitlab-ci-local" / "node_modules" / ".bin" / "gitlab-ci-local"
    found = str(local) if local.exists() else shutil.which("gitlab-ci-local")
    missing = [] if found else ["gitlab-ci-local 4.73.0 (npm)"]
    missing += [] if shutil.which("rsync") else ["rsync (apt-get install -y rsync)"]
    if missing:
        why = f"the component tests need {' and '.join(missing)}; bash scripts/test installs them"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    assert found is not None
    return found


@dataclass(frozen=True)
class Pipeline:
    code: int
    output: str

    def job(self, name: str) -> str:
        """PASS or FAIL, from gitlab-ci-local's summary."""
        found = re.search(rf"^ (PASS|FAIL)\s.*?{re.escape(name)}\s*$", self.output, re.MULTILINE)
        assert found, self.output
        return found.group(1)

    def lines(self, name: str) -> str:
        """What one job printed."""
        return "\n".join(re.findall(rf"^{re.escape(name)}\s+> (.*)$", self.output, re.MULTILINE))


def consumer(path: Path, inputs: dict[str, object]) -> Path:
    """A repository that includes the component as GitLab's docs say a component tests
    itself; gitlab-ci-local takes the template from its working tree."""
    target = path / "templates" / "mr-ownership-gate"
    target.mkdir(parents=True)
    shutil.copy(TEMPLATE, target / "template.yml")
    include = {
        "component": "$CI_SERVER_FQDN/$CI_PROJECT_PATH/mr-ownership-gate@$CI_COMMIT_SHA",
        "inputs": inputs,
    }
    (path / ".gitlab-ci.yml").write_text(yaml.safe_dump({"include": [include]}), encoding="utf-8")
    git = ["git", "-c", "user.name=gate", "-c", "user.email=gate@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run([*git, "commit", "-qm", "consumer"], cwd=path, check=True)
    return path


def publish(sandbox: RunningSandbox, **replace: str) -> None:
    """Commit the five files into the tracker repository's default branch."""
    files = {path: source.read_text(encoding="utf-8") for path, source in TRACKER_FILES.items()}
    files.update(replace)
    sandbox.commit("main", files, project="acme/tracker", message="Deploy the gate")


def run(
    repo: Path,
    sandbox: RunningSandbox,
    mr: tuple[str, int] | None,
    *,
    python: Path | None = None,
    variables: dict[str, str] | None = None,
) -> Pipeline:
    """Run the consumer's pipeline. The jobs' python3 is this interpreter, or the fake one in
    the directory ``python`` names."""
    values = {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_SERVER_URL": sandbox.url,
        "CI_API_V4_URL": sandbox.api_url,
        "GATE_READ_TOKEN": sandbox.info["users"]["agents"]["read_token"],
    }
    if mr is not None:
        values["CI_MERGE_REQUEST_PROJECT_PATH"], iid = mr
        values["CI_MERGE_REQUEST_IID"] = str(iid)
    values.update(variables or {})
    argv = [gitlab_ci_local(), "--force-shell-executor", "--shell-executor-no-image"]
    argv += ["--ignore-predefined-vars", "CI_PIPELINE_SOURCE,CI_API_V4_URL,CI_SERVER_URL"]
    for name, value in values.items():
        argv += ["--variable", f"{name}={value}"]
    # A HOME of its own: the shell executor's bash reads ~/.bashrc, which may put another
    # python3 first on PATH.
    home = repo.parent / "home"
    home.mkdir(exist_ok=True)
    first = python or Path(sys.executable).parent
    env = {"PATH": f"{first}:{os.environ['PATH']}", "HOME": str(home)}
    proc = subprocess.run(
        argv, cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return Pipeline(proc.returncode, proc.stdout + proc.stderr)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return consumer(tmp_path / "consumer", INPUTS)


@pytest.fixture
def world(sandbox: RunningSandbox) -> World:
    publish(sandbox)
    return World(sandbox)


BACKGROUND = "Background: docs/agent-handoff.md."


@pytest.mark.parametrize(
    ("build", "record", "approval", "says"),
    [
        (approved_at_head, "PASS", "PASS", "may merge: acme-review approved its head"),
        (unclaimed_issue, "FAIL", "PASS", "which nobody holds; pairgate claim 2 --role lead"),
        (
            self_approval_only,
            "PASS",
            "FAIL",
            "the only approval of acme/app!1 at its head is a self-approval",
        ),
        (approval_one_push_behind, "PASS", "FAIL", "a push after an approval voids it"),
        (never_approved, "PASS", "PASS", "has no approval yet"),
        (outside_the_group, "PASS", "PASS", "not gated: outside/app is not in group acme"),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_each_job_gives_its_verdict(
    repo: Path,
    sandbox: RunningSandbox,
    world: World,
    build: Callable[[World], tuple[str, int]],
    record: str,
    approval: str,
    says: str,
) -> None:
    result = run(repo, sandbox, build(world))
    assert (result.job(RECORD), result.job(APPROVAL)) == (record, approval)
    assert result.code == (1 if "FAIL" in (record, approval) else 0)
    output = {RECORD: result.lines(RECORD), APPROVAL: result.lines(APPROVAL)}
    for part in says.split("; "):
        assert part in output[RECORD] + output[APPROVAL], result.output
    for name, status in ((RECORD, record), (APPROVAL, approval)):
        assert output[name].endswith(BACKGROUND) == (status == "FAIL")


def test_the_default_branch_head_is_resolved_once_and_every_file_read_at_it(
    repo: Path, sandbox: RunningSandbox, world: World
) -> None:
    mr = approved_at_head(world)
    sandbox.clear_requests()
    run(repo, sandbox, mr)
    log = sandbox.requests()
    heads = [r for r in log if r["path"].endswith("/repository/branches/main")]
    files = [r for r in log if "/repository/files/" in r["path"]]
    assert len(heads) == 2  # once in each of the two jobs
    assert len(files) == 10
    sha = sandbox.api("GET", "/projects/acme%2Ftracker/repository/branches/main")["commit"]["id"]
    assert all(sha in str(r["query"]) for r in files), files


@pytest.mark.parametrize(
    ("key", "value"), [("tracker_project", "acme/elsewhere"), ("env_prefix", "OTHER")]
)
def test_a_fetched_configuration_naming_another_tracker_or_prefix_is_refused(
    repo: Path, sandbox: RunningSandbox, world: World, key: str, value: str
) -> None:
    mr = approved_at_head(world)
    config = json.loads(FIXTURE_CONFIG.read_text(encoding="utf-8"))
    publish(sandbox, **{"gate/pairgate-config.json": json.dumps({**config, key: value})})
    result = run(repo, sandbox, mr)
    assert (result.code, result.job(RECORD), result.job(APPROVAL)) == (1, "FAIL", "FAIL")
    assert f"{key} {value!r}" in result.output
    assert "but this pipeline's inputs say 'acme/tracker' and 'PAIRGATE_TEST'" in result.output
    assert "refused: the configuration fetched from acme/tracker" in result.output
    assert "passed" not in result.lines(RECORD)  # the validator never ran


@pytest.mark.parametrize("name", ["image", "read-token-variable", "roster-path", "runner-tags"])
def test_a_missing_input_is_an_invalid_pipeline(
    tmp_path: Path, sandbox: RunningSandbox, name: str
) -> None:
    repo = consumer(tmp_path / "consumer", {k: v for k, v in INPUTS.items() if k != name})
    result = run(repo, sandbox, None)
    assert result.code == 1
    assert f"`{name}` input: required value has not been provided" in result.output


def test_every_input_is_required() -> None:
    spec = next(yaml.safe_load_all(TEMPLATE.read_text(encoding="utf-8")))
    inputs = spec["spec"]["inputs"]
    assert sorted(inputs) == sorted(INPUTS)
    assert [name for name, declared in inputs.items() if "default" in declared] == []


def test_the_jobs_run_only_in_merge_request_pipelines_and_never_allow_failure(
    repo: Path, sandbox: RunningSandbox
) -> None:
    preview = subprocess.run(
        [gitlab_ci_local(), "--preview"], cwd=repo, capture_output=True, text=True, check=True
    )
    jobs = yaml.safe_load(preview.stdout.split("\n---\n", 1)[-1])
    assert {RECORD, APPROVAL} <= set(jobs)
    for name in (RECORD, APPROVAL):
        job = jobs[name]
        assert job["allow_failure"] is False
        assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
        assert job["image"] == {"name": "python:3.11-slim"}
        assert job["tags"] == ["pairgate", "linux"]
    result = run(repo, sandbox, None, variables={"CI_PIPELINE_SOURCE": "push"})
    assert "starting shell" not in result.output


def test_an_unset_read_token_variable_is_a_clear_failure(
    repo: Path, sandbox: RunningSandbox, world: World
) -> None:
    result = run(repo, sandbox, approved_at_head(world), variables={"GATE_READ_TOKEN": ""})
    assert (result.job(RECORD), result.job(APPROVAL)) == ("FAIL", "FAIL")
    assert "the CI variable GATE_READ_TOKEN (input read-token-variable) is not set" in result.output


def fake_python(directory: Path, script: str) -> Path:
    """A directory whose python3 is ``script`` (a shell script)."""
    directory.mkdir()
    python = directory / "python3"
    python.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    python.chmod(0o755)
    return directory


def test_an_old_python_in_the_image_is_a_clear_error(
    repo: Path, sandbox: RunningSandbox, world: World, tmp_path: Path
) -> None:
    old = fake_python(tmp_path / "old", 'if [ "$1" = -V ]; then echo "Python 3.9.2"; fi\nexit 1')
    result = run(repo, sandbox, approved_at_head(world), python=old)
    assert (result.job(RECORD), result.job(APPROVAL)) == ("FAIL", "FAIL")
    assert "the job image has Python 3.9.2; the validators need python3 >= 3.11" in result.output
    assert "Traceback" not in result.output


def test_an_image_without_the_modules_is_a_clear_error(
    repo: Path, sandbox: RunningSandbox, world: World, tmp_path: Path
) -> None:
    bare = fake_python(tmp_path / "bare", f'exec {sys.executable} -S "$@"')  # no site-packages
    result = run(repo, sandbox, approved_at_head(world), python=bare)
    assert (result.job(RECORD), result.job(APPROVAL)) == ("FAIL", "FAIL")
    assert "python3 lacks: requests jsonschema yaml" in result.output
    assert "Traceback" not in result.output


def test_pairgate_gates_its_own_development(tmp_path: Path) -> None:
    """The project's own .gitlab-ci.yml includes the component from its own commit, once the
    project's settings name the gate's image and runner tag."""
    repo = tmp_path / "pairgate"
    shutil.copytree(ROOT / "templates", repo / "templates")
    shutil.copy(ROOT / ".gitlab-ci.yml", repo)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    git = ["git", "-c", "user.name=gate", "-c", "user.email=gate@example.invalid"]
    subprocess.run([*git, "commit", "-qm", "pairgate"], cwd=repo, check=True)
    # A merge request pipeline: GitLab sets no CI_COMMIT_BRANCH there (gitlab-ci-local would
    # take the checkout's branch).
    argv = [gitlab_ci_local(), "--list-json"]
    argv += ["--ignore-predefined-vars", "CI_PIPELINE_SOURCE,CI_COMMIT_BRANCH"]
    argv += [
        "--variable",
        "CI_PIPELINE_SOURCE=merge_request_event",
        "--variable",
        "CI_COMMIT_BRANCH=",
    ]

    def jobs() -> dict[str, str]:
        """The jobs the pipeline runs (the publishing jobs' rules leave them out: never)."""
        listed = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=True)
        return {j["name"]: j["when"] for j in json.loads(listed.stdout) if j["when"] != "never"}

    assert jobs() == {"tests": "on_success", "wheel": "on_success", "issue-reference": "on_success"}
    # gitlab-ci-local evaluates include:rules with this file's variables, as GitLab does with
    # the project's CI/CD variables.
    (repo / ".gitlab-ci-local-variables.yml").write_text(
        "PAIRGATE_GATE_IMAGE: python:3.11\nPAIRGATE_GATE_RUNNER_TAG: gate\n", encoding="utf-8"
    )
    assert jobs() == {
        "tests": "on_success",
        "wheel": "on_success",
        "issue-reference": "on_success",
        RECORD: "on_success",
        APPROVAL: "on_success",
    }
