"""Users, projects and groups."""

from __future__ import annotations

from typing import Any

from pairgate.sandbox.access import API, current_user, group_for, project_for, renderer
from pairgate.sandbox.ci_config import checked_config_path
from pairgate.sandbox.httpd import (
    ApiError,
    Reply,
    Request,
    not_found,
    paginate,
    param_error,
    unauthorized,
)
from pairgate.sandbox.records import MAINTAINER
from pairgate.sandbox.settings import BOOLEAN_FEATURES, SETTINGS, setting


@API.route("GET", "/user")
def get_current_user(req: Request) -> Any:
    if req.scope == "job":
        raise unauthorized()  # UNCONFIRMED in the reference; its suggestion: 401
    return renderer(req).user(current_user(req), current=True)


@API.route("GET", "/users/{user_id}")
def get_user(req: Request, user_id: str) -> Any:
    current_user(req)
    user = req.world.users.get(int(user_id)) if user_id.isdigit() else None
    if user is None:
        raise not_found("User")
    return renderer(req).user(user)


@API.route("GET", "/users")
def list_users(req: Request) -> Any:
    current_user(req)
    users = sorted(req.world.users.values(), key=lambda u: u.id)
    username = req.text("username")
    if username is not None:
        users = [u for u in users if u.username.lower() == username.lower()]
    return paginate(req, users, renderer(req).user)


@API.route("GET", "/projects/{project_id}", job_token=True)
def get_project(req: Request, project_id: str) -> Any:
    return renderer(req).project(project_for(req, project_id), req.user)


def _parsed(req: Request, name: str) -> Any:
    spec = SETTINGS[name]
    if spec.text:
        return req.text(name) or None
    if spec.values is not None:
        return req.choice(name, spec.values, "")
    return req.flag(name)


@API.route("PUT", "/projects/{project_id}")
def edit_project(req: Request, project_id: str) -> Any:
    """Edit project settings: Maintainer and above. Parameters are checked (Grape, 400)
    before the project is looked up; unknown parameters are ignored, as Grape ignores them."""
    user = current_user(req)
    given = [name for name in SETTINGS if req.has(name)]
    booleans = {name: req.flag(name) for name in BOOLEAN_FEATURES if req.has(name)}
    if not given and not booleans:
        raise param_error(
            ", ".join([*SETTINGS, *BOOLEAN_FEATURES])
            + " are missing, at least one parameter must be provided"
        )
    values: dict[str, Any] = {
        BOOLEAN_FEATURES[n]: "enabled" if on else "disabled" for n, on in booleans.items()
    }
    values |= {name: _parsed(req, name) for name in given}
    project = project_for(req, project_id, level=MAINTAINER)
    try:
        values["ci_config_path"] = checked_config_path(values.get("ci_config_path"))
    except ValueError as error:  # Project's validation: 400 with the model's errors
        raise ApiError(400, {"message": {"ci_config_path": [str(error)]}}) from None
    if "ci_config_path" not in given:
        values.pop("ci_config_path")
    project.settings.update(values)
    return renderer(req).project(project, user)


@API.route("DELETE", "/projects/{project_id}/share/{group_id}")
def unshare_project(req: Request, project_id: str, group_id: str) -> Any:
    """Delete a shared project link within a group (lib/api/projects.rb): the group id is
    Grape's Integer (400 before the handler), then Maintainer and above (authorize!
    :admin_project), then 404 "Group Link" when the project is not shared with that group."""
    if not group_id.isdigit():
        raise param_error("group_id is invalid")
    current_user(req)
    project = project_for(req, project_id, level=MAINTAINER)
    if project.shared_with.pop(int(group_id), None) is None:
        raise not_found("Group Link")
    return Reply(204)


@API.route("GET", "/groups/{group_id}")
def get_group(req: Request, group_id: str) -> Any:
    group = group_for(req, group_id)
    return {
        "id": group.id,
        "name": group.name,
        "path": group.path,
        "full_name": group.name,
        "full_path": group.path,
        "parent_id": None,
        "visibility": "private",
        "web_url": f"{req.base}/groups/{group.path}",
    }


@API.route("GET", "/groups/{group_id}/projects")
def list_group_projects(req: Request, group_id: str) -> Any:
    return _group_projects(req, group_id, own=True, shared=req.flag("with_shared", True))


@API.route("GET", "/groups/{group_id}/projects/shared")
def list_shared_projects(req: Request, group_id: str) -> Any:
    return _group_projects(req, group_id, own=False, shared=True)


def _group_projects(req: Request, group_id: str, *, own: bool, shared: bool) -> Any:
    """Both listings (lib/api/groups.rb). ``with_merge_requests_enabled`` keeps the projects
    whose merge requests are not disabled (Project.with_merge_requests_enabled: "enabled" there
    means "not disabled", so private counts), whoever asks."""
    mrs_enabled = req.flag("with_merge_requests_enabled")
    world = req.world
    group = group_for(req, group_id)
    found = [
        p
        for p in world.projects.values()
        if ((own and p.namespace_id == group.id) or (shared and group.id in p.shared_with))
        and world.can_read(req.user, p)
        and not (mrs_enabled and setting(p, "merge_requests_access_level") == "disabled")
    ]
    order = req.choice(
        "order_by",
        ("id", "name", "path", "created_at", "updated_at", "last_activity_at"),
        "created_at",
    )
    key = {"name": lambda p: p.name, "path": lambda p: p.path}.get(order, lambda p: p.id)
    found.sort(key=key, reverse=req.choice("sort", ("asc", "desc"), "desc") == "desc")
    search = req.text("search")
    if search:
        found = [p for p in found if search.lower() in (p.name + " " + p.path).lower()]
    render = renderer(req)
    return paginate(req, found, lambda p: render.project(p, req.user))
