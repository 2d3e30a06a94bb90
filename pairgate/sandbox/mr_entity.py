"""The merge request entity and the mergeability rules it reports."""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox import protection, repo
from pairgate.sandbox.entities import Renderer
from pairgate.sandbox.model import World
from pairgate.sandbox.records import DEVELOPER, REPORTER, MergeRequest, Project, User
from pairgate.sandbox.settings import setting

DRAFT = re.compile(r"^\s*(\[draft\]|\(draft\)|draft:|draft\s-\s|draft\s|\[wip\]|wip:)", re.I)


def head_pipeline_status(world: World, r: Renderer, mr: MergeRequest) -> str | None:
    """The status of head_pipeline when it is for the current head (a merged results pipeline
    counts for the head it merged); None when stale or absent."""
    pipeline = world.pipelines.get(mr.head_pipeline_id or 0)
    head = repo.current_sha(world, mr)
    if pipeline is None or head not in (pipeline.sha, pipeline.source_sha):
        return None
    return r.pipeline_status(pipeline)


# Pipeline sources that never stand for a branch (Enums::Ci::Pipeline.dangling_sources, and
# merge_request_event, which ci_branch_sources leaves out): the reopen below passes over them.
NOT_BRANCH_SOURCES = frozenset(
    ("merge_request_event", "webide", "parent_pipeline", "ondemand_dast_scan",
     "ondemand_dast_validation", "security_orchestration_policy", "container_registry_push",
     "duo_workflow", "pipeline_execution_policy_schedule")
)  # fmt: skip


def update_head_pipeline(world: World, mr: MergeRequest) -> None:
    """What GitLab does when an MR opens again (its state machine's reopen transition runs
    UpdateHeadPipelineForMergeRequestWorker): the head pipeline becomes the first pipeline at
    the MR's head among its merge request pipelines and its source branch's branch pipelines,
    merge request pipelines first, then the newest (PipelinesForMergeRequestFinder's order).
    None there, and it keeps the one it had. Reopening starts no pipeline (ReopenService), so a
    branch pipeline made while the MR was closed can head it."""
    head = repo.current_sha(world, mr)
    found = [
        p
        for p in world.pipelines.values()
        if p.parent_id is None
        and head in (p.sha, p.source_sha)
        and (
            (p.project_id == mr.project_id and p.mr_iid == mr.iid)
            or (
                p.project_id == mr.source_project_id
                and p.mr_iid is None
                and p.ref == mr.source_branch
                and p.source not in NOT_BRANCH_SOURCES
            )
        )
    ]
    if found:
        first = min(found, key=lambda p: (p.mr_iid is None, -p.id))
        mr.head_pipeline_id = first.id


def detailed_status(world: World, r: Renderer, mr: MergeRequest) -> str:
    if mr.state != "opened":
        return "not_open"
    if DRAFT.match(mr.title):
        return "draft_status"
    project = world.projects[mr.project_id]
    if setting(project, "merge_method") != "merge" and not repo.contains(
        world, repo.current_sha(world, mr), project.branches.get(mr.target_branch, "")
    ):
        return "need_rebase"  # ff and rebase_merge need the target head in the MR's history
    if setting(project, "only_allow_merge_if_pipeline_succeeds"):
        status = head_pipeline_status(world, r, mr)
        if status in ("created", "pending", "running", "preparing", "waiting_for_resource"):
            return "ci_still_running"
        skipped_ok = status == "skipped" and setting(project, "allow_merge_on_skipped_pipeline")
        if status != "success" and not skipped_ok:
            return "ci_must_pass"
    return "mergeable"


def render(r: Renderer, mr: MergeRequest, viewer: User | None, *, basic: bool) -> dict[str, Any]:
    world = r.world
    project = world.projects[mr.project_id]
    full = world.full_path(project)
    sha = repo.current_sha(world, mr)
    assignees = [r.user_by_id(a) for a in mr.assignee_ids]
    user_notes = [n for n in world.notes_on(mr) if not n.system]
    status = detailed_status(world, r, mr)
    out: dict[str, Any] = {
        "id": mr.id, "iid": mr.iid, "project_id": mr.project_id,
        "title": mr.title, "description": mr.description, "state": mr.state,
        "created_at": mr.created_at, "updated_at": mr.updated_at,
        "merged_by": r.user_by_id(mr.merged_by_id),
        "merge_user": r.user_by_id(mr.merge_user_id or mr.merged_by_id),
        "merged_at": mr.merged_at, "closed_by": r.user_by_id(mr.closed_by_id),
        "closed_at": mr.closed_at, "target_branch": mr.target_branch,
        "source_branch": mr.source_branch, "user_notes_count": len(user_notes),
        "upvotes": 0, "downvotes": 0, "author": r.user_by_id(mr.author_id),
        "assignees": assignees, "assignee": assignees[0] if assignees else None,
        "reviewers": [r.user_by_id(u) for u in mr.reviewer_ids],
        "source_project_id": mr.source_project_id, "target_project_id": mr.project_id,
        "labels": sorted(mr.labels), "draft": bool(DRAFT.match(mr.title)),
        "work_in_progress": bool(DRAFT.match(mr.title)), "milestone": None,
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
        "diff_refs": {
            "base_sha": mr.base_sha,
            "head_sha": sha,
            "start_sha": mr.start_sha or mr.base_sha,
        },
        "merge_error": None,
        "first_contribution": False,
        "user": {
            "can_merge": viewer is not None and can_merge(world, viewer, project, mr.target_branch)
        },
    }
    if world.access_level(viewer, project) >= REPORTER:  # key absent if pipelines unreadable
        head = world.pipelines.get(mr.head_pipeline_id or 0)
        out["pipeline"] = r.pipeline(head, basic=True) if head else None
        out["head_pipeline"] = r.pipeline(head) if head else None
    return out


def _changed_files(world: World, base: str, head: str) -> int:
    before, after = world.commits[base].tree, world.commits[head].tree
    return sum(1 for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def can_merge(world: World, user: User, project: Project, branch: str) -> bool:
    """May ``user`` merge into ``branch`` (GitLab's can_be_merged_by?: the protected branch's
    merge access level, Developer when unprotected)?"""
    return protection.may(world, user, project, branch, "merge")


def may_approve(world: World, mr: MergeRequest, user: User) -> bool:
    project = world.projects[mr.project_id]
    if world.access_level(user, project) < DEVELOPER:
        return False
    return world.options.author_can_approve or user.id != mr.author_id
