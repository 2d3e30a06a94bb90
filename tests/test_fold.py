"""The fold: notes to state. Pure, so every case is a list of notes and an expected Ledger."""

from __future__ import annotations

import json

import pytest

from pairgate.standalone.config import Config
from pairgate.standalone.fold import fold, identity_pattern, is_finder
from pairgate.standalone.ledger import Ledger, MrRef, Note
from pairgate.standalone.records import compose_note
from tests.kit.names import LEAD, MAINTAINER, REVIEW, SHA, SHA2, SOLO, STAMP
from tests.kit.trail import Trail


@pytest.fixture
def trail(config: Config) -> Trail:
    return Trail(config)


def test_no_notes_no_holder(trail: Trail) -> None:
    assert trail.fold() == Ledger()


def test_the_round(trail: Trail) -> None:
    trail.claim(LEAD)
    assert (trail.fold().holder, trail.fold().label) == (LEAD, "agent::lead")
    offer = trail.handoff(LEAD, REVIEW)
    ledger = trail.fold()
    # A handoff is an offer: the sender still holds the issue, and the label still names it.
    assert (ledger.holder, ledger.role, ledger.offer.note_id) == (LEAD, "lead", offer.id)
    trail.accept(REVIEW, offer, LEAD)
    ledger = trail.fold()
    assert (ledger.holder, ledger.role, ledger.offer) == (REVIEW, "review", None)
    back = trail.approve(REVIEW, LEAD, not_covering=["docs"])
    ledger = trail.fold()
    (approval,) = ledger.approvals
    assert (approval.approver, approval.to, approval.sha, approval.mr) == (
        REVIEW,
        LEAD,
        SHA,
        MrRef("acme/app", 7),
    )
    assert not approval.self_approval and approval.not_covering == ("docs",)
    assert (ledger.holder, ledger.offer.note_id, ledger.offer.to, ledger.offer.role) == (
        REVIEW,
        back.id,
        LEAD,
        "lead",
    )
    trail.accept(LEAD, back, REVIEW, role="lead")
    ledger = trail.fold()
    assert (ledger.holder, ledger.role, ledger.offer) == (LEAD, "lead", None)
    assert not ledger.skipped and not ledger.breaks and not any(e.void for e in ledger.trail)
    assert ledger.names == {LEAD, REVIEW}


def test_the_offer_names_the_role_taken_not_the_accept(trail: Trail) -> None:
    trail.claim(LEAD)
    offer = trail.handoff(LEAD, REVIEW, role="review")
    trail.accept(REVIEW, offer, LEAD, role="lead")  # the accept's own role field says lead
    ledger = trail.fold()
    assert (ledger.holder, ledger.role, ledger.accepted_from) == (REVIEW, "review", LEAD)


def test_decline_returns_the_offer_and_the_sender_keeps_the_issue(trail: Trail) -> None:
    trail.claim(LEAD)
    offer = trail.handoff(LEAD, REVIEW)
    trail.decline(REVIEW, offer, LEAD)
    ledger = trail.fold()
    assert (ledger.holder, ledger.offer) == (LEAD, None)


def test_release_drops_the_issue_but_not_while_an_offer_is_pending(trail: Trail) -> None:
    trail.claim(LEAD)
    offer = trail.handoff(LEAD, REVIEW)
    trail.release(LEAD)
    ledger = trail.fold()
    assert (
        ledger.holder == LEAD and ledger.trail[-1].void == f"an offer is pending (note {offer.id})"
    )
    trail.decline(REVIEW, offer, LEAD)
    trail.release(LEAD)
    assert (trail.fold().holder, trail.fold().label) == (None, None)


def test_only_the_receiver_accepts_and_only_the_pending_offer(trail: Trail) -> None:
    trail.claim(LEAD)
    offer = trail.handoff(LEAD, REVIEW)
    trail.accept("acme-review-2", offer, LEAD)
    assert trail.fold().trail[-1].void == f"the offer is to {REVIEW}, not acme-review-2"
    trail.decline(REVIEW, offer, LEAD)
    trail.accept(REVIEW, offer, LEAD)
    void = trail.fold().trail[-1].void
    assert void == f"note {offer.id} is not the pending offer (no offer is pending)"
    assert trail.fold().holder == LEAD


def test_one_live_offer_and_supersede(trail: Trail) -> None:
    trail.claim(LEAD)
    first = trail.handoff(LEAD, REVIEW)
    trail.handoff(LEAD, "acme-review-2")
    ledger = trail.fold()
    assert ledger.offer.note_id == first.id
    assert ledger.trail[-1].void == f"an offer is already pending (note {first.id})"
    trail.handoff(LEAD, "acme-review-2", supersedes=first.id + 99)
    assert trail.fold().offer.note_id == first.id
    second = trail.handoff(LEAD, "acme-review-2", supersedes=first.id)
    ledger = trail.fold()
    assert (ledger.offer.note_id, ledger.offer.supersedes) == (second.id, first.id)
    trail.accept(REVIEW, first, LEAD)  # the superseded offer can no longer be taken
    assert trail.fold().holder == LEAD


def test_supersede_without_a_pending_offer_is_void(trail: Trail) -> None:
    trail.claim(LEAD)
    trail.handoff(LEAD, REVIEW, supersedes=5)
    ledger = trail.fold()
    assert ledger.offer is None
    assert ledger.trail[-1].void == "it supersedes note 5, which is not a pending offer"


def test_eight_racing_claims_leave_the_earliest(trail: Trail) -> None:
    claims = [trail.claim(f"acme-lead-{i}", prev=None) for i in range(8)]
    ledger = trail.fold()
    assert ledger.holder == "acme-lead-0" and ledger.holder_since == claims[0].id
    losers = [e for e in ledger.trail if e.void]
    assert len(losers) == 7
    assert {e.void for e in losers} == {
        f"acme-lead-0 already holds the issue (note {claims[0].id})"
    }
    # Eight writers that saw the same (empty) ledger are concurrent, not a broken chain.
    assert not ledger.breaks and ledger.concurrent == (tuple(c.id for c in claims),)


def test_notes_are_folded_in_id_order(trail: Trail) -> None:
    a = trail.claim(LEAD, prev=None)
    b = trail.claim(REVIEW, prev=None)
    ledger = fold(list(reversed(trail.notes)), config=trail.config, issue=trail.issue)
    assert ledger.holder == LEAD and [e.note_id for e in ledger.trail] == [a.id, b.id]


def test_a_finder_never_claims(trail: Trail) -> None:
    trail.claim("acme-finder-3")
    ledger = trail.fold()
    assert ledger.holder is None and ledger.trail[0].void == "a finder never claims"


def test_self_approval_by_offering_back_to_itself(trail: Trail) -> None:
    trail.claim(REVIEW, role="review")
    trail.approve(REVIEW, REVIEW)
    (approval,) = trail.fold().approvals
    assert (
        approval.self_approval
        and approval.self_because == f"{REVIEW} offers the work back to itself"
    )


def test_self_approval_by_reviewing_its_own_offer(trail: Trail) -> None:
    trail.claim(SOLO)
    offer = trail.handoff(SOLO, SOLO)
    trail.accept(SOLO, offer, SOLO)
    trail.approve(SOLO, LEAD)
    (approval,) = trail.fold().approvals
    assert approval.self_approval
    assert approval.self_because == f"{SOLO} reviewed an offer it sent itself"


def test_only_a_review_holder_approves(trail: Trail) -> None:
    trail.claim(LEAD)
    trail.approve(LEAD, REVIEW)
    ledger = trail.fold()
    assert ledger.approvals == () and "only a review approves" in ledger.trail[-1].void
    trail.approve(REVIEW, LEAD)
    assert trail.fold().approvals == ()


def test_approve_while_an_offer_is_pending_needs_supersede(trail: Trail) -> None:
    trail.claim(REVIEW, role="review")
    first = trail.approve(REVIEW, LEAD)
    trail.approve(REVIEW, LEAD, sha=SHA2)
    assert len(trail.fold().approvals) == 1
    trail.approve(REVIEW, LEAD, sha=SHA2, supersedes=first.id)
    ledger = trail.fold()
    assert [a.sha for a in ledger.approvals] == [SHA, SHA2]
    assert ledger.offer.supersedes == first.id


def test_a_marker_by_a_non_ledger_author_is_forged(trail: Trail) -> None:
    trail.claim(LEAD, author=MAINTAINER)
    ledger = trail.fold()
    assert ledger.holder is None
    (skip,) = ledger.skipped
    assert (skip.kind, skip.reason) == (
        "forged",
        f"a marker in a note by user{MAINTAINER} (user {MAINTAINER}), not a ledger author",
    )


def test_system_notes_and_plain_comments_are_not_records(trail: Trail) -> None:
    trail.note("mentioned in merge request acme/app!7", system=True)
    trail.note('changed <!-- mochi-task:ownership {"event":"claim"} -->', system=True)
    trail.note("LGTM, see mochi-task docs", author=MAINTAINER)
    assert trail.fold() == Ledger()


def test_an_edited_record_is_tampered_and_reported_as_edited(trail: Trail) -> None:
    claim = trail.claim(LEAD)
    trail.handoff(LEAD, REVIEW)
    trail.edit(claim, claim.body.replace("claim", "steal", 1))
    ledger = trail.fold()
    assert ledger.edited == (claim.id,)
    assert [(s.note_id, s.kind) for s in ledger.skipped] == [(claim.id, "tampered")]
    (brk,) = ledger.breaks
    assert brk.reason == f"its prev names note {claim.id}, which was skipped as tampered"


def test_an_edit_that_keeps_the_content_is_only_a_warning(trail: Trail) -> None:
    claim = trail.claim(LEAD)
    trail.edit(claim, claim.body + "\n")
    ledger = trail.fold()
    assert ledger.edited == (claim.id,) and ledger.skipped == () and ledger.holder == LEAD


def test_a_tampered_approval_never_counts(trail: Trail) -> None:
    trail.claim(REVIEW, role="review")
    approve = trail.approve(REVIEW, LEAD)
    forged = approve.body.replace(SHA, SHA2)  # point the approval at another commit
    trail.edit(approve, forged)
    ledger = trail.fold()
    assert ledger.approvals == () and ledger.skipped[0].kind == "tampered"


def test_a_deleted_note_breaks_the_chain(trail: Trail) -> None:
    trail.claim(LEAD)
    offer = trail.handoff(LEAD, REVIEW)
    accept = trail.accept(REVIEW, offer, LEAD)
    trail.delete(offer)
    ledger = trail.fold()
    (brk,) = ledger.breaks
    assert brk.note_id == accept.id
    assert (
        brk.reason == "its prev names no earlier record: an earlier note was deleted or rewritten"
    )


def test_malformed_and_schema_invalid_records_are_skipped_with_a_reason(trail: Trail) -> None:
    bad_json = trail.note("x\n<!-- mochi-task:ownership {oops} -->")
    _, record = compose_note(
        "ownership",
        {
            "event": "claim",
            "agent": LEAD,
            "write_id": "1" * 32,
            "session": "s",
            "prev": None,
            "role": "lead",
            "issue": f"acme/tracker#{trail.issue}",
        },
        "x",
    )
    invalid = trail.note(
        "x\n<!-- mochi-task:ownership " + json.dumps({**record, "role": "boss"}) + " -->"
    )
    ledger = trail.fold()
    assert ledger.holder is None
    assert [(s.note_id, s.kind) for s in ledger.skipped] == [
        (bad_json.id, "malformed"),
        (invalid.id, "malformed"),
    ]
    assert "does not parse" in ledger.skipped[0].reason
    assert ledger.skipped[1].reason.startswith("schema: role: 'boss' is not one of")


def test_a_second_note_with_a_seen_write_id_is_ignored(trail: Trail) -> None:
    first = trail.claim(LEAD, write_id="f" * 32)
    trail.notes.append(Note(first.id + 1, 10, "agents", first.body, STAMP, STAMP))
    ledger = trail.fold()
    assert ledger.holder == LEAD and len(ledger.trail) == 1
    assert ledger.skipped[0].kind == "duplicate"
    assert ledger.written("f" * 32).note_id == first.id


def test_head_is_the_latest_digest(trail: Trail) -> None:
    trail.claim(LEAD)
    assert trail.fold().head == trail.prev


def test_close_clears_the_holder_unless_an_offer_is_pending(trail: Trail) -> None:
    trail.claim(LEAD)
    offer = trail.handoff(LEAD, REVIEW)
    trail.record("ownership", "close", LEAD)
    assert trail.fold().trail[-1].void == f"an offer is pending (note {offer.id})"
    trail.decline(REVIEW, offer, LEAD)
    trail.record("ownership", "close", LEAD)
    assert trail.fold().holder is None


def test_a_close_that_did_not_see_a_racing_claim_closes_nothing(trail: Trail) -> None:
    # Both writers read an unheld issue (prev None); the claim lands first. The close acts only
    # on the state its writer saw, so it is void and the claim stands.
    claim = trail.claim(LEAD, prev=None)
    trail.record("ownership", "close", REVIEW, prev=None)
    ledger = trail.fold()
    assert ledger.holder == LEAD
    assert ledger.trail[-1].void == (
        f"its writer had not seen note {claim.id}: a close acts only on the state it saw"
    )


def test_a_close_that_saw_the_latest_record_applies(trail: Trail) -> None:
    trail.claim(LEAD)
    trail.release(LEAD)
    trail.record("ownership", "close", REVIEW)
    assert trail.fold().trail[-1].void is None


@pytest.mark.parametrize(
    ("name", "grammar", "finder"),
    [
        ("acme-lead", True, False),
        ("acme-review-42", True, False),
        ("acme-finder", True, True),
        ("acme-finder-7", True, True),
        ("acme-boss", False, False),
        ("other-lead", False, False),
        ("acme-lead-", False, False),
    ],
)
def test_the_identity_grammar(config: Config, name: str, grammar: bool, finder: bool) -> None:
    assert bool(identity_pattern(config).match(name)) is grammar
    assert is_finder(name, config) is finder
