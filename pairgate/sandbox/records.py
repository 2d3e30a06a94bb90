"""The sandbox's records, the switches and the access levels.

Records hold only JSON-able fields and refer to each other by id, so the whole world saves to
and loads from one JSON file (``--state``) without a serialiser per type.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
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
    merged_time_filters: bool = True  # MR lists take merged_after/merged_before (newest GitLab)

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
class Token:
    """A personal access token (GET /personal_access_tokens/self shows it)."""

    id: int
    user_id: int
    name: str
    scopes: list[str]  # "api" (read and write) or "read_api" (GET and HEAD only)
    created_at: str
    expires_at: str | None = None  # a date, YYYY-MM-DD; expired from that day on
    last_used_at: str | None = None
    revoked: bool = False
    description: str | None = None


@dataclass
class Group:
    id: int
    path: str
    name: str
    members: dict[int, int] = field(default_factory=dict)  # user id -> access level
    # Its CI/CD variables (variables.py), given to the jobs of its projects under a project's.
    variables: list[dict[str, Any]] = field(default_factory=list)


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
    settings: dict[str, Any] = field(default_factory=dict)  # set by PUT; see settings.py
    protected_branches: list[dict[str, Any]] = field(default_factory=list)  # protection.py
    # What the project's CI configuration would make of a merge request pipeline: the jobs it
    # creates ({name, stage, allow_failure}); None when the project has no CI configuration.
    ci_jobs: list[dict[str, Any]] | None = None
    forked_from_id: int | None = None  # the project this one is a fork of (POST .../fork)
    # Its CI/CD variables (variables.py): {key, value, masked, protected, variable_type, ...}.
    variables: list[dict[str, Any]] = field(default_factory=list)


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
    # A mirrored commit's real repository (POST /-/sandbox/commits with git_dir): the runner's
    # checkout fetches the commit from there, so a job sees the commit CI_COMMIT_SHA names.
    git_dir: str | None = None


@dataclass
class PushEvent:
    """A push to a branch, as the project's events API lists it (``action=pushed``)."""

    id: int
    project_id: int
    author_id: int
    created_at: str
    ref: str
    commit_from: str | None  # None: the push created the branch
    commit_to: str
    commit_count: int
    commit_title: str


@dataclass
class LabelEvent:
    """A label added to or removed from an issue (the resource label events API)."""

    id: int
    issue_id: int
    user_id: int
    created_at: str
    label: str
    action: str  # "add" | "remove"


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
    note_type: str | None = None  # None for a lone note; "DiscussionNote" in a thread
    discussion_id: str = ""  # 40 hex, shared by a thread's notes ("" in older saved worlds)
    # Set when a PUT changes the body (GraphQL Note.lastEditedAt; REST shows only updated_at,
    # which an emoji reaction moves too). awards: [award id, name, user id, created_at].
    last_edited_at: str | None = None
    last_edited_by_id: int | None = None
    awards: list[list[Any]] = field(default_factory=list)
    # A DiffNote's place in the merge request's diff, as GitLab's Position entity shows it.
    position: dict[str, Any] | None = None

    @property
    def discussion(self) -> str:
        """The note's discussion id (worlds saved before discussions derive it from the note)."""
        return self.discussion_id or new_discussion_id(
            self.noteable_type, self.noteable_id, self.id
        )


def new_discussion_id(kind: str, noteable_id: int, note_id: int) -> str:
    """GitLab's discussion ids are 40 hex characters (a SHA-1); the sandbox derives its own from
    the first note, so the same steps always give the same ids."""
    return hashlib.sha1(f"{kind}-{noteable_id}-{note_id}".encode()).hexdigest()


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
    merge_user_id: int | None = None  # who merged, or who set auto-merge
    start_sha: str | None = None  # the target head of the latest diff version (None: base_sha)
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
    source_sha: str | None = None  # the MR head a merged-results pipeline was made for
    # Set when the pipeline has no jobs to take a status from: "skipped" ([skip ci]) or
    # "failed" (a configuration error, in yaml_errors).
    status: str | None = None
    yaml_errors: str | None = None
    parent_id: int | None = None  # a child pipeline's parent (source parent_pipeline)
    bridge_id: int | None = None  # the trigger job that made a child pipeline
    mr_iid: int | None = None  # the merge request a merge request pipeline (or its child) is for
    variables: list[dict[str, Any]] = field(default_factory=list)  # pipeline variables


@dataclass
class Job:
    id: int
    pipeline_id: int
    name: str
    stage: str
    status: str
    allow_failure: bool
    created_at: str
    token: str  # valid (as CI_JOB_TOKEN) only while the job is running, as on GitLab
    started_at: str | None = None
    finished_at: str | None = None
    retried: bool = False  # replaced by a retry: hidden from job lists and the status
    kind: str = "build"  # "bridge": a trigger job (GET .../bridges), whose status its child sets
    downstream_id: int | None = None  # a bridge's child pipeline
    trace: str | None = None  # the log the runner sent back (masked), GET .../trace


@dataclass
class WebHook:
    """A project or group webhook (project_webhooks.md, group_webhooks.md): where GitLab POSTs
    the events its flags select (webhooks.py, webhook_events.py)."""

    id: int
    url: str
    created_at: str
    project_id: int | None = None  # a project hook
    group_id: int | None = None  # a group hook: every project of the group
    token: str | None = None  # write-only: never rendered
    name: str | None = None
    description: str | None = None
    events: dict[str, bool] = field(default_factory=dict)  # push_events, note_events, ...
    enable_ssl_verification: bool = True
    push_events_branch_filter: str | None = None
    branch_filter_strategy: str = "wildcard"
