"""What a webhook names for the watcher to read again, its de-duplication key, and the watch
command's refusals around --listen and --store. Pure, or in-process and quick."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pairgate.watch.backends import shown
from pairgate.watch.webhook import Targets, key, targets
from tests.kit.names import ROOT
from tests.kit.run import run_cli

TRACKER = "acme/tracker"


def hooked(body: dict[str, Any]) -> Targets:
    return targets("", body, tracker=TRACKER, generic=1)


PROJECT = {"id": 2, "path_with_namespace": "acme/app"}


def test_a_merge_request_hook_names_its_merge_request_and_whether_it_cites() -> None:
    body = {
        "object_kind": "merge_request",
        "project": PROJECT,
        "object_attributes": {"iid": 4, "title": "Fix", "description": "Fixes acme/tracker#7"},
    }
    assert hooked(body).mrs == {("acme/app", 4): True}
    body["object_attributes"]["description"] = "Part of acme/tracker#1"  # the generic issue
    assert hooked(body).mrs == {("acme/app", 4): False}


def test_a_note_hook_names_the_merge_request_or_the_tracker_issue() -> None:
    on_mr = {"object_kind": "note", "project": PROJECT, "merge_request": {"iid": 4, "title": "x"}}
    assert hooked(on_mr).mrs == {("acme/app", 4): False}
    tracker = {"id": 1, "path_with_namespace": TRACKER}
    on_issue = {"object_kind": "note", "project": tracker, "issue": {"iid": 9}}
    assert hooked(on_issue) == Targets(issues=frozenset({9}))
    elsewhere = {"object_kind": "note", "project": PROJECT, "issue": {"iid": 9}}
    assert hooked(elsewhere).empty


def test_pipeline_job_and_push_hooks() -> None:
    pipeline = {"object_kind": "pipeline", "project": PROJECT, "object_attributes": {"id": 77}}
    assert hooked(pipeline) == Targets(pipelines=frozenset({(2, 77)}))
    job = {"object_kind": "build", "project_id": 2, "pipeline_id": 77, "commit": {"id": 77}}
    assert hooked(job) == Targets(pipelines=frozenset({(2, 77)}))
    push = {"object_kind": "push", "project_id": 2, "ref": "refs/heads/fix-3"}
    assert hooked(push) == Targets(branches=frozenset({(2, "fix-3")}))
    assert hooked({"object_kind": "tag_push", "project_id": 2, "ref": "refs/tags/v1"}).empty
    both = hooked(pipeline) | hooked(push)
    assert (both.pipelines, both.branches) == (frozenset({(2, 77)}), frozenset({(2, "fix-3")}))


def test_the_key_is_the_idempotency_key_else_the_events_own_identity() -> None:
    note = {"object_kind": "note", "object_attributes": {"id": 5, "updated_at": "t1"}}
    assert key({"idempotency-key": "k-1"}, note) == "idempotency-key:k-1"
    old = key({}, note)
    assert old == key({"x-gitlab-webhook-uuid": "every-time-new"}, note)  # not the key
    edited = {"object_kind": "note", "object_attributes": {"id": 5, "updated_at": "t2"}}
    assert key({}, edited) != old
    running = {"object_kind": "pipeline", "object_attributes": {"id": 9, "status": "running"}}
    failed = {"object_kind": "pipeline", "object_attributes": {"id": 9, "status": "failed"}}
    assert key({}, running) != key({}, failed)  # no updated_at: the status stands in


def test_a_store_url_is_shown_without_its_password() -> None:
    assert shown("postgresql://watch:s3cret@db.example:5433/pg?sslmode=require") == (
        "postgresql://watch@db.example:5433/pg?sslmode=require"
    )
    assert shown("postgresql:///pg?host=/run/pg") == "postgresql:///pg?host=/run/pg"
    assert shown(Path("/s/x.sqlite3")) == "/s/x.sqlite3"


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (
            ["watch", "--listen", "127.0.0.1:0", "--once"],
            {},
            "pairgate watch: --listen runs a service; it cannot be --once\n",
        ),
        (
            ["watch", "--no-poll"],
            {},
            "pairgate watch: --no-poll needs --listen (else nothing is watched)\n",
        ),
        (
            ["watch", "--listen", "127.0.0.1:0"],
            {},
            "pairgate watch: --listen needs the webhooks' secret token: set "
            "PAIRGATE_TEST_WEBHOOK_TOKEN or pass --hook-token-file FILE (the same token the "
            "hook was registered with)\n",
        ),
        (
            ["watch", "--listen", "8080"],
            {"PAIRGATE_TEST_WEBHOOK_TOKEN": "t"},
            "pairgate watch: --listen wants HOST:PORT, such as 127.0.0.1:8080, not '8080'\n",
        ),
    ],
)
def test_listen_usage_errors(
    argv: list[str], env: dict[str, str], message: str, tmp_path: Path, config_env: dict[str, str]
) -> None:
    result = run_cli(argv, {**config_env, "XDG_STATE_HOME": str(tmp_path), **env})
    assert result.code == 2 and result.err.endswith(message)


def test_a_store_of_another_tracker_is_refused_on_postgres_too(
    postgres_url: str, config_env: dict[str, str]
) -> None:
    from pairgate.watch.store import Store

    Store.open(postgres_url, tracker="acme/elsewhere").close()
    result = run_cli(["watch", "--status", "--store", postgres_url], config_env)
    assert result.code == 2
    assert "belongs to the tracker 'acme/elsewhere', not 'acme/tracker'" in result.err


def test_the_sqlite_store_never_imports_psycopg(tmp_path: Path) -> None:
    code = (
        "import sys; from pairgate.watch.store import Store; "
        f"Store.open({str(tmp_path / 's.sqlite3')!r}, tracker='a/b').close(); "
        "import pairgate.commands.watcher, pairgate.commands.inbox; "
        "print('psycopg' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "False"
