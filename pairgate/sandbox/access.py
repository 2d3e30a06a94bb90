"""The API's route table and the lookups every route shares: who may see and change what."""

from __future__ import annotations

from pairgate.sandbox.entities import Renderer
from pairgate.sandbox.httpd import Request, Router, forbidden, not_found, unauthorized
from pairgate.sandbox.records import Group, Project, User

API = Router()  # routes under /api/v4; the resource modules register on it


def project_for(req: Request, ref: str, *, level: int = 0) -> Project:
    """The project named by numeric id or decoded full path, as GitLab hides it: unknown and
    unreadable both answer 404; readable but below ``level`` answers 403."""
    world = req.world
    project = world.project_by_ref(ref)
    if project is None or not world.can_read(req.user, project):
        raise not_found("Project")
    if req.scope == "job" and project.id != req.job_project_id:
        raise not_found("Project")  # a job token reaches only its own project by default
    if level and world.access_level(req.user, project) < level:
        raise forbidden()
    return project


def group_for(req: Request, ref: str) -> Group:
    world = req.world
    group = world.group_by_ref(ref)
    if group is None or req.user is None or req.scope == "job":
        raise not_found("Group")
    visible = req.user.id in group.members or any(
        p.namespace_id == group.id and world.access_level(req.user, p)
        for p in world.projects.values()
    )
    if not visible:
        raise not_found("Group")
    return group


def current_user(req: Request) -> User:
    if req.user is None:
        raise unauthorized()
    return req.user


def renderer(req: Request) -> Renderer:
    return Renderer(req.world, req.base)
