"""Git, as far as the API shows it: commits with whole-tree snapshots, branch heads, ancestry.

A commit id is the SHA-1 of its content and of the world's commit sequence number, so a world
built by the same steps always has the same ids, and two identical commits never collide.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections import deque
from typing import Any

from pairgate.sandbox.model import World
from pairgate.sandbox.records import Commit, MergeRequest, Project, PushEvent, User

COMMIT_DATE = "2024-01-01T00:00:00.000+00:00"


class RepoError(Exception):
    """A repository operation that GitLab answers with 400 and this message."""


def blob_id(content: str) -> str:
    data = content.encode("utf-8")
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def make_commit(
    world: World,
    project: Project,
    *,
    parents: list[str],
    tree: dict[str, str],
    message: str,
    author: User | None,
    date: str | None = None,
    sha: str | None = None,
) -> Commit:
    """A new commit; ``sha`` gives its id instead of the computed one (the control that mirrors
    a real repository's commit, so a local clone and the sandbox name the same SHA)."""
    seq = world.next_id("commit_seq")
    name = author.name if author else "Sandbox"
    email = f"{author.username}@sandbox.test" if author else "sandbox@sandbox.test"
    content = json.dumps([project.id, parents, tree, message, name, seq], sort_keys=True)
    sha = sha or hashlib.sha1(content.encode("utf-8")).hexdigest()
    when = date or world.stamp().replace("Z", "+00:00")
    commit = Commit(sha, project.id, list(parents), message, name, email, when, dict(tree))
    world.commits[sha] = commit
    return commit


def resolve(world: World, project: Project, ref: str) -> Commit | None:
    """A branch name, or a full or abbreviated (7+) commit id of this project."""
    if ref in project.branches:
        return world.commits[project.branches[ref]]
    if len(ref) >= 7 and all(c in "0123456789abcdef" for c in ref):
        for sha, commit in world.commits.items():
            if commit.project_id == project.id and sha.startswith(ref):
                return commit
    return None


def ancestry(world: World, sha: str) -> list[str]:
    """Every commit reachable from ``sha``, newest first (breadth first over parents)."""
    seen: dict[str, None] = {}  # insertion-ordered, with set lookups
    queue = deque([sha])
    while queue:
        current = queue.popleft()
        if current in seen or current not in world.commits:
            continue
        seen[current] = None
        queue.extend(world.commits[current].parent_ids)
    return list(seen)


def merge_base(world: World, one: str, other: str) -> str | None:
    """The nearest commit both histories share (breadth first from ``one``)."""
    theirs = set(ancestry(world, other))
    return next((sha for sha in ancestry(world, one) if sha in theirs), None)


def refresh_diff(world: World, mr: MergeRequest) -> None:
    """A new diff version (GitLab makes one on each push and on retarget): ``start_sha`` the
    target head now, ``base_sha`` the merge base of it and the MR head."""
    target = world.projects[mr.project_id].branches.get(mr.target_branch)
    if target is None or mr.state != "opened":
        return
    mr.start_sha = target
    mr.base_sha = merge_base(world, current_sha(world, mr), target) or target


def contains(world: World, head: str, sha: str) -> bool:
    """Is ``sha`` in the history of ``head``?"""
    return sha in ancestry(world, head)


def apply_actions(tree: dict[str, str], actions: list[dict[str, Any]]) -> dict[str, str]:
    """GitLab's commit actions (create, update, delete, move) on a copy of ``tree``; a
    content's ``encoding`` is ``text`` (default) or ``base64`` (doc/api/commits.md)."""
    result = dict(tree)
    for action in actions:
        kind = action.get("action")
        path = str(action.get("file_path") or "")
        if not path:
            raise RepoError("file_path is missing")
        content = str(action.get("content") or "")
        encoding = action.get("encoding") or "text"
        if encoding == "base64":
            try:
                content = base64.b64decode(content, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                raise RepoError(f"{path}: the content is not base64 of UTF-8 text") from None
        elif encoding != "text":
            raise RepoError("actions[encoding] does not have a valid value")
        if kind == "create":
            if path in result:
                raise RepoError("A file with this name already exists")
            result[path] = content
        elif kind == "update":
            if path not in result:
                raise RepoError("A file with this name doesn't exist")
            result[path] = content
        elif kind == "delete":
            if path not in result:
                raise RepoError("A file with this name doesn't exist")
            del result[path]
        elif kind == "move":
            previous = str(action.get("previous_path") or "")
            if previous not in result:
                raise RepoError("A file with this name doesn't exist")
            moved = result.pop(previous)
            result[path] = content if "content" in action else moved
        else:
            raise RepoError(f"Unknown action '{kind}'")
    return result


def current_sha(world: World, mr: MergeRequest) -> str:
    """The MR's diff head: frozen once merged or closed, else its source branch head."""
    if mr.final_sha is not None:
        return mr.final_sha
    source = world.projects[mr.source_project_id]
    return source.branches.get(mr.source_branch, mr.base_sha)


def mr_commits(world: World, mr: MergeRequest) -> list[Commit]:
    """Commits on the MR's head that its base does not have, newest first."""
    base = set(ancestry(world, mr.base_sha))
    return [world.commits[s] for s in ancestry(world, current_sha(world, mr)) if s not in base]


def move_branch(world: World, project: Project, branch: str, sha: str, actor: User) -> None:
    """Point ``branch`` at ``sha`` and tell the open MRs whose head it is."""
    before = project.branches.get(branch)
    old = set(ancestry(world, before or ""))
    project.branches[branch] = sha
    added = sum(1 for s in ancestry(world, sha) if s not in old)
    # Every branch move is a push to GitLab (a merge too): its project events list it.
    event_id = world.next_id("push_event")
    title = world.commits[sha].message.split("\n", 1)[0]
    world.push_events[event_id] = PushEvent(
        event_id, project.id, actor.id, world.stamp(), branch, before, sha, added, title
    )
    for mr in world.merge_requests.values():
        if (mr.source_project_id, mr.source_branch, mr.state) != (project.id, branch, "opened"):
            continue
        mr.updated_at = world.stamp()
        if mr.merge_when_pipeline_succeeds:  # a push cancels auto-merge (auto_merge.md)
            mr.merge_when_pipeline_succeeds, mr.merge_user_id = False, None
        refresh_diff(world, mr)
        if added:
            word = "commit" if added == 1 else "commits"
            world.add_note(mr, actor, f"added {added} {word}", system=True)
        if world.options.reset_approvals_on_push:
            mr.approvals.clear()
