"""Whole programs timed from outside, the way the benchmarks compare a figure with its floor.

Each program is started with posix_spawn (no shell, no Python between the clock and the child:
subprocess.run's pipes and threads add about half a millisecond, which would flatter a 1 ms
program's ratio to ``bash -c true``), its stdin read from a file, its output thrown away. The
programs run in turn, ``runs`` times over, so a slow spell of the machine falls on all of them
alike; each figure is the median.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Program:
    argv: Sequence[str]
    env: Mapping[str, str]
    stdin: str = ""


def medians_ms(programs: Mapping[str, Program], runs: int) -> dict[str, tuple[float, int]]:
    """Each program's (median wall time in ms, exit code of its last run)."""
    times: dict[str, list[float]] = {name: [] for name in programs}
    codes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        inputs = {}
        for n, (name, program) in enumerate(programs.items()):
            inputs[name] = os.path.join(tmp, f"stdin-{n}")
            with open(inputs[name], "w", encoding="utf-8") as f:
                f.write(program.stdin)
        for _ in range(runs):
            for name, program in programs.items():
                elapsed, codes[name] = _run_once(program, inputs[name])
                times[name].append(elapsed)
    return {name: (statistics.median(values), codes[name]) for name, values in times.items()}


def _run_once(program: Program, stdin_path: str) -> tuple[float, int]:
    path = shutil.which(program.argv[0], path=program.env.get("PATH", os.defpath))
    if path is None:
        raise SystemExit(f"benchmarks: {program.argv[0]} is not on the program's PATH")
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, stdin_path, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    start = time.perf_counter()
    pid = os.posix_spawn(path, list(program.argv), dict(program.env), file_actions=actions)
    _, status = os.waitpid(pid, 0)
    elapsed = (time.perf_counter() - start) * 1000
    return elapsed, os.waitstatus_to_exitcode(status)
