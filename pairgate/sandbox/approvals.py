"""The gate's endpoints: approve and unapprove with ``sha``, the approvals entity, and merge."""

from __future__ import annotations

from typing import Any

from pairgate.sandbox import merging, repo
from pairgate.sandbox.access import API, current_user, project_for, renderer
from pairgate.sandbox.httpd import ApiError, Reply, Request, forbidden, unauthorized
from pairgate.sandbox.merge_requests import mr_for
from pairgate.sandbox.model import World
from pairgate.sandbox.mr_entity import can_merge, detailed_status, may_approve, render
from pairgate.sandbox.records import DEVELOPER, MergeRequest, User


def _sha_conflict(sha: str) -> ApiError:
    return ApiError(409, {"message": f"SHA does not match HEAD of source branch: {sha}"})


def record_approval(world: World, mr: MergeRequest, user: User, *, approve: bool) -> bool:
    """Add or remove ``user``'s approval (bound to the user, not to a commit, as on GitLab);
    False when there was nothing to change."""
    has = any(a[0] == user.id for a in mr.approvals)
    if has == approve:
        return False
    if approve:
        mr.approvals.append([user.id, world.stamp()])
    else:
        mr.approvals = [a for a in mr.approvals if a[0] != user.id]
    word = "approved" if approve else "unapproved"
    world.add_note(mr, user, f"{word} this merge request", system=True)
    mr.updated_at = world.stamp()
    return True


def approvals_entity(req: Request, mr: MergeRequest) -> dict[str, Any]:
    world, r = req.world, renderer(req)
    user = req.user
    approved_by = [{"user": r.user_by_id(uid), "approved_at": at} for uid, at in mr.approvals]
    mine = user is not None and any(a[0] == user.id for a in mr.approvals)
    can = user is not None and may_approve(world, mr, user)
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
    if approve and req.has("sha") and req.text("sha") != head:
        raise _sha_conflict(head)
    if approve and not may_approve(world, mr, user):
        raise unauthorized()
    if not record_approval(world, mr, user, approve=approve):
        if not world.options.legacy_approval_statuses:
            return Reply(304)
        raise unauthorized() if approve else ApiError(404, {"message": "404 Not Found"})
    merging.process(world, runner=req.runner)  # an approval can be the check auto-merge awaits
    return Reply(201, approvals_entity(req, mr))


@API.route("GET", "/projects/{project_id}/merge_requests/{iid}/approvals")
def get_approvals(req: Request, project_id: str, iid: str) -> Any:
    project = project_for(req, project_id)
    return approvals_entity(req, mr_for(req, project, iid))


@API.route("PUT", "/projects/{project_id}/merge_requests/{iid}/merge")
def merge(req: Request, project_id: str, iid: str) -> Any:
    """Merge, or with ``auto_merge`` (``merge_when_pipeline_succeeds``) set auto-merge when the
    MR cannot merge yet or its pipeline is still running (merging.py), as GitLab's newest API:
    401 without merge rights, 409 on a stale ``sha``, 405 when neither can happen."""
    user = current_user(req)
    project = project_for(req, project_id)
    world = req.world
    mr = mr_for(req, project, iid)
    if not can_merge(world, user, project, mr.target_branch):
        raise unauthorized()  # before the sha check, as on GitLab
    head = repo.current_sha(world, mr)
    if req.has("sha") and req.text("sha") != head:
        raise _sha_conflict(head)
    r = renderer(req)
    auto = req.flag("auto_merge") or req.flag("merge_when_pipeline_succeeds")
    if auto and merging.auto_merge_available(world, mr, r):
        mr.merge_when_pipeline_succeeds = True
        mr.merge_user_id = user.id
        mr.updated_at = world.stamp()
        merging.process(world, runner=req.runner)  # AutoMergeProcessWorker, at once
        return render(r, mr, user, basic=False)
    if detailed_status(world, r, mr) != "mergeable":
        raise ApiError(405, {"message": "405 Method Not Allowed"})
    merging.merge_now(
        world,
        project,
        mr,
        user,
        message=req.text("merge_commit_message"),
        remove_source_branch=req.flag("should_remove_source_branch"),
        runner=req.runner,
    )
    return render(r, mr, user, basic=False)
