"""The merge itself, and auto-merge: set on a merge request that cannot merge yet, it merges
when its pipeline succeeds and every merge check passes, as the user who set it; a push to the
source branch cancels it (repo.move_branch), and a failed pipeline never merges it (GitLab's
MergeWhenChecksPassService#process; auto_merge.md, "Pipeline success for auto-merge").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pairgate.sandbox import repo
from pairgate.sandbox.entities import Renderer
from pairgate.sandbox.model import World
from pairgate.sandbox.mr_entity import can_merge, detailed_status, head_pipeline_status
from pairgate.sandbox.records import MergeRequest, Pipeline, Project, User
from pairgate.sandbox.settings import setting

if TYPE_CHECKING:
    from pairgate.sandbox.runner import Runner

IN_PROGRESS = ("created", "pending", "running", "preparing", "waiting_for_resource")


def merge_now(
    world: World,
    project: Project,
    mr: MergeRequest,
    user: User,
    *,
    message: str | None = None,
    remove_source_branch: bool = False,
    runner: Runner | None = None,
) -> None:
    """Merge ``mr`` into its target as ``user``: a merge commit (parents the target head and
    the MR head, the head's tree), or with merge_method ff the target moved to the head."""
    head = repo.current_sha(world, mr)
    target = mr.target_branch if mr.target_branch in project.branches else project.default_branch
    before = project.branches[target]
    if setting(project, "merge_method") == "ff":
        # the target moves to the head; GitLab's merge_commit_sha here is UNCONFIRMED (null)
        new_head, mr.merge_commit_sha = head, None
    else:
        text = message or (
            f"Merge branch '{mr.source_branch}' into '{target}'\n\n{mr.title}\n\n"
            f"See merge request {world.full_path(project)}!{mr.iid}"
        )
        commit = repo.make_commit(
            world,
            project,
            parents=[before, head],
            tree=world.commits[head].tree,
            message=text,
            author=user,
        )
        new_head = mr.merge_commit_sha = commit.id
    mr.state, mr.final_sha = "merged", head
    mr.merged_at = mr.updated_at = world.stamp()
    mr.merged_by_id = mr.merge_user_id = user.id
    mr.merge_when_pipeline_succeeds = False
    repo.move_branch(world, project, target, new_head, user)
    if runner is not None:
        runner.pushed(world, project, target, new_head, user)
    if remove_source_branch:
        project.branches.pop(mr.source_branch, None)


def auto_merge_available(world: World, mr: MergeRequest, r: Renderer) -> bool:
    """Can auto-merge be set (MergeWhenChecksPassService#availability_details)? Not when the
    MR is closed or merged, nor when it could merge right now with no pipeline in progress
    (then the merge API merges at once)."""
    if mr.state != "opened":
        return False
    running = head_pipeline_status(world, r, mr) in IN_PROGRESS
    return running or detailed_status(world, r, mr) != "mergeable"


def process(world: World, pipeline: Pipeline | None = None, runner: Runner | None = None) -> None:
    """Merge each open MR with auto-merge set whose head pipeline has succeeded at its head and
    that passes every merge check (all of them, or the MRs ``pipeline`` heads)."""
    r = Renderer(world, "")
    for mr in list(world.merge_requests.values()):
        if mr.state != "opened" or not mr.merge_when_pipeline_succeeds:
            continue
        if pipeline is not None and mr.head_pipeline_id != pipeline.id:
            continue
        user = world.users.get(mr.merge_user_id or 0)
        project = world.projects[mr.project_id]
        if user is None or not can_merge(world, user, project, mr.target_branch):
            continue
        if head_pipeline_status(world, r, mr) != "success":
            continue  # auto-merge needs a pipeline that succeeded, whatever the setting
        if detailed_status(world, r, mr) == "mergeable":
            merge_now(world, project, mr, user, runner=runner)
