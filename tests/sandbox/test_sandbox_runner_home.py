"""Why the README asks for ephemeral runners: on a shell runner every job shares its user's
HOME, and a job can leave a ``~/.gitconfig`` whose ``core.fsmonitor`` command runs inside a
later job's ``git status``. The runner's switch reproduces that runner; its default gives each
job a HOME of its own, and the later job runs clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from pairgate.sandbox.testing import running_sandbox
from tests.kit.gcl import gitlab_ci_local

pytestmark = pytest.mark.slow

CI = """\
stages: [first, later]
leaves-a-gitconfig:
  stage: first
  script:
    - |
      git config --global core.fsmonitor 'echo POISONED by an earlier job >&2; false #'
runs-git:
  stage: later
  script:
    - git status --short
    - echo "home held $(ls -A "$HOME" | wc -l) files"
"""


def later_log(shared_home: bool) -> str:
    with running_sandbox(runner=gitlab_ci_local(), shared_home=shared_home) as sandbox:
        sandbox.commit("feature", {".gitlab-ci.yml": CI})
        sandbox.wait_for_pipelines()
        (pipeline,) = sandbox.api("GET", "/projects/2/pipelines")
        jobs = {
            j["name"]: j for j in sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}/jobs")
        }
        assert {name: j["status"] for name, j in jobs.items()} == {
            "leaves-a-gitconfig": "success",
            "runs-git": "success",
        }
        return str(sandbox.request("GET", f"/projects/2/jobs/{jobs['runs-git']['id']}/trace").text)


def test_on_the_shared_home_switch_an_earlier_job_poisons_a_later_one() -> None:
    log = later_log(shared_home=True)
    assert "POISONED by an earlier job" in log
    assert "home held 1 files" in log


def test_the_default_runner_gives_the_later_job_a_clean_home() -> None:
    log = later_log(shared_home=False)
    assert "POISONED" not in log
    assert "home held 0 files" in log


def test_a_runner_whose_gitlab_ci_local_cannot_start_fails_the_pipeline_saying_so(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "gitlab-ci-local"
    with running_sandbox(runner=str(missing)) as sandbox:
        sandbox.commit("feature", {".gitlab-ci.yml": "test:\n  script: [echo ok]\n"})
        sandbox.wait_for_pipelines()
        (pipeline,) = sandbox.api("GET", "/projects/2/pipelines")
        shown = sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}")
        assert (shown["status"], shown["source"]) == ("failed", "push")
        assert "could not run gitlab-ci-local" in shown["yaml_errors"]
        assert str(missing) in shown["yaml_errors"]
