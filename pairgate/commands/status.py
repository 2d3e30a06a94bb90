"""status: holder, role, pending offer, approvals (at-head, stale or self), the merge requests
that cite the issue, and every record the fold skipped. ``--json`` keys are documented in
docs/agent-handoff-reference.md and do not change."""

from __future__ import annotations

import json as jsonlib
from typing import Any

from pairgate.evidence.surface import approval_keys, approval_words, offer_keys
from pairgate.merge_requests import citing_mrs
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import Approval, Ledger, Offer
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.reads import read_ledger
from pairgate.tracker import read_issue, read_mr
from pairgate.turn import damage


def approval_status(approval: Approval, head: str | None) -> str:
    """self | unknown (the head could not be read) | at-head | stale."""
    if approval.self_approval:
        return "self"
    if head is None:
        return "unknown"
    return "at-head" if head == approval.sha else "stale"


def mr_doc(ref: Any) -> dict[str, Any] | None:
    return {"project": ref.project, "iid": ref.iid} if ref else None


def offer_doc(offer: Offer | None, ledger: Ledger) -> dict[str, Any] | None:
    if offer is None:
        return None
    return {
        "note_id": offer.note_id,
        "kind": offer.event,
        "from": offer.sender,
        "to": offer.to,
        "role": offer.role,
        "sha": offer.sha,
        "mr": mr_doc(offer.mr),
        "reason": offer.reason,
        "supersedes": offer.supersedes,
        **offer_keys(ledger, offer.note_id, kind=offer.event, role=offer.role),
    }


def report(
    config: Config,
    issue: int,
    state: dict[str, Any],
    ledger: Ledger,
    heads: dict[tuple[str, int], str | None],
    mrs: list[MergeRequestFacts],
) -> dict[str, Any]:
    """The status of one issue as plain data (the --json document). Pure."""
    labels = sorted(label for label in state.get("labels", []) if label.startswith("agent::"))
    approvals = []
    for a in ledger.approvals:
        head = heads.get((a.mr.project, a.mr.iid))
        approvals.append(
            {
                "note_id": a.note_id,
                "approver": a.approver,
                "to": a.to,
                "mr": mr_doc(a.mr),
                "sha": a.sha,
                "mr_head": head,
                "status": approval_status(a, head),
                "self_approval": a.self_approval,
                "self_because": a.self_because,
                "not_covering": list(a.not_covering),
                "reason": a.reason,
                **approval_keys(ledger, a.note_id),
            }
        )
    return {
        "issue": issue,
        "project": config["tracker_project"],
        "state": state.get("state"),
        "holder": ledger.holder,
        "role": ledger.role,
        "holder_since": ledger.holder_since,
        "label": {
            "expected": ledger.label,
            "actual": labels,
            "in_step": labels == ([ledger.label] if ledger.label else []),
        },
        "offer": offer_doc(ledger.offer, ledger),
        "approvals": approvals,
        "merge_requests": [
            {
                "project": m.project,
                "iid": m.iid,
                "title": m.title,
                "state": m.state,
                "head": m.head_sha,
                "web_url": m.web_url,
            }
            for m in mrs
        ],
        "skipped": [
            {"note_id": s.note_id, "kind": s.kind, "reason": s.reason} for s in ledger.skipped
        ],
        "breaks": [
            {"note_id": b.note_id, "prev": b.prev, "reason": b.reason} for b in ledger.breaks
        ],
        "edited": list(ledger.edited),
        "concurrent": [list(ids) for ids in ledger.concurrent],
        "trail": [
            {
                "note_id": e.note_id,
                "kind": e.kind,
                "event": e.event,
                "agent": e.agent,
                "created_at": e.created_at,
                "void": e.void,
            }
            for e in ledger.trail
        ],
    }


def mr_heads(
    client: GitLab, ledger: Ledger, mrs: list[MergeRequestFacts], *, cli: str
) -> dict[tuple[str, int], str | None]:
    """The head of every MR an approval names: from the citing MRs already read, and one read
    for each approved MR that is not among them."""
    heads: dict[tuple[str, int], str | None] = {(m.project, m.iid): m.head_sha for m in mrs}
    for approval in ledger.approvals:
        key = (approval.mr.project, approval.mr.iid)
        if key not in heads:
            heads[key] = read_mr(client, *key, cli=cli).head_sha
    return heads


def _evidence_line(offer: dict[str, Any]) -> str:
    evidence = offer["evidence"]
    if evidence is None:
        return str(offer["evidence_summary"])
    return f"evidence: {offer['evidence_summary']} (digest {evidence['digest']})"


def render(doc: dict[str, Any], cli: str) -> str:
    issue = doc["issue"]
    lines = [f"{doc['project']}#{issue} ({doc['state']})"]
    if doc["holder"]:
        lines.append(f"holder: {doc['holder']} as {doc['role']} (since note {doc['holder_since']})")
    elif doc["state"] == "opened":
        lines.append(f"holder: nobody (take it: {cli} claim {issue} --role lead)")
    else:  # a claim of a closed issue is refused: do not suggest one
        lines.append("holder: nobody (the issue is closed)")
    label = doc["label"]
    actual = ", ".join(label["actual"]) or "none"
    lines.append(
        f"label: {actual}"
        + (
            ""
            if label["in_step"]
            else f" -- out of step: the notes say {label['expected'] or 'none'}"
        )
    )
    offer = doc["offer"]
    if offer:
        mr = f"{offer['mr']['project']}!{offer['mr']['iid']}" if offer["mr"] else "no MR"
        lines.append(
            f"pending offer: note {offer['note_id']}, {offer['from']} -> {offer['to']} as "
            f"{offer['role']}, {mr} at {offer['sha'][:12]}"
            + (" (an approval's offer back)" if offer["kind"] == "approve" else "")
            + f"; {offer['to']} runs: {cli} accept {issue}"
        )
        if offer["evidence_summary"] is not None:
            lines.append(f"  {_evidence_line(offer)}")
    else:
        lines.append("pending offer: none")
    lines.append("approvals:" if doc["approvals"] else "approvals: none")
    for a in doc["approvals"]:
        extra = f" ({a['self_because']})" if a["self_approval"] else ""
        if a["not_covering"]:
            extra += f"; not covering: {'; '.join(a['not_covering'])}"
        lines.append(
            f"  note {a['note_id']}: {a['approver']} -> {a['to']}, "
            f"{a['mr']['project']}!{a['mr']['iid']} at {a['sha'][:12]}: {a['status']}{extra}"
            f"; {approval_words(a)}"
        )
    lines.append(
        "merge requests citing it:"
        if doc["merge_requests"]
        else "merge requests citing it: none open"
    )
    for m in doc["merge_requests"]:
        lines.append(
            f"  {m['project']}!{m['iid']} ({m['state']}) head {str(m['head'])[:12]}: {m['title']}"
        )
    return "\n".join(lines)


def status(*, ctx: Context, config: Config, issue: int, json: bool, client: GitLab) -> int:
    state = read_issue(client, config, issue)
    ledger = read_ledger(client, config, issue)
    mrs = citing_mrs(client, config, issue)
    doc = report(config, issue, state, ledger, mr_heads(client, ledger, mrs, cli=config.cli), mrs)
    if json:
        print(jsonlib.dumps(doc, indent=2, ensure_ascii=False), file=ctx.stdout)
    else:
        print(render(doc, config.cli), file=ctx.stdout)
        problems = damage(ledger)
        print(
            "skipped and damaged records:" if problems else "skipped records: none", file=ctx.stdout
        )
        for line in problems:
            print(f"  {line}", file=ctx.stdout)
    return 0
