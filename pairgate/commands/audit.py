"""audit: every merge in the window that went around the merge gate (the audit itself is
ownership.py's, so the scheduled merge-audit job runs the same code from a flat deployment)."""

from __future__ import annotations

from pairgate.standalone.audit_door import run_audit
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context
from pairgate.standalone.gitlab import GitLab


def audit(
    *,
    ctx: Context,
    config: Config,
    client: GitLab,
    since: str | None,
    days: int | None,
    projects: list[str],
    json: bool,
    file_issues: bool,
) -> int:
    """Exit 0 clean, 1 findings, 2 could not decide."""
    return run_audit(
        ctx,
        config,
        client,
        since=since,
        days=days,
        projects=projects,
        json_out=json,
        file_issues=file_issues,
    )
