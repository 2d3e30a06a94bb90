"""Every remedy names exactly what to run next, and who runs it: a pending offer is answered or
replaced, never offered over, and no command carries another agent's --as."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.kit.names import LEAD, REVIEW
from tests.kit.world import Round


@pytest.fixture
def offered(sandbox: Any) -> Round:
    """The lead has offered the head for review; the reviewer has not answered."""
    return Round(sandbox).claim().offer()


def offer_note(w: Round) -> int:
    return int(w.ledger_notes()[-1]["id"])


def merge_check(w: Round) -> Any:
    return w.run(LEAD, "merge-check", "--mr", w.mr, "--mr-project", w.project)


def test_merge_check_names_the_pending_offer_and_who_answers_it(offered: Round) -> None:
    w, note = offered, offer_note(offered)
    result = merge_check(w)
    assert result.code == 1
    assert result.err.endswith(
        f"An offer is pending on #{w.issue}: note {note}, {LEAD} to {REVIEW} as review at "
        f"{w.head[:12]}; no pipeline has run at its head. {REVIEW} takes it; {REVIEW} runs: "
        f"pairgate accept {w.issue}; then approves the head: pairgate approve {w.issue} --mr "
        f"{w.mr} --mr-project {w.project} --sha {w.head} --to {LEAD}\n"
    )
    assert "--as" not in result.err


def test_an_offer_of_an_older_head_is_replaced_with_supersede(offered: Round) -> None:
    w, note, offered_head = offered, offer_note(offered), offered.head
    w.push()
    w.pipeline(("test", "running"))
    result = merge_check(w)
    assert result.code == 1
    assert (
        f"An offer is pending on #{w.issue}: note {note}, {LEAD} to {REVIEW} as review at "
        f"{offered_head[:12]}; its head pipeline is running. It does not offer this head for "
        f"review, so {LEAD} replaces it; {LEAD} runs: pairgate handoff {w.issue} --to "
        f"<reviewer> --role review --sha {w.head} --mr {w.mr} --mr-project {w.project} "
        f"--supersede {note};"
    ) in result.err
    assert "--as" not in result.err


def test_offering_over_a_pending_offer_says_who_answers_it_without_as(offered: Round) -> None:
    w, note = offered, offer_note(offered)
    result = w.run(
        LEAD,
        *("handoff", w.issue, "--to", REVIEW, "--role", "review", "--sha", w.head),
        *("--mr", w.mr, "--mr-project", w.project),
    )
    assert result.code == 1
    assert result.err.endswith(
        f"Or let {REVIEW} answer it; {REVIEW} runs: pairgate accept {w.issue} (or pairgate "
        f"decline {w.issue})\n"
    )
    assert f"--supersede {note}" in result.err
    assert "--as" not in result.err


def test_answering_someone_elses_offer_says_who_runs_it(offered: Round) -> None:
    result = offered.run(LEAD, "accept", offered.issue)
    assert result.code == 1
    assert result.err.endswith(
        f"Only {REVIEW} can accept it; {REVIEW} runs: pairgate accept {offered.issue}\n"
    )


def test_merge_check_on_a_merged_mr_says_so_and_what_is_left(sandbox: Any) -> None:
    w = Round(sandbox).approved()
    head = w.head
    w.merge()
    doc = json.loads(
        w.run(LEAD, "merge-check", "--mr", w.mr, "--mr-project", w.project, "--json").out
    )
    assert (doc["allowed"], doc["verdict"]) == (False, "merged")
    result = merge_check(w)
    assert result.code == 1
    assert result.err.endswith(
        f"acme/app!{w.mr} is already merged: nothing is left to merge. It merged with "
        f"{REVIEW}'s approval of {head} (acme/tracker#{w.issue}, note {doc['approval_note']}). "
        f"What is left is the ledger: its holder closes each cited issue (pairgate close "
        f"{w.issue}), or pairgate sync --apply closes every issue whose merge request merged "
        f"at an approved head; pairgate waiting says who owes the move.\n"
    )
    assert "may merge" not in result.err


def test_waiting_after_the_merge_names_close_and_sync(sandbox: Any) -> None:
    w = Round(sandbox).claim().offer().accept(REVIEW).approve()
    w.merge()
    (row,) = json.loads(w.run(None, "waiting", "--json").out)["waiting"]
    assert row["agent"] == LEAD
    assert row["what"].endswith(
        f"; acme/app!{w.mr} is merged, so then close it (pairgate accept {w.issue}, then "
        f"pairgate close {w.issue}, or pairgate sync --apply)"
    )
    w.accept(LEAD)
    (row,) = json.loads(w.run(None, "waiting", "--json").out)["waiting"]
    assert row["what"] == (
        f"close it: acme/app!{w.mr} is merged (pairgate close {w.issue}, or pairgate sync --apply)"
    )
    assert w.run(LEAD, "close", w.issue).code == 0  # the remedy runs as printed
