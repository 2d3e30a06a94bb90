"""board and waiting: every labelled issue in one pass, and who owes the next move.

Both build a plain document first (the ``--json`` output, keys documented in
docs/agent-handoff-reference.md) and render the terminal table from it, so the two never say
different things.
"""

from __future__ import annotations

from typing import Any

from pairgate import output
from pairgate.commands.status import mr_doc, offer_doc
from pairgate.evidence.surface import (
    NO_EVIDENCE,
    NO_RERUN,
    SELF_REPORTED,
    approval_keys,
    approval_words,
)
from pairgate.output import Cell, Style
from pairgate.standalone.approvals import independence
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import ROLE_LABELS, Freeze, Ledger, MrRef
from pairgate.tracker import (
    BOARD_LABELS,
    CLOSED_LABEL,
    IssueRead,
    MrState,
    latest_approval_refs,
    pooled,
    read_labelled,
    read_mr_states,
)
from pairgate.views.approvals import approval_state, basis_doc, scope_for, with_cited
from pairgate.views.gate_runs import gate_run


def _when(ledger: Ledger, note_id: int | None, now: float) -> dict[str, Any]:
    """``at`` and ``age_seconds`` of a note on the trail."""
    at = next((e.created_at for e in ledger.trail if e.note_id == note_id), None)
    return {"at": at, "age_seconds": output.age_seconds(at, now)}


def freeze_doc(issue: int, window: Freeze, now: float) -> dict[str, Any]:
    return {
        "issue": issue,
        "note_id": window.note_id,
        "agent": window.agent,
        "scope": window.scope,
        "reason": window.reason,
        "minutes": window.minutes,
        "at": window.created_at,
        "until": output.iso(window.until),
        "live": window.live(now),
        "remaining_seconds": (
            max(0, int(window.until - now)) if window.live(now) and window.until else None
        ),
        "thawed_by": window.thawed_by,
    }


def issue_doc(
    read: IssueRead,
    mrs: dict[MrRef, MrState],
    now: float,
    *,
    config: Config,
    ledgers: dict[int, Ledger] | None = None,
) -> dict[str, Any]:
    """One issue's board entry. Pure. ``ledgers`` are the folds of the issues the approved
    merge requests cite (the independence rule judges across them); without them, this
    issue's own."""
    ledger = read.ledger or Ledger()
    labels = sorted(label for label in read.labels if label in ROLE_LABELS)
    approval = None
    if ledger.approvals:
        last = ledger.approvals[-1]
        found = mrs.get(last.mr, MrState(None, None))
        known = {**(ledgers or {}), read.iid: ledger}
        reasons = independence(
            read.iid, last, scope_for(read.iid, found.facts, known, config), config=config
        )
        status, why = approval_state(last, ledger, found.facts, reasons)
        approval = {
            "note_id": last.note_id,
            "approver": last.approver,
            "to": last.to,
            "mr": mr_doc(last.mr),
            "sha": last.sha,
            "mr_head": found.head,
            "status": status,
            "why": why,
            "self_approval": last.self_approval,
            "independent": not reasons,
            "independence_reasons": list(reasons),
            "withdrawn_by": last.withdrawn_by,
            **approval_keys(ledger, last.note_id),
            **_when(ledger, last.note_id, now),
        }
    offer = ledger.offer
    return {
        "issue": read.iid,
        "title": read.title,
        "state": read.state,
        "web_url": read.web_url,
        "holder": ledger.holder,
        "role": ledger.role,
        "holder_since": (
            {"note_id": ledger.holder_since, **_when(ledger, ledger.holder_since, now)}
            if ledger.holder_since
            else None
        ),
        "label": {
            "expected": ledger.label,
            "actual": labels,
            "in_step": labels == ([ledger.label] if ledger.label else []),
        },
        "offer": {**(offer_doc(offer, ledger) or {}), **_when(ledger, offer.note_id, now)}
        if offer
        else None,
        "approval": approval,
        "skipped": [
            {"note_id": s.note_id, "kind": s.kind, "reason": s.reason} for s in ledger.skipped
        ],
        "breaks": [{"note_id": b.note_id, "reason": b.reason} for b in ledger.breaks],
        "edited": list(ledger.edited),
        "unbound": list(ledger.unbound),
        "freezes": [freeze_doc(read.iid, w, now) for w in ledger.freezes],
        "error": read.error,
    }


def board_doc(
    config: Config,
    reads: list[IssueRead],
    mrs: dict[MrRef, MrState],
    now: float,
    closed: bool,
    ledgers: dict[int, Ledger] | None = None,
) -> dict[str, Any]:
    issues = [issue_doc(r, mrs, now, config=config, ledgers=ledgers) for r in reads]
    return {
        "tracker_project": config.tracker_project,
        "now": output.iso(now),
        "closed_included": closed,
        "live_freezes": [f for i in issues for f in i["freezes"] if f["live"]],
        "issues": issues,
        "independence_basis": basis_doc(config),
    }


def read_board(ctx: Context, config: Config, client: GitLab, *, closed: bool) -> dict[str, Any]:
    labels = (*BOARD_LABELS, CLOSED_LABEL) if closed else BOARD_LABELS
    reads = read_labelled(client, config, closed=closed, labels=labels)
    mrs = read_mr_states(client, latest_approval_refs(reads))
    known = {r.iid: r.ledger for r in reads if r.ledger is not None}
    ledgers = with_cited(client, config, known, (m.facts for m in mrs.values()))
    doc = board_doc(config, reads, mrs, ctx.now(), closed, ledgers)
    add_gate_runs(client, reads, doc)
    return doc


def add_gate_runs(client: GitLab, reads: list[IssueRead], doc: dict[str, Any]) -> None:
    """Each issue's latest approval, when it is at its head, gets ``gate``: has the head's
    pipeline run the gate since the approval (the gate_runs document); otherwise null."""
    ledgers = {r.iid: r.ledger for r in reads if r.ledger is not None}
    wanted = []
    for entry in doc["issues"]:
        approval = entry.get("approval")
        if approval:
            approval["gate"] = None
            ledger = ledgers.get(entry["issue"])
            if approval["status"] == "at-head" and ledger is not None:
                last = next(a for a in ledger.approvals if a.note_id == approval["note_id"])
                at = next((e.created_at for e in ledger.trail if e.note_id == last.note_id), None)
                wanted.append((approval, last, at))
    found = pooled(lambda w: gate_run(client, w[1].mr, w[1].sha, w[2]), wanted)
    for (approval, _, _), gate in zip(wanted, found, strict=True):
        approval["gate"] = gate


# -- the terminal -----------------------------------------------------------------------------


def _holder(doc: dict[str, Any]) -> Cell:
    if doc["error"]:
        return ("unreadable", "red")
    return f"{doc['holder']} ({doc['role']})" if doc["holder"] else ("nobody", "dim")


def _offer_cell(offer: dict[str, Any] | None) -> Cell:
    if offer is None:
        return ("-", "dim")
    age = output.duration(offer["age_seconds"] or 0)
    if offer["kind"] == "approve":
        return (f"approval back to {offer['to']}, {age}", "blue")
    text = f"-> {offer['to']} as {offer['role']}, {age}"
    summary = offer["evidence_summary"]
    if summary == NO_EVIDENCE:
        return (f"{text}, {NO_EVIDENCE}", "yellow")
    return (text + (f", evidence {summary}" if summary else ""), "blue")


_GATE_WORD = {
    "none": "gate not run",
    "no-gate-job": "no gate job",
    "pending": "gate pending",
    "passed": "gate passed",
    "failed": "gate FAILED",
    "unknown": "gate unknown",
}

_APPROVAL_COLOUR = {
    "at-head": "green",
    "stale": "yellow",
    "self": "red",
    "unknown": "yellow",
    "withdrawn": "yellow",
    "retargeted": "red",
    "base-moved": "red",
    "after-break": "red",
}


def _approval_cell(approval: dict[str, Any] | None) -> Cell:
    if approval is None:
        return ("-", "dim")
    status, who = approval["status"], approval["approver"]
    text = {
        "at-head": f"{who} @{output.short(approval['sha'])} at head",
        "stale": f"{who} @{output.short(approval['sha'])} STALE (head "
        f"{output.short(approval['mr_head'])})",
        "self": f"{who} @{output.short(approval['sha'])} SELF-APPROVAL",
        "unknown": f"{who} @{output.short(approval['sha'])} (head unknown)",
        "withdrawn": f"{who} @{output.short(approval['sha'])} WITHDRAWN",
        "retargeted": f"{who} @{output.short(approval['sha'])} RETARGETED",
        "base-moved": f"{who} @{output.short(approval['sha'])} BASE MOVED",
        "after-break": f"{who} @{output.short(approval['sha'])} AFTER A BREAK",
    }[status]
    gate = approval.get("gate")
    if gate:
        text += f", {_GATE_WORD[gate['state']]}"
        if gate["state"] != "passed":
            return (f"{text}; {approval_words(approval)}", "yellow")
    return (f"{text}; {approval_words(approval)}", _APPROVAL_COLOUR[status])


def _ledger_cell(doc: dict[str, Any]) -> Cell:
    if doc["error"]:
        return ("unreadable", "red")
    problems = []
    kinds: dict[str, int] = {}
    for s in doc["skipped"]:
        kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    problems += [f"{n} {kind}" for kind, n in sorted(kinds.items())]
    if doc["breaks"]:
        problems.append(f"{len(doc['breaks'])} break{'s' * (len(doc['breaks']) > 1)}")
    severe = bool(problems)
    if doc["edited"]:
        problems.append(f"{len(doc['edited'])} edited")
    if not doc["label"]["in_step"]:
        problems.append("label drift")
    if any(f["live"] for f in doc["freezes"]):
        problems.append("frozen")
    if not problems:
        return ("ok", "green")
    return (", ".join(problems), "red" if severe else "yellow")


def _shows_evidence(issue: dict[str, Any]) -> bool:
    offer, approval = issue["offer"], issue["approval"]
    offered = offer is not None and offer.get("evidence") is not None
    approved = approval is not None and (
        approval.get("evidence") is not None or approval.get("rerun_summary") != NO_RERUN
    )
    return offered or approved


def board_text(doc: dict[str, Any], style: Style) -> str:
    lines = []
    for f in doc["live_freezes"]:
        lines.append(
            style(f"FROZEN {f['scope']} by {f['agent']} until {f['until']}", "red")
            + f" (another {output.duration(f['remaining_seconds'] or 0)}): "
            + output.clip(f["reason"], 80)
            + f" (note {f['note_id']} on #{f['issue']})"
        )
    issues = doc["issues"]
    if not issues:
        lines.append(f"No labelled issues in {doc['tracker_project']}.")
        return "\n".join(lines)
    rows = []
    for i in issues:
        since = i["holder_since"]
        rows.append(
            [
                f"#{i['issue']}" + ("" if i["state"] == "opened" else f" ({i['state']})"),
                _holder(i),
                output.duration(since["age_seconds"])
                if since and since["age_seconds"] is not None
                else "-",
                _offer_cell(i["offer"]),
                _approval_cell(i["approval"]),
                _ledger_cell(i),
                output.clip(i["title"], 50),
            ]
        )
    headers = ["ISSUE", "HOLDER", "SINCE", "OFFER", "APPROVAL", "LEDGER", "TITLE"]
    lines.append(output.table(headers, rows, style))
    if any(_shows_evidence(i) for i in issues):
        lines.append(f"Mutation evidence and re-runs are {SELF_REPORTED}.")
    details = []
    for i in issues:
        n = i["issue"]
        if i["error"]:
            details.append(f"#{n}: could not be read: {i['error']}")
        details += [
            f"#{n}: note {s['note_id']} skipped ({s['kind']}): {s['reason']}" for s in i["skipped"]
        ]
        details += [
            f"#{n}: note {b['note_id']} breaks the chain: {b['reason']}" for b in i["breaks"]
        ]
        details += [f"#{n}: note {e} was edited after it was written" for e in i["edited"]]
        approval = i["approval"]
        if approval and approval["why"] and approval["status"] not in ("stale", "at-head"):
            details.append(f"#{n}: the approval in note {approval['note_id']}: {approval['why']}")
        if i["unbound"]:
            details.append(
                f"#{n}: {len(i['unbound'])} v1 record(s), written before records named their "
                f"issue: they cannot be checked for replay"
            )
        if not i["label"]["in_step"] and not i["error"]:
            actual = ", ".join(i["label"]["actual"]) or "none"
            details.append(
                f"#{n}: label {actual}, but the notes say {i['label']['expected'] or 'none'}"
            )
    if details:
        lines += ["", style("Ledger problems:", "bold"), *(f"  {d}" for d in details)]
    lines += ["", f"Approvals: {doc['independence_basis']['says']}."]
    return "\n".join(lines)


def board(*, ctx: Context, config: Config, json: bool, closed: bool, client: GitLab) -> int:
    doc = read_board(ctx, config, client, closed=closed)
    if json:
        output.dump(doc, ctx.stdout)
    else:
        print(board_text(doc, Style(output.use_colour(ctx.stdout, ctx.env))), file=ctx.stdout)
    unreadable = [i["issue"] for i in doc["issues"] if i["error"]]
    if unreadable:
        listed = ", ".join(f"#{n}" for n in unreadable)
        print(
            f"{config.cli} board: could not read {listed}; the board is incomplete", file=ctx.stderr
        )
        return Exit.ERROR
    return Exit.OK
