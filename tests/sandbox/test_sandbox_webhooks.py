"""The sandbox's webhooks: the hooks API through python-gitlab, and what is sent, with which
headers, when (docs/sandbox.md, "Webhooks"), received by a real HTTP server."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import gitlab
import pytest

from pairgate.sandbox.testing import RunningSandbox

APP = "/projects/acme%2Fapp"


class Collector:
    """An HTTP server that keeps every POST (headers with lower-case names, JSON body)."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.status = 200
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                collector.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(collector.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, count: int, timeout: float = 5.0) -> list[tuple[dict[str, str], dict[str, Any]]]:
        deadline = time.monotonic() + timeout
        while len(self.got) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.got)

    def events(self) -> list[str]:
        return [h["x-gitlab-event"] for h, _ in self.got]


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.server.shutdown()


def settled(sandbox: RunningSandbox) -> None:
    """Until every queued delivery has left."""
    deadline = time.monotonic() + 5
    while sandbox.control("GET", "webhooks")["waiting"] and time.monotonic() < deadline:
        time.sleep(0.01)


def add_hook(sandbox: RunningSandbox, url: str, **flags: Any) -> dict[str, Any]:
    every = {
        "push_events": True,
        "merge_requests_events": True,
        "note_events": True,
        "pipeline_events": True,
        "job_events": True,
        "token": "s3cret",
    }
    return dict(
        sandbox.api(
            "POST", f"{APP}/hooks", as_user="maintainer", json={"url": url, **every, **flags}
        )
    )


def test_project_hooks_through_python_gitlab(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab("maintainer").projects.get(2)
    hook = project.hooks.create(
        {"url": "http://127.0.0.1:9/h", "note_events": True, "token": "t", "name": "watch"}
    )
    assert (hook.note_events, hook.push_events, hook.pipeline_events) == (True, True, False)
    assert "token" not in hook.attributes and hook.project_id == 2 and hook.name == "watch"
    assert [h.id for h in project.hooks.list(get_all=True)] == [hook.id]
    hook.pipeline_events = True
    hook.save()
    assert project.hooks.get(hook.id).pipeline_events is True
    project.hooks.delete(hook.id)
    assert project.hooks.list(get_all=True) == []
    with pytest.raises(gitlab.GitlabGetError) as missing:
        project.hooks.get(hook.id)
    assert missing.value.response_code == 404


def test_hooks_need_maintainer_on_a_project_and_owner_on_a_group(sandbox: RunningSandbox) -> None:
    with pytest.raises(gitlab.GitlabCreateError) as refused:
        sandbox.gitlab("agents").projects.get(2).hooks.create({"url": "http://127.0.0.1:9/h"})
    assert refused.value.response_code == 403
    with pytest.raises(gitlab.GitlabCreateError) as bad:
        sandbox.gitlab("maintainer").projects.get(2).hooks.create({"url": "ftp://x"})
    assert (bad.value.response_code, bad.value.error_message) == (422, "Invalid url given")
    group = sandbox.gitlab("maintainer").groups.get(100)
    with pytest.raises(gitlab.GitlabCreateError) as not_owner:
        group.hooks.create({"url": "http://127.0.0.1:9/g"})
    assert not_owner.value.response_code == 403
    sandbox.set_member("maintainer", 50)
    made = group.hooks.create({"url": "http://127.0.0.1:9/g", "merge_requests_events": True})
    assert (made.group_id, made.merge_requests_events, made.subgroup_events) == (100, True, False)
    assert [h.id for h in group.hooks.list(get_all=True)] == [made.id]


def test_a_comment_sends_a_note_hook_with_gitlabs_headers(
    sandbox: RunningSandbox, collector: Collector
) -> None:
    sandbox.commit("topic", {"a.txt": "a"})
    mr = sandbox.create_mr("topic", title="Fixes acme/tracker#1")
    add_hook(sandbox, collector.url)
    note = sandbox.api(
        "POST", f"{APP}/merge_requests/{mr['iid']}/notes", as_user="review_bot",
        json={"body": "please rename"},
    )  # fmt: skip
    ((headers, body),) = collector.wait(1)
    assert headers["x-gitlab-event"] == "Note Hook" and headers["x-gitlab-token"] == "s3cret"
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"].startswith("GitLab/")
    assert headers["x-gitlab-instance"] == sandbox.url
    for name in ("idempotency-key", "x-gitlab-webhook-uuid", "x-gitlab-event-uuid"):
        uuid.UUID(headers[name])
    attrs = body["object_attributes"]
    assert (body["object_kind"], body["event_type"], attrs["action"]) == ("note", "note", "create")
    assert (attrs["id"], attrs["note"], attrs["noteable_type"]) == (
        note["id"],
        "please rename",
        "MergeRequest",
    )
    assert body["merge_request"]["iid"] == mr["iid"]
    assert body["merge_request"]["title"] == "Fixes acme/tracker#1"
    assert body["project"]["path_with_namespace"] == "acme/app" and body["user"]["id"] == 11


def test_each_change_fires_its_event(sandbox: RunningSandbox, collector: Collector) -> None:
    add_hook(sandbox, collector.url)
    sha = sandbox.commit("topic", {"a.txt": "a"})["id"]
    mr = sandbox.create_mr("topic")
    pipeline = sandbox.pipeline("acme/app", "topic", [{"name": "test", "status": "running"}])
    sandbox.set_job(pipeline["jobs"][0]["id"], "failed")
    sandbox.api("POST", f"{APP}/merge_requests/{mr['iid']}/approve", as_user="review_bot")
    settled(sandbox)
    got = collector.got
    assert collector.events() == [
        "Push Hook",
        "Merge Request Hook",
        "Job Hook",
        "Pipeline Hook",
        "Job Hook",
        "Pipeline Hook",
        "Merge Request Hook",
    ]
    push = got[0][1]
    assert (push["ref"], push["before"], push["after"]) == ("refs/heads/topic", "0" * 40, sha)
    opened = got[1][1]["object_attributes"]
    assert (opened["action"], opened["iid"], opened["last_commit"]["id"]) == (
        "open",
        mr["iid"],
        sha,
    )
    job = got[4][1]
    assert (job["object_kind"], job["build_status"], job["commit"]["id"]) == (
        "build",
        "failed",
        pipeline["id"],
    )
    failed = got[5][1]["object_attributes"]
    assert (failed["id"], failed["status"]) == (pipeline["id"], "failed")
    assert got[6][1]["object_attributes"]["action"] == "approval"


def test_internal_notes_go_only_to_confidential_hooks(
    sandbox: RunningSandbox, collector: Collector
) -> None:
    sandbox.commit("topic", {"a.txt": "a"})
    mr = sandbox.create_mr("topic")
    other = Collector()
    add_hook(sandbox, collector.url)
    add_hook(sandbox, other.url, confidential_note_events=True)
    sandbox.api(
        "POST", f"{APP}/merge_requests/{mr['iid']}/notes", json={"body": "x", "internal": True}
    )
    settled(sandbox)
    assert collector.events() == [] and other.events() == ["Confidential Note Hook"]
    assert other.got[0][1]["event_type"] == "confidential_note"
    other.server.shutdown()


def test_a_resend_keeps_the_idempotency_key(sandbox: RunningSandbox, collector: Collector) -> None:
    sandbox.commit("topic", {"a.txt": "a"})
    mr = sandbox.create_mr("topic")
    hook = add_hook(sandbox, collector.url)
    sandbox.api("POST", f"{APP}/merge_requests/{mr['iid']}/notes", json={"body": "once"})
    collector.wait(1)
    settled(sandbox)
    (entry,) = sandbox.api("GET", f"{APP}/hooks/{hook['id']}/events", as_user="maintainer")
    assert (entry["trigger"], entry["response_status"]) == ("note_hooks", "200")
    assert entry["request_headers"]["X-Gitlab-Token"] == "[REDACTED]"
    answer = sandbox.api(
        "POST", f"{APP}/hooks/{hook['id']}/events/{entry['id']}/resend", as_user="maintainer"
    )
    assert answer == {"response_status": 200}
    first, again = (h for h, _ in collector.wait(2))
    assert first["idempotency-key"] == again["idempotency-key"]
    assert first["x-gitlab-webhook-uuid"] != again["x-gitlab-webhook-uuid"]


def test_dropped_deliveries_leave_no_trace(sandbox: RunningSandbox, collector: Collector) -> None:
    sandbox.commit("topic", {"a.txt": "a"})
    mr = sandbox.create_mr("topic")
    hook = add_hook(sandbox, collector.url)
    sandbox.control("POST", "webhooks", json={"drop": 1})
    for body in ("lost", "kept"):
        sandbox.api("POST", f"{APP}/merge_requests/{mr['iid']}/notes", json={"body": body})
    settled(sandbox)
    assert [b["object_attributes"]["note"] for _, b in collector.got] == ["kept"]
    assert sandbox.control("GET", "webhooks")["dropped"] == [
        {"url": collector.url, "event": "Note Hook"}
    ]
    log = sandbox.api("GET", f"{APP}/hooks/{hook['id']}/events", as_user="maintainer")
    assert len(log) == 1
