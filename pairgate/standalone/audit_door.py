"""The audit's door: its flags, its window, what it prints, its exit code. ``pairgate audit``
and ``python3 ownership.py audit`` (the scheduled pipeline's) both run ``run_audit``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pairgate.standalone.audit import AuditReport, MergeJudged, audit, audit_stamp
from pairgate.standalone.audit_flags import DEFAULT_AUDIT_DAYS
from pairgate.standalone.audit_issues import Filed, file_findings
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, UsageError
from pairgate.standalone.gate import project_in_group
from pairgate.standalone.gitlab import GitLab, encode_project
from pairgate.standalone.scope import AutomationFamily, load_automation_families, roster_path

__all__ = ["audit_window", "gated_projects", "run_audit"]


def audit_window(since: str | None, days: int | None, now: float) -> float:
    """The window's start, in epoch seconds."""
    if since is not None:
        try:
            moment = datetime.fromisoformat(since.strip().replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                f"pairgate audit: --since {since!r} is not an ISO 8601 date or time (such as "
                f"2026-05-01 or 2026-05-01T09:30:00Z)"
            ) from None
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    days = DEFAULT_AUDIT_DAYS if days is None else days
    if days < 1:
        raise UsageError(f"pairgate audit: --days {days}: give a whole number of days, 1 or more")
    return now - days * 86400


def gated_projects(
    client: GitLab, config: Config, named: Sequence[str], *, command: str = "audit"
) -> list[str]:
    """The projects --project names, each checked to be gated (a numeric id is read for its
    path). One outside the group's listing is a usage error: the gate never judged it."""
    paths = []
    for project in named:
        path = project
        if project.isdigit():
            path = str(client.get(f"projects/{encode_project(project)}")["path_with_namespace"])
        if not project_in_group(client, config, path):
            raise UsageError(
                f"{config.cli} {command}: --project {project}: not a gated project (it is not in group "
                f"{config.group_path}'s project listing), so the gate never judged its merges"
            )
        paths.append(path)
    return paths


def run_audit(
    ctx: Context,
    config: Config,
    client: GitLab,
    *,
    since: str | None,
    days: int | None,
    projects: Sequence[str],
    json_out: bool,
    file_issues: bool,
    families: Sequence[AutomationFamily] | None = None,
) -> int:
    """Exit 0 clean, 1 findings, 2 could not decide (any merge it could not judge; an
    unreadable ledger is never a pass)."""
    now = ctx.now()
    start = audit_window(since, days, now)
    if families is None:
        families = load_automation_families(roster_path(config))
    named = gated_projects(client, config, projects)
    report = audit(client, config, since=start, until=now, projects=named, families=families)
    findings = report.findings
    filed = file_findings(client, config, findings) if file_issues else {}
    if json_out:
        print(json.dumps(audit_json(report, filed), indent=2), file=ctx.stdout)
    else:
        print_audit(report, filed, config, ctx)
    if not report.decided:
        return Exit.ERROR
    return Exit.OK if report.clean else Exit.REFUSED


def _filed(filed: dict[tuple[str, int], Filed], finding: MergeJudged) -> Filed | None:
    return filed.get((finding.mr.facts.project, finding.mr.facts.iid))


def print_audit(
    report: AuditReport, filed: dict[tuple[str, int], Filed], config: Config, ctx: Context
) -> None:
    tracker = config.tracker_project
    for finding in report.findings:
        mr = finding.mr
        when = mr.merged_at or "an unknown time"
        kind = "FINDING" if finding.decided else "UNDECIDED"
        head = (mr.facts.head_sha or "-")[:12]
        print(
            f"{kind} {mr.facts.ref} merged at {head} by {mr.merger or 'unknown'}, {when} "
            f"[{finding.code}]",
            file=ctx.stdout,
        )
        print(f"  {finding.why}", file=ctx.stdout)
        done = _filed(filed, finding)
        if done is not None:
            state = "opened now" if done.new else "already filed"
            print(f"  filed: {tracker}#{done.issue} ({state})", file=ctx.stdout)
    for push in report.pushes:
        kind = "FINDING" if push.decided else "UNDECIDED"
        where = f"{push.project} {push.branch}" + (f" {push.sha[:12]}" if push.sha else "")
        print(f"{kind} {where} [{push.code}]", file=ctx.stdout)
        print(f"  {push.why}", file=ctx.stdout)
    for judged in report.judged:
        if judged.mr.fork and not judged.finding:
            print(
                f"fork: {judged.mr.facts.ref} merged from project id "
                f"{judged.mr.source_project_id}, {judged.code} ({judged.why.splitlines()[0]})",
                file=ctx.stdout,
            )
    gated = [j for j in report.judged if j.scope == "in-scope"]
    approved = [j for j in gated if not j.finding]
    where = ", ".join(report.projects) or f"every gated project of {config.group_path}"
    print(
        f"audit: {len(report.judged)} merge(s) since {audit_stamp(report.since)} in {where}: "
        f"{len(gated)} gated ({len(approved)} approved at the head they merged at), "
        f"{len(report.judged) - len(gated)} not gated; {len(report.findings)} finding(s)"
        + (f", {len(report.undecided)} undecided" if report.undecided else ""),
        file=ctx.stdout,
    )
    pushed = [p for p in report.pushes if p.decided]
    unread = [p for p in report.pushes if not p.decided]
    print(
        f"audit: {len(pushed)} commit(s) pushed to a default branch without a merge request"
        + (f", {len(unread)} branch(es) unreadable" if unread else ""),
        file=ctx.stdout,
    )
    cli = config.cli
    if not report.decided:
        print(
            f"next: give the read token access to what could not be read, then re-run "
            f"`{cli} audit --since {audit_stamp(report.since)}`",
            file=ctx.stdout,
        )
    elif report.pushes and not report.findings:
        print(
            "next: look at what each pushed commit changed and ask its pusher; a protected "
            "default branch that allows no one to push leaves merges as the only way in",
            file=ctx.stdout,
        )
    elif report.findings and not filed:
        print(
            f"next: look at what each one merged; to file each as a tracker issue: "
            f"`{cli} audit --since {audit_stamp(report.since)} --file-issues`",
            file=ctx.stdout,
        )


def audit_json(report: AuditReport, filed: dict[tuple[str, int], Filed]) -> dict[str, Any]:
    """audit --json: stable keys, documented in docs/agent-handoff-reference.md."""

    def finding(j: MergeJudged) -> dict[str, Any]:
        mr = j.mr
        done = _filed(filed, j)
        return {
            "mr": {"project": mr.facts.project, "iid": mr.facts.iid},
            "web_url": mr.facts.web_url,
            "head_sha": mr.facts.head_sha,
            "merged_at": mr.merged_at,
            "merged_by": mr.merged_by,
            "merge_user": mr.merge_user,
            "merge_commit_sha": mr.merge_commit_sha,
            "code": j.code,
            "decided": j.decided,
            "why": j.why,
            "gate_message": j.verdict.message if j.verdict is not None else None,
            "scope": j.scope,
            "scope_detail": j.scope_detail,
            "cited_issues": list(j.cited),
            "fork": mr.fork,
            "source_project_id": mr.source_project_id,
            "filed": None if done is None else {"issue": done.issue, "new": done.new},
        }

    gated = [j for j in report.judged if j.scope == "in-scope"]
    return {
        "since": audit_stamp(report.since),
        "until": audit_stamp(report.until),
        "projects": list(report.projects),
        "merged": len(report.judged),
        "gated": len(gated),
        "approved": len([j for j in gated if not j.finding]),
        "findings": [finding(j) for j in report.findings],
        "undecided": len(report.undecided) + len([p for p in report.pushes if not p.decided]),
        "not_gated": [
            {"mr": {"project": j.mr.facts.project, "iid": j.mr.facts.iid}, "scope": j.scope}
            for j in report.judged
            if j.scope != "in-scope" and not j.finding
        ],
        "pushed_without_mr": [
            {
                "project": p.project,
                "branch": p.branch,
                "sha": p.sha,
                "title": p.title,
                "committed_at": p.committed_at,
                "pusher": p.pusher,
                "pushed_at": p.pushed_at,
                "code": p.code,
                "decided": p.decided,
                "why": p.why,
            }
            for p in report.pushes
        ],
        "forks": [
            {
                "mr": {"project": j.mr.facts.project, "iid": j.mr.facts.iid},
                "source_project_id": j.mr.source_project_id,
                "code": j.code,
            }
            for j in report.judged
            if j.mr.fork
        ],
    }
