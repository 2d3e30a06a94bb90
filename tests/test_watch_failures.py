"""watch and inbox when something goes wrong or is asked wrongly: a failed read, GitLab down,
a store of another tracker or schema, usage errors, a session acknowledging by another name,
and the loop (the fixtures are test_watch.py's)."""
# ruff: noqa: F811

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pairgate.standalone.config import load_config
from pairgate.standalone.gitlab import read_retry
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.watch import runner
from pairgate.watch.read import OVERLAP
from tests.kit.names import LEAD, REVIEW
from tests.kit.world import Round, kinds
from tests.test_watch import (  # noqa: F401
    backend,
    both,
    only_batch,
    world,
)

# -- failures ------------------------------------------------------------------------------------


def test_a_read_that_fails_marks_nothing_seen_and_is_read_again(world: Round) -> None:
    world.comment("behind a failing read")
    world.sb.advance_clock(OVERLAP + 60)
    world.sb.commit("unrelated", {"u.txt": "u\n"})
    world.sb.create_mr(
        "unrelated", title="Cites nothing"
    )  # newer: the listing's mark would pass it
    # Refused twice: the read's first attempt and the retry policy's one ask of a 403.
    world.sb.fault(path=f"{world.mr_path}/discussions", status=403, count=2)
    result = world.watch("--once")
    assert result.code == 2
    assert (
        "this poll could not read everything; nothing it did not read was marked seen" in result.err
    )
    assert world.batches() == []
    status = json.loads(world.watch("--status", "--json").out)
    assert "403" in status["last_error"]
    world.poll()
    assert kinds(only_batch(world)) == ["comment-added"]


def test_gitlab_down_keeps_the_store_as_it_was(world: Round) -> None:
    """With retries off, as a poll finds GitLab after its retries are spent."""
    world.comment("unread")
    world.sb.fault(path=".*", status=503, count=100)
    config = load_config(world.env())
    client = gitlab_from_env(config, world.env(), retry=read_retry(attempts=0))
    store = world.store()
    outcome = runner.poll(client, config, store, now=world.clock())
    assert outcome.events == () and outcome.errors
    assert store.meta("last_ok_poll_at") is not None and store.meta("last_error") is not None
    store.close()
    world.sb.clear_faults()
    world.poll()
    assert kinds(only_batch(world)) == ["comment-added"]


def test_a_store_of_another_tracker_is_refused(world: Round, tmp_path: Path) -> None:
    from pairgate.watch.store import Store

    other = tmp_path / "other.sqlite3"
    Store.open(other, tracker="acme/elsewhere").close()
    result = world.watch("--status", "--store", other)
    assert result.code == 2
    assert (
        f"the watch store {other} belongs to the tracker 'acme/elsewhere', not 'acme/tracker'"
        in result.err
    )


def test_an_unreadable_store_is_an_error(world: Round, tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not a database" * 100)
    result = world.watch("--status", "--store", junk)
    assert result.code == 2 and f"cannot use the watch store {junk}" in result.err


@both
def test_status_says_what_the_store_holds(world: Round) -> None:
    world.comment("x")
    world.poll()
    world.clock.advance(120)
    doc = json.loads(world.watch("--status", "--json").out)
    assert doc["tracker"] == "acme/tracker" and doc["last_error"] is None
    assert doc["pending"] == [
        {"agent": LEAD, "pending": 1, "batches": ["b1"], "oldest_age_seconds": 120}
    ]
    assert doc["watching"] == {"merge_requests": 1, "issues": 1}
    text = world.watch("--status").out
    assert "acme-lead  1        2m      b1" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["inbox", "ack", "twelve"],
            "pairgate inbox ack: 'twelve' is not a batch id (such as b12)\n",
        ),
        (["inbox", "ack", "b99"], "pairgate: there is no batch b99 in the watch store "),
    ],
)
def test_ack_usage_errors(world: Round, argv: list[str], message: str) -> None:
    result = world.run(LEAD, *argv)
    assert result.code == 2 and result.err.startswith(message)


def test_inbox_needs_a_name(world: Round) -> None:
    result = world.run(None, "inbox")
    assert result.code == 2
    assert (
        result.err
        == "pairgate inbox: whose inbox? Pass --agent <agent> or set PAIRGATE_TEST_AGENT_ID\n"
    )


def test_default_store_follows_xdg(tmp_path: Path) -> None:
    from pairgate.watch.store import default_path

    assert default_path({"XDG_STATE_HOME": "/s", "HOME": "/h"}, "a/b") == Path(
        "/s/pairgate/a%2Fb.sqlite3"
    )
    assert default_path({"XDG_STATE_HOME": "rel", "HOME": "/h"}, "a/b") == Path(
        "/h/.local/state/pairgate/a%2Fb.sqlite3"
    )
    with pytest.raises(Exception, match="set XDG_STATE_HOME or HOME"):
        default_path({}, "a/b")


def test_ack_needs_a_name_and_a_store(world: Round, tmp_path: Path) -> None:
    world.comment("x")
    world.poll()
    nameless = world.run(None, "inbox", "ack", "b1")
    assert nameless.code == 2
    assert nameless.err.startswith(
        "pairgate: no agent identity: pass --as <agent> or set PAIRGATE_TEST_AGENT_ID"
    )
    missing = tmp_path / "none.sqlite3"
    result = world.run(LEAD, "inbox", "ack", "b1", "--store", str(missing))
    assert (result.code, result.err) == (
        2,
        f"pairgate inbox ack: there is no watch store at {missing}: the watcher has not run there "
        "(start it: pairgate watch)\n",
    )
    assert world.run(None, "inbox", "ack", "b1", "--as", LEAD).code == 0


def test_a_session_acknowledges_as_one_name_only(world: Round) -> None:
    world.offer()  # the lead, in session-acme-lead, writes the offer: the reviewer's batch
    world.poll()
    batch = only_batch(world, REVIEW)["batch"]
    claim = world.ledger_notes()[0]["id"]
    forged = world.run(LEAD, "inbox", "ack", batch, "--as", REVIEW)
    assert forged.code == 1, forged.out + forged.err
    assert forged.err == (
        f"pairgate inbox ack: refused: this session (session-{LEAD}) wrote as {LEAD} "
        f"(acme/tracker#{world.issue} (note {claim})); a session speaks for one name only, so it "
        f"does not acknowledge {batch} as {REVIEW}.\n{REVIEW} acknowledges it from its own "
        f"session: pairgate inbox ack {batch} --as {REVIEW}\n"
    )
    assert only_batch(world, REVIEW)["batch"] == batch  # still pending for the reviewer
    # The reviewer, restarted in a fresh session, acknowledges it; that session then speaks
    # for the reviewer, and acknowledges nothing as the lead.
    fresh = {"PAIRGATE_TEST_SESSION_ID": "session-fresh"}
    assert world.run(REVIEW, "inbox", "ack", batch, **fresh).code == 0
    world.comment("x")
    world.poll()
    later = only_batch(world, REVIEW)["batch"]
    again = world.run(LEAD, "inbox", "ack", later, **fresh)
    assert again.code == 1
    assert (
        f"this session (session-fresh) wrote as {REVIEW} (the acknowledgement of {batch}); a "
        f"session speaks for one name only, so it does not acknowledge {later} as {LEAD}."
    ) in again.err


def test_a_store_of_a_later_schema_is_refused(world: Round) -> None:
    store = world.store()
    with store.writing():
        store._db.x("INSERT INTO schema_version VALUES (99, 0)")
    store.close()
    result = world.watch("--status")
    assert result.code == 2 and "has schema 99; this pairgate reads schemas up to 2" in result.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["watch", "--once", "--deliver-command", ""],
            "pairgate watch: --deliver-command is empty\n",
        ),
        (
            ["watch", "--interval", "0"],
            "argument --interval: '0' is not a positive number of seconds",
        ),
    ],
)
def test_watch_usage_errors(world: Round, argv: list[str], message: str) -> None:
    result = world.run(None, *argv)
    assert result.code == 2 and message in result.err


def test_the_loop_polls_then_sleeps_and_ends_on_ctrl_c(
    world: Round, monkeypatch: pytest.MonkeyPatch
) -> None:
    naps: list[float] = []
    real = time.sleep

    def sleep(seconds: float) -> None:  # the loop's naps only: other threads sleep as usual
        if seconds != 7.0:
            return real(seconds)
        naps.append(seconds)
        if len(naps) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", sleep)
    world.comment("x")
    result = world.watch("--interval", "7")
    assert (result.code, naps) == (0, [7.0, 7.0])
    assert result.out.count("pairgate watch: ") == 2 and kinds(only_batch(world)) == [
        "comment-added"
    ]
