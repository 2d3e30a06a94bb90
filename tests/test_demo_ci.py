"""pairgate demo --ci without gitlab-ci-local: a usage error that names how to install it (the
plain demo needs no Node). tests/test_ci_door.py plays the round it plays."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.names import ROOT
from tests.kit.run import PAIRGATE, clean_env

pytestmark = pytest.mark.slow


def test_demo_ci_without_gitlab_ci_local_exits_2_naming_how_to_install_it(tmp_path: Path) -> None:
    env = clean_env(PYTHONPATH=str(ROOT), PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    done = subprocess.run(
        [*PAIRGATE, "demo", "--ci"], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "npm install --prefix .cache/gitlab-ci-local gitlab-ci-local@4.73.0" in done.stderr
    assert "pairgate demo alone needs neither" in done.stderr
