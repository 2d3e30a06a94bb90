"""evidence: the command line of mutation evidence (``evidence run``, ``plan``, ``report`` and
``rerun``).

This module holds their help and argument functions (the command table's rows name them), and
stays light because main builds its parser for every command; the handlers are
``pairgate/commands/evidence_run.py`` (run), ``evidence_report.py`` (plan and report) and
``evidence_rerun.py``, and the runner ``pairgate.evidence``.
"""

from __future__ import annotations

import argparse

from pairgate.commands.arguments import path
from pairgate.evidence import DEFAULT_PIDS, DEFAULT_TIMEOUT

HELP = "mutation evidence: run the tests at a commit, then with each mutant, in a sandbox"
RUN_HELP = (
    "in a disposable copy of --repo at --sha, sealed where the machine allows it, run --test "
    "unmutated (it must pass), then with each --mutant applied; print the evidence"
)
PLAN_HELP = (
    "what evidence run would do, without running the tests: the files that judge the change, "
    "each mutant (whether it applies, whether it is refused as a mutant), the isolation this "
    "machine gives, where the copies go, and the runner"
)
REPORT_HELP = (
    "print the last evidence (or re-run) document kept for --repo, at --sha when given "
    "(documents are kept under $XDG_STATE_HOME/pairgate/evidence)"
)
RERUN_HELP = (
    "re-run the pending (or accepted) offer's mutant K, from its note and checked against the "
    "hash its record holds, and one of your own, at the offered SHA; the document is what "
    "approve --evidence records"
)


def run(p: argparse.ArgumentParser) -> None:
    _what_runs(p)
    p.add_argument("--out", type=path, metavar="FILE", help="write the evidence here (atomically)")
    p.add_argument(
        "--logs",
        type=path,
        metavar="DIR",
        help="keep each run's whole log under DIR (its path is in the evidence)",
    )
    p.add_argument("--json", action="store_true", help="print the evidence document")


def plan(p: argparse.ArgumentParser) -> None:
    _what_runs(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")


def report(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", type=path, default=".", metavar="DIR", help="default: .")
    p.add_argument("--sha", help="the last document at this commit (default: at any)")
    p.add_argument("--json", action="store_true", help="print the document")


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
        type=path,
        metavar="PATCH",
        help="a mutant of your own, a place the offer's list does not cover (or covers thinly)",
    )
    p.add_argument("--test", required=True, metavar="CMD", help="the test command (run by sh -c)")
    p.add_argument(
        "--repo",
        type=path,
        default=".",
        metavar="DIR",
        help="a clone holding the offered commit (default: .)",
    )
    _add_timeout(p)
    p.add_argument("--network", action="store_true", help="let the runs reach the network")
    _add_pids(p)
    p.add_argument(
        "--out", type=path, metavar="FILE", help="write the re-run here, for approve --evidence"
    )
    p.add_argument("--logs", type=path, metavar="DIR", help="keep each run's whole log under DIR")
    p.add_argument("--json", action="store_true", help="print the re-run document")


def _what_runs(p: argparse.ArgumentParser) -> None:
    """The flags run and plan share: what runs, where, and how it is held."""
    p.add_argument("--test", required=True, metavar="CMD", help="the test command (run by sh -c)")
    p.add_argument(
        "--mutant",
        dest="mutants",
        required=True,
        action="append",
        type=path,
        metavar="PATCH",
        help="a patch that undoes part of the change (repeatable)",
    )
    p.add_argument("--repo", type=path, default=".", metavar="DIR", help="default: .")
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
    _add_pids(p)
    p.add_argument(
        "--may-change",
        dest="may_change",
        action="append",
        default=[],
        metavar="GLOB",
        help="a path a run may change in its clone without it being an unexpected change "
        "(repeatable; added to the caches every test run leaves)",
    )


def _add_pids(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pids",
        type=int,
        default=DEFAULT_PIDS,
        metavar="N",
        help=f"at most N processes per run, where the machine can cap them (default: {DEFAULT_PIDS})",
    )


def _add_timeout(p: argparse.ArgumentParser) -> None:
    """--timeout, which run, plan and rerun take alike."""
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
