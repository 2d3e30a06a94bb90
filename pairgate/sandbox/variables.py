"""CI/CD variables of a project (doc/api/project_level_variables.md; Maintainer and above) and of
a group (doc/api/group_level_variables.md; Owner: GitLab's group policy gives
``admin_cicd_variables`` to Owners alone): list, get, create, update and delete. The runner gives
them to the project's jobs (ci_variables.py): the group's, then the project's over them;
protected ones only on protected branches, masked ones as ``[MASKED]`` in the job logs. One
variable per key: GitLab allows one per key and environment scope, which the sandbox does not
model; the jobs, which name no environment, get only those of scope ``*``.

A get takes ``filter[environment_scope]`` as GitLab does: it picks the variable of that scope,
and none of it is ``404 Variable Not Found``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pairgate.sandbox.access import API, current_user, group_for, project_for
from pairgate.sandbox.httpd import (
    ApiError,
    Reply,
    Request,
    forbidden,
    not_found,
    paginate,
    param_error,
)
from pairgate.sandbox.records import MAINTAINER, OWNER

_KEY = re.compile(r"^[A-Za-z0-9_]{1,255}$")
# Ci::Maskable: at least 8 characters, all from the Base64 alphabet (RFC 4648) and @ : . ~
_MASKABLE = re.compile(r"^[A-Za-z0-9_+=/@:.~-]{8,}$")
_FLAGS = ("protected", "masked", "raw")


def entity(variable: dict[str, Any]) -> dict[str, Any]:
    hidden = bool(variable.get("hidden"))
    return {
        "variable_type": variable.get("variable_type", "env_var"),
        "key": variable["key"],
        "value": None if hidden else variable["value"],
        "protected": bool(variable.get("protected")),
        "masked": bool(variable.get("masked")),
        "hidden": hidden,
        "raw": bool(variable.get("raw")),
        "environment_scope": variable.get("environment_scope", "*"),
        "description": variable.get("description"),
    }


def _scope_filter(req: Request) -> str | None:
    """``filter[environment_scope]``, from the query (python-gitlab's ``filter={...}``) or a
    JSON body's ``filter`` hash, as Grape reads either."""
    nested = req.params.get("filter")
    if isinstance(nested, dict) and "environment_scope" in nested:
        return str(nested["environment_scope"])
    return req.text("filter[environment_scope]")


def _find(req: Request, variables: list[dict[str, Any]], key: str) -> dict[str, Any]:
    scope = _scope_filter(req)
    found = next(
        (
            v
            for v in variables
            if v["key"] == key and scope in (None, v.get("environment_scope", "*"))
        ),
        None,
    )
    if found is None:
        raise not_found("Variable")
    return found


def _apply(req: Request, variable: dict[str, Any]) -> None:
    """The given fields, checked as GitLab's model checks them (400 with its errors)."""
    for name in _FLAGS:
        if req.has(name):
            variable[name] = req.flag(name)
    if req.flag("masked_and_hidden"):
        variable["masked"] = variable["hidden"] = True
    for name in ("value", "description", "environment_scope"):
        if req.has(name):
            variable[name] = req.text(name) or ("" if name == "value" else None)
    if req.has("variable_type"):
        variable["variable_type"] = req.choice("variable_type", ("env_var", "file"), "env_var")
    if variable.get("masked") and not _MASKABLE.match(str(variable.get("value", ""))):
        raise ApiError(400, {"message": {"value": ["is invalid"]}})


def _project_variables(req: Request, project_id: str) -> list[dict[str, Any]]:
    current_user(req)
    return project_for(req, project_id, level=MAINTAINER).variables


def _group_variables(req: Request, group_id: str) -> list[dict[str, Any]]:
    """A group's variables: 404 for a group the user cannot see, 403 below Owner."""
    user = current_user(req)
    group = group_for(req, group_id)
    if group.members.get(user.id, 0) < OWNER:
        raise forbidden()
    return group.variables


def _create(req: Request, owner: Callable[[], list[dict[str, Any]]]) -> Reply:
    """A new variable; Grape's parameter validation answers before the access check."""
    current_user(req)
    key = req.required("key")
    if not req.has("value"):
        raise param_error("value is missing")
    variables = owner()
    if not _KEY.match(key):
        raise ApiError(400, {"message": {"key": [
            "can contain only letters, digits and '_'."]}})  # fmt: skip
    if any(v["key"] == key for v in variables):
        raise ApiError(400, {"message": {"key": [f"({key}) has already been taken"]}})
    variable: dict[str, Any] = {"key": key, "value": "", "environment_scope": "*"}
    _apply(req, variable)
    variables.append(variable)
    return Reply(201, entity(variable))


def _update(req: Request, variables: list[dict[str, Any]], key: str) -> Any:
    variable = _find(req, variables, key)
    changed = dict(variable)
    _apply(req, changed)
    variable.update(changed)
    return entity(variable)


def _delete(req: Request, variables: list[dict[str, Any]], key: str) -> Reply:
    variables.remove(_find(req, variables, key))
    return Reply(204)


@API.route("GET", "/projects/{project_id}/variables")
def list_variables(req: Request, project_id: str) -> Any:
    return paginate(req, list(_project_variables(req, project_id)), entity)


@API.route("GET", "/projects/{project_id}/variables/{key}")
def get_variable(req: Request, project_id: str, key: str) -> Any:
    return entity(_find(req, _project_variables(req, project_id), key))


@API.route("POST", "/projects/{project_id}/variables")
def create_variable(req: Request, project_id: str) -> Any:
    return _create(req, lambda: _project_variables(req, project_id))


@API.route("PUT", "/projects/{project_id}/variables/{key}")
def update_variable(req: Request, project_id: str, key: str) -> Any:
    return _update(req, _project_variables(req, project_id), key)


@API.route("DELETE", "/projects/{project_id}/variables/{key}")
def delete_variable(req: Request, project_id: str, key: str) -> Any:
    return _delete(req, _project_variables(req, project_id), key)


@API.route("GET", "/groups/{group_id}/variables")
def list_group_variables(req: Request, group_id: str) -> Any:
    return paginate(req, list(_group_variables(req, group_id)), entity)


@API.route("GET", "/groups/{group_id}/variables/{key}")
def get_group_variable(req: Request, group_id: str, key: str) -> Any:
    return entity(_find(req, _group_variables(req, group_id), key))


@API.route("POST", "/groups/{group_id}/variables")
def create_group_variable(req: Request, group_id: str) -> Any:
    return _create(req, lambda: _group_variables(req, group_id))


@API.route("PUT", "/groups/{group_id}/variables/{key}")
def update_group_variable(req: Request, group_id: str, key: str) -> Any:
    return _update(req, _group_variables(req, group_id), key)


@API.route("DELETE", "/groups/{group_id}/variables/{key}")
def delete_group_variable(req: Request, group_id: str, key: str) -> Any:
    return _delete(req, _group_variables(req, group_id), key)
