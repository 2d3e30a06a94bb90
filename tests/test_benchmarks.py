"""Every benchmark still runs: each module in benchmarks/ started as its docstring says, with
``--quick`` (a small world, one run of each figure), so none rots unnoticed between the rounds
that time them. Their figures are not looked at here: timings are taken on a quiet machine."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.kit.names import ROOT
from tests.kit.run import clean_env

BENCHMARKS = ROOT / "benchmarks"
# Imported or started by the benchmarks; not benchmarks themselves.
HELPERS = {"floor_client.py", "timing.py"}
# Taking --venv: the environment pairgate is installed in, whose python3 and console script they
# run (here the suite's own: a clean one is built only when the flag is not given).
TAKES_VENV = {"hook.py", "startup.py", "run.py"}
INSTALLED = Path(sysconfig.get_path("scripts")).parent


def benchmarks() -> list[str]:
    return sorted(p.name for p in BENCHMARKS.glob("*.py") if p.name not in HELPERS)


def test_the_benchmarks_are_found() -> None:
    assert {"run.py", "fold_time.py", "hook.py", "board.py", "audit.py"} <= set(benchmarks())
    assert all((BENCHMARKS / helper).is_file() for helper in HELPERS)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    benchmarks(),
)
def test_every_benchmark_runs_quick(name: str, tmp_path: Path) -> None:
    argv = [sys.executable, "-B", str(BENCHMARKS / name), "--quick"]
    if name in TAKES_VENV:
        assert (INSTALLED / "bin" / "pairgate").is_file(), INSTALLED
        argv += ["--venv", str(INSTALLED)]
    proc = subprocess.run(
        argv,
        cwd=tmp_path,
        env=clean_env(TMPDIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip(), "it printed no figures"
