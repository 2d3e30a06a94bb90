"""Branches, commits and repository files."""

from __future__ import annotations

import base64
import hashlib
import posixpath
from datetime import UTC, datetime
from typing import Any

from pairgate.sandbox import protection, repo
from pairgate.sandbox.access import API, current_user, project_for, renderer
from pairgate.sandbox.httpd import ApiError, Reply, Request, forbidden, not_found, paginate
from pairgate.sandbox.httpd import param_error as grape_error
from pairgate.sandbox.records import DEVELOPER, Commit, Project, User


def _message(status: int, text: str) -> ApiError:
    return ApiError(status, {"message": text})


def _may_push(req: Request, project: Project, branch: str, user: User) -> None:
    """Developers push to any branch no protection rule keeps from them (protection.py)."""
    if req.world.access_level(user, project) < DEVELOPER:
        raise forbidden()
    if not protection.may(req.world, user, project, branch, "push"):
        raise forbidden("You are not allowed to push into this branch")


def _commit_at(req: Request, project: Project, ref: str) -> Commit:
    commit = repo.resolve(req.world, project, ref)
    if commit is None:
        raise not_found("Commit")
    return commit


def _checked_path(path: str) -> str:
    if not path or path.startswith("/") or ".." in path.split("/"):
        raise grape_error("file_path should be a valid file path")
    return posixpath.normpath(path)


def commit_actions(
    req: Request,
    project: Project,
    *,
    branch: str,
    message: str,
    actions: list[dict[str, Any]],
    start_branch: str | None = None,
    start_sha: str | None = None,
) -> Commit:
    """One commit on ``branch`` (created from ``start_branch`` or ``start_sha`` when it does not
    exist yet). GitLab's Commits API has no branch-level compare-and-swap: a ``start_sha`` with a
    branch that exists is refused, and the only guard is each action's ``last_commit_id``."""
    world = req.world
    user = current_user(req)
    _may_push(req, project, branch, user)
    if start_sha is not None:
        if branch in project.branches:
            raise _message(
                400,
                f"A branch called '{branch}' already exists. Switch to that branch in order to "
                f"make changes",
            )
        if repo.resolve(world, project, start_sha) is None:
            raise _message(400, f"Cannot find start_sha '{start_sha}'")
    base_ref = branch if branch in project.branches else (start_sha or start_branch)
    if base_ref is None:
        raise _message(400, "You can only create or edit files when you are on a branch")
    parent = repo.resolve(world, project, base_ref)
    if parent is None:
        raise _message(400, f"Invalid reference name: {base_ref}")
    for action in actions:
        _check_unchanged(req, project, parent, action)
    try:
        tree = repo.apply_actions(parent.tree, actions)
    except repo.RepoError as error:
        raise _message(400, str(error)) from None
    commit = repo.make_commit(
        world, project, parents=[parent.id], tree=tree, message=message, author=user
    )
    repo.move_branch(world, project, branch, commit.id, user)
    if req.runner is not None:
        req.runner.pushed(world, project, branch, commit.id, user)
    return commit


# lib/api/commits.rb declares last_commit_id for these actions only; others ignore it.
_GUARDED = ("update", "move", "delete")


def _check_unchanged(req: Request, project: Project, head: Commit, action: Any) -> None:
    """An action's ``last_commit_id``, as Files::MultiService checks it: the last commit that
    touched the path on the branch must be the last commit that touched it as of the given id.
    GitLab skips the check silently when the id or the path's history is not found."""
    if not isinstance(action, dict) or action.get("action") not in _GUARDED:
        return
    given = action.get("last_commit_id")
    path = str(action.get("previous_path") or action.get("file_path") or "")
    if not given or path not in head.tree:
        return
    then = repo.resolve(req.world, project, str(given))
    if then is None or path not in then.tree:
        return
    if _last_commit(req, head, path) != _last_commit(req, then, path):
        raise _message(400, f"The file has changed since you started editing it: {path}")


@API.route("GET", "/projects/{project_id}/repository/branches")
def list_branches(req: Request, project_id: str) -> Any:
    project = project_for(req, project_id)
    render = renderer(req)
    return paginate(req, sorted(project.branches), lambda b: render.branch(project, b, req.user))


@API.route("GET", "/projects/{project_id}/repository/branches/{branch}")
def get_branch(req: Request, project_id: str, branch: str) -> Any:
    project = project_for(req, project_id)
    if branch not in project.branches:
        raise not_found("Branch")
    return renderer(req).branch(project, branch, req.user)


@API.route("POST", "/projects/{project_id}/repository/branches")
def create_branch(req: Request, project_id: str) -> Any:
    project = project_for(req, project_id)
    name, ref = req.required("branch"), req.required("ref")
    user = current_user(req)
    _may_push(req, project, name, user)
    if name in project.branches:
        raise _message(400, "Branch already exists")
    if name.startswith("-") or ".." in name or " " in name or name.endswith("/"):
        raise _message(400, "Branch name is invalid")
    commit = repo.resolve(req.world, project, ref)
    if commit is None:
        raise _message(400, "Invalid reference name: " + ref)
    repo.move_branch(req.world, project, name, commit.id, user)
    if req.runner is not None:
        req.runner.pushed(req.world, project, name, commit.id, user)
    return renderer(req).branch(project, name, req.user)


@API.route("DELETE", "/projects/{project_id}/repository/branches/{branch}")
def delete_branch(req: Request, project_id: str, branch: str) -> Any:
    project = project_for(req, project_id)
    _may_push(req, project, branch, current_user(req))
    if branch not in project.branches:
        raise not_found("Branch")
    if branch == project.default_branch:
        raise _message(400, "Cannot remove the default branch")
    del project.branches[branch]
    return Reply(204)


@API.route("POST", "/projects/{project_id}/repository/commits")
def create_commit(req: Request, project_id: str) -> Any:
    project = project_for(req, project_id)
    actions = req.params.get("actions")
    if not isinstance(actions, list) or not actions:
        raise grape_error("actions is missing")
    if req.has("start_branch") and req.has("start_sha"):
        raise grape_error("start_branch, start_sha are mutually exclusive")
    if req.flag("force"):
        raise grape_error("force is not served by the sandbox: it overwrites the branch")
    commit = commit_actions(
        req,
        project,
        branch=req.required("branch"),
        message=req.required("commit_message"),
        actions=actions,
        start_branch=req.text("start_branch"),
        start_sha=req.text("start_sha"),
    )
    return renderer(req).commit(commit, detail=True)


@API.route("GET", "/projects/{project_id}/repository/commits")
def list_commits(req: Request, project_id: str) -> Any:
    """Newest first; ``first_parent`` follows only each commit's first parent (git log
    --first-parent); ``since``/``until`` keep the commits whose committed date lies inside,
    both ends included (git log --since/--until)."""
    project = project_for(req, project_id)
    unserved = sorted({"all", "author", "path", "order", "with_stats"} & set(req.params))
    if unserved:
        raise grape_error(f"{', '.join(unserved)} is not served by the sandbox's commits list")
    head = _commit_at(req, project, req.text("ref_name") or project.default_branch)
    if req.flag("first_parent"):
        shas, current = [], req.world.commits.get(head.id)
        while current is not None:
            shas.append(current.id)
            first = current.parent_ids[0] if current.parent_ids else None
            current = req.world.commits.get(first) if first else None
    else:
        shas = repo.ancestry(req.world, head.id)
    commits = [req.world.commits[s] for s in shas]
    for name in ("since", "until"):
        text = req.text(name)
        if not text:
            continue
        bound = _moment(text)
        if bound is None:
            raise grape_error(f"{name} is invalid")
        commits = [
            c
            for c in commits
            if (when := _moment(c.created_at)) is not None
            and (when >= bound if name == "since" else when <= bound)
        ]
    return paginate(req, commits, renderer(req).commit)


def _moment(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@API.route("GET", "/projects/{project_id}/repository/commits/{sha}")
def get_commit(req: Request, project_id: str, sha: str) -> Any:
    project = project_for(req, project_id)
    return renderer(req).commit(_commit_at(req, project, sha), detail=True)


def _file_at(req: Request, project: Project, file_path: str, ref: str) -> tuple[Commit, str]:
    path = _checked_path(file_path)
    commit = _commit_at(req, project, ref)
    if path not in commit.tree:
        raise not_found("File")
    return commit, path


def _file_headers(req: Request, commit: Commit, path: str, ref: str) -> dict[str, str]:
    content = commit.tree[path]
    last = _last_commit(req, commit, path)
    return {
        "X-Gitlab-File-Name": posixpath.basename(path),
        "X-Gitlab-File-Path": path,
        "X-Gitlab-Size": str(len(content.encode("utf-8"))),
        "X-Gitlab-Encoding": "base64",
        "X-Gitlab-Content-Sha256": hashlib.sha256(content.encode("utf-8")).hexdigest(),
        "X-Gitlab-Ref": ref,
        "X-Gitlab-Blob-Id": repo.blob_id(content),
        "X-Gitlab-Commit-Id": commit.id,
        "X-Gitlab-Last-Commit-Id": last,
        "X-Gitlab-Execute-Filemode": "false",
    }


def _last_commit(req: Request, commit: Commit, path: str) -> str:
    """The newest commit at or before ``commit`` that changed ``path``."""
    content = commit.tree.get(path)
    last = commit.id
    for sha in repo.ancestry(req.world, commit.id):
        if req.world.commits[sha].tree.get(path) != content:
            break
        last = sha
    return last


@API.route("GET", "/projects/{project_id}/repository/files/{file_path}/raw", job_token=True)
def get_raw_file(req: Request, project_id: str, file_path: str) -> Any:
    project = project_for(req, project_id)
    if req.world.options.raw_file_ref_required:
        ref = req.required("ref")
    else:
        ref = req.text("ref") or project.default_branch
    commit, path = _file_at(req, project, file_path, ref)
    headers = _file_headers(req, commit, path, ref)
    headers["Content-Disposition"] = f'inline; filename="{posixpath.basename(path)}"'
    return Reply(200, commit.tree[path].encode("utf-8"), headers)


@API.route("GET", "/projects/{project_id}/repository/files/{file_path}")
def get_file(req: Request, project_id: str, file_path: str) -> Any:
    project = project_for(req, project_id)
    ref = req.required("ref")
    commit, path = _file_at(req, project, file_path, ref)
    headers = _file_headers(req, commit, path, ref)
    content = commit.tree[path]
    body = {
        "file_name": headers["X-Gitlab-File-Name"],
        "file_path": path,
        "size": int(headers["X-Gitlab-Size"]),
        "encoding": "base64",
        "content_sha256": headers["X-Gitlab-Content-Sha256"],
        "ref": ref,
        "blob_id": headers["X-Gitlab-Blob-Id"],
        "commit_id": commit.id,
        "last_commit_id": headers["X-Gitlab-Last-Commit-Id"],
        "execute_filemode": False,
        "content": base64.b64encode(content.encode("utf-8")).decode("ascii"),
    }
    return Reply(200, body, headers)


def _file_write(req: Request, project_id: str, file_path: str, action: str) -> Any:
    project = project_for(req, project_id)
    path = _checked_path(file_path)
    branch = req.required("branch")
    content = req.text("content") or ""
    if req.text("encoding") == "base64":
        content = base64.b64decode(content).decode("utf-8")
    commit_actions(
        req,
        project,
        branch=branch,
        message=req.required("commit_message"),
        actions=[{"action": action, "file_path": path, "content": content}],
        start_branch=req.text("start_branch"),
    )
    if action == "delete":
        return Reply(204)
    return {"file_path": path, "branch": branch}


@API.route("POST", "/projects/{project_id}/repository/files/{file_path}")
def create_file(req: Request, project_id: str, file_path: str) -> Any:
    return _file_write(req, project_id, file_path, "create")


@API.route("PUT", "/projects/{project_id}/repository/files/{file_path}")
def update_file(req: Request, project_id: str, file_path: str) -> Any:
    return _file_write(req, project_id, file_path, "update")


@API.route("DELETE", "/projects/{project_id}/repository/files/{file_path}")
def delete_file(req: Request, project_id: str, file_path: str) -> Any:
    return _file_write(req, project_id, file_path, "delete")
