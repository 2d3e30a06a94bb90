"""The audit's walk around the merge button: every commit on a gated project's default branch
in the window that no merged merge request brought there, with who pushed it.

The walk is the branch's first-parent history (``git log --first-parent``): what the branch
itself moved through, one commit per merge, not the commits a merge commit brought in from the
merge request's branch. A merge request brought its merge commit, its squash commit, and, for a
fast-forward or rebase merge, its head and the commits under it down to its merge base. Any
other commit was pushed: a finding, named with who pushed it from the project's push events
(the push whose ``commit_from``..``commit_to`` covers the commit), or "an unknown pusher" when
no event says (events older than GitLab keeps, or unreadable).

GitLab's ``since`` filters on the committed date, which the pusher writes: a commit dated
before the window is not walked even when it was pushed inside it. No ``until`` is sent, so a
commit dated in the future is walked (and a push during the audit is seen, not missed by a
second's rounding).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from pairgate.standalone.config import Config
from pairgate.standalone.errors import PairgateError
from pairgate.standalone.gitlab import GitLab, encode_project

__all__ = [
    "PUSHED_WITHOUT_MR",
    "BranchCommit",
    "BranchRead",
    "BroughtBy",
    "PushFinding",
    "default_branches",
    "pushed_without_mr",
    "read_branch",
    "with_pushes",
]

PUSHED_WITHOUT_MR = "pushed-without-mr"


class BranchCommit(NamedTuple):
    """A commit of a target branch's history, as the commits API gives it."""

    sha: str
    parent: str | None  # the first parent
    title: str
    committed_at: str


class BroughtBy(NamedTuple):
    """What one merged merge request put on its target branch."""

    merge_commit_sha: str | None
    squash_commit_sha: str | None
    head_sha: str | None
    base_sha: str | None  # its merge base: a fast-forward brought the commits above it


class PushFinding(NamedTuple):
    """A commit on a default branch no merge request brought, or a branch that could not be
    walked (undecided)."""

    project: str
    branch: str
    code: str  # PUSHED_WITHOUT_MR, or "history-unreadable"
    decided: bool
    why: str
    sha: str | None = None
    title: str = ""
    committed_at: str | None = None
    pusher: str | None = None
    pushed_at: str | None = None


class BranchRead(NamedTuple):
    """One project's default branch as read: its first-parent history in the window and its
    push events, or the error that stopped the read."""

    project: str
    branch: str
    history: tuple[BranchCommit, ...] = ()
    pushes: tuple[Mapping[str, Any], ...] = ()
    pushes_error: str | None = None
    error: str | None = None


def default_branches(client: GitLab, config: Config, projects: Sequence[str]) -> dict[str, str]:
    """Each gated project's default branch (the named ones, or every project in the group's
    listing); a project with an empty repository has none and is left out. One read per named
    project, or the one group listing."""
    if projects:
        listed = [client.get(f"projects/{encode_project(p)}") for p in projects]
    else:
        listed = client.get_all(
            f"groups/{config.group_id}/projects",
            with_shared="true",
            include_subgroups="true",
            simple="true",
            per_page=100,
        )
    return {
        str(p["path_with_namespace"]): str(p["default_branch"])
        for p in listed
        if p.get("default_branch")
    }


def read_branch(client: GitLab, project: str, branch: str, *, since: str) -> BranchRead:
    """The branch's first-parent commits committed since ``since``, newest first."""
    try:
        listed = client.get_all(
            f"projects/{encode_project(project)}/repository/commits",
            ref_name=branch,
            since=since,
            first_parent="true",
            per_page=100,
        )
    except PairgateError as exc:
        return BranchRead(project, branch, error=exc.message)
    history = tuple(
        BranchCommit(
            str(c["id"]),
            str(c["parent_ids"][0]) if c.get("parent_ids") else None,
            str(c.get("title") or ""),
            str(c.get("committed_date") or c.get("created_at") or ""),
        )
        for c in listed
    )
    return BranchRead(project, branch, history)


def with_pushes(
    client: GitLab, read: BranchRead, merged: Iterable[BroughtBy], *, since: str
) -> BranchRead:
    """``read`` with the project's push events from the day before ``since`` on (the filter
    takes a date and leaves it out), read only when a commit there needs a pusher named."""
    if read.error is not None or {c.sha for c in read.history} <= _brought(read.history, merged):
        return read
    day = datetime.fromisoformat(since.replace("Z", "+00:00")).astimezone(UTC) - timedelta(days=1)
    try:
        events = client.get_all(
            f"projects/{encode_project(read.project)}/events",
            action="pushed",
            after=day.date().isoformat(),
            per_page=100,
        )
    except PairgateError as exc:
        return read._replace(pushes_error=exc.message)
    return read._replace(pushes=tuple(events))


def _brought(history: Sequence[BranchCommit], merged: Iterable[BroughtBy]) -> set[str]:
    parent = {c.sha: c.parent for c in history}
    brought: set[str] = set()
    for mr in merged:
        brought |= {s for s in (mr.merge_commit_sha, mr.squash_commit_sha) if s}
        sha = mr.head_sha
        # A fast-forward (or rebase) merge: the head and the commits under it, down to the
        # merge base, are the merge request's. Without a known base, the head alone.
        while sha is not None and sha in parent and sha != mr.base_sha and sha not in brought:
            brought.add(sha)
            sha = parent[sha] if mr.base_sha else None
    return brought


def _pushers(read: BranchRead) -> dict[str, tuple[str | None, str | None]]:
    """sha -> (who pushed it, when), from the push events to this branch, newest first: each
    push covers its ``commit_to`` and the first parents under it down to ``commit_from``."""
    parent = {c.sha: c.parent for c in read.history}
    found: dict[str, tuple[str | None, str | None]] = {}
    for event in read.pushes:
        data = event.get("push_data") or {}
        if data.get("ref_type", "branch") != "branch" or data.get("ref") != read.branch:
            continue
        who = event.get("author_username") or (event.get("author") or {}).get("username")
        sha, stop = data.get("commit_to"), data.get("commit_from")
        while sha is not None and sha in parent and sha != stop and sha not in found:
            found[sha] = (str(who) if who else None, event.get("created_at"))
            sha = parent[sha]
    return found


def pushed_without_mr(read: BranchRead, merged: Iterable[BroughtBy]) -> list[PushFinding]:
    """The commits of ``read`` that no merge request in ``merged`` brought, oldest first; or
    the undecided finding when the branch could not be read. Pure."""
    if read.error is not None:
        return [
            PushFinding(
                read.project,
                read.branch,
                "history-unreadable",
                False,
                f"the history of {read.project}'s {read.branch} could not be read "
                f"({read.error}), so what was pushed to it without a merge request cannot be "
                f"told",
            )
        ]
    brought = _brought(read.history, merged)
    pushers = _pushers(read)
    found = []
    for commit in reversed(read.history):
        if commit.sha in brought:
            continue
        who, when = pushers.get(commit.sha, (None, None))
        if who:
            by = f"by {who}" + (f" at {when}" if when else "")
        elif read.pushes_error is not None:
            by = f"by an unknown pusher (the push events could not be read: {read.pushes_error})"
        else:
            by = "by an unknown pusher (no push event names it)"
        why = (
            f"{commit.sha[:12]} ({commit.title!r}) was pushed to {read.branch} {by}; no merged "
            f"merge request brought it, so the gate never judged it"
        )
        found.append(
            PushFinding(
                read.project,
                read.branch,
                PUSHED_WITHOUT_MR,
                True,
                why,
                commit.sha,
                commit.title,
                commit.committed_at,
                who,
                when,
            )
        )
    return found
