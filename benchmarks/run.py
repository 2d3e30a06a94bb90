#!/usr/bin/env python3
"""Every speed figure next to its floor, measured in the same run, and the ratio. Prints;
asserts nothing.

    python3 benchmarks/run.py [--quick] [--only fold,hook,board,startup]

The rows are issue 20's table. Each floor is what the same work costs done the minimal way, on
this machine, now (see each module's docstring: fold_time.py, hook.py, board.py, startup.py):
ratios, not absolute times, are what compare across runs and machines. The start-up rows and
their goals are in units of ``python3 -c pass``. Run it on a quiet machine: the load average is
printed before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import board, fold_time, hook, startup  # noqa: E402
from pairgate.sandbox.testing import running_sandbox  # noqa: E402

Row = tuple[str, str, str, float, str]  # figure, measured, floor, ratio, goal


def fold_rows(runs: int) -> list[Row]:
    every = fold_time.measure(10_000, 1, runs)
    tenth = fold_time.measure(10_000, 10, runs)
    return [
        _ms("first fold of 10,000 notes, every one a record", every["first"], every["floor"], 1.5),
        _ms("first fold of 10,000 notes, one in ten a record", tenth["first"], tenth["floor"], 1.5),
        _ms("fold again (remembered), 10,000 records", every["again"], every["floor"], 1.3),
    ]


def hook_rows(runs: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp, running_sandbox() as sandbox:
        m = hook.measure(sandbox, Path(tmp), runs)
    ms = {name.split(" ")[0] if name.startswith("merge") else name: v[0] for name, v in m.items()}
    floor = next(v for k, v in ms.items() if k.startswith("floor"))
    bash = ms["bash -c true"]
    harmless, reads = ms["harmless: git status"], ms["reads stdin, exits"]
    return [
        (
            "hook, harmless command (x bash -c true)",
            f"{harmless / bash:.2f}x",
            f"{reads / bash:.2f}x",
            harmless / reads,
            "<= 1.15x",
        ),
        _ms("hook, approved merge decided, loopback", ms["merge"], floor, 1.6),
    ]


def board_rows(runs: int) -> list[Row]:
    with board.board_world() as sandbox:
        m = board.measure(sandbox, runs)
    return [
        (
            f"pairgate board, 500 issues x 20 notes, 20 ms a request ({m['requests']} requests)",
            f"{m['board']:.2f} s",
            f"{m['floor']:.2f} s",
            m["board"] / m["floor"],
            "<= 1.1x",
        )
    ]


def startup_rows(runs: int) -> list[Row]:
    with running_sandbox() as sandbox:
        m = startup.measure(sandbox, runs)
    bare = m["python3 -c pass"]
    floor = next(v for k, v in m.items() if k.startswith("floor"))
    help_x, argparse_x = m["pairgate --help"] / bare, m["python3 -c 'import argparse'"] / bare
    status_x, floor_x = m["pairgate status (3 notes)"] / bare, floor / bare
    return [
        (
            f"pairgate --help (x python3 -c pass, {bare:.1f} ms)",
            f"{help_x:.2f}x",
            f"{argparse_x:.2f}x",
            help_x / argparse_x,
            f"<= 3x pass: {'met' if help_x <= 3 else 'MISSED'}",
        ),
        (
            "pairgate status start-up, 3 notes (x python3 -c pass)",
            f"{status_x:.2f}x",
            f"{floor_x:.2f}x",
            status_x / floor_x,
            f"<= 9x pass: {'met' if status_x <= 9 else 'MISSED'}",
        ),
    ]


def _ms(figure: str, measured: float, floor: float, goal: float) -> Row:
    return (figure, f"{measured:.1f} ms", f"{floor:.1f} ms", measured / floor, f"<= {goal}x")


SECTIONS = {"fold": fold_rows, "hook": hook_rows, "board": board_rows, "startup": startup_rows}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs of each figure")
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections, comma-separated")
    args = parser.parse_args(argv)
    sections = [s for s in args.only.split(",") if s]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section {unknown[0]!r} (one of {', '.join(SECTIONS)})")
    load = os.getloadavg()
    started = time.perf_counter()
    rows: list[Row] = []
    for name in sections:
        runs = {"fold": 9, "hook": 21, "board": 3, "startup": 21}[name]
        rows += SECTIONS[name](max(3, runs // 3) if args.quick else runs)
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':{width}}  {'measured':>9}  {'floor':>9}  {'ratio':>6}  goal")
    for figure, measured, floor, ratio, goal in rows:
        print(f"{figure:{width}}  {measured:>9}  {floor:>9}  {ratio:>5.2f}x  {goal}")
    after = os.getloadavg()
    print(
        f"load average {load[0]:.2f} before, {after[0]:.2f} after, on {os.cpu_count()} CPUs; "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
