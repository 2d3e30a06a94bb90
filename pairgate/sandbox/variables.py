"""A project's CI/CD variables (doc/api/project_level_variables.md): list, get, create, update
and delete, Maintainer and above. The runner gives them to the project's jobs (ci_variables.py):
protected ones only on protected branches, masked ones as ``[MASKED]`` in the job logs. One
variable per key: the ``environment_scope`` is kept but every scope is ``*`` to the jobs.
"""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox.access import API, current_user, project_for
from pairgate.sandbox.httpd import ApiError, Reply, Request, not_found, paginate, param_error
from pairgate.sandbox.records import MAINTAINER, Project

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


def _find(project: Project, key: str) -> dict[str, Any]:
    found = next((v for v in project.variables if v["key"] == key), None)
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


@API.route("GET", "/projects/{project_id}/variables")
def list_variables(req: Request, project_id: str) -> Any:
    current_user(req)
    project = project_for(req, project_id, level=MAINTAINER)
    return paginate(req, list(project.variables), entity)


@API.route("GET", "/projects/{project_id}/variables/{key}")
def get_variable(req: Request, project_id: str, key: str) -> Any:
    current_user(req)
    project = project_for(req, project_id, level=MAINTAINER)
    return entity(_find(project, key))


@API.route("POST", "/projects/{project_id}/variables")
def create_variable(req: Request, project_id: str) -> Any:
    current_user(req)
    key = req.required("key")
    if not req.has("value"):
        raise param_error("value is missing")
    project = project_for(req, project_id, level=MAINTAINER)
    if not _KEY.match(key):
        raise ApiError(400, {"message": {"key": [
            "can contain only letters, digits and '_'."]}})  # fmt: skip
    if any(v["key"] == key for v in project.variables):
        raise ApiError(400, {"message": {"key": [f"({key}) has already been taken"]}})
    variable: dict[str, Any] = {"key": key, "value": "", "environment_scope": "*"}
    _apply(req, variable)
    project.variables.append(variable)
    return Reply(201, entity(variable))


@API.route("PUT", "/projects/{project_id}/variables/{key}")
def update_variable(req: Request, project_id: str, key: str) -> Any:
    current_user(req)
    project = project_for(req, project_id, level=MAINTAINER)
    variable = _find(project, key)
    changed = dict(variable)
    _apply(req, changed)
    variable.update(changed)
    return entity(variable)


@API.route("DELETE", "/projects/{project_id}/variables/{key}")
def delete_variable(req: Request, project_id: str, key: str) -> Any:
    current_user(req)
    project = project_for(req, project_id, level=MAINTAINER)
    project.variables.remove(_find(project, key))
    return Reply(204)
