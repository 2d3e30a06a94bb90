"""Who owes the next move on an issue, read off its folded ledger: ``waiting``'s rule, and the
one the watcher routes events by. Pure.

The receiver of a pending offer owes an answer (a lead whose approval came back owes taking
it); otherwise the holder owes the next step; on an issue nobody holds, nobody owes anything.
"""

from __future__ import annotations

from pairgate.evidence.surface import NO_EVIDENCE, approval_keys, approval_words, offer_keys
from pairgate.standalone.ledger import Approval, Ledger


def next_move(ledger: Ledger) -> tuple[str | None, str, str, int | None]:
    """(who owes it, the ``owes`` code, what to do, the note it dates from). Pure."""
    offer = ledger.offer
    if offer is not None:
        if offer.event == "approve":
            what = f"take the approval {offer.sender} sent back (note {offer.note_id})"
            what += f"; {approval_words(approval_keys(ledger, offer.note_id))}"
            return offer.to, "take-approval", what, offer.note_id
        what = f"accept or decline {offer.sender}'s offer as {offer.role} (note {offer.note_id})"
        summary = offer_keys(ledger, offer.note_id, kind=offer.event, role=offer.role)
        if summary["evidence_summary"] == NO_EVIDENCE:
            what += f"; {NO_EVIDENCE}"
        elif summary["evidence_summary"]:
            what += f"; evidence {summary['evidence_summary']}"
        return offer.to, "answer-offer", what, offer.note_id
    last = next((e for e in reversed(ledger.trail) if e.void is None), None)
    since = last.note_id if last else None
    if ledger.holder is not None:
        return ledger.holder, "next-step", f"the next step as {ledger.role}", since
    released = last is not None and last.event in ("release", "close")
    what = "nothing: it was released" if released else "nothing: nobody holds it"
    return None, "nobody", what, since


def pending_approval(ledger: Ledger) -> Approval | None:
    """The approval whose offer back is the pending offer, if it is one."""
    offer = ledger.offer
    if offer is None or offer.event != "approve":
        return None
    return next((a for a in ledger.approvals if a.note_id == offer.note_id), None)
