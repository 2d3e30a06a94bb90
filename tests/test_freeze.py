"""freeze and thaw against the sandbox: windows that refuse other agents' writes, found
board-wide through the pairgate::frozen label, and lifted only by whoever declared them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import load_config
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.standalone.ledger import FROZEN_LABEL, MrRef
from pairgate.standalone.reads import read_freezes
from tests.kit.names import FIXTURE_CONFIG, LEAD, REVIEW
from tests.kit.run import agent_env, ok, run_cli
from tests.kit.world import Round, World


def freeze(sandbox: RunningSandbox, issue: int, scope: str, *, agent: str = REVIEW, **kw: str):
    argv = ["freeze", str(issue), "--scope", scope, "--reason", kw.pop("reason", "release cut")]
    if "minutes" in kw:
        argv += ["--minutes", kw.pop("minutes")]
    return run_cli(argv, agent_env(sandbox, agent))


def test_a_board_freeze_refuses_other_agents_and_not_its_own(sandbox: RunningSandbox) -> None:
    holder = int(sandbox.create_issue("holds the window")["iid"])
    other = Round(sandbox)
    result = freeze(sandbox, holder, "board", reason="cutting 2.0 --> do not touch")
    assert result.code == 0, result.err
    assert f"{REVIEW} froze the board until" in result.out and "pairgate thaw" in result.out
    assert FROZEN_LABEL in World(sandbox).labels(holder)
    refused = run_cli(["claim", str(other.issue), "--role", "lead"], other.lead)
    assert refused.code == 1
    assert f"pairgate: refused on #{other.issue}: {REVIEW} froze the board until" in refused.err
    assert "cutting 2.0 --> do not touch" in refused.err  # the reason round-trips intact
    assert f"ask {REVIEW} to run `pairgate thaw`" in refused.err
    assert other.labels() == []  # refused before anything was written
    ok(["claim", str(other.issue), "--role", "review"], other.review)  # its own agent writes
    head = ok(["board"], other.lead, now=time.time() + 600).out.splitlines()[0]
    assert head.startswith(f"FROZEN board by {REVIEW} until ") and "(another 19m): cutting" in head
    (window,) = json.loads(ok(["board", "--json"], other.lead).out)["live_freezes"]
    assert 1700 < window["remaining_seconds"] <= 1800 and window["live"] is True


def test_an_issue_freeze_binds_only_that_issue(sandbox: RunningSandbox) -> None:
    frozen, free = Round(sandbox), Round(sandbox)
    holder = int(sandbox.create_issue("notes")["iid"])
    assert freeze(sandbox, holder, f"issue:{frozen.issue}").code == 0
    assert run_cli(["claim", str(frozen.issue), "--role", "lead"], frozen.lead).code == 1
    ok(["claim", str(free.issue), "--role", "lead"], free.lead)


def test_scope_issue_means_the_issue_it_is_recorded_on(sandbox: RunningSandbox) -> None:
    r = Round(sandbox)
    assert freeze(sandbox, r.issue, "issue").code == 0
    (window,) = json.loads(ok(["board", "--json"], r.lead).out)["live_freezes"]
    assert window["scope"] == f"issue:{r.issue}" and window["issue"] == r.issue


def test_an_mr_freeze_refuses_records_about_that_mr(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).claim()
    result = freeze(sandbox, r.issue, f"mr:{r.mr}", agent=REVIEW)
    assert result.code == 0, result.err
    assert "merge-check fails" in result.out
    (window,) = json.loads(ok(["board", "--json"], r.lead).out)["live_freezes"]
    assert window["scope"] == f"mr:acme/app!{r.mr}"  # a bare iid: the MR citing the issue
    argv = ["handoff", str(r.issue), "--to", REVIEW, "--role", "review", "--sha", r.sha]
    refused = run_cli(argv, r.lead)
    assert refused.code == 1 and f"froze mr:acme/app!{r.mr} until" in refused.err
    other = Round(sandbox)
    ok(["claim", str(other.issue), "--role", "lead"], other.lead)  # other work goes on


def test_an_expired_window_is_shown_as_expired_and_binds_nobody(sandbox: RunningSandbox) -> None:
    r = Round(sandbox)
    assert freeze(sandbox, r.issue, "board", minutes="1").code == 0
    later = time.time() + 120
    doc = json.loads(ok(["board", "--json"], r.lead, now=later).out)
    assert doc["live_freezes"] == []
    (window,) = doc["issues"][0]["freezes"]
    assert window["live"] is False and window["minutes"] == 1
    ok(["claim", str(r.issue), "--role", "lead"], r.lead, now=later)
    assert run_cli(["thaw"], r.review, now=later).code == 1  # nothing live left to thaw


def test_thaw_lifts_only_the_callers_windows(sandbox: RunningSandbox) -> None:
    a, b = Round(sandbox), Round(sandbox)
    assert freeze(sandbox, a.issue, "board", agent=REVIEW).code == 0
    assert freeze(sandbox, b.issue, f"issue:{b.issue}", agent=REVIEW).code == 0
    refused = run_cli(["thaw"], a.lead)
    assert refused.code == 1
    assert f"{LEAD} has declared no live freeze window" in refused.err
    assert (
        f"{REVIEW} froze the board" in refused.err
        and f"{REVIEW} froze issue:{b.issue}" in refused.err
    )
    result = run_cli(["thaw"], a.review)
    assert result.code == 0, result.err
    assert result.out.count("thawed") == 2
    assert FROZEN_LABEL not in a.labels()
    assert FROZEN_LABEL not in b.labels()
    ok(["claim", str(a.issue), "--role", "lead"], a.lead)


def test_readers_find_live_windows_through_the_label_alone(sandbox: RunningSandbox) -> None:
    rounds = [Round(sandbox) for _ in range(4)]
    assert freeze(sandbox, rounds[2].issue, "board").code == 0
    config = load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    client = gitlab_from_env(config, agent_env(sandbox, LEAD))
    sandbox.clear_requests()
    (found,) = read_freezes(client, config)
    assert found[0] == rounds[2].issue and found[1].agent == REVIEW
    paths = [r["path"] for r in sandbox.requests()]
    assert len(paths) == 2 and paths[1].endswith(f"/issues/{rounds[2].issue}/notes")
    assert found[1].covers(mr=MrRef("acme/app", 1))


@pytest.mark.parametrize(
    ("scope", "message"),
    [
        ("everything", "--scope 'everything' is not one of board, issue, issue:<iid>"),
        ("issue:0", "is not one of"),
        ("mr:", "is not one of"),
        ("issue:999", "acme/tracker#999 does not exist"),
        ("mr:acme/app!999", "acme/app!999 does not exist"),
    ],
)
def test_a_scope_that_names_nothing_is_a_usage_error(
    sandbox: RunningSandbox, scope: str, message: str
) -> None:
    r = Round(sandbox)
    result = freeze(sandbox, r.issue, scope)
    assert result.code == 2 and message in result.err
    assert FROZEN_LABEL not in r.labels()


def test_an_ambiguous_mr_iid_asks_for_the_project(sandbox: RunningSandbox) -> None:
    r = Round(sandbox)  # acme/app!1 cites it
    sandbox.commit("x", {"x.txt": "x"}, project="acme/tracker")
    sandbox.create_mr("x", project="acme/tracker", description=f"#{r.issue}")
    result = freeze(sandbox, r.issue, "mr:1")
    assert result.code == 2
    assert "--scope mr:1 is ambiguous; name one: mr:acme/app!1, mr:acme/tracker!1" in result.err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--minutes", "0"], "--minutes 0 is outside 1..10080"),
        (["--minutes", "10081"], "--minutes 10081 is outside"),
        (["--reason", "  "], "the reason is empty"),
    ],
)
def test_bad_minutes_and_empty_reasons_are_usage_errors(
    sandbox: RunningSandbox, flags: list[str], message: str
) -> None:
    r = Round(sandbox)
    argv = ["freeze", str(r.issue), "--scope", "board", "--reason", "why", *flags]
    result = run_cli(argv, r.review)
    assert result.code == 2 and message in result.err


def test_freeze_and_thaw_need_an_identity(sandbox: RunningSandbox) -> None:
    r = Round(sandbox)
    env = agent_env(sandbox, None)
    assert (
        "no agent identity"
        in run_cli(["freeze", str(r.issue), "--scope", "board", "--reason", "x"], env).err
    )
    result = run_cli(["thaw"], env)
    assert result.code == 2 and "no agent identity" in result.err


def test_a_freeze_inside_another_agents_window_is_refused(sandbox: RunningSandbox) -> None:
    r = Round(sandbox)
    assert freeze(sandbox, r.issue, "board", agent=REVIEW).code == 0
    result = freeze(sandbox, r.issue, "board", agent=LEAD)
    assert result.code == 1 and f"{REVIEW} froze the board" in result.err


def test_merge_check_fails_while_an_mr_window_binds(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).approved()
    check = ["merge-check", "--mr", str(r.mr), "--mr-project", "acme/app"]
    ok(check, r.lead)
    assert freeze(sandbox, r.issue, f"mr:{r.mr}", agent=REVIEW, minutes="10").code == 0
    for agent_env_of in (r.lead, r.review):  # the gate is bound whoever asks
        refused = run_cli(check, agent_env_of)
        assert refused.code == 1
        assert f"acme/app!{r.mr} is frozen: {REVIEW} froze mr:acme/app!{r.mr} until" in refused.err
    doc = json.loads(run_cli([*check, "--json"], r.lead).out)
    assert (doc["allowed"], doc["verdict"]) == (False, "frozen")
    ok(check, r.lead, now=time.time() + 11 * 60)  # expired: binds nobody
    other = Round(sandbox).approved()
    ok(["merge-check", "--mr", str(other.mr), "--mr-project", "acme/app"], other.lead)


def test_a_board_window_holds_back_writes_not_merges(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).approved()
    assert freeze(sandbox, r.issue, "board", agent=REVIEW).code == 0
    ok(["merge-check", "--mr", str(r.mr), "--mr-project", "acme/app"], r.lead)


def test_thaw_goes_on_past_a_closed_issue_and_says_so(sandbox: RunningSandbox) -> None:
    a, b = Round(sandbox), Round(sandbox)
    assert freeze(sandbox, a.issue, "board").code == 0
    assert freeze(sandbox, b.issue, f"issue:{b.issue}").code == 0
    sandbox.api("PUT", f"/projects/acme%2Ftracker/issues/{a.issue}", json={"state_event": "close"})
    result = run_cli(["thaw"], a.review)
    assert result.code == 1
    assert f"#{a.issue}: not thawed: pairgate: #{a.issue} is closed" in result.err
    assert f"thawed issue:{b.issue}" in result.out
    assert FROZEN_LABEL not in b.labels()


def test_thaw_with_an_unreadable_frozen_issue_is_exit_2(sandbox: RunningSandbox) -> None:
    r = Round(sandbox)
    assert freeze(sandbox, r.issue, "board").code == 0
    # A 403, not a 5xx: the reader retries 5xx with real backoff (tests/test_gitlab_client.py covers
    # that with a zero backoff); here only "unreadable" matters.
    sandbox.fault(method="GET", path=rf"/issues/{r.issue}/notes", status=403, count=100)
    result = run_cli(["thaw"], r.review)
    sandbox.clear_faults()
    assert result.code == 2 and f"could not read #{r.issue}" in result.err


def test_the_reason_can_come_from_a_file_so_merge_text_need_not_be_on_the_command_line(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    r = Round(sandbox)
    why = tmp_path / "why.txt"
    why.write_text("Hold it: do not run glab mr merge 1 -R acme/app until 2.0 ships.\n")
    argv = ["freeze", str(r.issue), "--scope", "board", "--reason-file", str(why)]
    ok(argv, r.review)
    bodies = [
        n["body"] for n in sandbox.api("GET", f"/projects/acme%2Ftracker/issues/{r.issue}/notes")
    ]
    assert any("do not run glab mr merge 1 -R acme/app until 2.0 ships." in b for b in bodies)
    both = run_cli([*argv, "--reason", "x"], r.review)
    assert both.code == 2 and "not allowed with argument" in both.err
    missing = run_cli(
        ["freeze", str(r.issue), "--scope", "board", "--reason-file", str(tmp_path / "no")],
        r.review,
    )
    assert missing.code == 2 and "cannot read --reason-file" in missing.err
