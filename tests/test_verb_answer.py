"""accept, decline and release."""

from __future__ import annotations

from typing import Any

import pytest

from pairgate.standalone.config import Config
from tests.kit.world import Round


@pytest.fixture
def world(sandbox: Any) -> Round:
    w = Round(sandbox)
    w.claim()
    return w


def test_accept_moves_ownership_and_the_label(world: Round, config: Config) -> None:
    world.offer()
    result = world.run("acme-review", "accept", world.issue)
    assert result.code == 0, result.err
    assert f"acme-review holds #{world.issue} as review" in result.out
    assert world.ledger(config).holder == "acme-review"
    assert world.issue_state()["labels"] == ["agent::review"]


@pytest.mark.parametrize("verb", ["accept", "decline"])
def test_nothing_to_answer(world: Round, verb: str) -> None:
    result = world.run("acme-review", verb, world.issue)
    assert result.code == 1
    assert f"pairgate {verb}: no offer is pending on #{world.issue}" in result.err
    assert f"pairgate status {world.issue}" in result.err


@pytest.mark.parametrize("verb", ["accept", "decline"])
def test_only_the_receiver_answers(world: Round, verb: str) -> None:
    world.offer()
    result = world.run("acme-review-2", verb, world.issue)
    assert result.code == 1
    assert "the pending offer is to acme-review, not to acme-review-2" in result.err
    assert result.err.endswith(
        f"Only acme-review can {verb} it; acme-review runs: pairgate {verb} {world.issue}\n"
    )


def test_accept_refuses_when_the_head_moved(world: Round, config: Config) -> None:
    world.offer()
    old = world.head
    offer = world.ledger(config).offer.note_id
    new = world.push()
    result = world.run("acme-review", "accept", world.issue)
    assert result.code == 1
    assert f"moved from {old[:12]} to {new[:12]} after the offer (note {offer})" in result.err
    fix = (
        f"pairgate handoff {world.issue} --to acme-review --role review --sha {new} "
        f"--mr {world.mr} --mr-project acme/app --supersede {offer}\n"
    )
    assert f"acme-lead offers again at the new head; acme-lead runs:\n  {fix}" in result.err
    assert world.ledger(config).holder == "acme-lead"


def test_accept_refuses_when_the_pipeline_failed_since(
    world: Round, sandbox: Any, config: Config
) -> None:
    world.offer()
    pipeline = sandbox.pipeline(
        "acme/app", world.branch, [{"name": "unit", "status": "failed"}], sha=world.head
    )
    result = world.run("acme-review", "accept", world.issue)
    assert result.code == 1
    offer = world.ledger(config).offer
    assert offer is not None
    assert result.err.endswith(
        f"pairgate accept: the offer cannot be accepted: acme/app!{world.mr}'s head pipeline "
        f"{pipeline['id']} failed (failed: unit). acme-lead fixes it, pushes and offers the new "
        f"head; acme-lead runs:\n  pairgate handoff {world.issue} --to acme-review --role review "
        f"--sha <new head> --mr {world.mr} --mr-project acme/app --supersede {offer.note_id}\n"
        f"or you decline: pairgate decline {world.issue}\n"
    ), result.err


def test_decline_returns_the_offer(world: Round, config: Config) -> None:
    world.offer()
    result = world.run("acme-review", "decline", world.issue)
    assert result.code == 0 and f"acme-lead keeps #{world.issue}" in result.out
    ledger = world.ledger(config)
    assert (ledger.holder, ledger.offer) == ("acme-lead", None)


def test_release_drops_the_issue_and_its_label(world: Round, config: Config) -> None:
    result = world.run("acme-lead", "release", world.issue)
    assert result.code == 0 and "nobody holds it now" in result.out
    assert world.ledger(config).holder is None and world.issue_state()["labels"] == []


def test_release_by_someone_else(world: Round) -> None:
    result = world.run("acme-review", "release", world.issue)
    assert result.code == 1
    assert f"pairgate release: acme-review does not hold #{world.issue}" in result.err


def test_release_with_an_offer_out(world: Round, config: Config) -> None:
    world.offer()
    offer = world.ledger(config).offer.note_id
    result = world.run("acme-lead", "release", world.issue)
    assert result.code == 1
    assert "your offer is pending (an offer in note" in result.err
    assert f"acme-review declines it; acme-review runs: pairgate decline {world.issue}\n" in (
        result.err
    )
    assert f"--supersede {offer}" in result.err


def test_a_writer_repairs_a_label_out_of_step(world: Round, sandbox: Any) -> None:
    path = f"/projects/acme%2Ftracker/issues/{world.issue}"
    sandbox.api("PUT", path, json={"labels": "agent::review,bug"})
    world.offer()  # a handoff does not move the label, so this is a repair
    assert sorted(world.issue_state()["labels"]) == ["agent::lead", "bug"]
    result = world.run("acme-review", "decline", world.issue)
    assert result.code == 0
    sandbox.api("PUT", path, json={"labels": "agent::lead,agent::review"})
    result = world.run(
        "acme-lead",
        "handoff",
        world.issue,
        "--to",
        "acme-review",
        "--role",
        "review",
        "--sha",
        world.head,
    )
    assert result.code == 0
    assert (
        f"repaired the role label of #{world.issue}: it was agent::lead, agent::review, "
        "the notes say agent::lead"
    ) in result.out
    assert world.issue_state()["labels"] == ["agent::lead"]
