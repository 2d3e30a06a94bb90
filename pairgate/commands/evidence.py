"""evidence: the command line of mutation evidence (``evidence run`` and ``evidence rerun``).

This module holds their help and argument functions (the command table's rows name them), and
stays light because main builds its parser for every command; the handlers are
``pairgate/commands/evidence_run.py`` and ``pairgate/commands/evidence_rerun.py``, and the
runner ``pairgate.evidence``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pairgate.evidence import DEFAULT_TIMEOUT

HELP = "mutation evidence: run the tests at a commit, then with each mutant, in a sandbox"
RUN_HELP = (
    "in a disposable clone of --repo at --sha, run --test unmutated (it must pass), then with "
    "each --mutant applied; print the evidence"
)
RERUN_HELP = (
    "re-run the pending (or accepted) offer's mutant K, from its note and checked against the "
    "hash its record holds, and one of your own, at the offered SHA; the document is what "
    "approve --evidence records"
)


def run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--test", required=True, metavar="CMD", help="the test command (run by sh -c)")
    p.add_argument(
        "--mutant",
        dest="mutants",
        required=True,
        action="append",
        type=Path,
        metavar="PATCH",
        help="a patch that undoes part of the change (repeatable)",
    )
    p.add_argument("--repo", type=Path, default=Path("."), metavar="DIR", help="default: .")
    p.add_argument("--sha", help="the commit to run at (default: HEAD; never the working tree)")
    p.add_argument(
        "--base",
        metavar="SHA",
        help="list the files that judge the change changed since here (default: the merge base "
        "with origin/main, if any)",
    )
    _add_timeout(p)
    p.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="mutants run at once (default: 1)"
    )
    p.add_argument("--network", action="store_true", help="let the runs reach the network")
    p.add_argument("--out", type=Path, metavar="FILE", help="write the evidence here (atomically)")
    p.add_argument("--json", action="store_true", help="print the evidence document")


def rerun(p: argparse.ArgumentParser) -> None:
    p.add_argument("issue", type=_issue, metavar="ISSUE", help="the tracker issue's number")
    p.add_argument(
        "--mutant-index",
        required=True,
        type=_issue,
        metavar="K",
        help="which of the offer's mutants to re-run (its # in the offer's table)",
    )
    p.add_argument(
        "--mutant",
        required=True,
        type=Path,
        metavar="PATCH",
        help="a mutant of your own, a place the offer's list does not cover (or covers thinly)",
    )
    p.add_argument("--test", required=True, metavar="CMD", help="the test command (run by sh -c)")
    p.add_argument(
        "--repo",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="a clone holding the offered commit (default: .)",
    )
    _add_timeout(p)
    p.add_argument("--network", action="store_true", help="let the runs reach the network")
    p.add_argument(
        "--out", type=Path, metavar="FILE", help="write the re-run here, for approve --evidence"
    )
    p.add_argument("--json", action="store_true", help="print the re-run document")


def _add_timeout(p: argparse.ArgumentParser) -> None:
    """--timeout, which run and rerun take alike."""
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds per run; the whole process tree is killed then (default: {DEFAULT_TIMEOUT:g})",
    )


def _issue(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)
