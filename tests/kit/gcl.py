"""gitlab-ci-local (4.73.0) runs of the gate's jobs against the sandbox, for the component and
tracker-held pipeline tests.

How a run stands in for GitLab:
- The repository's remote is the sandbox (``<url>/acme/app.git``), so gitlab-ci-local's own
  predefined CI_SERVER_URL and CI_API_V4_URL name it, at the lowest precedence, as GitLab's do.
- The merge request's predefined variables (CI_MERGE_REQUEST_*, and CI_JOB_TOKEN) are in the
  program's environment, which a job sees below every YAML variable: a global ``variables:`` in
  the merge request's CI file outranks them there as it does on GitLab.
- What gitlab-ci-local predefines itself with other values (CI_PIPELINE_SOURCE, CI_COMMIT_SHA,
  CI_PIPELINE_ID, CI_PROJECT_ID) and the project's CI/CD variable holding the read token are
  ``--variable``s, which outrank YAML; no case of the corpus sets those.
- The jobs run in the local shell, so this machine's python3 stands for the job image; every
  job of one run shares the one job token (GET /job names one of the pipeline's jobs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.names import FIXTURE_CONFIG, FIXTURES, ROOT

RECORD, APPROVAL, MERGE_CHECK = (
    "validate-mr-carries-ownership-record",
    "validate-mr-approval-at-head",
    "validate-mr-merge-check",
)
GATE = "gate"  # where the tracker repository keeps the gate's files
TRACKER_FILES = {
    f"{GATE}/ownership.py": ROOT / "pairgate" / "ownership.py",
    f"{GATE}/pairgate-config.json": FIXTURE_CONFIG,
    f"{GATE}/automation_mr_families.py": FIXTURES / "automation_mr_families.py",
    **{f"{GATE}/{name}.py": ROOT / "validators" / f"{name}.py" for name in (RECORD, APPROVAL)},
    f"{GATE}/{MERGE_CHECK}.py": ROOT / "validators" / f"{MERGE_CHECK}.py",
}
COMMON_INPUTS: dict[str, object] = {
    "image": "python:3.11-slim",
    "runner-tags": ["pairgate", "linux"],
    "tracker-project": "acme/tracker",
    "env-prefix": "PAIRGATE_TEST",
    "read-token-variable": "GATE_READ_TOKEN",
    "reader-path": f"{GATE}/ownership.py",
    "config-path": f"{GATE}/pairgate-config.json",
    "roster-path": f"{GATE}/automation_mr_families.py",
}
GATE_INPUTS = {
    **COMMON_INPUTS,
    "record-validator-path": f"{GATE}/{RECORD}.py",
    "approval-validator-path": f"{GATE}/{APPROVAL}.py",
}
MERGE_CHECK_INPUTS = {**COMMON_INPUTS, "merge-check-validator-path": f"{GATE}/{MERGE_CHECK}.py"}
# What GitLab predefines for a merge request pipeline that gitlab-ci-local does not.
PREDEFINED = (
    "CI_MERGE_REQUEST_IID",
    "CI_MERGE_REQUEST_PROJECT_PATH",
    "CI_MERGE_REQUEST_PROJECT_ID",
    "CI_JOB_TOKEN",
)


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
        """PASS, FAIL or WARN (a failure allowed), from gitlab-ci-local's summary; "absent"
        when the job did not run."""
        found = re.search(
            rf"^ (PASS|FAIL|WARN)\s+{re.escape(name)}(\s+pre_script)?\s*$",
            self.output,
            re.MULTILINE,
        )
        return found.group(1) if found else "absent"

    def jobs(self) -> dict[str, str]:
        """Every job of gitlab-ci-local's summary, by status (PASS, FAIL or WARN)."""
        found = re.findall(r"^ (PASS|FAIL|WARN)\s+(\S+)(?:\s+pre_script)?\s*$", self.output, re.M)
        return {name: status for status, name in found}

    def lines(self, name: str) -> str:
        """What one job printed."""
        return "\n".join(re.findall(rf"^{re.escape(name)}\s+> (.*)$", self.output, re.MULTILINE))


def fake_python(directory: Path, script: str) -> Path:
    """A directory whose python3 is ``script`` (a shell script): a job image's python3, for
    ``run``'s ``python``."""
    directory.mkdir()
    python = directory / "python3"
    python.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    python.chmod(0o755)
    return directory


def git_commit(path: Path, message: str) -> None:
    git = ["git", "-c", "user.name=gate", "-c", "user.email=gate@example.invalid"]
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run([*git, "commit", "-qm", message], cwd=path, check=True)


def repository(path: Path, sandbox: RunningSandbox, files: dict[str, str | bytes]) -> Path:
    """A git repository whose remote is the sandbox's acme/app, holding ``files``."""
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    remote = f"{sandbox.url}/acme/app.git"
    subprocess.run(["git", "remote", "add", "origin", remote], cwd=path, check=True)
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            (path / name).write_bytes(data)
        else:
            (path / name).write_text(data, encoding="utf-8")
    git_commit(path, "consumer")
    subprocess.run(["git", "update-ref", "refs/remotes/origin/main", "HEAD"], cwd=path, check=True)
    subprocess.run(
        ["git", "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"],
        cwd=path,
        check=True,
    )
    return path


def component_include(name: str, inputs: dict[str, object]) -> dict[str, Any]:
    """The component as a local include with inputs: interpolated as ``include: component``
    is. (gitlab-ci-local takes ``component: ...@$CI_COMMIT_SHA`` from the working tree only
    when CI_COMMIT_SHA is the checkout's HEAD, and these runs give it the merge request's.)"""
    return {"local": f"templates/{name}/template.yml", "inputs": inputs}


def component_files(*names: str) -> dict[str, str | bytes]:
    """The components' templates, as a consumer that tests them holds them."""
    return {
        f"templates/{name}/template.yml": (ROOT / "templates" / name / "template.yml").read_text(
            encoding="utf-8"
        )
        for name in names
    }


def dump(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False)


def publish(sandbox: RunningSandbox, **replace: str) -> str:
    """Commit the gate's files into the tracker repository's default branch; its new head."""
    files = {path: source.read_text(encoding="utf-8") for path, source in TRACKER_FILES.items()}
    files.update(replace)
    return str(
        sandbox.commit("main", files, project="acme/tracker", message="Deploy the gate")["id"]
    )


def run(
    repo: Path,
    sandbox: RunningSandbox,
    ci: dict[str, str],
    *,
    file: str | None = None,
    jobs: tuple[str, ...] = (),
    variables: dict[str, str] | None = None,
    python: Path | None = None,
    extra: tuple[str, ...] = (),
    schema: bool = False,
) -> Pipeline:
    """Run the pipeline (or ``jobs`` of it) for the merge request pipeline ``ci`` describes
    (tests/kit/gate_cases.py, ci_variables). The jobs' python3 is this interpreter, or the one in the
    directory ``python`` names. ``schema`` checks the configuration against GitLab's CI schema
    first (0.8 s a run, so only the tests about the configuration itself ask for it)."""
    argv = [gitlab_ci_local(), "--force-shell-executor", "--shell-executor-no-image"]
    if not schema:
        argv.append("--no-json-schema-validation")
    argv += [
        "--ignore-predefined-vars",
        "CI_PIPELINE_SOURCE,CI_COMMIT_SHA,CI_PIPELINE_ID,CI_PROJECT_ID",
    ]
    if file:
        argv += ["--file", file]
    values = {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_COMMIT_SHA": ci["CI_COMMIT_SHA"],
        "CI_PIPELINE_ID": ci["CI_PIPELINE_ID"],
        "CI_PROJECT_ID": ci["CI_PROJECT_ID"],
        "GATE_READ_TOKEN": sandbox.info["users"]["agents"]["read_token"],
        **(variables or {}),
    }
    for name, value in values.items():
        argv += ["--variable", f"{name}={value}"]
    argv += [*extra, *jobs]
    # A HOME of its own: the shell executor's bash reads ~/.bashrc, which may put another
    # python3 first on PATH.
    home = repo.parent / "home"
    home.mkdir(exist_ok=True)
    first = python or Path(sys.executable).parent
    env = {"PATH": f"{first}:{os.environ['PATH']}", "HOME": str(home)}
    env.update({name: ci[name] for name in PREDEFINED})
    proc = subprocess.run(
        argv, cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return Pipeline(proc.returncode, proc.stdout + proc.stderr)


def preview(repo: Path, *, file: str | None = None) -> dict[str, Any]:
    """The configuration gitlab-ci-local would run, includes merged and inputs interpolated."""
    argv = [gitlab_ci_local(), "--preview", *(["--file", file] if file else [])]
    shown = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=True)
    return dict(yaml.safe_load(shown.stdout.split("\n---\n", 1)[-1]))
