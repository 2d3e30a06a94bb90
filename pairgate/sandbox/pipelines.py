"""Pipelines: made by ``POST /-/sandbox/pipelines`` or by ``POST .../merge_requests/:iid/pipelines``
(from the project's sandbox job list, ``POST /-/sandbox/ci``), read through the API. A
pipeline's status follows its jobs (jobs.py; no runner here); one for an MR's branch or MR ref
becomes its head_pipeline, which goes stale (its sha behind the MR's) when a push moves the
head."""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox import repo
from pairgate.sandbox.access import API, current_user, project_for, renderer
from pairgate.sandbox.httpd import ApiError, Reply, Request, not_found, paginate, param_error
from pairgate.sandbox.jobs import STATUSES, add_job, checked_status, set_status
from pairgate.sandbox.merge_requests import mr_for
from pairgate.sandbox.model import World
from pairgate.sandbox.records import DEVELOPER, MergeRequest, Pipeline, Project, User
from pairgate.sandbox.settings import setting

_MR_REF = re.compile(r"^refs/merge-requests/(\d+)/(head|merge)$")


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
    )
    world.pipelines[pipeline.id] = pipeline
    for spec in jobs:
        add_job(world, pipeline, spec)
    for mr in world.merge_requests.values():
        if mr.project_id != project.id or mr.state != "opened":
            continue
        if (mr.source_project_id == project.id and ref == mr.source_branch) or (
            mr_ref and int(mr_ref.group(1)) == mr.iid
        ):
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


def create_for_mr(world: World, project: Project, mr: MergeRequest, user: User) -> Pipeline:
    """What ``POST .../merge_requests/:iid/pipelines`` makes: a merge request pipeline at the
    MR's head (``refs/merge-requests/<iid>/head``) or, with merge_pipelines_enabled (Premium),
    a merged results pipeline (``.../merge``) at a merge commit of the head into the target.
    Its jobs are the project's job list: the first stage pending, later ones created."""
    head = repo.current_sha(world, mr)
    ref, sha, source_sha = f"refs/merge-requests/{mr.iid}/head", head, None
    if setting(project, "merge_pipelines_enabled"):
        target = project.branches.get(mr.target_branch, mr.base_sha)
        merged = repo.make_commit(
            world,
            project,
            parents=[target, head],
            tree=world.commits[head].tree,
            message=f"Merge branch '{mr.source_branch}' into '{mr.target_branch}'\n",
            author=user,
        )
        ref, sha, source_sha = f"refs/merge-requests/{mr.iid}/merge", merged.id, head
    specs = project.ci_jobs or []
    first = specs[0].get("stage") or "test"
    jobs = [
        s | {"status": "pending" if (s.get("stage") or "test") == first else "created"}
        for s in specs
    ]
    return create(
        world,
        project,
        ref=ref,
        sha=sha,
        jobs=jobs,
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
    for name in ("sha", "ref", "source"):
        value = req.text(name)
        if value:
            found = [p for p in found if getattr(p, name) == value]
    status = req.text("status")
    if status:
        found = [p for p in found if render.pipeline_status(p) == status]
    found.sort(key=lambda p: p.id, reverse=req.choice("sort", ("asc", "desc"), "desc") == "desc")
    return paginate(req, found, lambda p: render.pipeline(p, basic=True))


@API.route("GET", "/projects/{project_id}/pipelines/{pipeline_id}")
def get_pipeline(req: Request, project_id: str, pipeline_id: str) -> Any:
    project = project_for(req, project_id)
    return renderer(req).pipeline(_pipeline_for(req, project, pipeline_id))


@API.route("GET", "/projects/{project_id}/pipelines/{pipeline_id}/jobs", job_token=True)
def list_jobs(req: Request, project_id: str, pipeline_id: str) -> Any:
    project = project_for(req, project_id)
    pipeline = _pipeline_for(req, project, pipeline_id)
    found = req.world.jobs_of(pipeline, retried=req.flag("include_retried"))
    scope = req.csv("scope")
    if scope:
        unknown = set(scope) - set(STATUSES)
        if unknown:
            raise param_error("scope does not have a valid value")
        found = [j for j in found if j.status in scope]
    found.sort(key=lambda j: j.id, reverse=True)
    return paginate(req, found, renderer(req).job)


@API.route("POST", "/projects/{project_id}/merge_requests/{iid}/pipelines")
def create_mr_pipeline(req: Request, project_id: str, iid: str) -> Any:
    """GitLab checks create_pipeline (Developer) before it looks the MR up, answers 405 when
    no pipeline can be made (here: the project has no job list) and 200, not 201."""
    user = current_user(req)
    project = project_for(req, project_id, level=DEVELOPER)
    mr = mr_for(req, project, iid)
    if not project.ci_jobs:
        raise ApiError(405, {"message": "405 Method Not Allowed"})
    pipeline = create_for_mr(req.world, project, mr, user)
    if req.flag("async"):
        return Reply(202)
    return Reply(200, renderer(req).pipeline(pipeline))
