"""Publishing the gate to the tracker's default branch in one commit, through the Commits API
(doc/api/commits.md, "Create a commit with multiple files and actions").

GitLab's Commits API has no branch-level compare-and-swap: a commit goes on whatever the branch
head is when it lands, ``start_sha`` is refused on a branch that exists, and ``force`` would
overwrite the branch. What it has is a per-file guard: an ``update`` action's
``last_commit_id`` makes GitLab refuse the commit (400, "The file has changed since you started
editing it") when the last commit that touched that path is no longer the one read. So every
file read is read at one head SHA, every update carries the last_commit_id read there, and the
head is compared before and after: a file changed in between is refused by GitLab; a head that
moved through other files is reported with the commits it now sits on.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project


@dataclass(frozen=True)
class Remote:
    """What the tracker's default branch holds of the files to publish, read at one head."""

    branch: str
    head: str
    files: dict[str, bytes | None]  # None: absent
    last_commit_ids: dict[str, str]


def _project(tracker: str) -> str:
    return f"projects/{encode_project(tracker)}"


def read_remote(client: GitLab, tracker: str, paths: list[str]) -> Remote:
    """The default branch's head, and each path's bytes and last_commit_id at that head
    (doc/api/repository_files.md, "Get file from repository")."""
    project = client.get(_project(tracker))
    branch = project.get("default_branch") if isinstance(project, Mapping) else None
    if not branch:
        raise GitLabError(f"pairgate: {tracker} has no default branch (an empty repository)")
    head = str(branch_head(client, tracker, str(branch)))
    files: dict[str, bytes | None] = {}
    last: dict[str, str] = {}
    for path in paths:
        where = f"{_project(tracker)}/repository/files/{encode_project(path)}"
        try:
            found = client.get(where, ref=head)
        except GitLabError as exc:
            if exc.status == 404:
                files[path] = None
                continue
            raise
        files[path] = base64.b64decode(str(found["content"]))
        last[path] = str(found["last_commit_id"])
    return Remote(str(branch), head, files, last)


def branch_head(client: GitLab, tracker: str, branch: str) -> str:
    entity = client.get(f"{_project(tracker)}/repository/branches/{encode_project(branch)}")
    return str(entity["commit"]["id"])


def actions(want: Mapping[str, bytes], remote: Remote) -> list[dict[str, str]]:
    """One action per file that differs: ``create`` for an absent one, ``update`` with the
    last_commit_id read for a present one. Contents travel base64, byte for byte."""
    out = []
    for path, data in want.items():
        there = remote.files.get(path)
        if there == data:
            continue
        action = {
            "action": "create" if there is None else "update",
            "file_path": path,
            "encoding": "base64",
            "content": base64.b64encode(data).decode("ascii"),
        }
        if there is not None:
            action["last_commit_id"] = remote.last_commit_ids[path]
        out.append(action)
    return out


@dataclass(frozen=True)
class Published:
    commit: str
    parent: str | None
    moved_before: bool  # the branch moved between the read and the commit
    head_after: str  # the branch head read after the commit


def commit(
    client: GitLab,
    tracker: str,
    remote: Remote,
    todo: list[dict[str, str]],
    message: str,
    *,
    between: Callable[[], None] | None = None,
) -> Published:
    """The one commit (doc/api/commits.md); ``between`` runs after the reads and before the
    write (the tests' concurrent writer)."""
    if between is not None:
        between()
    body = {"branch": remote.branch, "commit_message": message, "actions": todo}
    made = client.write("POST", f"{_project(tracker)}/repository/commits", body)
    parents = [str(p) for p in made.get("parent_ids") or []]
    parent = parents[0] if parents else None
    after = branch_head(client, tracker, remote.branch)
    return Published(str(made["id"]), parent, parent != remote.head, after)
