"""Forks: ``POST /projects/:id/fork`` (doc/api/project_forks.md) into a group, as far as a merge
request from a fork needs one. The fork starts with the parent's branches and ``ci_config_path``
(GitLab's ForkService copies it), and its merge requests may target the parent
(merge_requests.py, ``target_project_id``).

UNCONFIRMED, and the sandbox's choice: a fork needs a namespace named (GitLab forks into the
user's personal namespace by default; the sandbox has none), Reporter on the source (read_code)
and Maintainer in the target group (GitLab's default project creation level); forking a project
whose ``forking_access_level`` is ``disabled`` (or ``private`` for a non-member) is 403; a path
already taken in the namespace is 409; the fork's default branch is protected as a new project's.
"""

from __future__ import annotations

from typing import Any

from pairgate.sandbox import protection
from pairgate.sandbox.access import API, current_user, group_for, project_for, renderer
from pairgate.sandbox.httpd import ApiError, Reply, Request, forbidden, not_found, param_error
from pairgate.sandbox.records import DEVELOPER, MAINTAINER, REPORTER, Project
from pairgate.sandbox.settings import setting


@API.route("POST", "/projects/{project_id}/fork")
def fork_project(req: Request, project_id: str) -> Any:
    user = current_user(req)
    ns_ref = req.text("namespace_path") or req.text("namespace_id") or req.text("namespace")
    if not ns_ref:
        raise param_error("namespace_path is missing")
    source = project_for(req, project_id)
    world = req.world
    level = world.access_level(user, source)
    forking = setting(source, "forking_access_level")
    if level < REPORTER or forking == "disabled":
        raise forbidden()
    try:
        group = group_for(req, ns_ref)
    except ApiError:  # unknown, or not visible to the caller
        raise not_found("Target Namespace") from None
    if group.members.get(user.id, 0) < MAINTAINER:
        raise forbidden()
    path = req.text("path") or source.path
    if any(p.namespace_id == group.id and p.path == path for p in world.projects.values()):
        raise ApiError(409, {"message": {"path": ["has already been taken"]}})
    fork = Project(
        max(world.projects) + 1,
        path,
        req.text("name") or source.name,
        group.id,
        world.stamp(),
        visibility=source.visibility,
        default_branch=source.default_branch,
        branches=dict(source.branches),
        forked_from_id=source.id,
    )
    if setting(source, "ci_config_path"):
        fork.settings["ci_config_path"] = setting(source, "ci_config_path")
    rule = protection.new_rule(world, fork.default_branch, {"merge": DEVELOPER})
    fork.protected_branches.append(rule)
    world.projects[fork.id] = fork
    return Reply(201, renderer(req).project(fork, user))
