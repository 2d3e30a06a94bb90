"""The protected branches API (Free): list, get, protect and unprotect, Maintainer and above
(GitLab's authorize_admin_project), as protected_branches.md and lib/api/protected_branches.rb
describe. The rules themselves are in protection.py."""

from __future__ import annotations

from typing import Any

from pairgate.sandbox import protection
from pairgate.sandbox.access import API, current_user, project_for
from pairgate.sandbox.httpd import ApiError, Reply, Request, paginate, param_error, record_not_found
from pairgate.sandbox.records import MAINTAINER, Project


def _admin_project(req: Request, project_id: str) -> Project:
    current_user(req)
    return project_for(req, project_id, level=MAINTAINER)


def _level(req: Request, name: str) -> int | None:
    value = req.integer(name)
    if value is not None and value not in protection.LEVELS:
        raise param_error(f"{name} does not have a valid value")
    return value


@API.route("GET", "/projects/{project_id}/protected_branches")
def list_protected(req: Request, project_id: str) -> Any:
    project = _admin_project(req, project_id)
    found = sorted(project.protected_branches, key=lambda r: r["id"])
    search = req.text("search")
    if search:
        found = [r for r in found if search.lower() in r["name"].lower()]
    return paginate(req, found, protection.render)


@API.route("GET", "/projects/{project_id}/protected_branches/{name}")
def get_protected(req: Request, project_id: str, name: str) -> Any:
    rule = protection.rule_named(_admin_project(req, project_id), name)
    if rule is None:
        raise record_not_found()
    return protection.render(rule)


@API.route("POST", "/projects/{project_id}/protected_branches")
def protect(req: Request, project_id: str) -> Any:
    """``name`` (a branch or wildcard), ``push_access_level``, ``merge_access_level`` and
    ``unprotect_access_level`` (each 0, 30, 40 or 60; default 40), ``allow_force_push``."""
    current_user(req)
    name = req.required("name")
    levels = {}
    for action in protection.ACTIONS:
        value = _level(req, f"{action}_access_level")
        if value is not None:
            levels[action] = value
    flags = {f: req.flag(f) for f in ("allow_force_push", "code_owner_approval_required")}
    project = project_for(req, project_id, level=MAINTAINER)
    if protection.rule_named(project, name) is not None:
        raise ApiError(409, {"message": f"Protected branch '{name}' already exists"})
    rule = protection.new_rule(req.world, name, levels, **flags)
    project.protected_branches.append(rule)
    return Reply(201, protection.render(rule))


@API.route("DELETE", "/projects/{project_id}/protected_branches/{name}")
def unprotect(req: Request, project_id: str, name: str) -> Any:
    project = _admin_project(req, project_id)
    rule = protection.rule_named(project, name)
    if rule is None:
        raise record_not_found()
    project.protected_branches.remove(rule)
    return Reply(204)
