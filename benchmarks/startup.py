#!/usr/bin/env python3
"""How long the CLI takes to start, as a user installs it, in units of that install's own
``python3 -c pass``. Prints; asserts nothing.

    python3 benchmarks/startup.py [--quick] [--venv DIR]

Every program runs from a clean virtual environment holding a regular ``pip install .`` of this
checkout (built once in a temporary directory, or ``--venv``'s, made so before). A venv's
python skips the site ``.pth`` files of the interpreter it was made from, so its ``python3 -c
pass`` is the honest unit: comparing with the bare ``python3`` would hide what they cost.

- ``pairgate --help``, the installed console script (and ``python3 -c 'import argparse'``);
- ``pairgate status`` of an issue with three notes, against a sandbox on loopback; its floor:
  the venv's python with http.client making the same GETs status made, and their parse
  (benchmarks/floor_client.py).

``--quick`` runs each program once (a smoke run).
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.hook import FLOOR_CLIENT, floor_spec  # noqa: E402
from benchmarks.timing import Program, medians_ms  # noqa: E402
from pairgate.sandbox.testing import RunningSandbox, running_sandbox  # noqa: E402
from tests.kit.run import agent_env, clean_env  # noqa: E402

RUNS = 21


@contextlib.contextmanager
def clean_venv(given: Path | None = None) -> Iterator[Path]:
    """``given``, else a new venv in a temporary directory with ``pip install .`` of this
    checkout (its wheel built as pip builds it, the dependencies from the index)."""
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="pairgate-venv-") as tmp:
        venv = Path(tmp)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "python3"), "-m", "pip", "install", "--quiet", str(ROOT)],
            check=True,
        )
        yield venv


def three_notes(sandbox: RunningSandbox) -> int:
    issue = int(sandbox.create_issue("Start-up")["iid"])
    for text in ("A first comment.", "A second.", "A third."):
        sandbox.note(issue, text)
    return issue


def measure(sandbox: RunningSandbox, venv: Path, runs: int = RUNS) -> dict[str, float]:
    """Each start-up figure in ms."""
    env = clean_env()
    python = str(venv / "bin" / "python3")
    pairgate = str(venv / "bin" / "pairgate")
    issue = three_notes(sandbox)
    status = [pairgate, "status", str(issue)]
    status_env = {**env, **agent_env(sandbox, None)}
    subprocess.run(status, env=status_env, capture_output=True, check=False)  # compile caches
    sandbox.clear_requests()
    ran = subprocess.run(status, env=status_env, capture_output=True, text=True, check=False)
    if ran.returncode != 0:
        raise SystemExit(f"pairgate status failed in {venv}: {ran.stderr}")
    log: list[dict[str, Any]] = sandbox.requests()
    floor = [python, str(FLOOR_CLIENT), floor_spec(sandbox, log)]
    rows = medians_ms(
        {
            "python3 -c pass": Program([python, "-c", "pass"], env),
            "python3 -c 'import argparse'": Program([python, "-c", "import argparse"], env),
            "pairgate --help": Program([pairgate, "--help"], env),
            "pairgate status (3 notes)": Program(status, status_env),
            f"floor: the same {len(log)} GETs": Program(floor, env),
        },
        runs,
    )
    return {name: ms for name, (ms, _) in rows.items()}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="each program once (a smoke run)")
    parser.add_argument("--venv", type=Path, help="a venv with pairgate installed, to reuse")
    args = parser.parse_args(argv)
    runs = 1 if args.quick else RUNS
    with clean_venv(args.venv) as venv, running_sandbox() as sandbox:
        rows = measure(sandbox, venv, runs)
    bare = rows["python3 -c pass"]
    print(f"median of {runs} runs each, from {venv}")
    for name, ms in rows.items():
        print(f"{name:34} {ms:8.1f} ms {ms / bare:6.2f}x {venv}/bin/python3 -c pass")


if __name__ == "__main__":
    main(sys.argv[1:])
