"""Webhooks in, on the PostgreSQL store: a comment reaches the inbox through the hook alone, a
lost hook is delivered by the safety-net poll, a redelivery is a no-op, a bad token is refused
and recorded, and a hook and a poll racing on one change store it once. Real programs, the
sandbox's real deliveries."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from pairgate.standalone.config import load_config
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.watch import webhook
from pairgate.watch.listen import same_secret
from pairgate.watch.read import Reading, read_named
from pairgate.watch.refresh import refresh
from pairgate.watch.runner import settle
from tests.kit.names import LEAD
from tests.kit.watchfleet import TOKEN, Watcher, register, until
from tests.kit.world import Round, kinds

pytestmark = pytest.mark.slow


@pytest.fixture
def world(sandbox: Any, tmp_path: Path, postgres_url: str) -> Round:
    w = Round(sandbox, watch_dir=tmp_path, store_url=postgres_url)
    w.claim()
    w.poll()  # the first look, before the service starts
    return w


def comment_events(world: Round) -> list[dict[str, Any]]:
    return [e for b in world.batches() for e in b["events"] if e["kind"] == "comment-added"]


@pytest.mark.timing
def test_a_comment_reaches_the_inbox_by_webhook_alone_within_a_second(
    world: Round, tmp_path: Path
) -> None:
    watcher = Watcher(world, tmp_path / "w", "--no-poll")
    try:
        register(world, watcher.url)
        world.sb.clear_requests()
        start = time.monotonic()
        note = world.comment("Please rename x.")
        (batch,) = until(world.batches, 1.0, step=0.01)
        elapsed = time.monotonic() - start
    finally:
        assert watcher.stop() == 0
    assert elapsed < 1.0
    assert kinds(batch) == ["comment-added"] and batch["recipient"] == LEAD
    detail = batch["events"][0]["detail"]
    assert (detail["note_id"], detail["existing"]) == (note["id"], False)
    polled = [r for r in world.sb.requests() if r["path"].endswith("/groups/100/merge_requests")]
    assert polled == []  # no poll: the hook alone
    status = json.loads(world.watch("--status", "--json").out)["webhooks"]
    assert status["last_at"] is not None and status["stored"] >= 1 and status["waiting"] == 0


def test_a_lost_hook_is_delivered_by_the_safety_net_poll(world: Round, tmp_path: Path) -> None:
    watcher = Watcher(world, tmp_path / "w", "--interval", "1")
    try:
        register(world, watcher.url)
        world.sb.control("POST", "webhooks", json={"drop": 1})
        note = world.comment("a hook GitLab drops")
        (batch,) = until(world.batches, 10.0, step=0.05)
    finally:
        assert watcher.stop() == 0
    assert batch["events"][0]["detail"]["note_id"] == note["id"]
    assert world.sb.control("GET", "webhooks")["dropped"] == [
        {"url": watcher.url, "event": "Note Hook"}
    ]
    assert world.store().hooks() == []  # nothing came by hook: the poll found it


def test_a_redelivered_hook_is_a_no_op(world: Round, tmp_path: Path) -> None:
    watcher = Watcher(world, tmp_path / "w", "--no-poll")
    try:
        hook = register(world, watcher.url)
        world.comment("once")
        until(world.batches, 5.0)
        (entry,) = until(
            lambda: world.sb.api(
                "GET", f"/projects/acme%2Fapp/hooks/{hook['id']}/events", as_user="maintainer"
            ),
            5.0,
        )
        resent = world.sb.api(
            "POST",
            f"/projects/acme%2Fapp/hooks/{hook['id']}/events/{entry['id']}/resend",
            as_user="maintainer",
        )
        assert resent == {"response_status": 200}
        time.sleep(0.3)  # a redelivery would be taken in now
    finally:
        assert watcher.stop() == 0
    store = world.store()
    assert store.meta("hooks_redelivered") == "1" and len(store.hooks()) == 1
    assert len(comment_events(world)) == 1


def test_a_hook_without_the_token_is_refused_and_recorded(world: Round, tmp_path: Path) -> None:
    watcher = Watcher(world, tmp_path / "w", "--no-poll")
    answers = []
    try:
        for headers in ({}, {"X-Gitlab-Token": "guess"}, {"X-Gitlab-Token": TOKEN}):
            answer = requests.post(
                watcher.url,
                json={"object_kind": "note"},
                headers={"X-Gitlab-Event": "Note Hook", **headers},
                timeout=10,
            )
            answers.append((answer.status_code, answer.json()))
    finally:
        assert watcher.stop() == 0
    assert answers == [
        (401, {"error": "no X-Gitlab-Token"}),
        (401, {"error": "wrong X-Gitlab-Token"}),
        (200, {"stored": True}),
    ]
    status = json.loads(world.watch("--status", "--json").out)["webhooks"]
    assert (status["refused"], status["last_refused"]["reason"]) == (2, "wrong X-Gitlab-Token")
    assert status["last_refused"]["from"] == "127.0.0.1"
    text = world.watch("--status").out
    assert "last refused webhook: wrong X-Gitlab-Token from 127.0.0.1" in text


def test_the_token_is_compared_whole() -> None:
    assert same_secret("abc", "abc")
    assert not same_secret("abd", "abc") and not same_secret("ab", "abc")
    assert not same_secret(None, "abc") and not same_secret("", "abc")


def test_a_hook_and_a_poll_racing_on_one_change_store_it_once(world: Round) -> None:
    """The poll reads the merge request before the comment; the hook reads it after and
    commits first; the poll commits last. Its read is older than the stored snapshot, so it is
    read again, not committed over it (which would report the comment removed, then added)."""
    config = load_config(world.env())
    client = gitlab_from_env(config, world.env())
    store = world.store()
    subject = f"mr:acme/app!{world.mr}"
    versions = store.versions()
    late = Reading()
    read_named(client, config, {subject: ("acme/app", world.mr)}, late)  # before the comment
    note = world.comment("raced")
    hooked = webhook.Targets(mrs={("acme/app", world.mr): True})
    refresh(client, config, store, hooked, now=world.clock(), finish=lambda settled: None)
    events, _ = settle(
        client, config, store, late, versions, now=world.clock(), finish=lambda settled: None
    )
    assert events == [] and late.errors == []
    (batch,) = world.batches()
    assert [(e["kind"], e["detail"]["note_id"]) for e in batch["events"]] == [
        ("comment-added", note["id"])
    ]
    world.poll()  # and a poll after both finds nothing new
    assert len(world.batches()) == 1
