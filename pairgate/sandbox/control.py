"""The sandbox-only endpoints under ``/-/sandbox/`` (docs/sandbox.md): pipelines, faults, the
clock, the request log, switches and reset. No authentication: the server is on loopback."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pairgate.sandbox import defaults, members, merging, pipelines, repo, tokens
from pairgate.sandbox import jobs as ci_jobs
from pairgate.sandbox.access import renderer
from pairgate.sandbox.faults import Fault
from pairgate.sandbox.httpd import ApiError, Reply, Request, Router, not_found
from pairgate.sandbox.records import Pipeline, Project, User

if TYPE_CHECKING:
    from pairgate.sandbox.server import App

ROUTER = Router()
SEEDING_SWITCHES = {
    "pipelines_must_succeed",
    "developers_can_merge",
}  # switches that seed project settings


def _bad(text: str) -> ApiError:
    return ApiError(400, {"error": text})


@ROUTER.route("POST", "/reset")
def reset(app: App, req: Request) -> Any:
    app.reset()
    return Reply(200, {"reset": True})


@ROUTER.route("POST", "/pipelines")
def create_pipeline(app: App, req: Request) -> Any:
    world = app.world
    project = world.project_by_ref(str(req.params.get("project", "")))
    if project is None:
        raise not_found("Project")
    jobs = req.params.get("jobs") or []
    if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
        raise _bad("jobs must be a list of {name, status, allow_failure}")
    user = req.params.get("user", 13)
    user_id = next((u.id for u in world.users.values() if user in (u.id, u.username)), None)
    try:
        pipeline = pipelines.create(
            world,
            project,
            ref=req.required("ref"),
            sha=req.text("sha"),
            jobs=jobs,
            source=req.text("source"),
            user_id=user_id,
        )
    except ValueError as error:
        raise _bad(str(error)) from None
    return _pipeline_reply(app, req, pipeline)


@ROUTER.route("PUT", "/pipelines/{pipeline_id}")
def update_pipeline(app: App, req: Request, pipeline_id: str) -> Any:
    pipeline = app.world.pipelines.get(int(pipeline_id)) if pipeline_id.isdigit() else None
    if pipeline is None:
        raise not_found("Pipeline")
    try:
        pipelines.update_jobs(app.world, pipeline, req.params.get("jobs") or [])
    except ValueError as error:
        raise _bad(str(error)) from None
    merging.process(app.world, pipeline, runner=app.runner)  # as a runner finishing it would
    return _pipeline_reply(app, req, pipeline)


def _pipeline_reply(app: App, req: Request, pipeline: Pipeline) -> Any:
    render = renderer(req)
    jobs = app.world.jobs_of(pipeline)
    return render.pipeline(pipeline) | {"jobs": [render.job(j) | {"token": j.token} for j in jobs]}


@ROUTER.route("POST", "/ci")
def set_ci(app: App, req: Request) -> Any:
    """The project's CI configuration as far as merge request pipelines go: the jobs
    ``POST .../merge_requests/:iid/pipelines`` creates (null: no CI configuration)."""
    project = app.world.project_by_ref(str(req.params.get("project", "")))
    if project is None:
        raise not_found("Project")
    jobs = req.params.get("jobs")
    if jobs is not None:
        if not isinstance(jobs, list) or not all(
            isinstance(j, dict) and j.get("name") for j in jobs
        ):
            raise _bad("jobs must be a list of {name, allow_failure, stage}")
        jobs = [
            {
                "name": str(j["name"]),
                "stage": str(j.get("stage") or "test"),
                "allow_failure": bool(j.get("allow_failure", False)),
            }
            for j in jobs
        ]
    project.ci_jobs = jobs
    return _ci_reply(app, project)


@ROUTER.route("GET", "/ci")
def get_ci(app: App, req: Request) -> Any:
    project = app.world.project_by_ref(str(req.params.get("project", "")))
    if project is None:
        raise not_found("Project")
    return _ci_reply(app, project)


def _ci_reply(app: App, project: Project) -> dict[str, Any]:
    return {"project": app.world.full_path(project), "jobs": project.ci_jobs}


@ROUTER.route("POST", "/jobs/{job_id}")
def set_job(app: App, req: Request, job_id: str) -> Any:
    """Move a job to a status, as its runner would; the pipeline's status follows. ``trace``,
    when given, is its log from then on."""
    world = app.world
    job = world.jobs.get(int(job_id)) if job_id.isdigit() else None
    if job is None:
        raise not_found("Job")
    trace = req.params.get("trace")
    if trace is not None and not isinstance(trace, str):
        raise _bad("trace must be a string")
    try:
        ci_jobs.set_status(world, job, ci_jobs.checked_status(req.params.get("status")))
    except ValueError as error:
        raise _bad(str(error)) from None
    if trace is not None:
        job.trace = trace
    merging.process(world, world.pipelines[job.pipeline_id], runner=app.runner)
    return renderer(req).job(job) | {"token": job.token}


_COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")


@ROUTER.route("POST", "/commits")
def mirror_commit(app: App, req: Request) -> Any:
    """A commit whose id the caller gives: the id of a commit in a real git repository, so that
    repository and the sandbox name the same SHA (pairgate evidence runs in a real clone, and
    the offer it backs names the merge request's head). Its tree is its parent's with
    ``files`` applied (a null content deletes); ``branch`` moves to it, as a push would. With
    ``git_dir`` (that repository's path) the runner's checkout is the real commit, fetched from
    there as a runner fetches it from GitLab."""
    world = app.world
    project = world.project_by_ref(str(req.params.get("project", "")))
    if project is None:
        raise not_found("Project")
    sha = str(req.params.get("sha", ""))
    if not _COMMIT_ID.match(sha):
        raise _bad("sha must be a full commit id: 40 lowercase hexadecimal digits")
    if sha in world.commits:
        raise _bad(f"commit {sha} already exists")
    files = req.params.get("files") or {}
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and k and (v is None or isinstance(v, str)) for k, v in files.items()
    ):
        raise _bad("files must be an object of path: content (null deletes the file)")
    branch = req.required("branch")
    base_ref = branch if branch in project.branches else req.text("start_branch") or "main"
    parent = repo.resolve(world, project, base_ref)
    if parent is None:
        raise _bad(f"Invalid reference name: {base_ref}")
    user = req.params.get("user", "agents")
    actor = next((u for u in world.users.values() if user in (u.id, u.username)), None)
    if actor is None:
        raise not_found("User")
    tree = {k: v for k, v in {**parent.tree, **files}.items() if v is not None}
    options = req.params.get("push_options") or []
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise _bad('push_options must be a list of strings, such as ["ci.skip"]')
    git_dir = req.params.get("git_dir")
    if git_dir is not None and not (isinstance(git_dir, str) and Path(git_dir).is_absolute()):
        raise _bad("git_dir must be the absolute path of the git repository holding the commit")
    message = req.text("message") or "Mirrored commit"
    commit = repo.make_commit(
        world, project, parents=[parent.id], tree=tree, message=message, author=actor, sha=sha
    )
    commit.git_dir = git_dir
    repo.move_branch(world, project, branch, commit.id, actor)
    if app.runner is not None:
        pushed = {o.partition("=")[0]: o.partition("=")[2] for o in options}
        app.runner.pushed(world, project, branch, commit.id, actor, push_options=pushed)
    return Reply(201, {"id": commit.id, "parent_ids": commit.parent_ids, "branch": branch})


def _user(app: App, req: Request) -> User:
    """The ``user`` the body names, by id or username; 404 for none."""
    wanted = req.params.get("user")
    user = next((u for u in app.world.users.values() if wanted in (u.id, u.username)), None)
    if user is None:
        raise not_found("User")
    return user


@ROUTER.route("POST", "/tokens")
def add_token(app: App, req: Request) -> Any:
    """Issue a personal access token: ``{user, scopes, name, expires_at, revoked}``."""
    world = app.world
    user = _user(app, req)
    try:
        secret, token = tokens.issue(world, user, req.params)
    except ValueError as error:
        raise _bad(str(error)) from None
    return tokens.entity(world, token) | {"token": secret}


@ROUTER.route("POST", "/members")
def set_member(app: App, req: Request) -> Any:
    """Make ``user`` a direct member of ``group`` (or ``project``) at ``access_level`` (0
    removes them), as an instance administrator may: the API lets no one else make the first
    Owner of a group, and the default world has none."""
    world = app.world
    user = _user(app, req)
    level = req.params.get("access_level")
    if level not in members.LEVELS:
        raise _bad("access_level must be 0 (none), 5, 10, 15, 20, 30, 40 or 50")
    group, project = req.params.get("group"), req.params.get("project")
    source = (
        world.group_by_ref(str(group)) if group is not None
        else world.project_by_ref(str(project)) if project is not None
        else None
    )  # fmt: skip
    if source is None:
        raise not_found("Group" if group is not None else "Project")
    if level:
        source.members[user.id] = level
    else:
        source.members.pop(user.id, None)
    return {"user_id": user.id, "access_level": level}


@ROUTER.route("POST", "/faults")
def add_fault(app: App, req: Request) -> Any:
    try:
        fault = Fault.from_json(req.params)
    except (ValueError, TypeError) as error:
        raise _bad(str(error)) from None
    app.faults.add(fault)
    return {"armed": len(app.faults.armed)}


@ROUTER.route("DELETE", "/faults")
def clear_faults(app: App, req: Request) -> Any:
    app.faults.clear()
    return Reply(204)


@ROUTER.route("GET", "/faults")
def list_faults(app: App, req: Request) -> Any:
    return [dataclasses.asdict(f) | {"path": f.path.pattern} for f in app.faults.armed]


@ROUTER.route("POST", "/clock")
def advance_clock(app: App, req: Request) -> Any:
    try:
        seconds = float(req.params.get("advance_seconds", 0))
    except (TypeError, ValueError):
        raise _bad("advance_seconds must be a number") from None
    app.world.clock_offset += seconds
    return {"now": app.world.stamp(), "offset_seconds": app.world.clock_offset}


@ROUTER.route("GET", "/requests")
def list_requests(app: App, req: Request) -> Any:
    return list(app.log)


@ROUTER.route("DELETE", "/requests")
def clear_requests(app: App, req: Request) -> Any:
    app.log.clear()
    return Reply(204)


@ROUTER.route("GET", "/unserved")
def list_unserved(app: App, req: Request) -> Any:
    return list(app.unserved)


@ROUTER.route("DELETE", "/unserved")
def clear_unserved(app: App, req: Request) -> Any:
    app.unserved.clear()
    return Reply(204)


@ROUTER.route("GET", "/options")
def get_options(app: App, req: Request) -> Any:
    return dataclasses.asdict(app.world.options)


@ROUTER.route("POST", "/options")
def set_options(app: App, req: Request) -> Any:
    """Flip switches until the next reset (reset restores the server's own options)."""
    try:
        app.world.options.update(req.params)
    except KeyError as error:
        raise _bad(f"unknown option {error.args[0]!r}") from None
    if SEEDING_SWITCHES & set(req.params):
        defaults.apply_switches(app.world)
    return dataclasses.asdict(app.world.options)


# -- the runner's job shell (shim.py) and its state -----------------------------------------


@ROUTER.route("POST", "/runner/start")
def runner_start(app: App, req: Request) -> Any:
    """A job's shell starting a script: the job, its token and its HOME (runner.py)."""
    if app.runner is None:
        raise not_found("Runner")
    phase = req.choice("phase", ("main", "after"), "main")
    return app.runner.start_job(app.world, req.required("run"), req.text("script") or "", phase)


@ROUTER.route("POST", "/runner/finish")
def runner_finish(app: App, req: Request) -> Any:
    """A job's shell done with a script: its exit code and log."""
    if app.runner is None:
        raise not_found("Runner")
    phase = req.choice("phase", ("main", "after"), "main")
    code, job = req.integer("code", 1), req.integer("job")
    kept = app.runner.finish_job(
        app.world, req.required("run"), job or 0, code or 0, req.text("trace") or "", phase
    )
    return {"kept": kept}


@ROUTER.route("GET", "/runner")
def runner_state(app: App, req: Request) -> Any:
    """Whether the sandbox runs pipelines, and how many are running now."""
    if app.runner is None:
        return {"runner": None, "running": 0}
    return {
        "runner": "gitlab-ci-local",
        "program": app.runner.program,
        "shared_home": app.runner.shared_home,
        "running": app.runner.busy(),
    }
