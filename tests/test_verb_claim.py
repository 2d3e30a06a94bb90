"""claim, identity, the race, and the writes a lost answer must not repeat."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest

from pairgate.standalone.config import Config
from tests.kit.names import ROOT
from tests.kit.run import PAIRGATE, agent_env, clean_env
from tests.kit.world import Round


@pytest.fixture
def world(sandbox: Any) -> Round:
    return Round(sandbox)


def test_claim_takes_an_unowned_issue_and_sets_the_label(world: Round, config: Config) -> None:
    result = world.run("acme-lead", "claim", world.issue, "--role", "lead")
    assert (result.code, result.out.split(" (note")[0]) == (
        0,
        f"acme-lead holds #{world.issue} as lead",
    )
    assert world.issue_state()["labels"] == ["agent::lead"]
    assert world.ledger(config).holder == "acme-lead"


def test_claim_of_a_held_issue_is_refused(world: Round) -> None:
    world.claim()
    result = world.run("acme-review", "claim", world.issue, "--role", "review")
    assert result.code == 1
    assert f"pairgate claim: #{world.issue} is held by acme-lead as lead" in result.err
    assert result.err.endswith(
        f"Ask acme-lead to offer it to you; acme-lead runs: pairgate handoff {world.issue} --to "
        f"acme-review --role review --sha <head>\n"
    )


def test_claim_of_your_own_issue_is_refused(world: Round) -> None:
    world.claim()
    result = world.run("acme-lead", "claim", world.issue, "--role", "lead")
    assert result.code == 1
    assert f"acme-lead already holds #{world.issue} as lead" in result.err
    assert f"pairgate status {world.issue}" in result.err


def test_a_finder_never_claims(world: Round) -> None:
    result = world.run("acme-finder", "claim", world.issue, "--role", "lead")
    assert result.code == 1
    assert "acme-finder is a finder, and a finder never claims an issue" in result.err
    assert result.err.endswith(
        f"A lead claims it; a lead (such as acme-lead) runs: pairgate claim {world.issue} "
        f"--role lead\n"
    )
    assert world.notes() == []


def test_a_closed_issue_is_refused(world: Round, sandbox: Any) -> None:
    sandbox.api(
        "PUT", f"/projects/acme%2Ftracker/issues/{world.issue}", json={"state_event": "close"}
    )
    result = world.run("acme-lead", "claim", world.issue, "--role", "lead")
    assert result.code == 1
    assert f"#{world.issue} is closed" in result.err
    assert f"glab issue reopen {world.issue} -R acme/tracker" in result.err


def test_an_unset_identity_is_exit_2_and_touches_nothing(world: Round, sandbox: Any) -> None:
    sandbox.clear_requests()
    result = world.run(None, "claim", world.issue, "--role", "lead")
    assert result.code == 2
    assert "no agent identity: pass --as <agent> or set PAIRGATE_TEST_AGENT_ID" in result.err
    assert sandbox.requests() == []


def test_an_identity_outside_the_grammar_is_exit_2(world: Round) -> None:
    result = world.run("mallory", "claim", world.issue, "--role", "lead")
    assert result.code == 2
    assert "'mallory' is neither an identity of this deployment" in result.err


def test_as_wins_over_the_environment(world: Round, config: Config) -> None:
    assert (
        world.run("acme-lead", "claim", world.issue, "--role", "lead", "--as", "acme-solo").code
        == 0
    )
    assert world.ledger(config).holder == "acme-solo"


def test_an_unknown_issue_is_exit_2(world: Round) -> None:
    result = world.run("acme-lead", "claim", 999, "--role", "lead")
    assert result.code == 2 and "acme/tracker#999 does not exist" in result.err


def test_verbose_says_which_gitlab(world: Round, sandbox: Any) -> None:
    result = world.run("acme-lead", "claim", world.issue, "--role", "lead", "--verbose")
    assert f"GitLab API {sandbox.url}/api/v4 (from PAIRGATE_TEST_GITLAB_URL)" in result.err


@pytest.mark.slow
def test_eight_racing_claims_leave_one_holder_and_tell_every_loser(
    world: Round, sandbox: Any, config: Config
) -> None:
    # Hold every claim's POST back until all eight are held, so that all eight read the empty
    # ledger before any lands: a real race, not eight turns in a row.
    sandbox.fault(method="POST", path="/issues/\\d+/notes$", hold=8, count=8)
    procs = [
        subprocess.Popen(
            [*PAIRGATE, "claim", str(world.issue), "--role", "lead"],
            env={**clean_env(PYTHONPATH=str(ROOT)), **agent_env(sandbox, f"acme-lead-{i}")},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(8)
    ]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    ledger = world.ledger(config)
    winner = ledger.holder
    assert [code for code, _, _ in results].count(0) == 1
    assert winner and f"{winner} holds #{world.issue} as lead" in next(
        out for c, out, _ in results if c == 0
    )
    # A loser that read after the winner wrote is refused before writing; one that read before
    # writes a claim the fold voids. Both are told who won.
    told = (
        f"{winner} already holds the issue (note {ledger.holder_since})",
        f"is held by {winner} as lead (note {ledger.holder_since})",
    )
    for code, _, err in results:
        if code != 0:
            assert code == 1 and any(t in err for t in told), err
    assert len(ledger.trail) > 1  # several claims landed, and the fold chose one
    assert all(e.void == told[0] for e in ledger.trail if e.agent != winner)
    assert world.issue_state()["labels"] == ["agent::lead"]


@pytest.mark.slow
def test_a_claim_overtaken_between_its_read_and_its_write_is_told_it_has_no_effect(
    world: Round, sandbox: Any
) -> None:
    # Hold the first claim's POST back; once it is held (the fault is spent), a second claim
    # runs start to finish, so the first lands behind it and the fold voids it.
    sandbox.fault(method="POST", path="/issues/\\d+/notes$", delay_ms=2500)
    first = subprocess.Popen(
        [*PAIRGATE, "claim", str(world.issue), "--role", "lead"],
        env={**clean_env(PYTHONPATH=str(ROOT)), **agent_env(sandbox, "acme-lead")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while sandbox.control("GET", "faults") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert world.run("acme-lead-2", "claim", world.issue, "--role", "lead").code == 0
    code, _, err = first.wait(timeout=60), *first.communicate()
    assert code == 1, err
    assert (
        f"pairgate claim: your claim (note {int(world.notes()[1]['id'])}) has no effect: "
        f"acme-lead-2 already holds the issue (note {int(world.notes()[0]['id'])}). Another "
        f"writer got there first."
    ) in err
    assert f"See who holds #{world.issue} now: pairgate status {world.issue}" in err


def test_a_write_whose_answer_is_lost_is_not_repeated(world: Round, sandbox: Any) -> None:
    sandbox.fault(method="POST", path="/issues/\\d+/notes$", drop=True, after=True)
    result = world.run("acme-lead", "claim", world.issue, "--role", "lead")
    assert result.code == 0, result.err
    assert len(world.notes()) == 1


def test_a_write_that_failed_is_written_again(world: Round, sandbox: Any) -> None:
    sandbox.fault(method="POST", path="/issues/\\d+/notes$", status=500)
    result = world.run("acme-lead", "claim", world.issue, "--role", "lead")
    assert result.code == 0, result.err
    assert len(world.notes()) == 1
    posts = [r for r in sandbox.requests() if r["method"] == "POST" and "/notes" in r["path"]]
    assert [r["status"] for r in posts] == [500, 201]


def test_a_write_that_keeps_failing_gives_up_and_says_so(world: Round, sandbox: Any) -> None:
    sandbox.fault(method="POST", path="/issues/\\d+/notes$", status=503, count=5)
    result = world.run("acme-lead", "claim", world.issue, "--role", "lead")
    assert result.code == 2
    assert "the note is not on" in result.err and "nothing was recorded" in result.err
    assert world.notes() == []


def test_a_note_written_as_a_non_ledger_account_does_not_count(world: Round) -> None:
    result = world.run(
        "acme-lead",
        "claim",
        world.issue,
        "--role",
        "lead",
        **{"PAIRGATE_TEST_TASK_WRITE_TOKEN": world.sb.token("maintainer")},
    )
    assert result.code == 2
    assert "does not count (forged" in result.err and "ledger_author_user_ids" in result.err
