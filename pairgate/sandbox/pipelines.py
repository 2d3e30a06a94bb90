"""Pipelines: made by ``POST /-/sandbox/pipelines``, by ``POST .../merge_requests/:iid/pipelines``
and ``POST /projects/:id/pipeline`` (from the project's CI configuration with a runner,
runner.py; else from its sandbox job list, ``POST /-/sandbox/ci``), and read through the API. A
pipeline's status follows its jobs and trigger jobs (jobs.py); one for an MR's branch or MR ref
becomes its head_pipeline (``store``), which goes stale (its sha behind the MR's) when a push
moves the head."""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox import repo
from pairgate.sandbox.access import API, current_user, project_for, renderer
from pairgate.sandbox.httpd import (
    ApiError,
    Reply,
    Request,
    forbidden,
    not_found,
    paginate,
    param_error,
    record_not_found,
    updated_window,
)
from pairgate.sandbox.jobs import STATUSES, add_job, checked_status, set_status
from pairgate.sandbox.merge_requests import mr_for
from pairgate.sandbox.model import World
from pairgate.sandbox.records import (
    DEVELOPER,
    MAINTAINER,
    OWNER,
    REPORTER,
    MergeRequest,
    Pipeline,
    Project,
    User,
)
from pairgate.sandbox.settings import setting

_MR_REF = re.compile(r"^refs/merge-requests/(\d+)/(head|merge)$")

# What Ci::CancelPipelineService cancels (HasStatus::CANCELABLE_STATUSES): a manual job waits on
# and a finished one keeps its end.
CANCELABLE = ("created", "waiting_for_resource", "preparing", "pending", "running", "scheduled")


def create(
    world: World,
    project: Project,
    *,
    ref: str,
    sha: str | None,
    jobs: list[dict[str, Any]],
    source: str | None = None,
    user_id: int | None = None,
    source_sha: str | None = None,
) -> Pipeline:
    """A pipeline with its jobs; raises ValueError with the reason for bad input."""
    mr_ref = _MR_REF.match(ref)
    if sha is None:
        head = repo.resolve(world, project, ref)
        if mr_ref:
            mr = world.merge_request(project, int(mr_ref.group(1)))
            head = world.commits.get(repo.current_sha(world, mr)) if mr else None
        if head is None:
            raise ValueError(f"ref {ref!r} names no branch or merge request; give sha")
        sha = head.id
    now = world.stamp()
    pipeline = Pipeline(
        world.next_id("pipeline"),
        world.next_iid(project, "pipeline"),
        project.id,
        sha,
        ref,
        source or ("merge_request_event" if mr_ref else "push"),
        user_id,
        now,
        now,
        source_sha=source_sha,
        mr_iid=int(mr_ref.group(1)) if mr_ref else None,
    )
    store(world, pipeline)
    for spec in jobs:
        add_job(world, pipeline, spec)
    return pipeline


def store(world: World, pipeline: Pipeline) -> Pipeline:
    """Keep ``pipeline`` and make it the head pipeline of the open merge requests it is for. A
    merge request pipeline heads its MR; a branch pipeline heads the MRs from that branch unless
    one already has a merge request pipeline at the same commit, since GitLab's "Pipelines must
    succeed" reads merge request pipelines first (auto_merge.md, "Merge request can still be
    merged despite a failed pipeline"). A child pipeline heads nothing."""
    world.pipelines[pipeline.id] = pipeline
    if pipeline.parent_id is not None:
        return pipeline
    for mr in world.merge_requests.values():
        if mr.project_id != pipeline.project_id or mr.state != "opened":
            continue
        if pipeline.mr_iid == mr.iid:
            mr.head_pipeline_id = pipeline.id
        elif mr.source_project_id == pipeline.project_id and pipeline.ref == mr.source_branch:
            head = world.pipelines.get(mr.head_pipeline_id or 0)
            if not (head and head.mr_iid == mr.iid and head.sha == pipeline.sha):
                mr.head_pipeline_id = pipeline.id
    return pipeline


def update_jobs(world: World, pipeline: Pipeline, jobs: list[dict[str, Any]]) -> None:
    """Move jobs (by name) to new statuses; a name the pipeline lacks becomes a new job."""
    for spec in jobs:
        job = next((j for j in world.jobs_of(pipeline) if j.name == spec.get("name")), None)
        if job is None:
            add_job(world, pipeline, spec)
            continue
        set_status(world, job, checked_status(spec.get("status", job.status)))
        job.allow_failure = bool(spec.get("allow_failure", job.allow_failure))
    pipeline.updated_at = world.stamp()


def merge_request_ref(
    world: World, project: Project, mr: MergeRequest, user: User | None
) -> tuple[str, str, str | None]:
    """A merge request pipeline's ref and commit: the MR's head on ``refs/merge-requests/<iid>/
    head``, or with merge_pipelines_enabled (Premium) a merged results pipeline on ``.../merge``
    at a merge commit of the head into the target (on no branch), with the head it was made
    for."""
    head = repo.current_sha(world, mr)
    if not setting(project, "merge_pipelines_enabled"):
        return f"refs/merge-requests/{mr.iid}/head", head, None
    target = project.branches.get(mr.target_branch, mr.base_sha)
    merged = repo.make_commit(
        world,
        project,
        parents=[target, head],
        tree=world.commits[head].tree,
        message=f"Merge branch '{mr.source_branch}' into '{mr.target_branch}'\n",
        author=user,
    )
    return f"refs/merge-requests/{mr.iid}/merge", merged.id, head


def _from_job_list(project: Project) -> list[dict[str, Any]]:
    """The project's sandbox job list as new jobs: the first stage pending, later ones created."""
    specs = project.ci_jobs or []
    first = specs[0].get("stage") or "test"
    return [
        s | {"status": "pending" if (s.get("stage") or "test") == first else "created"}
        for s in specs
    ]


def create_for_mr(world: World, project: Project, mr: MergeRequest, user: User) -> Pipeline:
    """What ``POST .../merge_requests/:iid/pipelines`` makes without a runner: a merge request
    pipeline (merge_request_ref) whose jobs are the project's job list."""
    ref, sha, source_sha = merge_request_ref(world, project, mr, user)
    return create(
        world,
        project,
        ref=ref,
        sha=sha,
        jobs=_from_job_list(project),
        source="merge_request_event",
        user_id=user.id,
        source_sha=source_sha,
    )


def _pipeline_for(req: Request, project: Project, pipeline_id: str) -> Pipeline:
    pipeline = req.world.pipelines.get(int(pipeline_id)) if pipeline_id.isdigit() else None
    if pipeline is None or pipeline.project_id != project.id:
        raise not_found()
    return pipeline


@API.route("GET", "/projects/{project_id}/pipelines")
def list_pipelines(req: Request, project_id: str) -> Any:
    project = project_for(req, project_id)
    render = renderer(req)
    found = [p for p in req.world.pipelines.values() if p.project_id == project.id]
    if req.text("source") != "parent_pipeline":  # children only when asked for (pipelines.md)
        found = [p for p in found if p.parent_id is None]
    for name in ("sha", "ref", "source"):
        value = req.text(name)
        if value:
            found = [p for p in found if getattr(p, name) == value]
    status = req.text("status")
    if status:
        found = [p for p in found if render.pipeline_status(p) == status]
    found = updated_window(req, found)
    order = req.choice("order_by", ("id", "status", "ref", "updated_at", "user_id"), "id")
    keys = {
        "status": lambda p: (render.pipeline_status(p), p.id),
        "ref": lambda p: (p.ref, p.id),
        "updated_at": lambda p: (p.updated_at, p.id),
        "user_id": lambda p: (p.user_id or 0, p.id),
    }
    desc = req.choice("sort", ("asc", "desc"), "desc") == "desc"
    found.sort(key=keys.get(order, lambda p: (p.id,)), reverse=desc)
    return paginate(req, found, lambda p: render.pipeline(p, basic=True))


@API.route("GET", "/projects/{project_id}/pipelines/{pipeline_id}")
def get_pipeline(req: Request, project_id: str, pipeline_id: str) -> Any:
    project = project_for(req, project_id)
    return renderer(req).pipeline(_pipeline_for(req, project, pipeline_id))


@API.route("GET", "/projects/{project_id}/pipelines/{pipeline_id}/jobs", job_token=True)
def list_jobs(req: Request, project_id: str, pipeline_id: str) -> Any:
    project = project_for(req, project_id)
    pipeline = _pipeline_for(req, project, pipeline_id)
    found = [
        j
        for j in req.world.jobs_of(pipeline, retried=req.flag("include_retried"))
        if j.kind == "build"
    ]
    scope = req.csv("scope")
    if scope:
        unknown = set(scope) - set(STATUSES)
        if unknown:
            raise param_error("scope does not have a valid value")
        found = [j for j in found if j.status in scope]
    found.sort(key=lambda j: j.id, reverse=True)
    return paginate(req, found, renderer(req).job)


@API.route("GET", "/projects/{project_id}/pipelines/{pipeline_id}/bridges")
def list_bridges(req: Request, project_id: str, pipeline_id: str) -> Any:
    """A pipeline's trigger jobs, each with the pipeline it started (jobs.md, "List pipeline
    trigger jobs"); ``scope`` as for jobs."""
    project = project_for(req, project_id, level=REPORTER)
    pipeline = _pipeline_for(req, project, pipeline_id)
    found = [j for j in req.world.jobs_of(pipeline) if j.kind == "bridge"]
    scope = req.csv("scope")
    if scope:
        if set(scope) - set(STATUSES):
            raise param_error("scope does not have a valid value")
        found = [j for j in found if j.status in scope]
    found.sort(key=lambda j: j.id, reverse=True)
    return paginate(req, found, renderer(req).bridge)


@API.route("POST", "/projects/{project_id}/merge_requests/{iid}/pipelines")
def create_mr_pipeline(req: Request, project_id: str, iid: str) -> Any:
    """GitLab checks create_pipeline (Developer) before it looks the MR up, answers 405 when
    no pipeline can be made (no configuration, or no job for a merge request pipeline) and 200,
    not 201. With a runner the project's CI configuration decides, else its job list."""
    user = current_user(req)
    project = project_for(req, project_id, level=DEVELOPER)
    mr = mr_for(req, project, iid)
    if req.runner is not None:
        pipeline = req.runner.merge_request_pipeline(req.world, project, mr, user)
    else:
        pipeline = create_for_mr(req.world, project, mr, user) if project.ci_jobs else None
    if pipeline is None:
        raise ApiError(405, {"message": "405 Method Not Allowed"})
    if req.flag("async"):
        return Reply(202)
    return Reply(200, renderer(req).pipeline(pipeline))


def cancel(world: World, pipeline: Pipeline) -> list[int]:
    """Cancel the jobs of ``pipeline`` and of its child pipelines that have not finished; the
    ids of the pipelines reached, so a runner can stop what it runs for them."""
    reached = [pipeline.id]
    for candidate in reached:  # grows as children are found
        reached += [p.id for p in world.pipelines.values() if p.parent_id == candidate]
    for pipeline_id in reached:
        for job in world.jobs_of(world.pipelines[pipeline_id]):
            if job.status in CANCELABLE:
                set_status(world, job, "canceled")
    pipeline.updated_at = world.stamp()
    return reached


@API.route("POST", "/projects/{project_id}/pipelines/{pipeline_id}/cancel")
def cancel_pipeline(req: Request, project_id: str, pipeline_id: str) -> Any:
    """pipelines.md, "Cancel a pipeline's jobs": GitLab finds the pipeline (404) before it
    checks cancel_pipeline (Developer; 403), and answers 200 with the pipeline, also when
    nothing was left to cancel. With a runner, the jobs it runs for it are stopped."""
    user = current_user(req)
    project = project_for(req, project_id)
    try:
        pipeline = _pipeline_for(req, project, pipeline_id)
    except ApiError:
        raise record_not_found() from None  # all_pipelines.find: ActiveRecord's 404
    if req.world.access_level(user, project) < DEVELOPER:
        raise forbidden()
    reached = cancel(req.world, pipeline)
    if req.runner is not None:
        req.runner.cancel(reached)
    return Reply(200, renderer(req).pipeline(pipeline))


def _base_error(text: str) -> ApiError:
    """A pipeline that could not be created: GitLab's validation error body."""
    return ApiError(400, {"message": {"base": [text]}})


_OVERRIDE_ROLES = {"developer": DEVELOPER, "maintainer": MAINTAINER, "owner": OWNER}


@API.route("POST", "/projects/{project_id}/pipeline")
def create_pipeline(req: Request, project_id: str) -> Any:
    """``POST /projects/:id/pipeline`` (pipelines.md, "Create a new pipeline"): a pipeline for
    a branch, ``source`` api, ``[skip ci]`` ignored (GitLab runs it with ignore_skip_ci),
    ``variables`` as pipeline variables. 201; 400 with GitLab's validation message when the
    ref is unknown, no pipeline can be made, or the caller may not set pipeline variables."""
    ref = req.required("ref")
    user = current_user(req)
    project = project_for(req, project_id, level=DEVELOPER)
    world = req.world
    variables = req.params.get("variables") or []
    if not isinstance(variables, list) or not all(
        isinstance(v, dict) and v.get("key") for v in variables
    ):
        raise param_error("variables is invalid")
    if variables and setting(project, "restrict_user_defined_variables"):
        role = setting(project, "ci_pipeline_variables_minimum_override_role")
        needed = _OVERRIDE_ROLES.get(role, OWNER + 1)  # no_one_allowed: nobody
        if world.access_level(user, project) < needed:
            raise _base_error("Insufficient permissions to set pipeline variables")
    if ref not in project.branches:
        raise _base_error("Reference not found")
    sha = project.branches[ref]
    if req.runner is not None:
        made = req.runner.create(
            world, project, ref=ref, sha=sha, source="api", user=user, branch=ref,
            ignore_skip=True, variables=[{"key": v["key"], "value": v.get("value", "")} for v in variables],
        )  # fmt: skip
    elif project.ci_jobs:
        made = create(world, project, ref=ref, sha=sha, jobs=_from_job_list(project),
                      source="api", user_id=user.id)  # fmt: skip
        made.variables = [{"key": v["key"], "value": v.get("value", "")} for v in variables]
    else:
        made = None
    if made is None:
        raise _base_error("No stages / jobs for this pipeline.")
    return Reply(201, renderer(req).pipeline(made))
