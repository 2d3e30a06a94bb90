"""The audit's flags, one definition for both doors (``pairgate audit`` and ``python3
ownership.py audit``). Apart from the audit, because ``pairgate --help`` builds them and should
not import the audit to do so."""

from __future__ import annotations

# typing.TYPE_CHECKING without importing typing, which would cost --help (mypy and ruff read any
# name TYPE_CHECKING as typing's).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

__all__ = ["AUDIT_LABEL", "DEFAULT_AUDIT_DAYS", "add_audit_arguments", "add_project_filter"]

DEFAULT_AUDIT_DAYS = 7
# The label of the issues ``audit --file-issues`` opens (audit_issues.py).
AUDIT_LABEL = "pairgate::audit"


def add_project_filter(parser: argparse.ArgumentParser) -> None:
    """--project, for the commands that read the gated projects (audit, doctor)."""
    parser.add_argument(
        "--project",
        dest="projects",
        action="append",
        default=[],
        metavar="PROJECT",
        help="only this gated project (repeatable; default: every project in the group's listing)",
    )


def add_audit_arguments(parser: argparse.ArgumentParser) -> None:
    """The audit's own flags (--json and --verbose come with each door)."""
    window = parser.add_mutually_exclusive_group()
    window.add_argument(
        "--since",
        metavar="DATE",
        help="merges at or after this ISO 8601 date or time (a date is its midnight, UTC)",
    )
    window.add_argument(
        "--days",
        type=int,
        metavar="N",
        help=f"merges in the last N days (default: {DEFAULT_AUDIT_DAYS})",
    )
    add_project_filter(parser)
    parser.add_argument(
        "--file-issues",
        action="store_true",
        help=f"open a tracker issue labelled {AUDIT_LABEL} per finding not already filed",
    )
