"""evidence: the command line of mutation evidence (``evidence run``).

This module only registers the parser, and stays light because main builds its parser for every
command; the handler is ``pairgate/commands/evidence_run.py`` and the runner ``pairgate.evidence``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pairgate.evidence import DEFAULT_TIMEOUT

HELP = "mutation evidence: run the tests at a commit, then with each mutant, in a sandbox"
RUN_HELP = (
    "in a disposable clone of --repo at --sha, run --test unmutated (it must pass), then with "
    "each --mutant applied; print the evidence"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``evidence`` (and its ``run``) on the CLI's subparsers action."""
    family = subparsers.add_parser("evidence", help=HELP, description=HELP)
    sub = family.add_subparsers(dest="evidence_action", metavar="<subcommand>", required=True)
    p = sub.add_parser("run", help=RUN_HELP, description=RUN_HELP)
    family.set_defaults(reads_config=True, writes=False)
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
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds per run; the whole process tree is killed then (default: {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="mutants run at once (default: 1)"
    )
    p.add_argument("--network", action="store_true", help="let the runs reach the network")
    p.add_argument("--out", type=Path, metavar="FILE", help="write the evidence here (atomically)")
    p.add_argument("--json", action="store_true", help="print the evidence document")
    return family
