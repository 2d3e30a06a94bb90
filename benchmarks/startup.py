#!/usr/bin/env python3
"""How long the CLI takes to start, in units of ``python3 -c pass``. Prints; asserts nothing.

- ``pairgate --help``, started as the console script starts it; its floor ``import argparse``;
- ``pairgate status`` of an issue with three notes, against a sandbox on loopback; its floor:
  python with http.client making the same GETs status made, and their parse
  (benchmarks/floor_client.py).

Each program is run many times; the figures are medians. ``python3`` is the interpreter running
this script, so that a version-manager shim in front of it is not what gets measured.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.hook import floor_argv  # noqa: E402
from pairgate.sandbox.testing import RunningSandbox, running_sandbox  # noqa: E402
from tests.kit.run import agent_env, clean_env  # noqa: E402

RUNS = 21
# What the console script (the pairgate entry point) runs.
CONSOLE = "import sys\nfrom pairgate.main import console_main\nsys.exit(console_main())"


def medians_ms(
    programs: dict[str, tuple[list[str], dict[str, str]]], runs: int
) -> dict[str, float]:
    """Each program's median wall time in ms, the programs run in turn ``runs`` times over (so
    a slow spell of the machine falls on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in programs}
    for _ in range(runs):
        for name, (argv, env) in programs.items():
            start = time.perf_counter()
            subprocess.run(argv, env=env, capture_output=True, check=False)
            times[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def three_notes(sandbox: RunningSandbox) -> int:
    issue = int(sandbox.create_issue("Start-up")["iid"])
    for text in ("A first comment.", "A second.", "A third."):
        sandbox.note(issue, text)
    return issue


def measure(sandbox: RunningSandbox, runs: int = RUNS) -> dict[str, float]:
    """Each start-up figure in ms."""
    env = clean_env(PYTHONPATH=str(ROOT))
    python = sys.executable
    issue = three_notes(sandbox)
    status = [python, "-c", CONSOLE, "status", str(issue)]
    status_env = {**env, **agent_env(sandbox, None)}
    subprocess.run(status, env=status_env, capture_output=True, check=False)  # compile caches
    sandbox.clear_requests()
    subprocess.run(status, env=status_env, capture_output=True, check=False)
    log: list[dict[str, Any]] = sandbox.requests()
    return medians_ms(
        {
            "python3 -c pass": ([python, "-c", "pass"], env),
            "python3 -c 'import argparse'": ([python, "-c", "import argparse"], env),
            "pairgate --help": ([python, "-c", CONSOLE, "--help"], env),
            "pairgate status (3 notes)": (status, status_env),
            f"floor: the same {len(log)} GETs": (floor_argv(sandbox, log), env),
        },
        runs,
    )


def main() -> None:
    with running_sandbox() as sandbox:
        rows = measure(sandbox)
    bare = rows["python3 -c pass"]
    print(f"median of {RUNS} runs each")
    for name, ms in rows.items():
        print(f"{name:34} {ms:8.1f} ms {ms / bare:6.2f}x python3 -c pass")


if __name__ == "__main__":
    main()
