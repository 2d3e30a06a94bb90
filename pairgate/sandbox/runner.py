"""The sandbox's runner (``pairgate sandbox --runner gitlab-ci-local``): every pipeline the
sandbox creates from a project's CI configuration is run, one gitlab-ci-local start for its jobs
and one more for each child pipeline, and the statuses, logs and children go back into the
sandbox. docs/sandbox.md, "The runner", says what it reproduces and where it differs.

Each job runs in this machine's shell with a HOME and a work directory of its own, made fresh
for it (``shared_home`` gives every job one HOME, as a shell runner's user has), and the job
token the sandbox issues it, valid while it runs. Jobs run as the user running the sandbox: the
runner is for trying pipelines, not a boundary around untrusted code.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pairgate import yaml_io
from pairgate.sandbox import ci_children, ci_plans, ci_variables, gcl, merging, pipelines, repo
from pairgate.sandbox.ci_plans import Plan
from pairgate.sandbox.entities import Renderer
from pairgate.sandbox.jobs import FINISHED, QUEUED, set_status
from pairgate.sandbox.model import World
from pairgate.sandbox.records import Job, MergeRequest, Pipeline, Project, User
from pairgate.scratch import memory_place

if TYPE_CHECKING:
    from pairgate.sandbox.server import App

RUN_FILE = ".pairgate-sandbox-run.yml"
# Room the runner's directory needs where it goes to memory: a merge request pipeline leaves
# about 1.6 MB (its checkout, each job's copy of it, a HOME per job) until the sandbox stops.
ROOM = 1024 * 1024 * 1024


def place(candidates: tuple[str, ...] | None = None) -> str | None:
    """Where the runner's directory is made: in memory when there is ``ROOM`` and programs may
    run there (gitlab-ci-local starts each job's script from it; pairgate/scratch.py), else
    None, the temporary directory. Every job copies its pipeline's checkout and the sandbox
    deletes them all when it stops: in memory that costs a fraction of what it costs on
    disk."""
    paths = None if candidates is None else [Path(c) for c in candidates if c]
    found = memory_place(ROOM, runtime_dir=os.environ.get("XDG_RUNTIME_DIR"), candidates=paths)
    return None if found is None else str(found)


class Runner:
    """Runs pipelines in threads of their own; ``wait`` until none is left."""

    def __init__(self, program: str, *, shared_home: bool = False) -> None:
        self.program, self.shared_home = program, shared_home
        self.root = Path(tempfile.mkdtemp(prefix="pairgate-sandbox-runner-", dir=place()))
        self.evaluator = ci_plans.Evaluator(program, self.root)
        self.app: App | None = None  # the server's, which sets it
        self.url = ""  # where jobs reach the sandbox; set when it serves
        self.plans: dict[str, Plan] = {}  # by run id
        self._busy = 0
        self._idle = threading.Condition()
        self._processes: set[subprocess.Popen[str]] = set()
        self._by_run: dict[str, list[subprocess.Popen[str]]] = {}  # to stop a cancelled run
        self._generation = 0
        self._homes = itertools.count(1)

    # -- pipelines made where GitLab makes them (the caller holds the server's lock) ------------

    def create(self, world: World, project: Project, **kw: Any) -> Pipeline | None:
        """A pipeline from the project's configuration (ci_plans.prepare's arguments), started;
        None when GitLab would make none (no configuration, no job left by the rules)."""
        prepared = ci_plans.prepare(world, project, base=self.url, **kw)
        if prepared is None:
            return None
        made = ci_plans.create_now(world, self.evaluator, prepared)
        if made is None:
            return None
        pipeline, plan = made
        if plan is None:
            self.settled(world, pipeline)  # skipped, or failed on its configuration
        else:
            self._start(plan)
        return pipeline

    def pushed(self, world: World, project: Project, branch: str, sha: str, user: User | None,
               push_options: dict[str, Any] | None = None) -> None:  # fmt: skip
        """A push moved ``branch`` to ``sha``: the branch pipeline, then a merge request
        pipeline for each open merge request from the branch (Git::BranchPushService and
        MergeRequests::RefreshService; push options reach both, as in GitLab's newest code)."""
        self.create(world, project, ref=branch, sha=sha, source="push", user=user, branch=branch,
                    push_options=push_options)  # fmt: skip
        for mr in ci_variables.open_mrs(world, project, branch):
            if mr.project_id == project.id:
                self.merge_request_pipeline(world, project, mr, user, push_options=push_options)

    def merge_request_pipeline(
        self, world: World, project: Project, mr: MergeRequest, user: User | None, **kw: Any
    ) -> Pipeline | None:
        """None for a merge request with no commits (CreatePipelineService#can_create_pipeline_for?)."""
        if not repo.mr_commits(world, mr):
            return None
        ref, sha, source_sha = pipelines.merge_request_ref(world, project, mr, user)
        return self.create(
            world, project, ref=ref, sha=sha, source="merge_request_event", user=user,
            mr_iid=mr.iid, branch=mr.source_branch, source_sha=source_sha, **kw,
        )  # fmt: skip

    # -- running -----------------------------------------------------------------------------

    def _start(self, plan: Plan) -> None:
        with self._idle:
            self._busy += 1
        threading.Thread(
            target=self._thread, args=(plan, self._generation), daemon=True,
            name=f"pairgate-sandbox-pipeline-{plan.pipeline_id}",
        ).start()  # fmt: skip

    def _thread(self, plan: Plan, generation: int) -> None:
        try:
            self._run(plan, generation)
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    def _run(self, plan: Plan, generation: int) -> None:
        """Children beside the jobs (a trigger job starts with its pipeline, whatever its
        stage), then the pipeline's end: jobs that never ran are skipped."""
        self.plans[plan.run_id] = plan
        children = [
            threading.Thread(target=self._trigger, args=(plan, job_id, generation), daemon=True)
            for job_id in plan.bridges
        ]
        for child in children:
            child.start()
        output, broke = "", False
        if plan.builds:
            output, broke = self._run_guarded(plan)
        for child in children:
            child.join()
        app = self._app()
        with app.lock:
            if generation == self._generation:
                self._end(app.world, plan, output, broke=broke)

    def _run_guarded(self, plan: Plan, names: tuple[str, ...] = ()) -> tuple[str, bool]:
        """The jobs' output, and whether gitlab-ci-local itself could not be run (then the jobs
        that did not end fail, as GitLab fails a job whose runner breaks)."""
        try:
            return self._run_jobs(plan, names), False
        except (OSError, subprocess.SubprocessError) as error:
            return f"the sandbox's runner could not run gitlab-ci-local: {error}\n", True

    def _run_jobs(self, plan: Plan, names: tuple[str, ...] = ()) -> str:
        document = {
            key: copy.deepcopy(value)  # the plan's document may be the evaluator's, remembered
            for key, value in plan.document.items()
            if not (isinstance(value, dict) and "trigger" in value)
        }
        bridges = set(plan.bridges.values())
        for value in document.values():  # a job that needs a trigger job: that need dropped
            if isinstance(value, dict) and isinstance(value.get("needs"), list):
                value["needs"] = [n for n in value["needs"] if _need(n) not in bridges]
        (plan.cwd / RUN_FILE).write_text(yaml_io.dump(document), encoding="utf-8")
        shell = gcl.write_shell(self.root / f"shell-{plan.run_id}-{len(names)}-{next(self._homes)}",
                                url=self.url, run_id=plan.run_id)  # fmt: skip
        _, output = gcl.run(
            self.program, plan.cwd, RUN_FILE, plan.variables, state=ci_plans.STATE + "-run",
            home=self.evaluator.home(), shell=shell, started=partial(self._started, plan.run_id),
            jobs=names,
        )  # fmt: skip
        self._by_run.pop(plan.run_id, None)
        return output

    def _started(self, run_id: str, process: subprocess.Popen[str]) -> None:
        self._processes.add(process)
        self._by_run.setdefault(run_id, []).append(process)

    def cancel(self, pipeline_ids: list[int]) -> None:
        """Stop the runs of cancelled pipelines (their jobs are canceled already: what the runs
        report of them is not kept, finish_job and start_job)."""
        for run_id, plan in list(self.plans.items()):
            if plan.pipeline_id in pipeline_ids:
                for process in self._by_run.pop(run_id, []):
                    _stop(process)

    def _end(self, world: World, plan: Plan, output: str, *, broke: bool = False) -> None:
        pipeline = world.pipelines.get(plan.pipeline_id)
        if pipeline is None:
            return
        for job_id in plan.builds.values():
            job = world.jobs[job_id]
            if job.status in QUEUED and job.status != "manual" and not broke:
                set_status(world, job, "skipped")
            elif job.status == "running" or (
                broke and job.status in QUEUED and job.status != "manual"
            ):
                # its shell never reported back, or the runner broke
                set_status(world, job, "failed")
                job.trace = ci_variables.mask(output, plan.masked)
        self.settled(world, pipeline)

    def settled(self, world: World, pipeline: Pipeline) -> None:
        """After a pipeline's status may have become final: auto-merge acts on it."""
        pipeline.updated_at = world.stamp()
        if pipeline.parent_id is None:
            merging.process(world, pipeline, runner=self)

    # -- child pipelines -----------------------------------------------------------------------

    def _trigger(self, plan: Plan, bridge_id: int, generation: int) -> None:
        """The bridge's child pipeline: its configuration read from ``trigger: include:``,
        made, and run here; with ``strategy: depend`` the bridge takes the child's end."""
        app = self._app()
        with app.lock:
            if generation != self._generation:
                return
            world = app.world
            bridge = world.jobs[bridge_id]
            set_status(world, bridge, "running")
            prepared, depend = ci_children.prepare(world, plan, bridge, base=self.url)
        if prepared is None:
            return
        try:
            evaluated = self.evaluator.evaluate(prepared)
        except gcl.GclError as error:
            prepared.error, evaluated = str(error), None
        with app.lock:
            if generation != self._generation:
                return
            world = app.world
            bridge = world.jobs[bridge_id]
            made = ci_plans.record(world, prepared, evaluated)
            if made is None:
                ci_children.fail(world, bridge, "No stages / jobs for this pipeline.")
                return
            child, child_plan = made
            child.bridge_id, bridge.downstream_id = bridge.id, child.id
            if not depend:
                set_status(world, bridge, "success")
        if child_plan is not None:
            self.plans[child_plan.run_id] = child_plan
            self._run(child_plan, generation)
        with app.lock:
            if generation == self._generation and depend:
                world = app.world
                status = self._status(world, world.pipelines[child.id])
                set_status(world, world.jobs[bridge_id], ci_children.bridge_status(status))

    def _status(self, world: World, pipeline: Pipeline) -> str:
        return Renderer(world, "").pipeline_status(pipeline)

    # -- what the job shell asks (control.py; the caller holds the server's lock) --------------

    def start_job(self, world: World, run_id: str, script: str, phase: str) -> dict[str, Any]:
        """A job's shell starting its script (``phase`` main) or its after_script: the job is
        running (its token valid) until it finishes; its own HOME, made fresh now."""
        plan = self.plans.get(run_id)
        name = Path(script.split()[0] if script else "").name.rsplit("_", 1)[0]
        job_id = plan.builds.get(name) if plan else None
        if plan is None or job_id is None or job_id not in world.jobs:
            return {}
        job = world.jobs[job_id]
        if phase == "main" and job.status == "canceled":
            return {"canceled": True}  # its pipeline was cancelled: the shell runs nothing
        home = self.root / ("shared-home" if self.shared_home else f"home-{run_id}-{job.id}")
        if phase == "main":
            home.mkdir(exist_ok=self.shared_home)
            set_status(world, job, "running")
        pipeline = world.pipelines[job.pipeline_id]
        web = f"{self.url}/{world.full_path(world.projects[pipeline.project_id])}/-/jobs/{job.id}"
        env = {
            "CI_JOB_ID": str(job.id),
            "CI_JOB_TOKEN": job.token,
            "CI_JOB_URL": web,
            "CI_JOB_STARTED_AT": (job.started_at or world.stamp())[:19] + "Z",
        }
        return {"job_id": job.id, "home": str(home), "env": env}

    def finish_job(
        self, world: World, run_id: str, job_id: int, code: int, trace: str, phase: str
    ) -> bool:
        """A job's shell ending: its log kept (masked), and after its script its status."""
        plan = self.plans.get(run_id)
        if plan is None or job_id not in plan.builds.values() or job_id not in world.jobs:
            return False
        job = world.jobs[job_id]
        text = ci_variables.mask(trace, [*plan.masked, job.token])  # GitLab masks the token too
        job.trace = (job.trace or "") + text if phase == "after" else text
        if phase == "main" and job.status not in FINISHED:
            set_status(world, job, "success" if code == 0 else "failed")
        return True

    # -- retry, waiting, reset -----------------------------------------------------------------

    def rerun(self, world: World, old: Job, new: Job) -> None:
        """A retried job runs again: one start for that job alone, in its pipeline's checkout."""
        plan = next((p for p in self.plans.values() if old.id in p.builds.values()), None)
        if plan is None:
            return
        again = Plan(plan.pipeline_id, plan.cwd, plan.variables, plan.masked, plan.document,
                     builds={ci_plans.safe_name(new.name): new.id}, depth=plan.depth)  # fmt: skip
        with self._idle:
            self._busy += 1
        threading.Thread(
            target=self._rerun_thread, args=(again, new.name, self._generation), daemon=True
        ).start()

    def _rerun_thread(self, plan: Plan, name: str, generation: int) -> None:
        try:
            self.plans[plan.run_id] = plan
            output, broke = self._run_guarded(plan, (name,))
            app = self._app()
            with app.lock:
                if generation == self._generation:
                    self._end(app.world, plan, output, broke=broke)
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    def wait(self, timeout: float = 300.0) -> bool:
        """Wait until no pipeline is running (False if ``timeout`` seconds pass first)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)

    def busy(self) -> int:
        return self._busy

    def reset(self) -> None:
        """Forget every run: their processes are ended and nothing they report is kept (the
        world they ran in is gone)."""
        self._generation += 1
        self.plans.clear()
        for process in list(self._processes):
            _stop(process)
        self._processes.clear()
        self._by_run.clear()

    def stop(self) -> None:
        self.reset()
        self.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)

    def _app(self) -> App:
        assert self.app is not None, "the runner is given its server before it runs"
        return self.app


def _stop(process: subprocess.Popen[str]) -> None:
    """End a gitlab-ci-local start and the jobs it runs (its own process group)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)


def _need(need: Any) -> str:
    return str(need.get("job") if isinstance(need, dict) else need)
