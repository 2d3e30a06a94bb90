"""Merge requests: the entity, create/edit/list, commits and pipelines, approvals and merge."""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox import repo
from pairgate.sandbox.access import API, current_user, group_for, project_for, renderer
from pairgate.sandbox.entities import Renderer
from pairgate.sandbox.httpd import (
    ApiError,
    Reply,
    Request,
    forbidden,
    paginate,
    param_error,
    record_not_found,
    unauthorized,
)
from pairgate.sandbox.issues import apply_labels, set_state
from pairgate.sandbox.model import (
    DEVELOPER,
    MAINTAINER,
    REPORTER,
    MergeRequest,
    Project,
    User,
    World,
)

EDITABLE = (
    "add_labels", "allow_collaboration", "allow_maintainer_to_push", "assignee_id",
    "assignee_ids", "description", "discussion_locked", "labels", "milestone_id",
    "remove_labels", "remove_source_branch", "reviewer_ids", "squash", "state_event",
    "target_branch", "title",
)  # fmt: skip
_DRAFT = re.compile(r"^\s*(\[draft\]|\(draft\)|draft:|draft\s-\s|draft\s|\[wip\]|wip:)", re.I)


def _sha_conflict(sha: str) -> ApiError:
    return ApiError(409, {"message": f"SHA does not match HEAD of source branch: {sha}"})


def head_pipeline_status(world: World, r: Renderer, mr: MergeRequest) -> str | None:
    """The status of head_pipeline when it is for the current head; None when stale or absent."""
    pipeline = world.pipelines.get(mr.head_pipeline_id or 0)
    if pipeline is None or pipeline.sha != repo.current_sha(world, mr):
        return None
    return r.pipeline_status(pipeline)


def detailed_status(world: World, r: Renderer, mr: MergeRequest) -> str:
    if mr.state != "opened":
        return "not_open"
    if _DRAFT.match(mr.title):
        return "draft_status"
    if world.options.pipelines_must_succeed:
        status = head_pipeline_status(world, r, mr)
        if status in ("created", "pending", "running", "preparing", "waiting_for_resource"):
            return "ci_still_running"
        if status != "success":
            return "ci_must_pass"
    return "mergeable"


def render(r: Renderer, mr: MergeRequest, viewer: User | None, *, basic: bool) -> dict[str, Any]:
    world = r.world
    project = world.projects[mr.project_id]
    full = world.full_path(project)
    sha = repo.current_sha(world, mr)
    assignees = [r.user_by_id(a) for a in mr.assignee_ids]
    user_notes = [
        n
        for n in world.notes.values()
        if n.noteable_type == "MergeRequest" and n.noteable_id == mr.id and not n.system
    ]
    status = detailed_status(world, r, mr)
    out: dict[str, Any] = {
        "id": mr.id, "iid": mr.iid, "project_id": mr.project_id,
        "title": mr.title, "description": mr.description, "state": mr.state,
        "created_at": mr.created_at, "updated_at": mr.updated_at,
        "merged_by": r.user_by_id(mr.merged_by_id), "merge_user": r.user_by_id(mr.merged_by_id),
        "merged_at": mr.merged_at, "closed_by": r.user_by_id(mr.closed_by_id),
        "closed_at": mr.closed_at, "target_branch": mr.target_branch,
        "source_branch": mr.source_branch, "user_notes_count": len(user_notes),
        "upvotes": 0, "downvotes": 0, "author": r.user_by_id(mr.author_id),
        "assignees": assignees, "assignee": assignees[0] if assignees else None,
        "reviewers": [r.user_by_id(u) for u in mr.reviewer_ids],
        "source_project_id": mr.source_project_id, "target_project_id": mr.project_id,
        "labels": sorted(mr.labels), "draft": bool(_DRAFT.match(mr.title)),
        "work_in_progress": bool(_DRAFT.match(mr.title)), "milestone": None,
        "merge_when_pipeline_succeeds": mr.merge_when_pipeline_succeeds,
        "merge_status": "can_be_merged" if status == "mergeable" else "cannot_be_merged",
        "detailed_merge_status": status, "merge_after": None, "sha": sha,
        "merge_commit_sha": mr.merge_commit_sha, "squash_commit_sha": None,
        "discussion_locked": None, "should_remove_source_branch": None,
        "force_remove_source_branch": False, "prepared_at": mr.created_at,
        "reference": f"!{mr.iid}",
        "references": {"short": f"!{mr.iid}", "relative": f"!{mr.iid}",
                       "full": f"{full}!{mr.iid}"},
        "web_url": f"{r.base}/{full}/-/merge_requests/{mr.iid}",
        "time_stats": {"time_estimate": 0, "total_time_spent": 0,
                       "human_time_estimate": None, "human_total_time_spent": None},
        "squash": False, "squash_on_merge": False,
        "task_completion_status": {"count": 0, "completed_count": 0},
        "has_conflicts": False, "blocking_discussions_resolved": True,
        "approvals_before_merge": None,
    }  # fmt: skip
    if basic:
        return out
    out |= {
        "subscribed": False,
        "changes_count": str(_changed_files(world, mr.base_sha, sha)),
        "latest_build_started_at": None,
        "latest_build_finished_at": None,
        "first_deployed_to_production_at": None,
        "diff_refs": {"base_sha": mr.base_sha, "head_sha": sha, "start_sha": mr.base_sha},
        "merge_error": None,
        "first_contribution": False,
        "user": {"can_merge": viewer is not None and _can_merge(world, viewer, project)},
    }
    if world.access_level(viewer, project) >= REPORTER:  # key absent if pipelines unreadable
        head = world.pipelines.get(mr.head_pipeline_id or 0)
        out["pipeline"] = r.pipeline(head, basic=True) if head else None
        out["head_pipeline"] = r.pipeline(head) if head else None
    return out


def _changed_files(world: World, base: str, head: str) -> int:
    before, after = world.commits[base].tree, world.commits[head].tree
    return sum(1 for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def _can_merge(world: World, user: User, project: Project) -> bool:
    needed = DEVELOPER if world.options.developers_can_merge else MAINTAINER
    return world.access_level(user, project) >= needed


def mr_for(req: Request, project: Project, iid: str) -> MergeRequest:
    mr = req.world.merge_request(project, int(iid)) if iid.isdigit() else None
    if mr is None:
        raise record_not_found()
    return mr


def record_approval(world: World, mr: MergeRequest, user: User, *, approve: bool) -> bool:
    """Add or remove ``user``'s approval (bound to the user, not to a commit, as on GitLab);
    False when there was nothing to change."""
    from pairgate.sandbox.notes import add_system

    has = any(a[0] == user.id for a in mr.approvals)
    if has == approve:
        return False
    if approve:
        mr.approvals.append([user.id, world.stamp()])
    else:
        mr.approvals = [a for a in mr.approvals if a[0] != user.id]
    add_system(world, mr, user, f"{'approved' if approve else 'unapproved'} this merge request")
    mr.updated_at = world.stamp()
    return True


def approvals_entity(req: Request, mr: MergeRequest) -> dict[str, Any]:
    world, r = req.world, renderer(req)
    user = req.user
    approved_by = [{"user": r.user_by_id(uid), "approved_at": at} for uid, at in mr.approvals]
    mine = user is not None and any(a[0] == user.id for a in mr.approvals)
    can = user is not None and _may_approve(world, mr, user)
    if world.options.approvals_shape == "ce":
        return {
            "user_has_approved": mine,
            "user_can_approve": can and not mine,
            "approved": bool(mr.approvals),
            "approved_by": approved_by,
        }
    return {
        "id": mr.id, "iid": mr.iid, "project_id": mr.project_id, "title": mr.title,
        "description": mr.description, "state": mr.state, "created_at": mr.created_at,
        "updated_at": mr.updated_at, "merge_status": "can_be_merged",
        "approved": True,  # every approval rule is met: on Free there are none
        "approvals_required": 0, "approvals_left": 0, "require_password_to_approve": False,
        "approved_by": approved_by, "suggested_approvers": [], "approvers": [],
        "approver_groups": [], "user_has_approved": mine, "user_can_approve": can and not mine,
        "approval_rules_left": [], "has_approval_rules": False,
        "merge_request_approvers_available": False, "multiple_approval_rules_available": False,
        "invalid_approvers_rules": [],
    }  # fmt: skip


def _may_approve(world: World, mr: MergeRequest, user: User) -> bool:
    project = world.projects[mr.project_id]
    if world.access_level(user, project) < DEVELOPER:
        return False
    return world.options.author_can_approve or user.id != mr.author_id


def _filtered(req: Request, found: list[MergeRequest]) -> Reply:
    state = req.choice("state", ("opened", "closed", "locked", "merged", "all"), "all")
    if state != "all":
        found = [m for m in found if m.state == state]
    for name in ("source_branch", "target_branch"):
        value = req.str(name)
        if value:
            found = [m for m in found if getattr(m, name) == value]
    search = req.str("search")
    if search:
        found = [m for m in found if search.lower() in f"{m.title}\n{m.description}".lower()]
    wanted = req.list("labels")
    if wanted:
        found = [m for m in found if set(wanted) <= set(m.labels)]
    iids = req.list("iids")
    if iids:
        found = [m for m in found if str(m.iid) in iids]
    author = req.int("author_id")
    if author is not None:
        found = [m for m in found if m.author_id == author]
    order = req.choice("order_by", ("created_at", "updated_at", "title", "merged_at"), "created_at")
    desc = req.choice("sort", ("asc", "desc"), "desc") == "desc"
    keys = {
        "updated_at": lambda m: (m.updated_at, m.id),
        "title": lambda m: (m.title, m.id),
        "merged_at": lambda m: (m.merged_at or "", m.id),
    }
    found.sort(key=keys.get(order, lambda m: (m.id,)), reverse=desc)
    r = renderer(req)
    return paginate(req, found, lambda m: render(r, m, req.user, basic=True))


@API.route("GET", "/projects/{project_id}/merge_requests", job_token=True)
def list_merge_requests(req: Request, project_id: str) -> Any:
    project = project_for(req, project_id)
    return _filtered(
        req, [m for m in req.world.merge_requests.values() if m.project_id == project.id]
    )


@API.route("GET", "/groups/{group_id}/merge_requests")
def list_group_merge_requests(req: Request, group_id: str) -> Any:
    group = group_for(req, group_id)
    world = req.world
    return _filtered(req, [
        m for m in world.merge_requests.values()
        if world.projects[m.project_id].namespace_id == group.id
        and world.can_read(req.user, world.projects[m.project_id])
    ])  # fmt: skip


@API.route("GET", "/projects/{project_id}/merge_requests/{iid}", job_token=True)
def get_merge_request(req: Request, project_id: str, iid: str) -> Any:
    project = project_for(req, project_id)
    return render(renderer(req), mr_for(req, project, iid), req.user, basic=False)


@API.route("POST", "/projects/{project_id}/merge_requests")
def create_merge_request(req: Request, project_id: str) -> Any:
    user = current_user(req)
    project = project_for(req, project_id)
    missing = [n for n in ("source_branch", "target_branch", "title") if not req.str(n)]
    if missing:
        raise param_error(", ".join(f"{n} is missing" for n in missing))
    if req.world.access_level(user, project) < DEVELOPER:
        raise forbidden()
    source, target = req.required("source_branch"), req.required("target_branch")
    world = req.world
    for name in (source, target):
        if name not in project.branches:
            raise ApiError(400, {"message": [f'Branch "{name}" does not exist']})
    if source == target:
        raise ApiError(
            400, {"message": ["You can't use same project/branch for source and target"]}
        )
    for other in world.merge_requests.values():
        if (other.project_id, other.source_branch, other.target_branch, other.state) == (
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
        world.next_iid(project, "mr"),
        project.id,
        project.id,
        source,
        target,
        req.required("title"),
        req.str("description"),
        user.id,
        now,
        now,
        base_sha=project.branches[target],
    )
    mr.labels = apply_labels(world, [], labels=req.list("labels") or [])
    mr.assignee_ids = [int(a) for a in req.list("assignee_ids") or [] if a.isdigit()]
    mr.reviewer_ids = [int(a) for a in req.list("reviewer_ids") or [] if a.isdigit()]
    world.merge_requests[mr.id] = mr
    return render(renderer(req), mr, user, basic=False)


@API.route("PUT", "/projects/{project_id}/merge_requests/{iid}")
def edit_merge_request(req: Request, project_id: str, iid: str) -> Any:
    from pairgate.sandbox.notes import add_system

    user = current_user(req)
    project = project_for(req, project_id)
    world = req.world
    mr = mr_for(req, project, iid)
    if not any(req.has(n) for n in EDITABLE):
        raise param_error(
            ", ".join(EDITABLE) + " are missing, at least one parameter must be provided"
        )
    if user.id != mr.author_id and world.access_level(user, project) < DEVELOPER:
        raise forbidden()
    if req.has("title") and req.str("title") != mr.title:
        title = req.required("title")
        add_system(world, mr, user, f"changed title from **{mr.title}** to **{title}**")
        mr.title = title
    if req.has("description") and req.str("description") != mr.description:
        mr.description = req.str("description")
        add_system(world, mr, user, "changed the description")
    if req.has("state_event") and mr.state != "merged":
        event = req.choice("state_event", ("close", "reopen"), "")
        mr.final_sha = repo.current_sha(world, mr) if event == "close" else None
        set_state(world, mr, event, user)
    if any(req.has(n) for n in ("labels", "add_labels", "remove_labels")):
        mr.labels = apply_labels(
            world,
            mr.labels,
            labels=req.list("labels"),
            add=req.list("add_labels"),
            remove=req.list("remove_labels"),
        )
    if req.has("assignee_ids"):
        mr.assignee_ids = [int(a) for a in req.list("assignee_ids") or [] if a.isdigit()]
    if req.has("reviewer_ids"):
        mr.reviewer_ids = [int(a) for a in req.list("reviewer_ids") or [] if a.isdigit()]
    if req.has("target_branch") and req.str("target_branch") in project.branches:
        mr.target_branch = req.required("target_branch")
    mr.updated_at = world.stamp()
    return render(renderer(req), mr, user, basic=False)


@API.route("GET", "/projects/{project_id}/merge_requests/{iid}/commits")
def list_mr_commits(req: Request, project_id: str, iid: str) -> Any:
    project = project_for(req, project_id)
    mr = mr_for(req, project, iid)
    return paginate(req, repo.mr_commits(req.world, mr), renderer(req).commit)


@API.route("GET", "/projects/{project_id}/merge_requests/{iid}/pipelines")
def list_mr_pipelines(req: Request, project_id: str, iid: str) -> Any:
    """MR pipelines first, then branch pipelines on the MR's commits; each newest first."""
    project = project_for(req, project_id)
    world = req.world
    mr = mr_for(req, project, iid)
    shas = {c.id for c in repo.mr_commits(world, mr)}
    refs = {f"refs/merge-requests/{mr.iid}/head", f"refs/merge-requests/{mr.iid}/merge"}
    own = [p for p in world.pipelines.values() if p.project_id == project.id]
    event = [p for p in own if p.ref in refs]
    branch = [p for p in own if p.ref == mr.source_branch and p.sha in shas]
    found = sorted(event, key=lambda p: -p.id) + sorted(branch, key=lambda p: -p.id)
    r = renderer(req)
    return paginate(req, found, lambda p: r.pipeline(p, basic=True))


@API.route("POST", "/projects/{project_id}/merge_requests/{iid}/approve")
def approve(req: Request, project_id: str, iid: str) -> Any:
    return _approval(req, project_id, iid, approve=True)


@API.route("POST", "/projects/{project_id}/merge_requests/{iid}/unapprove")
def unapprove(req: Request, project_id: str, iid: str) -> Any:
    return _approval(req, project_id, iid, approve=False)


def _approval(req: Request, project_id: str, iid: str, *, approve: bool) -> Any:
    user = current_user(req)
    project = project_for(req, project_id)
    world = req.world
    mr = mr_for(req, project, iid)
    if world.access_level(user, project) < DEVELOPER:
        raise forbidden()
    head = repo.current_sha(world, mr)
    if approve and req.has("sha") and req.str("sha") != head:
        raise _sha_conflict(head)
    if approve and not _may_approve(world, mr, user):
        raise unauthorized()
    if not record_approval(world, mr, user, approve=approve):
        if not world.options.legacy_approval_statuses:
            return Reply(304)
        raise unauthorized() if approve else ApiError(404, {"message": "404 Not Found"})
    return Reply(201, approvals_entity(req, mr))


@API.route("GET", "/projects/{project_id}/merge_requests/{iid}/approvals")
def get_approvals(req: Request, project_id: str, iid: str) -> Any:
    project = project_for(req, project_id)
    return approvals_entity(req, mr_for(req, project, iid))


@API.route("PUT", "/projects/{project_id}/merge_requests/{iid}/merge")
def merge(req: Request, project_id: str, iid: str) -> Any:
    user = current_user(req)
    project = project_for(req, project_id)
    world = req.world
    mr = mr_for(req, project, iid)
    if not _can_merge(world, user, project):
        raise unauthorized()  # before the sha check, as on GitLab
    head = repo.current_sha(world, mr)
    if req.has("sha") and req.str("sha") != head:
        raise _sha_conflict(head)
    r = renderer(req)
    if req.bool("auto_merge") or req.bool("merge_when_pipeline_succeeds"):
        status = head_pipeline_status(world, r, mr)
        if mr.state == "opened" and status in ("created", "pending", "running"):
            mr.merge_when_pipeline_succeeds = True
            mr.merged_by_id = user.id
            return render(r, mr, user, basic=False)
        if status not in (None, "success"):
            raise ApiError(405, {"message": "405 Method Not Allowed"})
    if detailed_status(world, r, mr) != "mergeable":
        raise ApiError(405, {"message": "405 Method Not Allowed"})
    target = (
        project.default_branch if mr.target_branch not in project.branches else (mr.target_branch)
    )
    source = world.commits[head]
    message = req.str("merge_commit_message") or (
        f"Merge branch '{mr.source_branch}' into '{target}'\n\n{mr.title}\n\n"
        f"See merge request {world.full_path(project)}!{mr.iid}"
    )
    commit = repo.make_commit(
        world,
        project,
        parents=[project.branches[target], head],
        tree=source.tree,
        message=message,
        author=user,
    )
    mr.state, mr.final_sha, mr.merge_commit_sha = "merged", head, commit.id
    mr.merged_at = mr.updated_at = world.stamp()
    mr.merged_by_id = user.id
    repo.move_branch(world, project, target, commit.id, user)
    if req.bool("should_remove_source_branch"):
        project.branches.pop(mr.source_branch, None)
    return render(r, mr, user, basic=False)
