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
from pairgate.sandbox.records import MergeRequest, Project, User, WebHook
from pairgate.sandbox.webhook_payloads import ZEROS, Payloads
from pairgate.sandbox.webhooks import DEFAULT_ON

VERSION = "17.6.0"  # the GitLab the headers name (Idempotency-Key is 17.4+)
TIMEOUT = 10.0  # GitLab's default webhook_timeout


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
        seen.pipelines[p.id] = (p.updated_at, p.status or composite_status(world.jobs_of(p)))
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
                    if job.kind == "build":  # a trigger job fires no Job Hook
                        found.append(p.job(pipeline, job))
            # A skipped pipeline ([skip ci]) or one its configuration failed has no jobs.
            status = pipeline.status or composite_status(world.jobs_of(pipeline))
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
