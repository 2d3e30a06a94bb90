"""The sandbox's state: flat tables of the records, the index over them, the clock.

The world saves to and loads from one JSON file (``--state``); the index is derived.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pairgate.sandbox.records import (
    Commit,
    Group,
    Issue,
    Job,
    LabelEvent,
    MergeRequest,
    Note,
    Options,
    Pipeline,
    Project,
    PushEvent,
    Token,
    User,
    WebHook,
    new_discussion_id,
)

TABLES: dict[str, type] = {
    "users": User,
    "groups": Group,
    "projects": Project,
    "commits": Commit,
    "issues": Issue,
    "notes": Note,
    "merge_requests": MergeRequest,
    "pipelines": Pipeline,
    "jobs": Job,
    "tokens": Token,
    "hooks": WebHook,
    "push_events": PushEvent,
    "label_events": LabelEvent,
}
_STR_KEYED = {"commits", "tokens"}
_INT_KEYED = {"members", "shared_with"}


def iso(seconds: float) -> str:
    """GitLab's record timestamp: UTC, milliseconds, Z."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Index:
    """The lookups requests make, kept beside the tables so that no request scans a table
    (a world of 2,000 issues x 20 notes answers as fast as an empty one). Derived, never saved:
    records enter and leave through World's add_* and delete_* methods."""

    def __init__(self) -> None:
        self.issue_at: dict[tuple[int, int], Issue] = {}  # (project id, iid)
        self.mr_at: dict[tuple[int, int], MergeRequest] = {}
        self.notes_on: dict[tuple[str, int], dict[int, Note]] = {}  # (type, noteable id), by id
        self.jobs_of: dict[int, dict[int, Job]] = {}  # pipeline id -> its jobs, by id
        self.job_by_token: dict[str, Job] = {}


@dataclass
class World:
    """Everything the server knows. Callers hold the server's lock while they touch it."""

    users: dict[int, User] = field(default_factory=dict)
    groups: dict[int, Group] = field(default_factory=dict)
    projects: dict[int, Project] = field(default_factory=dict)
    commits: dict[str, Commit] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    notes: dict[int, Note] = field(default_factory=dict)
    merge_requests: dict[int, MergeRequest] = field(default_factory=dict)
    pipelines: dict[int, Pipeline] = field(default_factory=dict)
    jobs: dict[int, Job] = field(default_factory=dict)
    tokens: dict[str, Token] = field(default_factory=dict)  # the secret -> its record
    hooks: dict[int, WebHook] = field(default_factory=dict)  # project and group webhooks
    push_events: dict[int, PushEvent] = field(default_factory=dict)
    label_events: dict[int, LabelEvent] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)  # title -> label id
    counters: dict[str, int] = field(default_factory=dict)
    clock_offset: float = 0.0
    options: Options = field(default_factory=Options)
    index: Index = field(
        default_factory=Index, init=False, repr=False, compare=False, metadata={"derived": True}
    )
    # The server's webhook deliveries (webhook_events.Webhooks), never saved: set by the server.
    webhooks: Any = field(
        default=None, init=False, repr=False, compare=False, metadata={"derived": True}
    )

    def __post_init__(self) -> None:
        self.reindex()

    def reindex(self) -> None:
        """Rebuild the index from the tables (after loading them)."""
        self.index = Index()
        for issue in self.issues.values():
            self.index.issue_at[(issue.project_id, issue.iid)] = issue
        for mr in self.merge_requests.values():
            self.index.mr_at[(mr.project_id, mr.iid)] = mr
        for note in sorted(self.notes.values(), key=lambda n: n.id):
            self.index.notes_on.setdefault((note.noteable_type, note.noteable_id), {})[note.id] = (
                note
            )
        for job in sorted(self.jobs.values(), key=lambda j: j.id):
            self._index_job(job)

    # -- clock and ids ------------------------------------------------------------------------

    def now(self) -> float:
        return time.time() + self.clock_offset

    def stamp(self) -> str:
        return iso(self.now())

    def next_id(self, kind: str) -> int:
        value = self.counters.get(kind, 1)
        self.counters[kind] = value + 1
        return value

    def next_iid(self, project: Project, kind: str) -> int:
        value = project.next_iid.get(kind, 1)
        project.next_iid[kind] = value + 1
        return value

    def add_note(
        self,
        noteable: Issue | MergeRequest,
        author: User,
        body: str,
        *,
        system: bool = False,
        internal: bool = False,
        note_type: str | None = None,
        discussion_id: str | None = None,
        position: dict[str, Any] | None = None,
    ) -> Note:
        """Store a note on an issue or MR. ``system`` notes are GitLab's own (title and
        description edits, pushes, approvals) and never editable. A note starts its own
        discussion unless ``discussion_id`` names the thread it replies in."""
        now = self.stamp()
        kind = "Issue" if isinstance(noteable, Issue) else "MergeRequest"
        note_id = self.next_id("note")
        note = Note(
            note_id,
            noteable.project_id,
            kind,
            noteable.id,
            noteable.iid,
            body,
            author.id,
            now,
            now,
            system=system,
            internal=internal,
            note_type=note_type,
            discussion_id=discussion_id or new_discussion_id(kind, noteable.id, note_id),
            position=position,
        )
        self.notes[note.id] = note
        self.index.notes_on.setdefault((kind, noteable.id), {})[note.id] = note
        return note

    def delete_note(self, note: Note) -> None:
        del self.notes[note.id]
        del self.index.notes_on[(note.noteable_type, note.noteable_id)][note.id]

    def notes_on(self, noteable: Issue | MergeRequest) -> list[Note]:
        """The notes of an issue or MR, oldest first."""
        kind = "Issue" if isinstance(noteable, Issue) else "MergeRequest"
        return list(self.index.notes_on.get((kind, noteable.id), {}).values())

    def add_issue(self, issue: Issue) -> Issue:
        self.issues[issue.id] = issue
        self.index.issue_at[(issue.project_id, issue.iid)] = issue
        return issue

    def add_merge_request(self, mr: MergeRequest) -> MergeRequest:
        self.merge_requests[mr.id] = mr
        self.index.mr_at[(mr.project_id, mr.iid)] = mr
        return mr

    def add_job(self, job: Job) -> Job:
        self.jobs[job.id] = job
        self._index_job(job)
        return job

    def _index_job(self, job: Job) -> None:
        self.index.jobs_of.setdefault(job.pipeline_id, {})[job.id] = job
        self.index.job_by_token[job.token] = job

    def jobs_of(self, pipeline: Pipeline, *, retried: bool = False) -> list[Job]:
        """A pipeline's jobs, oldest first; those a retry replaced only with ``retried``."""
        jobs = self.index.jobs_of.get(pipeline.id, {}).values()
        return [j for j in jobs if retried or not j.retried]

    def job_by_token(self, token: str) -> Job | None:
        return self.index.job_by_token.get(token)

    def label_id(self, title: str) -> int:
        if title not in self.labels:
            self.labels[title] = self.next_id("label")
        return self.labels[title]

    # -- lookups ------------------------------------------------------------------------------

    def project_by_ref(self, ref: str) -> Project | None:
        """A project by numeric id or full path (already URL-decoded)."""
        if ref.isdigit():
            return self.projects.get(int(ref))
        return next((p for p in self.projects.values() if self.full_path(p) == ref), None)

    def group_by_ref(self, ref: str) -> Group | None:
        if ref.isdigit():
            return self.groups.get(int(ref))
        return next((g for g in self.groups.values() if g.path == ref), None)

    def full_path(self, project: Project) -> str:
        return f"{self.groups[project.namespace_id].path}/{project.path}"

    def access_level(self, user: User | None, project: Project) -> int:
        """The user's effective level on a project: direct, group, or through a group share
        (capped at the share's level); 0 for none."""
        if user is None:
            return 0
        levels = [project.members.get(user.id, 0)]
        levels.append(self.groups[project.namespace_id].members.get(user.id, 0))
        for group_id, cap in project.shared_with.items():
            levels.append(min(cap, self.groups[group_id].members.get(user.id, 0)))
        return max(levels)

    def can_read(self, user: User | None, project: Project) -> bool:
        if project.visibility == "public":
            return True
        if user is None:
            return False
        return project.visibility == "internal" or self.access_level(user, project) > 0

    def issue(self, project: Project, iid: int) -> Issue | None:
        return self.index.issue_at.get((project.id, iid))

    def merge_request(self, project: Project, iid: int) -> MergeRequest | None:
        return self.index.mr_at.get((project.id, iid))

    # -- persistence --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.metadata.get("derived"):
                continue
            value = getattr(self, f.name)
            if f.name in TABLES:
                out[f.name] = {key: dataclasses.asdict(row) for key, row in value.items()}
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                out[f.name] = dataclasses.asdict(value)
            else:
                out[f.name] = copy.deepcopy(value)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> World:
        world = cls(
            labels=data["labels"],
            counters=data["counters"],
            clock_offset=data["clock_offset"],
            options=Options(**data["options"]),
        )
        for name, record_type in TABLES.items():
            table = getattr(world, name)
            for key, row in data.get(name, {}).items():
                for sub in _INT_KEYED & set(row):
                    row[sub] = {int(k): v for k, v in row[sub].items()}
                table[key if name in _STR_KEYED else int(key)] = record_type(**row)
        world.reindex()
        return world

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json()), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> World:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))
