"""Old snapshot + new snapshot -> events. Pure.

What a comparison of two snapshots can see is only what differs between them: a comment
written and deleted between two polls, or a pipeline status no poll caught, leaves no trace.
The first snapshot of a merge request reports what is already there (its comments, approvals
and the head's pipeline) so an agent starting late still hears of them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pairgate.output import epoch
from pairgate.watch.records import (
    APPROVED,
    CLOSED,
    COMMENT_ADDED,
    COMMENT_EDITED,
    COMMENT_REMOVED,
    MERGED,
    OFFER,
    PIPELINE,
    PUSH,
    UNAPPROVED,
    Event,
    IssueSnap,
    MrSnap,
    NoteSnap,
    PipelineSnap,
)

# How many commits' pipelines a snapshot remembers: enough to tell an old commit's late result
# from the head's.
KEPT_PIPELINES = 10
_OUTCOMES = {
    "success": "passed",
    "failed": "failed",
    "canceled": "canceled",
    "canceling": "canceled",
    "skipped": "skipped",
    "manual": "manual",
    "scheduled": "scheduled",
}


def outcome(status: str) -> str:
    """A pipeline status as the agent needs it: passed, failed, canceled, skipped, manual,
    scheduled, or running (every status on the way: created, pending, preparing, ...)."""
    return _OUTCOMES.get(status, "running")


def _pipeline_event(subject: str, p: PipelineSnap) -> Event:
    detail: dict[str, Any] = {
        "pipeline_id": p.id,
        "status": outcome(p.status),
        "web_url": p.web_url,
    }
    detail["gitlab_status"] = p.status
    if p.failed_jobs or p.allowed_failures:
        detail["failed_jobs"] = list(p.failed_jobs)
        detail["allowed_failures"] = list(p.allowed_failures)
    return Event(subject, PIPELINE, p.sha, p.updated_at, detail)


def _differs(old: PipelineSnap | None, new: PipelineSnap) -> bool:
    """Is ``new`` news: a first result for its commit, or a newer pipeline (or the same one)
    with another outcome or other failed jobs. An older pipeline's answer is never news."""
    if old is None:
        return True
    if new.id < old.id:
        return False
    if new.id == old.id and _older(new.updated_at, old.updated_at):
        return False  # an answer read before the one stored (another watcher's, or a hook's)
    return (outcome(old.status), old.failed_jobs) != (outcome(new.status), new.failed_jobs)


def _older(stamp: str, than: str) -> bool:
    first, second = epoch(stamp), epoch(than)
    return first is not None and second is not None and first < second


def merge_pipelines(
    old: Sequence[PipelineSnap], new: Iterable[PipelineSnap]
) -> tuple[PipelineSnap, ...]:
    """Newest pipeline per commit: a newer pipeline (higher id) for a commit replaces the older
    one, an older answer never replaces a newer one."""
    kept = {p.sha: p for p in old}
    for p in new:
        have = kept.get(p.sha)
        if have is None or p.id > have.id or (p.id == have.id and p.updated_at >= have.updated_at):
            kept.pop(p.sha, None)
            kept[p.sha] = p
    return tuple(kept.values())[-KEPT_PIPELINES:]


def _note_detail(note: NoteSnap) -> dict[str, Any]:
    return {
        "note_id": note.id,
        "author": note.author,
        "body": note.body,
        "discussion_id": note.discussion_id,
        "thread": note.thread,
        "position": note.position,
    }


def _comment_events(old: MrSnap | None, new: MrSnap) -> list[Event]:
    before = {n.id: n for n in (old.notes if old else ()) if not n.system}
    after = {n.id: n for n in new.notes if not n.system}
    events = []
    for note_id, note in sorted(after.items()):
        had = before.get(note_id)
        if had is None:
            detail = _note_detail(note) | {"existing": old is None}
            events.append(Event(new.subject, COMMENT_ADDED, new.sha, note.created_at, detail))
        elif had.body != note.body:  # an edit is a changed body; an emoji also moves updated_at
            detail = _note_detail(note) | {"before": had.body}
            events.append(Event(new.subject, COMMENT_EDITED, new.sha, note.updated_at, detail))
    for note_id, note in sorted(before.items()):
        if note_id not in after:  # GitLab says no time for a deletion
            events.append(Event(new.subject, COMMENT_REMOVED, new.sha, None, _note_detail(note)))
    return events


def mr_changes(old: MrSnap | None, new: MrSnap) -> tuple[MrSnap, list[Event]]:
    """The merge request's next snapshot and what changed. ``new`` is what was just read (its
    pipelines: at most the head's); the snapshot keeps older commits' pipelines too."""
    if old is not None and new.state != "opened":  # a closed MR is read without its comments
        new = dataclasses.replace(new, notes=old.notes, approved_by=old.approved_by)
    merged = dataclasses.replace(
        new, pipelines=merge_pipelines(old.pipelines if old else (), new.pipelines)
    )
    subject = new.subject
    events: list[Event] = []
    if old is not None and old.sha and new.sha and old.sha != new.sha:
        events.append(Event(subject, PUSH, new.sha, new.updated_at, {"from": old.sha}))
    for p in new.pipelines:
        if _differs(old.pipeline_for(p.sha) if old else None, p):
            events.append(_pipeline_event(subject, p))
    events += _comment_events(old, new)
    had = set(old.approved_by) if old else set()
    for user in new.approved_by:
        if user not in had:
            events.append(
                Event(subject, APPROVED, new.sha, None, {"by": user, "existing": old is None})
            )
    for user in sorted(had - set(new.approved_by)):
        events.append(Event(subject, UNAPPROVED, new.sha, None, {"by": user}))
    if (old is None or old.state == "opened") and new.state in ("merged", "closed"):
        kind = MERGED if new.state == "merged" else CLOSED
        detail = {"merge_commit_sha": new.merge_commit_sha}
        events.append(Event(subject, kind, new.sha, new.updated_at, detail))
    return merged, events


def pipeline_changes(old: MrSnap, seen: Iterable[PipelineSnap]) -> tuple[MrSnap, list[Event]]:
    """A merge request's pipelines seen in a project's pipeline listing (GitLab does not move a
    merge request's updated_at when its pipeline changes status)."""
    events = [_pipeline_event(old.subject, p) for p in seen if _differs(old.pipeline_for(p.sha), p)]
    return dataclasses.replace(old, pipelines=merge_pipelines(old.pipelines, seen)), events


def _mr_ref(iid: int) -> re.Pattern[str]:
    return re.compile(rf"^refs/merge-requests/{iid}/(head|merge|train)$")


def pipeline_commit(pipeline: Mapping[str, Any], mr: MrSnap) -> str | None:
    """Which of the merge request's commits a listed pipeline is for, or None when it is not
    the merge request's: a branch pipeline of its source branch at a commit it has shown, or a
    merge request pipeline. A merged-results pipeline runs on a merge commit GitLab makes; it
    counts for the head the merge request had when it was read."""
    ref, sha = str(pipeline.get("ref") or ""), str(pipeline.get("sha") or "")
    own = int(pipeline.get("project_id") or 0) in (mr.source_project_id, mr.project_id)
    known = {p.sha for p in mr.pipelines} | ({mr.sha} if mr.sha else set())
    if not own:
        return None
    if ref == mr.source_branch and int(pipeline.get("project_id") or 0) == mr.source_project_id:
        return sha if sha in known else None
    if _mr_ref(mr.iid).match(ref) and int(pipeline.get("project_id") or 0) == mr.project_id:
        return sha if sha in known else mr.sha
    return None


def issue_changes(old: IssueSnap | None, new: IssueSnap, subject: str) -> list[Event]:
    """A new pending offer: the event its receiver must not miss."""
    offer = new.offer
    if offer is None or (old is not None and old.offer and old.offer.note_id == offer.note_id):
        return []
    detail = {
        "note_id": offer.note_id,
        "from": offer.sender,
        "to": offer.to,
        "role": offer.role,
        "mr": offer.mr,
        "event": offer.event,
        "reason": offer.reason,
        "issue": new.iid,
        "existing": old is None,
    }
    return [Event(subject, OFFER, offer.sha, offer.created_at, detail)]
