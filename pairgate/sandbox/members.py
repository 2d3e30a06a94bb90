"""Members with their access levels: ``/projects/:id/members`` and ``/groups/:id/members``
(direct members only), their ``/all`` forms (inherited and invited too, each user once at the
highest level: the effective one), and one member of each (members.md, lib/api/members.rb)."""

from __future__ import annotations

from typing import Any

from pairgate.sandbox.access import API, current_user, group_for, project_for, renderer
from pairgate.sandbox.defaults import CREATED
from pairgate.sandbox.httpd import (
    ApiError,
    Reply,
    Request,
    forbidden,
    not_found,
    paginate,
    param_error,
    record_not_found,
)
from pairgate.sandbox.model import World
from pairgate.sandbox.records import MAINTAINER, OWNER, Group, Project


def _project_members(world: World, project: Project, *, every: bool) -> dict[int, int]:
    if not every:
        return dict(project.members)
    found: dict[int, int] = {}
    sources = [project.members, world.groups[project.namespace_id].members]
    for group_id, cap in project.shared_with.items():  # invited groups, capped by the share
        sources.append({u: min(cap, lv) for u, lv in world.groups[group_id].members.items()})
    for members in sources:
        for user_id, level in members.items():
            found[user_id] = max(level, found.get(user_id, 0))
    return found


def _group_members(group: Group) -> dict[int, int]:
    return dict(group.members)  # the sandbox's groups have no ancestors: /all adds nobody


def _entity(req: Request, user_id: int, level: int) -> dict[str, Any]:
    user = renderer(req).user_by_id(user_id) or {}
    return user | {
        "access_level": level,
        "created_at": CREATED,
        "expires_at": None,
        "membership_state": "active",
    }


def _list(req: Request, members: dict[int, int]) -> Any:
    found = sorted(members.items())
    query = (req.text("query") or "").lower()
    world = req.world
    if query:
        found = [
            (u, lv)
            for u, lv in found
            if query in f"{world.users[u].username} {world.users[u].name}".lower()
        ]
    wanted = req.csv("user_ids")
    if wanted:
        found = [(u, lv) for u, lv in found if str(u) in wanted]
    return paginate(req, found, lambda row: _entity(req, *row))


def _one(req: Request, members: dict[int, int], user_id: str) -> Any:
    if not user_id.isdigit():
        raise param_error("user_id is invalid")
    if int(user_id) not in members:
        raise record_not_found()
    return _entity(req, int(user_id), members[int(user_id)])


def _project(req: Request, project_id: str) -> Project:
    current_user(req)  # the members API authenticates even GETs
    return project_for(req, project_id)


def _group(req: Request, group_id: str) -> Group:
    current_user(req)
    return group_for(req, group_id)


@API.route("GET", "/projects/{project_id}/members/all")
def project_members_all(req: Request, project_id: str) -> Any:
    project = _project(req, project_id)
    return _list(req, _project_members(req.world, project, every=True))


@API.route("GET", "/projects/{project_id}/members/all/{user_id}")
def project_member_all(req: Request, project_id: str, user_id: str) -> Any:
    project = _project(req, project_id)
    return _one(req, _project_members(req.world, project, every=True), user_id)


@API.route("GET", "/projects/{project_id}/members")
def project_members(req: Request, project_id: str) -> Any:
    project = _project(req, project_id)
    return _list(req, _project_members(req.world, project, every=False))


@API.route("GET", "/projects/{project_id}/members/{user_id}")
def project_member(req: Request, project_id: str, user_id: str) -> Any:
    project = _project(req, project_id)
    return _one(req, _project_members(req.world, project, every=False), user_id)


@API.route("GET", "/groups/{group_id}/members/all")
def group_members_all(req: Request, group_id: str) -> Any:
    return _list(req, _group_members(_group(req, group_id)))


@API.route("GET", "/groups/{group_id}/members/all/{user_id}")
def group_member_all(req: Request, group_id: str, user_id: str) -> Any:
    return _one(req, _group_members(_group(req, group_id)), user_id)


@API.route("GET", "/groups/{group_id}/members")
def group_members(req: Request, group_id: str) -> Any:
    return _list(req, _group_members(_group(req, group_id)))


@API.route("GET", "/groups/{group_id}/members/{user_id}")
def group_member(req: Request, group_id: str, user_id: str) -> Any:
    return _one(req, _group_members(_group(req, group_id)), user_id)


# -- adding and editing members (members.md "Add a member to a group or project", "Edit a
# member"). A project's: Maintainer and above (ProjectPolicy's admin_project_member), but only
# its Owners may add an Owner, make one or change one (Members::CreateService and UpdateService:
# "cannot_assign_owner_responsibilities_to_member_in_project", manage_owners). A group's: its
# Owners alone (GroupPolicy gives admin_group_member to owner). Both refusals are 403, as
# Gitlab::Access::AccessDeniedError is in the API. The 409 body for a member that already exists
# is UNCONFIRMED.

LEVELS = (0, 5, 10, 15, 20, 30, 40, 50)  # GitLab's access levels, 0 for no access


def _new_level(req: Request) -> tuple[int, int]:
    """``user_id`` and ``access_level``, checked as Grape checks them (400 before anything)."""
    missing = [n for n in ("user_id", "access_level") if not req.has(n)]
    if missing:
        raise param_error(", ".join(f"{n} is missing" for n in missing))
    user_id, level = req.integer("user_id"), req.integer("access_level")
    if user_id is None:
        raise param_error("user_id is invalid")
    if level not in LEVELS:
        raise param_error("access_level does not have a valid value")
    return user_id, level


def _add(req: Request, members: dict[int, int], mine: int, least: int) -> Any:
    """Add a member, by a user whose level here is ``mine``; managing members takes ``least``."""
    user_id, level = _new_level(req)
    if mine < least or (level == OWNER and mine < OWNER):
        raise forbidden()
    if user_id not in req.world.users:
        raise not_found("User")
    if user_id in members:
        raise ApiError(409, {"message": "Member already exists"})
    members[user_id] = level
    return Reply(201, _entity(req, user_id, level))


def _edit(req: Request, members: dict[int, int], user_id: str, mine: int, least: int) -> Any:
    """Change a member's level, as ``_add`` (and making, or changing, an Owner takes one)."""
    if not req.has("access_level"):
        raise param_error("access_level is missing")
    level = req.integer("access_level")
    if level not in LEVELS:
        raise param_error("access_level does not have a valid value")
    if mine < least:
        raise forbidden()
    if not user_id.isdigit() or int(user_id) not in members:
        raise record_not_found()
    if OWNER in (level, members[int(user_id)]) and mine < OWNER:
        raise forbidden()
    members[int(user_id)] = level
    return _entity(req, int(user_id), level)


@API.route("POST", "/projects/{project_id}/members")
def add_project_member(req: Request, project_id: str) -> Any:
    project = _project(req, project_id)
    return _add(req, project.members, req.world.access_level(req.user, project), MAINTAINER)


@API.route("PUT", "/projects/{project_id}/members/{user_id}")
def edit_project_member(req: Request, project_id: str, user_id: str) -> Any:
    project = _project(req, project_id)
    mine = req.world.access_level(req.user, project)
    return _edit(req, project.members, user_id, mine, MAINTAINER)


@API.route("POST", "/groups/{group_id}/members")
def add_group_member(req: Request, group_id: str) -> Any:
    group = _group(req, group_id)
    return _add(req, group.members, _level_in(req, group), OWNER)


@API.route("PUT", "/groups/{group_id}/members/{user_id}")
def edit_group_member(req: Request, group_id: str, user_id: str) -> Any:
    group = _group(req, group_id)
    return _edit(req, group.members, user_id, _level_in(req, group), OWNER)


def _level_in(req: Request, group: Group) -> int:
    return 0 if req.user is None else group.members.get(req.user.id, 0)
