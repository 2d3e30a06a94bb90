"""What the sandbox's webhooks send, and when (GitLab's doc/user/project/integrations/
webhook_events.md and webhooks.md; app/services/web_hook_service.rb; docs/sandbox.md cites
each).

After every request that changes the world, the world is compared with what the hooks last
saw, and each change becomes the event GitLab fires for it:

- a comment added or edited (not a system note): ``Note Hook`` (``Confidential Note Hook`` for
  an internal note, to hooks with ``confidential_note_events`` only), ``action`` create/update;
- a merge request opened, changed (title, description, labels, target, its head: ``oldrev``),
  approved or unapproved by one user (``approval`` / ``unapproval``), merged, closed, reopened:
  ``Merge Request Hook``;
- a branch created, moved or deleted: ``Push Hook`` (``before``/``after``, 40 zeros for none);
- a pipeline's status changed: ``Pipeline Hook``; a job's: ``Job Hook`` (``object_kind:
  build``, ``commit.id`` the pipeline's id).

Deliveries leave from one thread, in order, after the request's answer (GitLab queues them):
``POST`` the JSON with ``Content-Type``, ``User-Agent: GitLab/<version>``, ``X-Gitlab-Event``,
``X-Gitlab-Webhook-UUID`` (new for every request), ``X-Gitlab-Event-UUID`` (taken from the
request that caused it when that request carried one: GitLab's recursion detection),
``X-Gitlab-Instance``, ``Idempotency-Key`` (kept for a resend) and ``X-Gitlab-Token`` when the
hook has a token. Each is logged for ``.../hooks/:id/events``; GitLab does not retry a failed
delivery, and neither does the sandbox. ``POST /-/sandbox/webhooks`` with ``{"drop": N}`` loses
the next N deliveries silently, as GitLab's rate limits do.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from pairgate.sandbox import repo
from pairgate.sandbox.control import ROUTER
from pairgate.sandbox.entities import composite_status
from pairgate.sandbox.httpd import Reply, Request
from pairgate.sandbox.model import World
from pairgate.sandbox.records import MergeRequest, Note, Pipeline, Project, User, WebHook
from pairgate.sandbox.webhooks import DEFAULT_ON

VERSION = "17.6.0"  # the GitLab the headers name (Idempotency-Key is 17.4+)
TIMEOUT = 10.0  # GitLab's default webhook_timeout
ZEROS = "0" * 40


def _utc(stamp: str | None) -> str | None:
    """A record's ISO time in the "2015-05-17 18:08:09 UTC" form of the note and pipeline
    payloads."""
    return f"{stamp[:10]} {stamp[11:19]} UTC" if stamp else None


@dataclass
class _Seen:
    mrs: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    branches: dict[tuple[int, str], str] = field(default_factory=dict)
    pipelines: dict[int, tuple[str, str]] = field(default_factory=dict)
    jobs: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Mark:
    """Taken before a request: what to compare after it."""

    next_note: int
    edited: tuple[int, str] | None  # a note a PUT names, with its body before
    event_uuid: str | None  # the X-Gitlab-Event-UUID the request carried


def _mr_print(world: World, mr: MergeRequest) -> tuple[Any, ...]:
    return (
        mr.state,
        repo.current_sha(world, mr),
        tuple(a[0] for a in mr.approvals),
        mr.title,
        mr.description,
        tuple(sorted(mr.labels)),
        mr.target_branch,
    )


def _snapshot(world: World) -> _Seen:
    seen = _Seen()
    for mr in world.merge_requests.values():
        seen.mrs[mr.id] = _mr_print(world, mr)
    for project in world.projects.values():
        for name, sha in project.branches.items():
            seen.branches[(project.id, name)] = sha
    for p in world.pipelines.values():
        seen.pipelines[p.id] = (p.updated_at, composite_status(world.jobs_of(p)))
        for job in world.jobs_of(p, retried=True):
            seen.jobs[job.id] = job.status
    return seen


class Webhooks:
    """One server's webhooks at work: what they last saw, the queue, the delivery logs."""

    def __init__(self) -> None:
        self.seen: _Seen | None = None
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self.logs: dict[int, list[dict[str, Any]]] = {}
        self.to_drop = 0
        self.dropped: list[dict[str, Any]] = []
        self.delivered = 0
        self.busy = 0  # queued or on the way
        self.lock = threading.Condition()
        self.thread: threading.Thread | None = None  # started with the first delivery
        self.http: Any = None

    def reset(self) -> None:
        self.idle(2.0)  # what the last world sent leaves before its logs go
        with self.lock:
            self.seen = None
            self.logs.clear()
            self.to_drop = 0
            self.dropped.clear()

    # -- noticing -----------------------------------------------------------------------------

    def before(self, world: World, method: str, path: str, headers: dict[str, str]) -> Mark:
        edited = None
        if method == "PUT" and "/notes/" in path:
            tail = path.rstrip("/").rsplit("/", 1)[-1]
            note = world.notes.get(int(tail)) if tail.isdigit() else None
            edited = (note.id, note.body) if note else None
        return Mark(world.counters.get("note", 0), edited, headers.get("x-gitlab-event-uuid"))

    def after(self, world: World, mark: Mark, base: str, user: User | None) -> None:
        if not world.hooks:
            self.seen = None
            return
        if self.seen is None:  # the first hook: what exists now is not news
            self.seen = _snapshot(world)
            return
        payloads = Payloads(world, base, user)
        out: list[tuple[Project, str, str, dict[str, Any]]] = []
        out += self._pushes(world, payloads)
        out += self._merge_requests(world, payloads)
        for note_id in range(mark.next_note, world.counters.get("note", 0)):
            note = world.notes.get(note_id)
            if note is not None and not note.system:
                out.append(payloads.note(note, "create"))
        if mark.edited:
            note = world.notes.get(mark.edited[0])
            if note is not None and note.body != mark.edited[1]:
                out.append(payloads.note(note, "update"))
        out += self._pipelines(world, payloads)
        for project, flag, event, body in out:
            for hook in _hooks_for(world, project, flag):
                self._queue(hook, event, body, base, mark.event_uuid)

    def _pushes(self, world: World, p: Payloads) -> list[tuple[Project, str, str, dict[str, Any]]]:
        assert self.seen is not None
        found = []
        now = {(pr.id, n): sha for pr in world.projects.values() for n, sha in pr.branches.items()}
        for key in sorted(set(now) | set(self.seen.branches)):
            before, after = self.seen.branches.get(key, ZEROS), now.get(key, ZEROS)
            if before != after:
                found.append(p.push(world.projects[key[0]], key[1], before, after))
        self.seen.branches = now
        return found

    def _merge_requests(self, world: World, p: Payloads) -> list[Any]:
        assert self.seen is not None
        found = []
        for mr in sorted(world.merge_requests.values(), key=lambda m: m.id):
            now, old = _mr_print(world, mr), self.seen.mrs.get(mr.id)
            if now == old:
                continue
            self.seen.mrs[mr.id] = now
            oldrev = None
            if old is None:
                action = "open"
            elif old[0] != now[0]:
                action = {"merged": "merge", "closed": "close", "opened": "reopen"}[mr.state]
            elif set(now[2]) - set(old[2]):
                action = "approval"
            elif set(old[2]) - set(now[2]):
                action = "unapproval"
            else:
                action = "update"
                oldrev = old[1] if old[1] != now[1] else None
            found.append(p.merge_request(mr, action, oldrev))
        return found

    def _pipelines(self, world: World, p: Payloads) -> list[Any]:
        assert self.seen is not None
        found = []
        for pipeline in sorted(world.pipelines.values(), key=lambda x: x.id):
            old = self.seen.pipelines.get(pipeline.id)
            if old is not None and old[0] == pipeline.updated_at:
                continue
            jobs = world.jobs_of(pipeline, retried=True)
            for job in jobs:
                if self.seen.jobs.get(job.id) != job.status:
                    self.seen.jobs[job.id] = job.status
                    found.append(p.job(pipeline, job))
            status = composite_status(world.jobs_of(pipeline))
            self.seen.pipelines[pipeline.id] = (pipeline.updated_at, status)
            if old is None or old[1] != status:
                found.append(p.pipeline(pipeline, status))
        return found

    # -- sending ------------------------------------------------------------------------------

    def _queue(
        self, hook: WebHook, event: str, body: dict[str, Any], base: str, event_uuid: str | None
    ) -> None:
        delivery = {
            "hook": hook,
            "url": hook.url,
            "event": event,
            "body": body,
            "instance": base,
            "idempotency_key": str(uuid.uuid4()),
            "event_uuid": event_uuid or str(uuid.uuid4()),
        }
        with self.lock:
            self.busy += 1
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._send_forever, daemon=True, name="webhooks"
                )
                self.thread.start()
        self.queue.put(delivery)

    def _send_forever(self) -> None:
        while True:
            delivery = self.queue.get()
            with self.lock:
                drop = self.to_drop > 0
                if drop:
                    self.to_drop -= 1
                    self.dropped.append({"url": delivery["url"], "event": delivery["event"]})
            if not drop:
                self._send(delivery)
            with self.lock:
                self.busy -= 1
                self.lock.notify_all()

    def _send(self, delivery: dict[str, Any]) -> int:
        import requests  # only once a hook fires: the sandbox starts without it

        if self.http is None:
            self.http = requests.Session()
        hook: WebHook = delivery["hook"]
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"GitLab/{VERSION}",
            "Idempotency-Key": delivery["idempotency_key"],
            "X-Gitlab-Event": delivery["event"],
            "X-Gitlab-Webhook-UUID": str(uuid.uuid4()),
            "X-Gitlab-Instance": delivery["instance"],
            "X-Gitlab-Event-UUID": delivery["event_uuid"],
        }
        if hook.token:
            headers["X-Gitlab-Token"] = hook.token.replace("\n", "").replace("\r", "")
        data = json.dumps(delivery["body"]).encode()
        start = time.perf_counter()
        try:
            answer = self.http.post(hook.url, data=data, headers=headers, timeout=TIMEOUT)
            status, text = str(answer.status_code), answer.text[:8192]
            answer_headers = dict(list(answer.headers.items())[:50])
        except requests.RequestException as exc:
            status, text, answer_headers = "internal error", str(exc), {}
        shown = dict(headers)
        if "X-Gitlab-Token" in shown:
            shown["X-Gitlab-Token"] = "[REDACTED]"
        with self.lock:
            log = self.logs.setdefault(hook.id, [])
            log.append(
                {
                    "id": sum(len(entries) for entries in self.logs.values()) + 1,
                    "url": hook.url,
                    "trigger": delivery["event"]
                    .lower()
                    .replace(" hook", "_hooks")
                    .replace(" ", "_"),
                    "request_headers": shown,
                    "request_data": delivery["body"],
                    "response_headers": answer_headers,
                    "response_body": text,
                    "execution_duration": round(time.perf_counter() - start, 6),
                    "response_status": status,
                    "_delivery": delivery,
                }
            )
            self.delivered += 1
        return int(status) if status.isdigit() else 0

    def log(self, hook_id: int) -> list[dict[str, Any]]:
        with self.lock:
            return [
                {k: v for k, v in e.items() if not k.startswith("_")}
                for e in self.logs.get(hook_id, [])
            ]

    def resend(self, hook: WebHook, entry: dict[str, Any]) -> int:
        """The same body and the same Idempotency-Key, at once (the API answers with the
        receiver's status)."""
        with self.lock:
            original = next(e for e in self.logs.get(hook.id, []) if e["id"] == entry["id"])[
                "_delivery"
            ]
        return self._send(original | {"hook": hook})

    def idle(self, timeout: float) -> bool:
        """Wait until every queued delivery has left (or ``timeout`` passed)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while self.busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(left)
        return True


def _hooks_for(world: World, project: Project, flag: str) -> list[WebHook]:
    """The project's hooks and its group's hooks that take ``flag``'s events."""
    return [
        h
        for h in sorted(world.hooks.values(), key=lambda h: h.id)
        if (h.project_id == project.id or h.group_id == project.namespace_id)
        and h.events.get(flag, flag in DEFAULT_ON)
    ]


class Payloads:
    """The JSON bodies, field for field as webhook_events.md shows them."""

    def __init__(self, world: World, base: str, user: User | None) -> None:
        self.world, self.base, self.actor = world, base, user

    def project(self, project: Project) -> dict[str, Any]:
        full = self.world.full_path(project)
        web = f"{self.base}/{full}"
        host = self.base.split("://", 1)[-1]
        group = self.world.groups[project.namespace_id]
        return {
            "id": project.id, "name": project.name, "description": "", "web_url": web,
            "avatar_url": None, "git_ssh_url": f"git@{host}:{full}.git",
            "git_http_url": f"{web}.git", "namespace": group.name,
            "visibility_level": {"private": 0, "internal": 10, "public": 20}[project.visibility],
            "path_with_namespace": full, "default_branch": project.default_branch,
            "ci_config_path": None, "homepage": web, "url": f"{web}.git",
            "ssh_url": f"git@{host}:{full}.git", "http_url": f"{web}.git",
        }  # fmt: skip

    def repository(self, project: Project) -> dict[str, Any]:
        p = self.project(project)
        return {"name": project.name, "url": p["url"], "description": "", "homepage": p["homepage"]}

    def user(self, user: User | None) -> dict[str, Any] | None:
        if user is None:
            return None
        return {
            "id": user.id, "name": user.name, "username": user.username,
            "avatar_url": None, "email": "[REDACTED]",
        }  # fmt: skip

    def _commit(self, project: Project, sha: str | None) -> dict[str, Any] | None:
        commit = self.world.commits.get(sha or "")
        if commit is None:
            return None
        return {
            "id": commit.id,
            "message": commit.message,
            "title": commit.message.split("\n", 1)[0],
            "timestamp": commit.created_at,
            "url": f"{self.base}/{self.world.full_path(project)}/-/commit/{commit.id}",
            "author": {"name": commit.author_name, "email": commit.author_email},
        }

    def mr_attrs(self, mr: MergeRequest, *, hook_times: bool) -> dict[str, Any]:
        world = self.world
        project = world.projects[mr.project_id]
        source = world.projects[mr.source_project_id]
        sha = repo.current_sha(world, mr)
        stamp = _utc if hook_times else (lambda s: s)
        from pairgate.sandbox.mr_entity import DRAFT

        return {
            "id": mr.id, "iid": mr.iid, "target_branch": mr.target_branch,
            "source_branch": mr.source_branch, "source_project_id": mr.source_project_id,
            "target_project_id": mr.project_id, "author_id": mr.author_id,
            "assignee_ids": list(mr.assignee_ids), "reviewer_ids": list(mr.reviewer_ids),
            "title": mr.title, "description": mr.description or "",
            "created_at": stamp(mr.created_at), "updated_at": stamp(mr.updated_at),
            "state": mr.state, "merge_status": "unchecked",
            "draft": bool(DRAFT.match(mr.title)), "work_in_progress": bool(DRAFT.match(mr.title)),
            "merge_commit_sha": mr.merge_commit_sha, "head_pipeline_id": mr.head_pipeline_id,
            "url": f"{self.base}/{world.full_path(project)}/-/merge_requests/{mr.iid}",
            "source": self.project(source), "target": self.project(project),
            "last_commit": self._commit(source, sha),
            "labels": [self._label(t) for t in sorted(mr.labels)],
            "detailed_merge_status": "mergeable" if mr.state == "opened" else "not_open",
        }  # fmt: skip

    def _label(self, title: str) -> dict[str, Any]:
        return {"id": self.world.label_id(title), "title": title, "type": "ProjectLabel"}

    def merge_request(
        self, mr: MergeRequest, action: str, oldrev: str | None
    ) -> tuple[Project, str, str, dict[str, Any]]:
        project = self.world.projects[mr.project_id]
        attrs = self.mr_attrs(mr, hook_times=False) | {"action": action}
        if oldrev:
            attrs["oldrev"] = oldrev
        body = {
            "object_kind": "merge_request", "event_type": "merge_request",
            "user": self.user(self.actor), "project": self.project(project),
            "repository": self.repository(project), "object_attributes": attrs,
            "labels": attrs["labels"], "changes": {},
            "assignees": [self.user(self.world.users.get(u)) for u in mr.assignee_ids],
            "reviewers": [self.user(self.world.users.get(u)) for u in mr.reviewer_ids],
        }  # fmt: skip
        return project, "merge_requests_events", "Merge Request Hook", body

    def note(self, note: Note, action: str) -> tuple[Project, str, str, dict[str, Any]]:
        world = self.world
        project = world.projects[note.project_id]
        kind = "merge_requests" if note.noteable_type == "MergeRequest" else "issues"
        url = f"{self.base}/{world.full_path(project)}/-/{kind}/{note.noteable_iid}#note_{note.id}"
        body: dict[str, Any] = {
            "object_kind": "note",
            "event_type": "confidential_note" if note.internal else "note",
            "user": self.user(world.users.get(note.author_id)),
            "project_id": project.id, "project": self.project(project),
            "repository": self.repository(project),
            "object_attributes": {
                "id": note.id, "note": note.body, "noteable_type": note.noteable_type,
                "author_id": note.author_id, "created_at": _utc(note.created_at),
                "updated_at": _utc(note.updated_at), "project_id": project.id,
                "attachment": None, "line_code": None, "commit_id": "",
                "noteable_id": note.noteable_id, "system": note.system, "st_diff": None,
                "internal": note.internal, "discussion_id": note.discussion,
                "type": note.note_type, "action": action, "url": url,
            },
        }  # fmt: skip
        if note.noteable_type == "MergeRequest":
            mr = world.merge_requests[note.noteable_id]
            body["merge_request"] = self.mr_attrs(mr, hook_times=True)
        else:
            issue = world.issues[note.noteable_id]
            body["issue"] = {
                "id": issue.id, "iid": issue.iid, "title": issue.title,
                "description": issue.description, "project_id": issue.project_id,
                "author_id": issue.author_id, "assignee_ids": list(issue.assignee_ids),
                "created_at": _utc(issue.created_at), "updated_at": _utc(issue.updated_at),
                "state": issue.state, "confidential": issue.confidential,
                "labels": [self._label(t) for t in sorted(issue.labels)],
            }  # fmt: skip
        flag = "confidential_note_events" if note.internal else "note_events"
        event = "Confidential Note Hook" if note.internal else "Note Hook"
        return project, flag, event, body

    def push(
        self, project: Project, branch: str, before: str, after: str
    ) -> tuple[Project, str, str, dict[str, Any]]:
        commits: list[str] = []
        if after != ZEROS:
            have = set(repo.ancestry(self.world, before)) if before != ZEROS else set()
            for sha in repo.ancestry(self.world, after):
                if sha in have or len(commits) > 100:
                    break
                commits.append(sha)
        actor = self.actor
        body = {
            "object_kind": "push", "event_name": "push", "before": before, "after": after,
            "ref": f"refs/heads/{branch}", "ref_protected": branch == project.default_branch,
            "checkout_sha": None if after == ZEROS else after,
            "user_id": actor.id if actor else None, "user_name": actor.name if actor else None,
            "user_username": actor.username if actor else None, "user_email": "[REDACTED]",
            "user_avatar": None, "project_id": project.id, "project": self.project(project),
            "repository": self.repository(project),
            "commits": [self._commit(project, sha) for sha in commits[:20]],
            "total_commits_count": len(commits),
        }  # fmt: skip
        return project, "push_events", "Push Hook", body

    def pipeline(self, pipeline: Pipeline, status: str) -> tuple[Project, str, str, dict[str, Any]]:
        world = self.world
        project = world.projects[pipeline.project_id]
        jobs = world.jobs_of(pipeline)
        mr = next(
            (
                m
                for m in world.merge_requests.values()
                if m.head_pipeline_id == pipeline.id
                or (
                    pipeline.ref == f"refs/merge-requests/{m.iid}/head"
                    and m.project_id == project.id
                )
            ),
            None,
        )
        finished = (
            pipeline.updated_at if status in ("success", "failed", "canceled", "skipped") else None
        )
        body = {
            "object_kind": "pipeline",
            "object_attributes": {
                "id": pipeline.id, "iid": pipeline.iid, "name": None, "ref": pipeline.ref,
                "tag": False, "sha": pipeline.sha, "before_sha": ZEROS, "source": pipeline.source,
                "status": status, "detailed_status": status,
                "stages": sorted({j.stage for j in jobs}),
                "created_at": _utc(pipeline.created_at), "finished_at": _utc(finished),
                "duration": None, "queued_duration": None, "variables": [],
                "url": f"{self.base}/{world.full_path(project)}/-/pipelines/{pipeline.id}",
            },
            "merge_request": None if mr is None else {
                "id": mr.id, "iid": mr.iid, "title": mr.title, "source_branch": mr.source_branch,
                "source_project_id": mr.source_project_id, "target_branch": mr.target_branch,
                "target_project_id": mr.project_id, "state": mr.state,
                "merge_status": "unchecked", "detailed_merge_status": "mergeable",
                "url": f"{self.base}/{world.full_path(project)}/-/merge_requests/{mr.iid}",
            },
            "user": self.user(world.users.get(pipeline.user_id or 0)),
            "project": self.project(project),
            "commit": self._commit(project, pipeline.sha),
            "builds": [
                {
                    "id": j.id, "stage": j.stage, "name": j.name, "status": j.status,
                    "created_at": _utc(j.created_at), "started_at": _utc(j.started_at),
                    "finished_at": _utc(j.finished_at), "duration": None,
                    "queued_duration": None, "failure_reason": None, "when": "on_success",
                    "manual": False, "allow_failure": j.allow_failure,
                    "user": self.user(world.users.get(pipeline.user_id or 0)),
                    "runner": None, "artifacts_file": {"filename": None, "size": None},
                    "environment": None,
                }
                for j in jobs
            ],
        }  # fmt: skip
        return project, "pipeline_events", "Pipeline Hook", body

    def job(self, pipeline: Pipeline, job: Any) -> tuple[Project, str, str, dict[str, Any]]:
        world = self.world
        project = world.projects[pipeline.project_id]
        commit = world.commits.get(pipeline.sha)
        body = {
            "object_kind": "build", "ref": pipeline.ref, "tag": False, "before_sha": ZEROS,
            "sha": pipeline.sha, "build_id": job.id, "build_name": job.name,
            "build_stage": job.stage, "build_status": job.status,
            "build_created_at": job.created_at, "build_started_at": job.started_at,
            "build_finished_at": job.finished_at, "build_duration": None,
            "build_queued_duration": None, "build_allow_failure": job.allow_failure,
            "build_failure_reason": "script_failure" if job.status == "failed" else "unknown_failure",
            "retries_count": 0, "pipeline_id": pipeline.id, "project_id": project.id,
            "project_name": world.full_path(project),
            "user": self.user(world.users.get(pipeline.user_id or 0)),
            "commit": {
                "id": pipeline.id, "name": None, "sha": pipeline.sha,
                "message": commit.message if commit else "",
                "author_name": commit.author_name if commit else "",
                "author_email": commit.author_email if commit else "",
                "status": composite_status(world.jobs_of(pipeline)),
                "duration": None, "started_at": None, "finished_at": None,
            },
            "repository": self.repository(project), "project": self.project(project),
            "runner": None, "environment": None,
        }  # fmt: skip
        return project, "job_events", "Job Hook", body


# -- the sandbox's own endpoints -------------------------------------------------------------


@ROUTER.route("GET", "/webhooks")
def webhooks_status(app: Any, req: Request) -> Any:
    hooks: Webhooks = app.webhooks
    with hooks.lock:
        return {"waiting": hooks.busy, "delivered": hooks.delivered, "dropped": list(hooks.dropped),
                "to_drop": hooks.to_drop}  # fmt: skip


@ROUTER.route("POST", "/webhooks")
def webhooks_drop(app: Any, req: Request) -> Any:
    """``{"drop": N}``: the next N deliveries are lost without a trace, as GitLab loses those a
    rate limit stops."""
    hooks: Webhooks = app.webhooks
    with hooks.lock:
        hooks.to_drop = int(req.params.get("drop") or 0)
    return Reply(200, {"to_drop": hooks.to_drop})
