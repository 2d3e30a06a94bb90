"""The gate jobs' fetch and merge-audit's, as the components write them, and one run of each as
the job starts it: the script in a directory of its own, ``python -I``, an environment of the
job's and nothing else (tests/test_gate_fetch.py, tests/test_gate_fetch_bounds.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from pairgate.deployment.tracker_pipeline import checked_inputs, interpolate, parse_component
from pairgate.sandbox.testing import RunningSandbox
from tests.kit.gcl import MERGE_CHECK_INPUTS
from tests.kit.names import ROOT

NAME = "mr-merge-check"


def _heredoc(script: str) -> str:
    found = re.search(r"<<'PAIRGATE_FETCH'\n(.*?)\nPAIRGATE_FETCH\n", script, re.DOTALL)
    assert found is not None
    return found.group(1) + "\n"


def fetch_script(**inputs: object) -> str:
    """fetch.py as the mr-merge-check component writes it, its inputs filled in."""
    text = (ROOT / "templates" / NAME / "template.yml").read_text(encoding="utf-8")
    component = parse_component(NAME, text)
    rendered = yaml.safe_load(
        interpolate(component, checked_inputs(component, {**MERGE_CHECK_INPUTS, **inputs}))
    )
    return _heredoc("\n".join(rendered[f".pairgate-{NAME}"]["before_script"]))


def audit_fetch_script() -> str:
    """The merge-audit job's fetch, as its component writes it for the component tests'
    inputs."""
    from tests.test_merge_audit_component import INPUTS

    inputs = {**INPUTS, "days": "7", "file-issues": "true"}  # as GitLab writes them in
    text = (ROOT / "templates" / "merge-audit" / "template.yml").read_text(encoding="utf-8")
    component = parse_component("merge-audit", text)
    rendered = yaml.safe_load(interpolate(component, checked_inputs(component, inputs)))
    return _heredoc("\n".join(rendered["pairgate-merge-audit"]["script"]))


def fetch(
    directory: Path,
    script: str,
    env: dict[str, str],
    *,
    read_token: str,
    python: str = sys.executable,
) -> subprocess.CompletedProcess[str]:
    """One run, as pairgate_run starts it (with the image's ``python``): ``env`` and nothing
    else, the tokens on stdin."""
    (directory / "fetch.py").write_text(script, encoding="utf-8")
    return subprocess.run(
        [python, "-I", "fetch.py"],
        cwd=directory,
        env=env,
        input=f"{env.get('CI_JOB_TOKEN', '')}\n{read_token}\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def audit_fetch(
    directory: Path,
    script: str,
    api_url: str | None,
    read_token: str,
    python: str = sys.executable,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """The script as the job runs it: python3 -I - (the image's ``python``) with the job's
    environment (no CI_API_V4_URL when ``api_url`` is None)."""
    return subprocess.run(
        [python, "-I", "-"],
        cwd=directory,
        env={
            **({} if api_url is None else {"CI_API_V4_URL": api_url}),
            "AUDIT_READ_TOKEN": read_token,
            "PAIRGATE_AUDIT_DIR": str(directory),
            **env,
        },
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def moved_job(sandbox: RunningSandbox, job: dict[str, str], url: str) -> dict[str, Any]:
    """The sandbox's answer to GET /job for ``job``, its URLs moved to ``url``."""
    real = sandbox.http.get(f"{sandbox.api_url}/job", headers={"JOB-TOKEN": job["CI_JOB_TOKEN"]})
    return dict(json.loads(real.text.replace(sandbox.url, url)))


def elsewhere(job: dict[str, str], url: str) -> dict[str, str]:
    """The job's variables, every URL variable naming ``url`` instead."""
    return {**job, "CI_SERVER_URL": url, "CI_API_V4_URL": f"{url}/api/v4"}
