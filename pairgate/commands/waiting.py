"""waiting: who owes the next move on each labelled issue, and for how long.

The receiver of a pending offer owes an answer (a lead whose approval came back owes taking
it); otherwise the holder owes the next step; on an issue nobody holds, nobody owes anything.
The wait is counted from the record that made it that agent's move.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pairgate import output
from pairgate.approval_view import scope_for, with_cited
from pairgate.evidence.surface import NO_EVIDENCE, approval_keys, approval_words, offer_keys
from pairgate.output import Style
from pairgate.standalone.approvals import independence
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import Approval, Ledger
from pairgate.tracker import IssueRead, read_labelled, read_mr_states


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


def waiting_doc(
    reads: list[IssueRead],
    *,
    agent: str | None,
    now: float,
    verdicts: Mapping[int, tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """The waiting list, longest wait first (unknown waits last). Pure. ``verdicts``: issue ->
    why the approval whose offer back is pending there is not independent (empty: it is)."""
    rows: list[dict[str, Any]] = []
    for read in reads:
        if read.ledger is None:
            rows.append(
                {
                    "issue": read.iid,
                    "title": read.title,
                    "agent": None,
                    "owes": "unreadable",
                    "what": f"could not be read: {read.error}",
                    "note_id": None,
                    "since": None,
                    "age_seconds": None,
                    "independent": None,
                    "independence_reasons": [],
                }
            )
            continue
        who, owes, what, note_id = next_move(read.ledger)
        since = next((e.created_at for e in read.ledger.trail if e.note_id == note_id), None)
        approval = pending_approval(read.ledger)
        reasons: tuple[str, ...] = ()
        if approval is not None:
            reasons = (verdicts or {}).get(read.iid) or (
                (approval.self_because or "a self-approval",) if approval.self_approval else ()
            )
            if reasons:
                what += " -- a SELF-APPROVAL, not independent: no door counts it"
        rows.append(
            {
                "issue": read.iid,
                "title": read.title,
                "agent": who,
                "owes": owes,
                "what": what,
                "note_id": note_id,
                "since": since,
                "age_seconds": output.age_seconds(since, now),
                "independent": None if approval is None else not reasons,
                "independence_reasons": list(reasons),
            }
        )
    if agent is not None:
        rows = [r for r in rows if r["agent"] == agent or r["owes"] == "unreadable"]
    rows.sort(key=lambda r: (r["age_seconds"] is None, -(r["age_seconds"] or 0), r["issue"]))
    return {"now": output.iso(now), "agent": agent, "waiting": rows}


_OWES_COLOUR = {
    "answer-offer": "blue",
    "take-approval": "green",
    "nobody": "dim",
    "unreadable": "red",
}


def waiting_text(doc: dict[str, Any], style: Style) -> str:
    if not doc["waiting"]:
        who = f" on {doc['agent']}" if doc["agent"] else ""
        return f"Nothing is waiting{who}."
    rows = [
        [
            output.duration(r["age_seconds"]) if r["age_seconds"] is not None else "?",
            r["agent"] or ("nobody", "dim"),
            (r["what"], "red" if r["independent"] is False else _OWES_COLOUR.get(r["owes"])),
            f"#{r['issue']}",
            output.clip(r["title"], 50),
        ]
        for r in doc["waiting"]
    ]
    return output.table(["WAITING", "AGENT", "OWES", "ISSUE", "TITLE"], rows, style)


def waiting(*, ctx: Context, config: Config, agent: str | None, json: bool, client: GitLab) -> int:
    reads = read_labelled(client, config, closed=False)
    doc = waiting_doc(
        reads, agent=agent, now=ctx.now(), verdicts=approval_verdicts(client, config, reads)
    )
    if json:
        output.dump(doc, ctx.stdout)
    else:
        print(waiting_text(doc, Style(output.use_colour(ctx.stdout, ctx.env))), file=ctx.stdout)
    if any(r["owes"] == "unreadable" for r in doc["waiting"]):
        print(f"{config.cli} waiting: some issues could not be read", file=ctx.stderr)
        return Exit.ERROR
    return Exit.OK


def approval_verdicts(
    client: GitLab, config: Config, reads: list[IssueRead]
) -> dict[int, tuple[str, ...]]:
    """issue -> why the approval whose offer back is pending there is not independent, judged
    across every issue its merge request cites (one MR read per pending approval)."""
    pending = {
        r.iid: found
        for r in reads
        if r.ledger and (found := pending_approval(r.ledger)) is not None
    }
    if not pending:
        return {}
    states = read_mr_states(client, (a.mr for a in pending.values()))
    known = {r.iid: r.ledger for r in reads if r.ledger is not None}
    ledgers = with_cited(client, config, known, (m.facts for m in states.values()))
    return {
        iid: independence(
            iid, a, scope_for(iid, states[a.mr].facts, ledgers, config), config=config
        )
        for iid, a in pending.items()
    }
