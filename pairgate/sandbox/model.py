"""The sandbox's state: flat tables of plain records, the clock, the switches, access levels.

Records hold only JSON-able fields and refer to each other by id, so the whole world saves to
and loads from one JSON file (``--state``) without a serialiser per type.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

GUEST, REPORTER, DEVELOPER, MAINTAINER, OWNER = 10, 20, 30, 40, 50


@dataclass
class Options:
    """Behaviour switches: where GitLab versions or tiers differ, or the reference could not
    confirm a behaviour, the default is its suggestion and the other answer is one switch away."""

    scoped_labels: str = "free"  # "premium": a newly added key::value drops its siblings
    approvals_shape: str = "ee"  # "ce": the short FOSS entity of GET .../approvals
    legacy_approval_statuses: bool = False  # approve twice -> 401, unapprove unapproved -> 404
    reset_approvals_on_push: bool = False  # Premium's "remove all approvals when commits added"
    author_can_approve: bool = True  # Free lets the MR author approve their own MR
    developers_can_merge: bool = True  # protected main: may Developers accept MRs?
    pipelines_must_succeed: bool = False  # project setting only_allow_merge_if_pipeline_succeeds
    raw_file_ref_required: bool = False  # older servers: GET .../raw without ref -> 400
    countless_above: int = 10_000  # above this many rows X-Total/X-Total-Pages are omitted

    def update(self, values: dict[str, Any]) -> None:
        known = {f.name for f in dataclasses.fields(self)}
        for key, value in values.items():
            if key not in known:
                raise KeyError(key)
            setattr(self, key, value)


@dataclass
class User:
    id: int
    username: str
    name: str
    bot: bool = False
    state: str = "active"


@dataclass
class Group:
    id: int
    path: str
    name: str
    members: dict[int, int] = field(default_factory=dict)  # user id -> access level


@dataclass
class Project:
    id: int
    path: str
    name: str
    namespace_id: int
    created_at: str
    visibility: str = "private"
    default_branch: str = "main"
    branches: dict[str, str] = field(default_factory=dict)  # name -> head sha
    shared_with: dict[int, int] = field(default_factory=dict)  # group id -> max access level
    members: dict[int, int] = field(default_factory=dict)  # direct members
    next_iid: dict[str, int] = field(default_factory=dict)  # "issue"/"mr"/"pipeline" -> next


@dataclass
class Commit:
    id: str
    project_id: int
    parent_ids: list[str]
    message: str
    author_name: str
    author_email: str
    created_at: str
    tree: dict[str, str]  # path -> content (the whole snapshot: worlds are small)


@dataclass
class Issue:
    id: int
    iid: int
    project_id: int
    title: str
    description: str | None
    author_id: int
    created_at: str
    updated_at: str
    state: str = "opened"
    closed_at: str | None = None
    closed_by_id: int | None = None
    labels: list[str] = field(default_factory=list)
    assignee_ids: list[int] = field(default_factory=list)
    confidential: bool = False
    discussion_locked: bool = False


@dataclass
class Note:
    id: int
    project_id: int
    noteable_type: str  # "Issue" | "MergeRequest"
    noteable_id: int
    noteable_iid: int
    body: str
    author_id: int
    created_at: str
    updated_at: str
    system: bool = False
    internal: bool = False
    # Set when a PUT changes the body (GraphQL Note.lastEditedAt; REST shows only updated_at,
    # which an emoji reaction moves too). awards: [award id, name, user id, created_at].
    last_edited_at: str | None = None
    last_edited_by_id: int | None = None
    awards: list[list[Any]] = field(default_factory=list)


@dataclass
class MergeRequest:
    id: int
    iid: int
    project_id: int
    source_project_id: int
    source_branch: str
    target_branch: str
    title: str
    description: str | None
    author_id: int
    created_at: str
    updated_at: str
    base_sha: str
    state: str = "opened"
    labels: list[str] = field(default_factory=list)
    assignee_ids: list[int] = field(default_factory=list)
    reviewer_ids: list[int] = field(default_factory=list)
    approvals: list[list[Any]] = field(default_factory=list)  # [user id, approved_at], oldest first
    head_pipeline_id: int | None = None
    final_sha: str | None = None  # the head when merged or closed; the live branch head before
    merge_commit_sha: str | None = None
    merged_at: str | None = None
    merged_by_id: int | None = None
    closed_at: str | None = None
    closed_by_id: int | None = None
    merge_when_pipeline_succeeds: bool = False


@dataclass
class Pipeline:
    id: int
    iid: int
    project_id: int
    sha: str
    ref: str
    source: str
    user_id: int | None
    created_at: str
    updated_at: str


@dataclass
class Job:
    id: int
    pipeline_id: int
    name: str
    stage: str
    status: str
    allow_failure: bool
    created_at: str
    token: str


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
}
_INT_KEYED = {"members", "shared_with"}


def iso(seconds: float) -> str:
    """GitLab's record timestamp: UTC, milliseconds, Z."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


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
    tokens: dict[str, list[Any]] = field(default_factory=dict)  # token -> [user id, scope]
    labels: dict[str, int] = field(default_factory=dict)  # title -> label id
    counters: dict[str, int] = field(default_factory=dict)
    clock_offset: float = 0.0
    options: Options = field(default_factory=Options)

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
        return next(
            (i for i in self.issues.values() if i.project_id == project.id and i.iid == iid), None
        )

    def merge_request(self, project: Project, iid: int) -> MergeRequest | None:
        return next(
            (
                m
                for m in self.merge_requests.values()
                if m.project_id == project.id and m.iid == iid
            ),
            None,
        )

    # -- persistence --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> World:
        world = cls(
            tokens=data["tokens"],
            labels=data["labels"],
            counters=data["counters"],
            clock_offset=data["clock_offset"],
            options=Options(**data["options"]),
        )
        for name, record_type in TABLES.items():
            table = getattr(world, name)
            for key, row in data[name].items():
                for sub in _INT_KEYED & set(row):
                    row[sub] = {int(k): v for k, v in row[sub].items()}
                table[key if name == "commits" else int(key)] = record_type(**row)
        return world

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json()), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> World:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))
