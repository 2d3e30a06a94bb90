"""Merge requests: create, edit, get, list per project and per group, commits, pipelines."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pairgate.sandbox import repo
from pairgate.sandbox.access import API, current_user, group_for, project_for, renderer
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
from pairgate.sandbox.issues import (
    apply_labels,
    edit_common,
    require_one_of,
    set_state,
    user_ids,
)
from pairgate.sandbox.model import World
from pairgate.sandbox.mr_entity import render, update_head_pipeline
from pairgate.sandbox.records import DEVELOPER, MergeRequest, Project, User
from pairgate.sandbox.settings import merge_requests_available

EDITABLE = (
    "add_labels", "allow_collaboration", "allow_maintainer_to_push", "assignee_id",
    "assignee_ids", "description", "discussion_locked", "labels", "milestone_id",
    "remove_labels", "remove_source_branch", "reviewer_ids", "squash", "state_event",
    "target_branch", "title",
)  # fmt: skip


def mr_for(req: Request, project: Project, iid: str) -> MergeRequest:
    mr = req.world.merge_request(project, int(iid)) if iid.isdigit() else None
    if mr is None:
        raise record_not_found()
    return mr


def mrs_allowed(req: Request, project: Project) -> Project:
    """authorize! :read_merge_request (and :create_merge_request_from, :update_merge_request):
    403 ``403 Forbidden`` when the project's merge requests feature is not the caller's to use
    (disabled, or private below Reporter). A single merge request is looked up first
    (find_merge_request_with_access), so an unknown iid stays 404."""
    if not merge_requests_available(project, req.world.access_level(req.user, project)):
        raise forbidden()
    return project


def readable_mr(req: Request, project: Project, iid: str) -> MergeRequest:
    mr = mr_for(req, project, iid)
    mrs_allowed(req, project)
    return mr


TIME_FILTERS = {  # parameter -> (record field, is it a lower bound); both ends inclusive
    "created_after": ("created_at", True),
    "created_before": ("created_at", False),
    "updated_after": ("updated_at", True),
    "updated_before": ("updated_at", False),
    "merged_after": ("merged_at", True),  # newest GitLab only: the merged_time_filters switch
    "merged_before": ("merged_at", False),
}


def _moment(req: Request, name: str) -> datetime | None:
    """An ISO 8601 time parameter (Grape's DateTime: a date alone is its midnight, UTC)."""
    value = req.text(name)
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise param_error(f"{name} is invalid") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _checked_filters(req: Request) -> dict[str, Any]:
    """The list parameters, checked as Grape checks them: before the handler looks anything
    up, so a bad value is 400 even for an unknown project."""
    merged = req.world.options.merged_time_filters
    return {
        "state": req.choice("state", ("opened", "closed", "locked", "merged", "all"), "all"),
        "order": req.choice(
            "order_by", ("created_at", "updated_at", "title", "merged_at"), "created_at"
        ),
        "desc": req.choice("sort", ("asc", "desc"), "desc") == "desc",
        "author": req.integer("author_id"),
        "merge_user": req.integer("merge_user_id"),
        "times": {
            name: moment
            for name in TIME_FILTERS
            if (merged or not name.startswith("merged_")) and (moment := _moment(req, name))
        },
    }


def _filtered(req: Request, found: list[MergeRequest], checked: dict[str, Any]) -> Reply:
    state = checked["state"]
    if state != "all":
        found = [m for m in found if m.state == state]
    for name in ("source_branch", "target_branch"):
        value = req.text(name)
        if value:
            found = [m for m in found if getattr(m, name) == value]
    search = req.text("search")
    if search:
        found = [m for m in found if search.lower() in f"{m.title}\n{m.description}".lower()]
    wanted = req.csv("labels")
    if wanted:
        found = [m for m in found if set(wanted) <= set(m.labels)]
    iids = req.csv("iids")
    if iids:
        found = [m for m in found if str(m.iid) in iids]
    if checked["author"] is not None:
        found = [m for m in found if m.author_id == checked["author"]]
    merge_user = checked["merge_user"]
    username = req.text("merge_user_username")
    if username:
        named = [u.id for u in req.world.users.values() if u.username == username]
        merge_user = named[0] if named else 0
    if merge_user is not None:
        found = [m for m in found if (m.merge_user_id or m.merged_by_id) == merge_user]
    for name, moment in checked["times"].items():
        field, lower = TIME_FILTERS[name]
        found = [m for m in found if _within(getattr(m, field), moment, lower=lower)]
    order, desc = checked["order"], checked["desc"]
    keys = {
        "updated_at": lambda m: (m.updated_at, m.id),
        "title": lambda m: (m.title, m.id),
        "merged_at": lambda m: (m.merged_at or "", m.id),
    }
    found.sort(key=keys.get(order, lambda m: (m.id,)), reverse=desc)
    if order == "merged_at":  # unmerged ones last either way (nulls last)
        found = [m for m in found if m.merged_at] + [m for m in found if not m.merged_at]
    r = renderer(req)
    return paginate(req, found, lambda m: render(r, m, req.user, basic=True))


def _within(stamp: str | None, moment: datetime, *, lower: bool) -> bool:
    if stamp is None:
        return False
    when = datetime.fromisoformat(stamp)
    return when >= moment if lower else when <= moment


@API.route("GET", "/projects/{project_id}/merge_requests", job_token=True)
def list_merge_requests(req: Request, project_id: str) -> Any:
    checked = _checked_filters(req)
    project = mrs_allowed(req, project_for(req, project_id))
    found = [m for m in req.world.merge_requests.values() if m.project_id == project.id]
    return _filtered(req, found, checked)


@API.route("GET", "/groups/{group_id}/merge_requests")
def list_group_merge_requests(req: Request, group_id: str) -> Any:
    checked = _checked_filters(req)
    group = group_for(req, group_id)
    world = req.world
    return _filtered(req, checked=checked, found=[
        m for m in world.merge_requests.values()
        if (p := world.projects[m.project_id]).namespace_id == group.id
        and world.can_read(req.user, p)
        and merge_requests_available(p, world.access_level(req.user, p))
    ])  # fmt: skip


@API.route("GET", "/projects/{project_id}/merge_requests/{iid}", job_token=True)
def get_merge_request(req: Request, project_id: str, iid: str) -> Any:
    project = project_for(req, project_id)
    return render(renderer(req), readable_mr(req, project, iid), req.user, basic=False)


@API.route("POST", "/projects/{project_id}/merge_requests")
def create_merge_request(req: Request, project_id: str) -> Any:
    user = current_user(req)
    project = project_for(req, project_id)
    missing = [n for n in ("source_branch", "target_branch", "title") if not req.text(n)]
    if missing:
        raise param_error(", ".join(f"{n} is missing" for n in missing))
    if req.world.access_level(user, project) < DEVELOPER:
        raise forbidden()
    mrs_allowed(req, project)
    source, target = req.required("source_branch"), req.required("target_branch")
    world = req.world
    into = _target_project(req, project)
    for name, where in ((source, project), (target, into)):
        if name not in where.branches:
            raise ApiError(400, {"message": [f'Branch "{name}" does not exist']})
    if source == target and into is project:
        raise ApiError(
            400, {"message": ["You can't use same project/branch for source and target"]}
        )
    for other in world.merge_requests.values():
        if (other.source_project_id, other.source_branch, other.target_branch, other.state) == (
            project.id,
            source,
            target,
            "opened",
        ):
            raise ApiError(
                409,
                {
                    "message": [
                        "Another open merge request already exists for "
                        f"this source branch: !{other.iid}"
                    ]
                },
            )
    now = world.stamp()
    mr = MergeRequest(
        world.next_id("merge_request"),
        world.next_iid(into, "mr"),
        into.id,
        project.id,
        source,
        target,
        req.required("title"),
        req.text("description"),
        user.id,
        now,
        now,
        base_sha=into.branches[target],
    )
    mr.labels = apply_labels(world, [], labels=req.csv("labels") or [])
    mr.assignee_ids = user_ids(req, "assignee_ids")
    mr.reviewer_ids = user_ids(req, "reviewer_ids")
    world.add_merge_request(mr)
    if req.runner is not None and into is project:  # MergeRequests::AfterCreateService
        req.runner.merge_request_pipeline(world, project, mr, user)
    return render(renderer(req), mr, user, basic=False)


def _target_project(req: Request, source: Project) -> Project:
    """The project the MR merges into: ``target_project_id`` (the source itself, or the project
    it was forked from; the 400 body for any other is UNCONFIRMED), else the source."""
    wanted = req.integer("target_project_id")
    if wanted is None or wanted == source.id:
        return source
    into = req.world.projects.get(wanted)
    if into is None or not req.world.can_read(req.user, into):
        raise not_found("Project")
    if source.forked_from_id != into.id:
        raise ApiError(
            400, {"message": ["Validate fork Source project is not a fork of the target project"]}
        )
    return into


@API.route("PUT", "/projects/{project_id}/merge_requests/{iid}")
def edit_merge_request(req: Request, project_id: str, iid: str) -> Any:
    user = current_user(req)
    project = project_for(req, project_id)
    world = req.world
    mr = readable_mr(req, project, iid)
    require_one_of(req, EDITABLE)
    if user.id != mr.author_id and world.access_level(user, project) < DEVELOPER:
        raise forbidden()
    edit_common(req, mr, user)
    if req.has("state_event") and mr.state != "merged":
        set_mr_state(world, mr, req.choice("state_event", ("close", "reopen"), ""), user)
    if req.has("reviewer_ids"):
        mr.reviewer_ids = user_ids(req, "reviewer_ids")
    target = req.text("target_branch")
    if target and target != mr.target_branch and target in project.branches:
        _retarget(req, mr, user, target)
    mr.updated_at = world.stamp()
    return render(renderer(req), mr, user, basic=False)


def set_mr_state(world: World, mr: MergeRequest, event: str, user: User) -> None:
    """close / reopen a merge request (the edit's state_event, the /close and /reopen quick
    actions). Closing freezes its head; reopening follows its source branch again and recomputes
    its head pipeline, as GitLab's reopen transition does."""
    if mr.state == "merged":
        return
    was = mr.state
    mr.final_sha = repo.current_sha(world, mr) if event == "close" else None
    set_state(world, mr, event, user)
    if was == "closed" and mr.state == "opened":
        update_head_pipeline(world, mr)


def _retarget(req: Request, mr: MergeRequest, user: User, target: str) -> None:
    """Changing the target makes a new diff version (base and start follow the new target, the
    head stays), notes it, starts a merge request pipeline (UpdateService's
    handle_target_branch_change: refresh_pipelines_on_merge_requests, allow_duplicate), aborts
    auto-merge, and on Premium with "remove approvals when commits are added" drops the
    approvals; Free keeps them."""
    world = req.world
    note = f"changed target branch from `{mr.target_branch}` to `{target}`"
    world.add_note(mr, user, note, system=True)
    mr.target_branch = target
    repo.refresh_diff(world, mr)
    if req.runner is not None and mr.source_project_id == mr.project_id:
        req.runner.merge_request_pipeline(world, world.projects[mr.project_id], mr, user)
    mr.merge_when_pipeline_succeeds = False
    if world.options.reset_approvals_on_push:
        mr.approvals.clear()


@API.route("GET", "/projects/{project_id}/merge_requests/{iid}/commits")
def list_mr_commits(req: Request, project_id: str, iid: str) -> Any:
    project = project_for(req, project_id)
    mr = readable_mr(req, project, iid)
    return paginate(req, repo.mr_commits(req.world, mr), renderer(req).commit)


@API.route("GET", "/projects/{project_id}/merge_requests/{iid}/pipelines")
def list_mr_pipelines(req: Request, project_id: str, iid: str) -> Any:
    """MR pipelines first, then branch pipelines on the MR's commits; each newest first."""
    project = project_for(req, project_id)
    world = req.world
    mr = readable_mr(req, project, iid)
    shas = {c.id for c in repo.mr_commits(world, mr)}
    refs = {f"refs/merge-requests/{mr.iid}/head", f"refs/merge-requests/{mr.iid}/merge"}
    own = [
        p for p in world.pipelines.values() if p.project_id == project.id and p.parent_id is None
    ]
    event = [p for p in own if p.ref in refs]
    branch = [p for p in own if p.ref == mr.source_branch and p.sha in shas]
    found = sorted(event, key=lambda p: -p.id) + sorted(branch, key=lambda p: -p.id)
    r = renderer(req)
    return paginate(req, found, lambda p: r.pipeline(p, basic=True))
