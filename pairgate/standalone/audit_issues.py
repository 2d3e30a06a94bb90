"""``audit --file-issues``: one tracker issue per finding, found again by a marker, so a re-run
never opens a second one.

The marker is one line in the issue's description, ``<!-- pairgate-audit {json} -->``, naming
the merge request and the head it merged at. It is a persisted format: its name never follows
cli_command. An issue counts as "already filed" only when all of these hold, so nobody can file
one ahead of the audit to keep the finding off the tracker: it carries the label AUDIT_LABEL,
its author is one of ``ledger_author_user_ids``, it was opened at or after the merge, and its
marker names the same project, iid and head. Filing never changes the finding itself: it is
reported, and counted in the exit code, on every run whose window holds the merge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pairgate.standalone.audit import MergeJudged, audit_stamp
from pairgate.standalone.audit_flags import AUDIT_LABEL
from pairgate.standalone.config import Config
from pairgate.standalone.errors import ConfigError
from pairgate.standalone.gitlab import GitLab, WriteUncertain, encode_project
from pairgate.standalone.ledger import stamp_epoch
from pairgate.standalone.records import neutralise_quick_actions

__all__ = ["Filed", "audit_marker", "file_findings", "filed_findings"]

AUDIT_MARKER = "pairgate-audit"
_AUDIT_MARKER_LINE = re.compile(r"^<!-- pairgate-audit (\{.*\}) -->[ \t]*$", re.MULTILINE)


class Filed(NamedTuple):
    """A tracker issue a finding went to."""

    issue: int  # the tracker issue's iid
    new: bool  # opened by this run


def finding_key(project: str, iid: int, head: str | None) -> tuple[str, int, str]:
    return project.casefold(), int(iid), head or ""


def audit_marker(finding: MergeJudged) -> str:
    facts = finding.mr.facts
    record = {
        "v": 1,
        "mr": {"project": facts.project, "iid": facts.iid},
        "head": facts.head_sha,
        "code": finding.code,
    }
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=True)
    # As in the ledger's markers: no value can close the HTML comment or open another.
    text = text.replace("<", "\\u003c").replace(">", "\\u003e")
    return f"<!-- {AUDIT_MARKER} {text} -->"


def filed_findings(
    listed: Sequence[Mapping[str, Any]], config: Config
) -> dict[tuple[str, int, str], tuple[int, float]]:
    """The findings already filed, from the tracker's AUDIT_LABEL issues: key -> (iid, when
    opened). Only issues by a ledger author, with one well-formed marker, count. Pure."""
    authors = frozenset(config.ledger_author_user_ids)
    found: dict[tuple[str, int, str], tuple[int, float]] = {}
    for issue in listed:
        if (issue.get("author") or {}).get("id") not in authors:
            continue
        markers = _AUDIT_MARKER_LINE.findall(str(issue.get("description") or ""))
        opened = stamp_epoch(str(issue.get("created_at") or ""))
        if len(markers) != 1 or opened is None:
            continue
        try:
            record = json.loads(markers[0])
            key = finding_key(record["mr"]["project"], record["mr"]["iid"], record["head"])
        except (ValueError, KeyError, TypeError):
            continue
        if key not in found or found[key][1] > opened:
            found[key] = (int(issue["iid"]), opened)
    return found


def already_filed(
    finding: MergeJudged, filed: Mapping[tuple[str, int, str], tuple[int, float]]
) -> int | None:
    facts = finding.mr.facts
    hit = filed.get(finding_key(facts.project, facts.iid, facts.head_sha))
    moment = finding.mr.moment
    # An issue opened before the merge cannot be the audit's report of it.
    if hit is None or moment is None or hit[1] < moment:
        return None
    return hit[0]


def audit_issue_text(finding: MergeJudged, config: Config) -> tuple[str, str]:
    """The title and the description of the issue that reports one finding."""
    mr = finding.mr
    facts = mr.facts
    head = facts.head_sha or "-"
    title = f"audit: {facts.ref} merged at {head[:8]} around the merge gate ({finding.code})"
    when = audit_stamp(mr.moment) if mr.moment is not None else (mr.merged_at or "an unknown time")
    lines = [
        f"`{config.cli} audit` found a merge that went around the merge gate.",
        "",
        f"- merge request: {facts.web_url or facts.ref}",
        f"- merged head: `{head}`",
        f"- merged by: {mr.merger or 'unknown'}, at {when}",
        f"- why: {finding.why}",
        f"- scope: {finding.scope} ({finding.scope_detail})",
    ]
    if finding.cited:
        cited = ", ".join(f"{config.tracker_project}#{i}" for i in finding.cited)
        lines.append(f"- cites: {cited}")
    if mr.fork:
        lines.append(f"- from a fork: source project id {mr.source_project_id}")
    if finding.verdict is not None:
        lines += ["", "merge-check would have said at the moment of the merge:", ""]
        lines += [f"> {line}" for line in finding.verdict.message.splitlines()]
    body = neutralise_quick_actions("\n".join(lines))
    return title, f"{body}\n\n{audit_marker(finding)}\n"


def file_findings(
    client: GitLab, config: Config, findings: Sequence[MergeJudged]
) -> dict[tuple[str, int], Filed]:
    """Open one tracker issue per finding not already filed; (project, iid) -> Filed. One
    listing of the AUDIT_LABEL issues, then one write per new finding. A write whose answer was
    lost is looked for again before it is called failed, never repeated blindly."""
    issues = f"projects/{encode_project(config.tracker_project)}/issues"

    def listing() -> dict[tuple[str, int, str], tuple[int, float]]:
        return filed_findings(client.get_all(issues, labels=AUDIT_LABEL, state="all"), config)

    filed = listing() if findings else {}
    result: dict[tuple[str, int], Filed] = {}
    for finding in findings:
        facts = finding.mr.facts
        ref = (facts.project, facts.iid)
        known = already_filed(finding, filed)
        if known is not None:
            result[ref] = Filed(known, False)
            continue
        title, description = audit_issue_text(finding, config)
        data = {"title": title, "description": description, "labels": AUDIT_LABEL}
        try:
            opened = client.write("POST", issues, data)
        except WriteUncertain:
            filed = listing()
            known = already_filed(finding, filed)
            if known is None:
                raise
            result[ref] = Filed(known, True)
            continue
        author = (opened.get("author") or {}).get("id")
        if author not in config.ledger_author_user_ids:
            raise ConfigError(
                f"pairgate audit: opened {config.tracker_project}#{opened['iid']} for "
                f"{facts.ref} as user id {author}, which is not in ledger_author_user_ids, so a "
                f"re-run would not recognise it and would open another. File findings with the "
                f"write token of a ledger author ({config.env_name('TASK_WRITE_TOKEN')})."
            )
        result[ref] = Filed(int(opened["iid"]), True)
    return result
