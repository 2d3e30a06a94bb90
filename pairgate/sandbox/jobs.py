"""CI jobs: their statuses and logs (set by the sandbox-only ``POST /-/sandbox/jobs/:id``, as a
runner would), ``GET /job`` by job token, ``GET /projects/:id/jobs/:job_id/trace`` and
``POST /projects/:id/jobs/:job_id/retry``.

A job's token authenticates as ``CI_JOB_TOKEN`` only while the job is running (server.py), as
on GitLab, where a finished job's token answers 401.
"""

from __future__ import annotations

from typing import Any

from pairgate.sandbox.access import API, current_user, project_for, renderer
from pairgate.sandbox.httpd import Reply, Request, forbidden, not_found, record_not_found
from pairgate.sandbox.model import World
from pairgate.sandbox.records import DEVELOPER, REPORTER, Job, Pipeline, Project

STATUSES = (
    "created", "waiting_for_resource", "preparing", "pending", "running", "success", "failed",
    "canceled", "canceling", "skipped", "manual", "scheduled",
)  # fmt: skip
FINISHED = ("success", "failed", "canceled", "skipped")
QUEUED = ("created", "waiting_for_resource", "preparing", "pending", "manual", "scheduled")
RETRYABLE = ("success", "failed", "canceled")  # GitLab: a finished job, not a skipped one


def checked_status(status: Any) -> str:
    if status not in STATUSES:
        raise ValueError(f"job status {status!r} is not one of {', '.join(STATUSES)}")
    return str(status)


def add_job(
    world: World, pipeline: Pipeline, spec: dict[str, Any], *, token: str | None = None
) -> Job:
    """A job from ``{name, status, allow_failure, stage}``; raises ValueError on bad input. Its
    token is ``sandbox-job-<id>-token`` unless given (the runner's are random: a job must not
    work out another's)."""
    status = checked_status(spec.get("status", "success"))
    if not spec.get("name"):
        raise ValueError("each job needs a name")
    job_id = world.next_id("job")
    now = world.stamp()
    job = Job(
        job_id,
        pipeline.id,
        str(spec["name"]),
        str(spec.get("stage") or "test"),
        "created",
        bool(spec.get("allow_failure", False)),
        now,
        token or f"sandbox-job-{job_id}-token",
    )
    set_status(world, job, status)
    return world.add_job(job)


def set_status(world: World, job: Job, status: str) -> None:
    """Move a job as a runner would: it starts when it runs or finishes, and a finished job
    keeps its times; a job sent back to a queue starts afresh."""
    now = world.stamp()
    job.status = status
    if status in QUEUED:
        job.started_at = job.finished_at = None
    else:
        job.started_at = job.started_at or now
        job.finished_at = (job.finished_at or now) if status in FINISHED else None
    world.pipelines[job.pipeline_id].updated_at = now


def retry(world: World, job: Job) -> Job:
    """GitLab's retry: a new job (new id, new token) takes the old one's place, pending."""
    pipeline = world.pipelines[job.pipeline_id]
    job.retried = True
    spec = {"name": job.name, "stage": job.stage, "allow_failure": job.allow_failure}
    return add_job(world, pipeline, spec | {"status": "pending"})


@API.route("GET", "/job", job_token=True)
def get_job(req: Request) -> Any:
    """The job whose token authenticated the request; another credential is 404, as GitLab's
    validate_current_authenticated_job answers."""
    current_user(req)
    if req.job is None:
        raise not_found("Job")
    return renderer(req).job(req.job)


def _job_for(req: Request, project: Project, job_id: str) -> Job:
    world = req.world
    job = world.jobs.get(int(job_id)) if job_id.isdigit() else None
    if job is None or world.pipelines[job.pipeline_id].project_id != project.id:
        raise record_not_found()
    return job


@API.route("GET", "/projects/{project_id}/jobs/{job_id}")
def get_project_job(req: Request, project_id: str, job_id: str) -> Any:
    current_user(req)
    project = project_for(req, project_id, level=REPORTER)
    return renderer(req).job(_job_for(req, project, job_id))


@API.route("POST", "/projects/{project_id}/jobs/{job_id}/retry")
def retry_job(req: Request, project_id: str, job_id: str) -> Any:
    current_user(req)
    project = project_for(req, project_id, level=DEVELOPER)
    world = req.world
    job = _job_for(req, project, job_id)
    if job.retried or job.status not in RETRYABLE or job.kind != "build":
        raise forbidden("Job is not retryable")
    new = retry(world, job)
    if req.runner is not None:
        req.runner.rerun(world, job, new)
    return Reply(201, renderer(req).job(new))


@API.route("GET", "/projects/{project_id}/jobs/{job_id}/trace")
def get_trace(req: Request, project_id: str, job_id: str) -> Any:
    """The job's log as text (jobs.md, "Get a log file"): what its script printed, masked
    variables as ``[MASKED]``; empty while nothing has come back (GitLab's ``raw || ''``)."""
    current_user(req)
    project = project_for(req, project_id, level=REPORTER)
    job = _job_for(req, project, job_id)
    headers = {
        "Content-Disposition": f'infile; filename="{job.id}.log"',
        "Content-Type": "text/plain",
    }
    return Reply(200, (job.trace or "").encode("utf-8"), headers)
