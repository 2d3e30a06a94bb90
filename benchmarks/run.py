#!/usr/bin/env python3
"""Every speed figure next to its floor, measured in the same run, and the ratio. Prints;
asserts nothing.

    python3 benchmarks/run.py [--quick] [--only fold,memo,hook,board,startup,audit,evidence]
                              [--venv DIR]

The rows are issue 33's table. Each floor is what the same work costs done the minimal way, on
this machine, now (see each module's docstring: fold_time.py, hook.py, board.py, startup.py,
audit.py, evidence.py): ratios, not absolute times, are what compare across runs and machines. The hook,
start-up and whole-process board rows run as a user installs pairgate: from a clean venv with a
regular ``pip install .`` of this checkout, built once in a temporary directory unless ``--venv``
names one (board is also measured in-process, its modules imported before the clock starts); the
start-up rows are in units of that venv's own ``python3 -c pass``. Run it on a quiet machine: the
load average is printed before and after. ``--quick`` is a smoke run (small worlds, one run of
each): its figures mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import audit, board, evidence, fold_time, hook, startup  # noqa: E402
from pairgate.sandbox.testing import running_sandbox  # noqa: E402

Row = tuple[str, str, str, float | None, str]  # figure, measured, floor, ratio, goal


def fold_rows(runs: int, quick: bool) -> list[Row]:
    count = 300 if quick else 10_000
    every = fold_time.measure(count, 1, runs)
    tenth = fold_time.measure(count, 10, runs)
    return [
        _ms(
            f"first fold of {count:,} notes, every one a record",
            every["first"],
            every["floor"],
            1.5,
        ),
        _ms(
            f"first fold of {count:,} notes, one in ten a record",
            tenth["first"],
            tenth["floor"],
            1.5,
        ),
        _ms(f"fold again (remembered), {count:,} records", every["again"], every["floor"], 1.3),
    ]


def memo_rows(runs: int, quick: bool) -> list[Row]:
    """A ledger ten times longer folded again: per record no dearer than a short one's (2x)."""
    short, long = (200, 2_000) if quick else (10_000, 100_000)
    base = fold_time.measure(short, 1, runs)
    big = fold_time.measure(long, 1, max(1, runs // 3))
    floor = base["again"] * long / short
    return [
        (
            f"fold again (remembered), {long:,} records (floor: {long // short}x the "
            f"{short:,}-record figure; the first fold {big['first']:.0f} ms)",
            f"{big['again']:.1f} ms",
            f"{floor:.1f} ms",
            big["again"] / floor,
            "<= 2x",
        )
    ]


def hook_rows(runs: int, quick: bool, venv: Path) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp, running_sandbox() as sandbox:
        m = hook.measure(sandbox, Path(tmp), runs, venv)
    ms = {name.split(" ")[0] if name.startswith("merge") else name: v[0] for name, v in m.items()}
    floor = next(v for k, v in ms.items() if k.startswith("floor"))
    bash, harmless = ms["bash -c true"], ms["harmless: git status"]
    return [
        (
            "hook, harmless command (floor: bash -c true)",
            f"{harmless * 1000:.0f} us",
            f"{bash * 1000:.0f} us",
            harmless / bash,
            "<= 1.15x",
        ),
        (
            "hook, approved merge, loopback (floor: bash, python3, the command parsed, the same "
            "requests on http.client, a digest per record)",
            f"{ms['merge']:.1f} ms",
            f"{floor:.1f} ms",
            ms["merge"] / floor,
            f"<= 1.6x, < 300 ms: {'met' if ms['merge'] < 300 else 'MISSED'}",
        ),
    ]


def board_rows(runs: int, quick: bool, venv: Path) -> list[Row]:
    issues, notes, latency = (12, 4, 2) if quick else (500, 20, 20)
    with board.board_world(issues, notes, latency) as sandbox:
        m = board.measure(sandbox, runs)
        whole = board.measure_process(sandbox, venv, runs)
    world = f"{issues} issues x {notes} notes, {latency} ms a request"
    return [
        (
            f"pairgate board, {world}, in-process ({m['requests']} requests; floor: "
            f"{board.boardread.WORKERS} threads, as board)",
            f"{m['board']:.2f} s",
            f"{m['floor']:.2f} s",
            m["board"] / m["floor"],
            "<= 1.1x",
        ),
        (
            f"pairgate board, {world}, whole process from the venv (floor: the venv's python3, "
            f"the same {whole['requests']} GETs from {board.boardread.WORKERS} threads)",
            f"{whole['board']:.2f} s",
            f"{whole['floor']:.2f} s",
            whole["board"] / whole["floor"],
            "<= 1.1x",
        ),
    ]


def startup_rows(runs: int, quick: bool, venv: Path) -> list[Row]:
    with running_sandbox() as sandbox:
        m = startup.measure(sandbox, venv, runs)
    bare = m["python3 -c pass"]
    floor = next(v for k, v in m.items() if k.startswith("floor"))
    return [
        (
            f"pairgate --help (floor: {venv}/bin/python3 -c pass)",
            f"{m['pairgate --help']:.1f} ms",
            f"{bare:.1f} ms",
            m["pairgate --help"] / bare,
            "<= 3x",
        ),
        (
            "pairgate status, 3 notes (floor: the same GETs on http.client)",
            f"{m['pairgate status (3 notes)']:.1f} ms",
            f"{floor:.1f} ms",
            m["pairgate status (3 notes)"] / floor,
            "<= 1.5x",
        ),
    ]


def audit_rows(runs: int, quick: bool) -> list[Row]:
    mrs, issues, notes, latency = (6, 3, 6, 1) if quick else (1000, 300, 20, 20)
    with audit.audit_world(mrs, issues, notes, latency) as (sandbox, _):
        wall = sorted(audit.run_audit(sandbox)[1] for _ in range(max(1, runs)))[runs // 2]
    return [
        (
            f"audit, {mrs:,} merged MRs citing {issues} issues, {latency} ms a request on REST "
            f"and GraphQL",
            f"{wall:.2f} s",
            "-",
            None,
            f"< 5 s: {'met' if wall < 5 else 'MISSED'}",
        )
    ]


def evidence_rows(runs: int, quick: bool) -> list[Row]:
    """One mutant run against the test command run directly (benchmarks/evidence.py)."""
    # Quick: the row's runs on a test command that costs nothing (evidence.py --quick runs the
    # same figures with pytest). Either way only the figures the row prints are measured.
    if quick:
        f = evidence.measure(**{**evidence.QUICK, "command": "true"}, overhead_only=True)
    else:
        f = evidence.measure(rounds=runs, overhead_only=True)
    files = f["files"]
    over = f["overhead"]
    return [
        (
            f"one evidence mutant run over the bare test command ({files:,}-file checkout, "
            f"{f['isolation']}, copies on {f['workspace'].split()[0]})",
            f"{f['per_mutant']:.2f} s",
            f"{f['direct']:.2f} s",
            None,
            f"<= +0.25 s (+{over:.2f} s: {'met' if over <= 0.25 else 'MISSED'}; must <= +0.5 s)",
        )
    ]


def _ms(figure: str, measured: float, floor: float, goal: float) -> Row:
    return (figure, f"{measured:.1f} ms", f"{floor:.1f} ms", measured / floor, f"<= {goal}x")


PLAIN = {
    "fold": fold_rows,
    "memo": memo_rows,
    "audit": audit_rows,
    "evidence": evidence_rows,
}
INSTALLED = {"hook": hook_rows, "board": board_rows, "startup": startup_rows}  # the clean venv
SECTIONS = ("fold", "memo", "hook", "board", "startup", "audit", "evidence")
RUNS = {"fold": 9, "memo": 3, "hook": 21, "board": 3, "startup": 21, "audit": 1, "evidence": 3}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: small worlds, once")
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections, comma-separated")
    parser.add_argument("--venv", type=Path, help="a clean venv with pairgate installed, to reuse")
    args = parser.parse_args(argv)
    sections = [s for s in args.only.split(",") if s]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section {unknown[0]!r} (one of {', '.join(SECTIONS)})")
    load = os.getloadavg()
    started = time.perf_counter()
    rows: list[Row] = []
    installed = set(sections) & set(INSTALLED)  # a venv built only for sections that use it
    with startup.clean_venv(args.venv) if installed else contextlib.nullcontext() as venv:
        for name in sections:
            runs = 1 if args.quick else RUNS[name]
            if name in INSTALLED:
                rows += INSTALLED[name](runs, args.quick, venv)
            else:
                rows += PLAIN[name](runs, args.quick)
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':{width}}  {'measured':>9}  {'floor':>9}  {'ratio':>6}  goal")
    for figure, measured, floor, ratio, goal in rows:
        shown = "-" if ratio is None else f"{ratio:.2f}x"
        print(f"{figure:{width}}  {measured:>9}  {floor:>9}  {shown:>6}  {goal}")
    after = os.getloadavg()
    print(
        f"load average {load[0]:.2f} before, {after[0]:.2f} after, on {os.cpu_count()} CPUs; "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
