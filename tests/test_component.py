"""The CI/CD Catalog component mr-ownership-gate, run by gitlab-ci-local against the sandbox.

A consumer repository includes the component from its working tree (tests/kit/gcl.py says how a
run stands in for GitLab); the tracker repository in the sandbox holds the five files the jobs
fetch, and a sandbox pipeline of the merge request gives the jobs the job token GET /job
answers for. The jobs run in the local shell, so this machine's python3 stands for the job
image.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.gate_cases import (
    approval_one_push_behind,
    approved_at_head,
    ci_variables,
    never_approved,
    outside_the_group,
    self_approval_only,
    unclaimed_issue,
)
from tests.kit.gcl import (
    APPROVAL,
    GATE_INPUTS,
    RECORD,
    component_files,
    component_include,
    dump,
    fake_python,
    gitlab_ci_local,
    preview,
    publish,
    repository,
    run,
)
from tests.kit.names import FIXTURE_CONFIG, ROOT
from tests.kit.world import World

pytestmark = pytest.mark.slow

TEMPLATE = ROOT / "templates" / "mr-ownership-gate" / "template.yml"
JOBS = (RECORD, APPROVAL)


def consumer(path: Path, sandbox: RunningSandbox, inputs: dict[str, object]) -> Path:
    ci = {"include": [component_include("mr-ownership-gate", inputs)]}
    return repository(
        path, sandbox, {**component_files("mr-ownership-gate"), ".gitlab-ci.yml": dump(ci)}
    )


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory, sandbox_server: RunningSandbox) -> Path:
    """The consumer with the deployment's inputs, made once for the module (seven git
    programs); no run happens in it."""
    return consumer(tmp_path_factory.mktemp("checkout") / "consumer", sandbox_server, GATE_INPUTS)


@pytest.fixture
def repo(checkout: Path, tmp_path: Path) -> Path:
    """A copy of that consumer, git directory and all, for one test's runs."""
    return Path(shutil.copytree(checkout, tmp_path / "consumer", symlinks=True))


@pytest.fixture
def world(sandbox: RunningSandbox) -> World:
    publish(sandbox)
    return World(sandbox)


def ci(sandbox: RunningSandbox, mr: tuple[str, int]) -> dict[str, str]:
    return ci_variables(sandbox, mr, jobs=JOBS)


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
    result = run(repo, sandbox, ci(sandbox, build(world)))
    assert (result.job(RECORD), result.job(APPROVAL)) == (record, approval), result.output
    assert result.code == (1 if "FAIL" in (record, approval) else 0)
    output = {RECORD: result.lines(RECORD), APPROVAL: result.lines(APPROVAL)}
    for part in says.split("; "):
        assert part in output[RECORD] + output[APPROVAL], result.output
    for name, status in ((RECORD, record), (APPROVAL, approval)):
        assert output[name].endswith(BACKGROUND) == (status == "FAIL")


def test_the_default_branch_head_is_resolved_once_and_every_file_read_at_it(
    repo: Path, sandbox: RunningSandbox, world: World
) -> None:
    variables = ci(sandbox, approved_at_head(world))
    sandbox.clear_requests()
    run(repo, sandbox, variables)
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
    variables = ci(sandbox, approved_at_head(world))
    config = json.loads(FIXTURE_CONFIG.read_text(encoding="utf-8"))
    publish(sandbox, **{"gate/pairgate-config.json": json.dumps({**config, key: value})})
    result = run(repo, sandbox, variables)
    assert (result.code, result.job(RECORD), result.job(APPROVAL)) == (1, "FAIL", "FAIL")
    assert f"{key} {value!r}" in result.output
    assert "but this pipeline's inputs say 'acme/tracker' and 'PAIRGATE_TEST'" in result.output
    assert "refused: the configuration fetched from acme/tracker" in result.output
    assert "passed" not in result.lines(RECORD)  # the validator never ran


@pytest.mark.parametrize("name", ["image", "read-token-variable", "roster-path", "runner-tags"])
def test_a_missing_input_is_an_invalid_pipeline(
    tmp_path: Path, sandbox: RunningSandbox, world: World, name: str
) -> None:
    repo = consumer(
        tmp_path / "consumer", sandbox, {k: v for k, v in GATE_INPUTS.items() if k != name}
    )
    result = run(repo, sandbox, ci(sandbox, approved_at_head(world)))
    assert result.code == 1
    assert f"`{name}` input: required value has not been provided" in result.output


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("tracker-project", "acme/tracker'; import os #"),
        ("reader-path", "gate/ownership.py' + '"),
        ("read-token-variable", "TOKEN; echo"),
        ("gitlab-url", "https://gitlab.example.com/'x"),
    ],
)
def test_an_input_that_could_break_out_of_the_job_text_is_an_invalid_pipeline(
    tmp_path: Path, sandbox: RunningSandbox, world: World, name: str, value: str
) -> None:
    repo = consumer(tmp_path / "consumer", sandbox, {**GATE_INPUTS, name: value})
    result = run(repo, sandbox, ci(sandbox, approved_at_head(world)))
    assert result.code == 1
    assert f"`{name}` input: `{value}` does not match required regex" in result.output


def test_every_deployment_input_is_required_and_only_the_pin_has_a_default() -> None:
    spec = next(yaml.safe_load_all(TEMPLATE.read_text(encoding="utf-8")))
    inputs = spec["spec"]["inputs"]
    assert sorted(inputs) == sorted([*GATE_INPUTS, "gitlab-url"])
    assert {
        name: declared["default"] for name, declared in inputs.items() if "default" in declared
    } == {"gitlab-url": ""}


def test_the_jobs_run_only_in_merge_request_pipelines_and_never_allow_failure(
    repo: Path, sandbox: RunningSandbox, world: World
) -> None:
    jobs = preview(repo)
    assert {RECORD, APPROVAL} <= set(jobs)
    for name in (RECORD, APPROVAL):
        job = jobs[name]
        assert job["allow_failure"] is False
        assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
        assert job["image"] == {"name": "python:3.11-slim"}
        assert job["tags"] == ["pairgate", "linux"]
    variables = ci(sandbox, approved_at_head(world))
    result = run(repo, sandbox, variables, variables={"CI_PIPELINE_SOURCE": "push"}, schema=True)
    assert "starting shell" not in result.output
    assert result.code == 0, result.output  # GitLab's CI schema accepts the component's jobs


def test_an_unset_read_token_variable_is_a_clear_failure(
    repo: Path, sandbox: RunningSandbox, world: World
) -> None:
    variables = ci(sandbox, approved_at_head(world))
    result = run(repo, sandbox, variables, variables={"GATE_READ_TOKEN": ""})
    assert (result.job(RECORD), result.job(APPROVAL)) == ("FAIL", "FAIL")
    assert "the CI variable GATE_READ_TOKEN (input read-token-variable) is not set" in result.output


@pytest.mark.parametrize(
    ("version", "script"),
    [
        ("Python 3.9.2", 'case " $* " in *" -V "*) echo "Python 3.9.2";; esac\nexit 1'),
        # Python 2 knows no -I: the check's start fails, and -V alone still names the version.
        (
            "Python 2.7.18",
            'case " $* " in *" -I "*) echo "Unknown option: -I" >&2; exit 2;;'
            ' *" -V "*) echo "Python 2.7.18" >&2;; esac',
        ),
    ],
    ids=["3.9", "2.7"],
)
def test_an_old_python_in_the_image_is_a_clear_error(
    repo: Path, sandbox: RunningSandbox, world: World, tmp_path: Path, version: str, script: str
) -> None:
    old = fake_python(tmp_path / "old", script)
    result = run(repo, sandbox, ci(sandbox, approved_at_head(world)), python=old)
    assert (result.job(RECORD), result.job(APPROVAL)) == ("FAIL", "FAIL")
    assert f"the job image has {version}; the validators need python3 >= 3.11" in result.output
    assert "Traceback" not in result.output


def test_an_image_without_the_modules_is_a_clear_error(
    repo: Path, sandbox: RunningSandbox, world: World, tmp_path: Path
) -> None:
    bare = fake_python(tmp_path / "bare", f'exec {sys.executable} -S "$@"')  # no site-packages
    result = run(repo, sandbox, ci(sandbox, approved_at_head(world)), python=bare)
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
