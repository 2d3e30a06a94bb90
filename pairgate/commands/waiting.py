"""waiting: who owes the next move on each labelled issue, and for how long.

The receiver of a pending offer owes an answer (a lead whose approval came back owes taking
it); otherwise the holder owes the next step; on an issue nobody holds, nobody owes anything.
The wait is counted from the record that made it that agent's move.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pairgate import output
from pairgate.output import Style
from pairgate.standalone.approvals import independence
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit
from pairgate.standalone.gitlab import GitLab
from pairgate.tracker import IssueRead, read_labelled, read_mr_states
from pairgate.views.approvals import scope_for, with_cited
from pairgate.views.next_move import next_move, pending_approval


def waiting_doc(
    reads: list[IssueRead],
    *,
    agent: str | None,
    now: float,
    verdicts: Mapping[int, tuple[str, ...]] | None = None,
    merged: Mapping[int, str] | None = None,
    cli: str = "pairgate",
) -> dict[str, Any]:
    """The waiting list, longest wait first (unknown waits last). Pure. ``verdicts``: issue ->
    why the approval whose offer back is pending there is not independent (empty: it is).
    ``merged``: issue -> its approved merge request (``acme/app!4``) when that has merged."""
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
        done = (merged or {}).get(read.iid)
        if done is not None:
            what = _after_merge(what, owes, done, read.iid, cli)
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


def _after_merge(what: str, owes: str, ref: str, issue: int, cli: str) -> str:
    """The move once the issue's merge request has merged: closing the issue, by name."""
    close = f"{cli} close {issue}, or {cli} sync --apply"
    if owes == "next-step":
        return f"close it: {ref} is merged ({close})"
    if owes == "take-approval":
        return f"{what}; {ref} is merged, so then close it ({cli} accept {issue}, then {close})"
    return f"{what}; {ref} is already merged"


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
        reads,
        agent=agent,
        now=ctx.now(),
        verdicts=approval_verdicts(client, config, reads),
        merged=merged_mrs(client, reads),
        cli=config.cli,
    )
    if json:
        output.dump(doc, ctx.stdout)
    else:
        print(waiting_text(doc, Style(output.use_colour(ctx.stdout, ctx.env))), file=ctx.stdout)
    if any(r["owes"] == "unreadable" for r in doc["waiting"]):
        print(f"{config.cli} waiting: some issues could not be read", file=ctx.stderr)
        return Exit.ERROR
    return Exit.OK


def merged_mrs(client: GitLab, reads: list[IssueRead]) -> dict[int, str]:
    """issue -> its latest approval's merge request, when GitLab says that has merged (one MR
    read per issue with an approval)."""
    latest = {r.iid: r.ledger.approvals[-1].mr for r in reads if r.ledger and r.ledger.approvals}
    states = read_mr_states(client, latest.values())
    return {
        iid: f"{ref.project}!{ref.iid}"
        for iid, ref in latest.items()
        if states[ref].state == "merged"
    }


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
