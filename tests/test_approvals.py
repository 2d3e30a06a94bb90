"""What an approval binds, as pure rules over folded ledgers: the fold's facts (holds, review
offers, sessions, replayed and v1 records, withdrawals), independence across issues, the chain,
and the diff an approval reviewed."""

from __future__ import annotations

import pytest

from pairgate.standalone.approvals import binding_problem, chain_problem, independence, judge
from pairgate.standalone.config import Config
from pairgate.standalone.ledger import Hold, Ledger, MrRef
from pairgate.standalone.records import marker, parse_marker, record_digest
from tests.kit.names import AGENTS_USER, BASE, LEAD, MR, REVIEW, SHA2, SOLO, mr_facts
from tests.kit.trail import Trail

REF = MrRef(*MR)


@pytest.fixture
def trail(config: Config) -> Trail:
    return Trail(config)


def round_to_approval(trail: Trail, lead: str = LEAD, review: str = REVIEW) -> Ledger:
    trail.claim(lead)
    offer = trail.handoff(lead, review)
    trail.accept(review, offer, lead)
    trail.approve(review, lead)
    return trail.fold()


def reasons(config: Config, ledgers: dict[int, Ledger], issue: int = 4, n: int = -1) -> tuple:
    return independence(issue, ledgers[issue].approvals[n], ledgers, config=config)


# -- the fold's facts ---------------------------------------------------------------------------


def test_the_fold_records_who_held_who_offered_and_which_sessions(trail: Trail) -> None:
    ledger = round_to_approval(trail)
    first, offer, accept, _ = (n.id for n in trail.notes)
    assert ledger.holds == (
        Hold(LEAD, "lead", first, AGENTS_USER),
        Hold(REVIEW, "review", accept, AGENTS_USER),
    )
    assert [(o.sender, o.note_id, o.mr) for o in ledger.review_offers] == [(LEAD, offer, REF)]
    assert ledger.sessions == (
        (LEAD, "session-acme-lead", first),
        (REVIEW, "session-acme-review", accept),
    )
    (approval,) = ledger.approvals
    assert (approval.session, approval.accepted_from, ledger.prev_note(approval.note_id)) == (
        "session-acme-review",
        LEAD,
        accept,
    )
    assert (approval.version, approval.target_branch, approval.base_sha) == (2, "main", BASE)


def test_a_record_naming_another_issue_is_skipped_as_replayed(config: Config) -> None:
    other = Trail(config, issue=9)
    other.claim(LEAD)
    copied = Trail(config, issue=4, first_id=200)
    copied.notes = [n._replace(id=n.id + 100) for n in other.notes]
    copied.prev = other.prev
    follow = copied.claim(REVIEW)  # a later record naming the replayed one as its prev
    ledger = copied.fold()
    assert ledger.holder == REVIEW and ledger.holds == (
        Hold(REVIEW, "lead", follow.id, AGENTS_USER),
    )
    (skip,) = ledger.skipped
    assert (skip.kind, skip.reason) == (
        "replayed",
        "it names acme/tracker#9, not this issue (#4): a record copied from another issue "
        "counts nowhere",
    )
    (brk,) = ledger.breaks
    assert brk.reason == f"its prev names note {skip.note_id}, which was skipped as replayed"


@pytest.mark.parametrize(
    "named", ["acme/other-tracker#4", "acme/tracker#40", "tracker#4", "garbage"]
)
def test_a_record_naming_anything_but_this_issue_is_replayed(config: Config, named: str) -> None:
    trail = Trail(config)
    trail.claim(LEAD, issue=named)
    (skip,) = trail.fold().skipped
    assert skip.kind == "replayed" and skip.reason.startswith(f"it names {named}, not this issue")


def test_the_issue_is_compared_as_gitlab_compares_paths(config: Config) -> None:
    trail = Trail(config)
    trail.claim(LEAD, issue="ACME/Tracker#4")
    assert trail.fold().holder == LEAD


def test_v1_records_are_read_and_named_as_unverifiable(trail: Trail) -> None:
    record = {
        "v": 1, "event": "claim", "agent": LEAD, "write_id": "1" * 32, "session": "s",
        "prev": None, "role": "lead",
    }  # fmt: skip
    record["digest"] = record_digest("ownership", record, "old claim")
    note = trail.note(f"old claim\n\n{marker('ownership', record)}\n")
    ledger = trail.fold()
    assert ledger.holder == LEAD and ledger.unbound == (note.id,) and not ledger.skipped
    assert ledger.unbound_notice == (
        f"notes {note.id} are v1 records, written before records named their issue: they "
        "cannot be checked for replay"
    )


def test_the_v1_notice_names_five_notes_and_counts_the_rest() -> None:
    assert Ledger().unbound_notice is None
    assert Ledger(unbound=tuple(range(1, 8))).unbound_notice == (
        "notes 1, 2, 3, 4, 5 and 2 more are v1 records, written before records named their "
        "issue: they cannot be checked for replay"
    )


def test_withdraw_voids_the_pending_offer_back_and_only_the_approver_may(trail: Trail) -> None:
    round_to_approval(trail)
    approve = trail.notes[-1]
    trail.withdraw(LEAD, approve)  # not the approver's
    assert (
        trail.fold().trail[-1].void
        == f"the approval in note {approve.id} is {REVIEW}'s to withdraw"
    )
    assert trail.fold().offer is not None
    withdrawal = trail.withdraw(REVIEW, approve, reason="the parser still drops a byte")
    ledger = trail.fold()
    (approval,) = ledger.approvals
    assert (approval.withdrawn_by, approval.withdraw_reason) == (
        withdrawal.id,
        "the parser still drops a byte",
    )
    assert ledger.offer is None and (ledger.holder, ledger.role) == (REVIEW, "review")
    trail.withdraw(REVIEW, approve)
    assert trail.fold().trail[-1].void == f"note {withdrawal.id} already withdrew it"
    trail.withdraw(REVIEW, withdrawal)
    assert (
        trail.fold().trail[-1].void
        == f"note {withdrawal.id} is not an approval recorded on this issue"
    )


def test_withdrawing_after_the_lead_took_it_back_voids_no_offer(trail: Trail) -> None:
    round_to_approval(trail)
    approve = trail.notes[-1]
    trail.accept(LEAD, approve, REVIEW, role="lead")
    trail.withdraw(REVIEW, approve)
    ledger = trail.fold()
    assert ledger.approvals[0].withdrawn_by and (ledger.holder, ledger.offer) == (LEAD, None)


# -- independence -------------------------------------------------------------------------------


def test_an_independent_reviewer_has_no_reason_against_it(trail: Trail, config: Config) -> None:
    assert reasons(config, {4: round_to_approval(trail)}) == ()


def test_a_former_lead_that_claims_as_review_is_not_independent(
    trail: Trail, config: Config
) -> None:
    first = trail.claim(LEAD)
    trail.release(LEAD)
    trail.claim(LEAD, role="review")
    approval = trail.approve(LEAD, "acme-review-2")
    assert reasons(config, {4: trail.fold()}) == (
        f"acme-lead held #4 as lead (note {first.id})",
        f"acme-lead is the only agent on the trail: nobody else offered it acme/app!7 for review "
        f"before its approval (note {approval.id})",
    )


def test_a_solo_identity_holding_as_review_is_a_hand(trail: Trail, config: Config) -> None:
    claim = trail.claim(SOLO, role="review")
    approval = trail.approve(SOLO, LEAD)
    assert reasons(config, {4: trail.fold()}) == (
        f"acme-solo held #4 as review under a -solo identity (note {claim.id})",
        f"acme-solo is the only agent on the trail: nobody else offered it acme/app!7 for review "
        f"before its approval (note {approval.id})",
    )


def test_the_solo_round_keeps_the_old_wording_first(trail: Trail, config: Config) -> None:
    claim = trail.claim(SOLO)
    offer = trail.handoff(SOLO, SOLO)
    accept = trail.accept(SOLO, offer, SOLO)
    approval = trail.approve(SOLO, SOLO)
    assert reasons(config, {4: trail.fold()}) == (
        "acme-solo offers the work back to itself",
        f"acme-solo held #4 as lead (note {claim.id})",
        f"acme-solo held #4 as review under a -solo identity (note {accept.id})",
        f"acme-solo offered acme/app!7 for review in #4 (note {offer.id})",
        f"acme-solo is the only agent on the trail: nobody else offered it acme/app!7 for review "
        f"before its approval (note {approval.id})",
    )
    trail.approve(SOLO, LEAD, supersedes=trail.notes[-1].id)  # back to the lead this time
    assert reasons(config, {4: trail.fold()})[0] == "acme-solo reviewed an offer it sent itself"


def test_role_swap_the_lead_accepts_as_review(trail: Trail, config: Config) -> None:
    claim = trail.claim(LEAD)
    offer = trail.handoff(LEAD, REVIEW)
    trail.accept(REVIEW, offer, LEAD)
    back = trail.handoff(REVIEW, LEAD)  # back as review
    trail.accept(LEAD, back, REVIEW)
    trail.approve(LEAD, REVIEW)
    assert reasons(config, {4: trail.fold()}) == (
        f"acme-lead held #4 as lead (note {claim.id})",
        f"acme-lead offered acme/app!7 for review in #4 (note {offer.id})",
    )


def test_laundering_through_a_second_cited_issue_is_caught(config: Config) -> None:
    first = Trail(config, issue=12, first_id=1000)
    lead = first.claim(LEAD)
    second = Trail(config, issue=13, first_id=1001)
    second.claim(LEAD, role="review")
    approval = second.approve(LEAD, REVIEW)
    ledgers = {12: first.fold(), 13: second.fold()}
    alone = (
        f"acme-lead is the only agent on the trail: nobody else offered it acme/app!7 for review "
        f"before its approval (note {approval.id})"
    )
    assert reasons(config, ledgers, issue=13) == (
        f"acme-lead held #12 as lead (note {lead.id})",
        alone,
    )
    # One issue alone cannot see the hand in #12; that nobody offered the work, it can.
    assert reasons(config, {13: ledgers[13]}, issue=13) == (alone,)


def test_a_lead_after_the_approval_had_no_hand_in_it(trail: Trail, config: Config) -> None:
    round_to_approval(trail)
    trail.accept(LEAD, trail.notes[-1], REVIEW, role="lead")
    trail.release(LEAD)
    trail.claim(REVIEW)  # the reviewer leads the next round; the approval came before
    assert reasons(config, {4: trail.fold()}, n=0) == ()


def test_two_names_in_one_session_are_one_agent(trail: Trail, config: Config) -> None:
    claim = trail.claim(LEAD, session="laptop-1")
    offer = trail.handoff(LEAD, REVIEW, session="laptop-1")
    accept = trail.accept(REVIEW, offer, LEAD, session="laptop-1")
    approval = trail.approve(REVIEW, LEAD, session="laptop-1")
    assert reasons(config, {4: trail.fold()}) == (
        f"acme-review writes in session laptop-1, as acme-lead does (#4, note {claim.id}), and "
        f"acme-lead held #4 as lead (note {claim.id})",
        f"acme-review writes in session laptop-1, as acme-lead does (#4, note {claim.id}), and "
        f"acme-lead offered acme/app!7 for review in #4 (note {offer.id})",
        f"acme-review accepted no offer of acme/app!7 for review from another agent in another "
        f"session before its approval (note {approval.id}): the offer it accepted in note "
        f"{accept.id}, from acme-lead, was written in its own session laptop-1",
    )


def test_an_offer_of_another_merge_request_is_no_hand_in_this_one(
    trail: Trail, config: Config
) -> None:
    trail.claim(LEAD)
    offer = trail.handoff(LEAD, REVIEW)  # the work, offered by its lead: the approval's ground
    trail.accept(REVIEW, offer, LEAD)
    trail.handoff(REVIEW, LEAD, mr=("acme/app", 99))
    trail.record("ownership", "decline", LEAD, offer=trail.notes[-1].id, **{"from": REVIEW})
    trail.approve(REVIEW, LEAD)
    assert reasons(config, {4: trail.fold()}) == ()


# -- the chain and the diff ---------------------------------------------------------------------


def test_a_break_after_what_the_approval_saw_voids_it_and_a_fresh_one_stands(
    trail: Trail, config: Config
) -> None:
    ledger = round_to_approval(trail)
    approve = trail.notes[-1]
    back = trail.accept(LEAD, approve, REVIEW, role="lead")
    trail.handoff(LEAD, REVIEW)
    trail.delete(back)
    ledger = trail.fold()
    problem = chain_problem(ledger.approvals[0], ledger)
    assert problem is not None and "broken at note" in problem
    assert f"after the last record its writer saw (note {approve.id - 1})" in problem
    # The reviewer still holds it (the accept back is gone): a fresh approval sees the break.
    trail.approve(REVIEW, LEAD, supersedes=approve.id)
    fresh = trail.fold()
    assert len(fresh.approvals) == 2 and chain_problem(fresh.approvals[-1], fresh) is None


def test_an_approval_that_is_itself_the_break_does_not_count(trail: Trail) -> None:
    trail.claim(REVIEW, role="review")
    trail.prev = "f" * 64  # it names a record that is not there
    trail.approve(REVIEW, LEAD)
    ledger = trail.fold()
    assert ledger.breaks[0].note_id == ledger.approvals[0].note_id
    assert chain_problem(ledger.approvals[0], ledger) is not None


def test_the_diff_an_approval_binds_both_ways(trail: Trail) -> None:
    approval = round_to_approval(trail).approvals[0]
    assert binding_problem(approval, mr_facts()) is None
    moved_start = mr_facts(start_sha="e" * 40)
    assert binding_problem(approval, moved_start) is None  # the target advanced: same change
    moved_base = mr_facts(base_sha="d" * 40)
    code, why = binding_problem(approval, moved_base) or ("", "")
    assert code == "base-moved" and f"merge base {BASE}" in why and "d" * 40 in why
    code, why = binding_problem(approval, mr_facts(target_branch="release")) or (
        "",
        "",
    )
    assert code == "retargeted" and "targeted main, and it now targets release" in why
    code, _ = binding_problem(approval, mr_facts(head_sha=SHA2)) or ("", "")
    assert code == "not-at-head"


def test_a_v1_approval_binds_the_head_only(trail: Trail) -> None:
    approval = round_to_approval(trail).approvals[0]._replace(version=1)
    assert binding_problem(approval, mr_facts(target_branch="x")) is None


# -- the gate's judgement, in order -------------------------------------------------------------


def test_judge_edited_withdrawn_and_an_emoji(trail: Trail, config: Config) -> None:
    ledger = round_to_approval(trail)
    approval = ledger.approvals[0]
    ledgers = {4: ledger}
    counts = judge(4, approval, mr_facts(), ledgers, edits={approval.note_id: None}, config=config)
    assert counts.code == "counts"
    edited = judge(
        4,
        approval,
        mr_facts(),
        ledgers,
        edits={approval.note_id: "2026-01-02T00:00:00Z"},
        config=config,
    )
    assert (edited.code, edited.why) == (
        "approval-edited",
        "GitLab reports its note as edited at 2026-01-02T00:00:00Z",
    )
    unknown = judge(4, approval, mr_facts(), ledgers, edits={}, config=config)
    assert unknown.code == "edit-unknown"
    # An emoji reaction moves updated_at only: REST's "edited" warning, never a voided approval.
    bumped = trail.notes[-1]._replace(updated_at="2026-01-01T05:00:00.000Z")
    trail.notes[-1] = bumped
    later = trail.fold()
    assert later.edited == (bumped.id,)
    assert (
        judge(
            4, later.approvals[0], mr_facts(), {4: later}, edits={bumped.id: None}, config=config
        ).code
        == "counts"
    )
    trail.withdraw(REVIEW, trail.notes[-1])
    gone = trail.fold()
    withdrawn = judge(4, gone.approvals[0], mr_facts(), {4: gone}, edits=None, config=config)
    assert withdrawn.code == "withdrawn" and withdrawn.why.startswith(f"{REVIEW} withdrew it")


def test_the_record_carries_what_it_binds(trail: Trail) -> None:
    round_to_approval(trail)
    _, record, _ = parse_marker(trail.notes[-1].body)
    assert (record["v"], record["issue"], record["target_branch"]) == (
        2,
        "acme/tracker#4",
        "main",
    )
