"""What the watcher keeps: snapshots of what GitLab showed, the events between two snapshots,
and the batches events are delivered in. Frozen records that round-trip through JSON (the
store keeps snapshots and event details as JSON documents)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Event kinds. FINAL kinds end the chase of their merge request's events.
PUSH = "push"
PIPELINE = "pipeline"
COMMENT_ADDED, COMMENT_EDITED, COMMENT_REMOVED = (
    "comment-added",
    "comment-edited",
    "comment-removed",
)
APPROVED, UNAPPROVED = "approved", "unapproved"
OFFER = "offer"
MERGED, CLOSED = "merged", "closed"
FINAL_KINDS = frozenset({MERGED, CLOSED})
COMMENT_KINDS = frozenset({COMMENT_ADDED, COMMENT_EDITED, COMMENT_REMOVED})


def mr_subject(project: str, iid: int) -> str:
    return f"mr:{project}!{iid}"


def issue_subject(tracker: str, iid: int) -> str:
    return f"issue:{tracker}#{iid}"


def subject_name(subject: str) -> str:
    """``acme/app!4`` or ``acme/tracker#2``: how GitLab writes the reference."""
    return subject.split(":", 1)[1]


@dataclass(frozen=True)
class NoteSnap:
    """One note on a merge request, as the discussions listing showed it."""

    id: int
    author: str
    body: str
    created_at: str
    updated_at: str
    system: bool
    discussion_id: str
    thread: bool  # part of a thread rather than a lone comment
    position: str | None = None  # "path:line" for a comment on the diff


@dataclass(frozen=True)
class PipelineSnap:
    """The newest pipeline seen for one commit of a merge request."""

    id: int
    sha: str
    status: str  # GitLab's status word
    updated_at: str
    web_url: str
    failed_jobs: tuple[str, ...] = ()  # failed jobs that fail the pipeline
    allowed_failures: tuple[str, ...] = ()  # failed jobs with allow_failure


@dataclass(frozen=True)
class MrSnap:
    project: str
    iid: int
    project_id: int
    source_project_id: int
    source_branch: str
    title: str
    web_url: str
    state: str
    sha: str | None
    updated_at: str
    user_notes_count: int
    cites: tuple[int, ...]  # tracker issues its title or description cites
    notes: tuple[NoteSnap, ...] = ()
    approved_by: tuple[str, ...] = ()
    pipelines: tuple[PipelineSnap, ...] = ()  # newest per commit, newest commits last
    merge_commit_sha: str | None = None

    @property
    def subject(self) -> str:
        return mr_subject(self.project, self.iid)

    def pipeline_for(self, sha: str | None) -> PipelineSnap | None:
        return next((p for p in self.pipelines if p.sha == sha), None)


@dataclass(frozen=True)
class OfferSnap:
    note_id: int
    sender: str
    to: str
    role: str
    sha: str
    mr: str | None  # "group/project!iid"
    event: str  # handoff, or approve (an approval's offer back)
    reason: str | None = None
    created_at: str | None = None


@dataclass(frozen=True)
class Route:
    """Who gets a subject's events, and the rule of the ledger that chose them."""

    agent: str | None
    rule: str


@dataclass(frozen=True)
class IssueSnap:
    iid: int
    title: str
    state: str
    updated_at: str
    labels: tuple[str, ...]
    route: Route
    offer: OfferSnap | None = None
    # (agent, session, first note) of each name a session wrote on the trail: inbox ack
    # refuses a session that wrote as another name than the one it acknowledges as.
    sessions: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True)
class Event:
    """One change between two snapshots. ``at`` is GitLab's time of the change when it says
    one; ``sha`` the commit it concerns (the head when it was observed, for changes that name
    none). ``id`` and ``observed_at`` come from the store."""

    subject: str
    kind: str
    sha: str | None
    at: str | None
    detail: Mapping[str, Any] = field(default_factory=dict)
    id: int = 0
    observed_at: float = 0.0

    @property
    def final(self) -> bool:
        return self.kind in FINAL_KINDS


@dataclass(frozen=True)
class Batch:
    """Events delivered together to one agent, until that agent acknowledges them.

    state: ``pending`` (chased: sent, re-sent as reminders), ``acked``, ``moved`` (the turn
    moved: its events were re-issued as ``moved_to``; it stays as history), ``ended`` (its
    merge request merged or closed), ``final`` (the one last notification, not yet attempted)
    and ``final-sent`` (attempted once, never again)."""

    id: int
    recipient: str | None
    subject: str
    rule: str
    created_at: float
    state: str
    event_ids: tuple[int, ...]
    final: bool = False
    replaces: tuple[int, ...] = ()
    moved_to: int | None = None
    acked_at: float | None = None
    ack_by: str | None = None
    ack_note: str | None = None
    attempts: int = 0
    last_attempt_at: float | None = None
    last_attempt_ok: bool | None = None
    last_ok_at: float | None = None
    first_ok_at: float | None = None
    ack_session: str | None = None  # the session the acknowledgement came from, when known

    @property
    def label(self) -> str:
        return f"b{self.id}"


LIVE = ("pending", "final")  # the states a delivery still acts on


def to_doc(record: Any) -> dict[str, Any]:
    return dataclasses.asdict(record)


def mr_from_doc(doc: Mapping[str, Any]) -> MrSnap:
    values = dict(doc)
    values["cites"] = tuple(values.get("cites") or ())
    values["approved_by"] = tuple(values.get("approved_by") or ())
    values["notes"] = tuple(NoteSnap(**n) for n in values.get("notes") or ())
    values["pipelines"] = tuple(
        PipelineSnap(
            **{
                **p,
                "failed_jobs": tuple(p["failed_jobs"]),
                "allowed_failures": tuple(p["allowed_failures"]),
            }
        )
        for p in values.get("pipelines") or ()
    )
    return MrSnap(**values)


def issue_from_doc(doc: Mapping[str, Any]) -> IssueSnap:
    values = dict(doc)
    values["labels"] = tuple(values.get("labels") or ())
    values["route"] = Route(**values["route"])
    values["offer"] = OfferSnap(**values["offer"]) if values.get("offer") else None
    values["sessions"] = tuple((str(a), str(s), int(n)) for a, s, n in values.get("sessions") or ())
    return IssueSnap(**values)


def snap_from_doc(subject: str, doc: Mapping[str, Any]) -> MrSnap | IssueSnap:
    return mr_from_doc(doc) if subject.startswith("mr:") else issue_from_doc(doc)
