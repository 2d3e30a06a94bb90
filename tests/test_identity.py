"""identity against the sandbox: every session that wrote under the caller's name recently."""

from __future__ import annotations

import json
import time

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.names import LEAD
from tests.kit.run import agent_env, ok, run_cli
from tests.kit.world import Round


def test_one_session_is_fine(sandbox: RunningSandbox) -> None:
    Round(sandbox).claim()
    Round(sandbox).claim()
    result = ok(["identity"], agent_env(sandbox, LEAD))
    assert "session-acme-lead (this one)  2" in result.out
    doc = json.loads(ok(["identity", "--json"], agent_env(sandbox, LEAD)).out)
    assert set(doc) == {
        "agent",
        "session",
        "window_hours",
        "since",
        "sessions",
        "others",
        "names",
        "unreadable",
    }
    (entry,) = doc["sessions"]
    assert set(entry) == {
        "session", "mine", "records", "issues", "last_at", "last_issue", "last_note", "age_seconds",
    }  # fmt: skip
    assert (entry["session"], entry["mine"], entry["records"]) == ("session-acme-lead", True, 2)
    assert doc["others"] == [] and doc["window_hours"] == 24


def test_two_sessions_under_one_name_exit_1(sandbox: RunningSandbox) -> None:
    first = Round(sandbox).claim()
    other = agent_env(sandbox, LEAD, PAIRGATE_TEST_SESSION_ID="laptop-2")
    ok(["release", str(first.issue)], other)
    result = run_cli(["identity"], agent_env(sandbox, LEAD))
    assert result.code == 1
    assert "another session answers to acme-lead: laptop-2 wrote note" in result.err
    assert "this session is session-acme-lead" in result.err
    assert "laptop-2" in result.out and "session-acme-lead (this one)" in result.out
    doc = json.loads(run_cli(["identity", "--json"], other).out)
    assert doc["others"] == ["session-acme-lead"] and doc["session"] == "laptop-2"


def test_only_the_callers_name_counts(sandbox: RunningSandbox) -> None:
    Round(sandbox).claim()
    result = ok(["identity", "--as", "acme-review"], agent_env(sandbox, "acme-review"))
    assert "Sessions that wrote as acme-review in the last 24h: none." in result.out
    assert "This session wrote as no other name in the last 24h." in result.out


def test_another_name_in_this_session_is_reported_and_exit_1(sandbox: RunningSandbox) -> None:
    # Two names, one session: the session that wrote as acme-lead now asks as acme-review.
    first = Round(sandbox).claim()
    result = run_cli(["identity", "--as", "acme-review"], agent_env(sandbox, LEAD))
    assert result.code == 1
    assert "This session also wrote as:" in result.out and "acme-lead" in result.out
    assert (
        "this session (session-acme-lead) also wrote as acme-lead: acme-lead wrote note"
        in result.err
    )
    assert f"on #{first.issue}" in result.err
    assert "The gate treats names that share a session as one agent" in result.err
    doc = json.loads(
        run_cli(["identity", "--as", "acme-review", "--json"], agent_env(sandbox, LEAD)).out
    )
    (entry,) = doc["names"]
    assert (entry["name"], entry["records"], entry["issues"]) == ("acme-lead", 1, [first.issue])
    assert set(entry) == {
        "name", "records", "issues", "last_at", "last_issue", "last_note", "age_seconds",
    }  # fmt: skip


def test_old_records_are_not_recent(sandbox: RunningSandbox) -> None:
    Round(sandbox).claim()
    other = agent_env(sandbox, LEAD, PAIRGATE_TEST_SESSION_ID="yesterday")
    assert run_cli(["identity"], other).code == 1
    assert run_cli(["identity"], other, now=time.time() + 25 * 3600).code == 0


def test_identity_needs_a_name(sandbox: RunningSandbox) -> None:
    result = run_cli(["identity"], agent_env(sandbox, None))
    assert result.code == 2 and "no agent identity" in result.err
