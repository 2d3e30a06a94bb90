"""Pipelines and jobs: made by ``POST /-/sandbox/pipelines`` (no runner here), read through the
API. A pipeline's status follows its jobs; one for an MR's branch or MR ref becomes its
head_pipeline, which goes stale (its sha behind the MR's) when a push moves the head."""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox import repo
from pairgate.sandbox.access import API, project_for, renderer
from pairgate.sandbox.httpd import Request, not_found, paginate, param_error, updated_window
from pairgate.sandbox.model import Job, Pipeline, Project, World

STATUSES = (
    "created", "waiting_for_resource", "preparing", "pending", "running", "success", "failed",
    "canceled", "canceling", "skipped", "manual", "scheduled",
)  # fmt: skip
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


def add_job(world: World, pipeline: Pipeline, spec: dict[str, Any]) -> Job:
    status = _checked_status(spec.get("status", "success"))
    if not spec.get("name"):
        raise ValueError("each job needs a name")
    job_id = world.next_id("job")
    job = Job(
        job_id,
        pipeline.id,
        str(spec["name"]),
        str(spec.get("stage", "test")),
        status,
        bool(spec.get("allow_failure", False)),
        world.stamp(),
        f"sandbox-job-{job_id}-token",
    )
    world.jobs[job_id] = job
    return job


def update_jobs(world: World, pipeline: Pipeline, jobs: list[dict[str, Any]]) -> None:
    """Move jobs (by name) to new statuses; a name the pipeline lacks becomes a new job."""
    for spec in jobs:
        job = next(
            (
                j
                for j in world.jobs.values()
                if j.pipeline_id == pipeline.id and j.name == spec.get("name")
            ),
            None,
        )
        if job is None:
            add_job(world, pipeline, spec)
            continue
        job.status = _checked_status(spec.get("status", job.status))
        job.allow_failure = bool(spec.get("allow_failure", job.allow_failure))
    pipeline.updated_at = world.stamp()


def _checked_status(status: Any) -> str:
    if status not in STATUSES:
        raise ValueError(f"job status {status!r} is not one of {', '.join(STATUSES)}")
    return str(status)


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
    found = [j for j in req.world.jobs.values() if j.pipeline_id == pipeline.id]
    scope = req.csv("scope")
    if scope:
        unknown = set(scope) - set(STATUSES)
        if unknown:
            raise param_error("scope does not have a valid value")
        found = [j for j in found if j.status in scope]
    found.sort(key=lambda j: j.id, reverse=True)
    return paginate(req, found, renderer(req).job)
