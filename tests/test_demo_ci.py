"""pairgate demo --ci: the round through the CI door, its pipelines run by gitlab-ci-local; and
without gitlab-ci-local, a usage error that names how to install it (the plain demo needs no
Node)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PAIRGATE, ROOT, clean_env, run_cli
from tests.gcl import gitlab_ci_local

pytestmark = pytest.mark.slow


def test_demo_ci_refuses_the_unapproved_merge_and_merges_the_approved_head() -> None:
    gitlab_ci_local()  # present, or the test is skipped (a failure under CI)
    result = run_cli(["demo", "--ci"], env={})
    assert result.code == 0, result.err
    steps = re.findall(r"^== \d+\. (.*)$", result.out, re.MULTILINE)
    pipelines = [s for s in steps if s.startswith("Merge request pipeline")]
    merges = [s.rsplit(": ", 1)[1] for s in steps if s.startswith("The merge button")]
    assert [p.rsplit(": ", 1)[1] for p in pipelines] == ["failed", "success"]
    assert merges == ["HTTP 405", "HTTP 200"]
    assert "validate-mr-merge-check: failed" in result.out
    assert "FAILED: no approval in acme/tracker#2 names acme/app!1" in result.out
    assert re.search(r"GitLab answers merged, merge commit [0-9a-f]{40}\.", result.out)


def test_demo_ci_without_gitlab_ci_local_exits_2_naming_how_to_install_it(tmp_path: Path) -> None:
    env = clean_env(PYTHONPATH=str(ROOT), PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    done = subprocess.run(
        [*PAIRGATE, "demo", "--ci"], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "npm install --prefix .cache/gitlab-ci-local gitlab-ci-local@4.73.0" in done.stderr
    assert "pairgate demo alone needs neither" in done.stderr
