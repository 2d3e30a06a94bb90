"""status: holder, role, pending offer, approvals (at-head, stale or self), the merge requests
that cite the issue, and every record the fold skipped. ``--json`` keys are documented in
docs/agent-handoff-reference.md and do not change."""

from __future__ import annotations

import json as jsonlib
from typing import Any

from pairgate.evidence.surface import SELF_REPORTED, approval_keys, approval_words, offer_keys
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import Ledger, Offer
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.reads import read_ledger
from pairgate.standalone.scope import (
    author_account,
    is_automation_author,
    load_automation_families,
    roster_path,
)
from pairgate.tracker import pooled, read_issue, read_mr
from pairgate.verbs.merge_requests import citing_mrs
from pairgate.views.approvals import approval_doc, basis_doc, cited_by, with_cited
from pairgate.views.damage import damage

MrKey = tuple[str, int]

# The gate runs' and the CI re-run's modules (views.gate_runs, evidence.ci_result) are imported
# by a status that has such a section to show: most have neither, and pay nothing for them.


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
    facts: dict[MrKey, MergeRequestFacts | None],
    mrs: list[MergeRequestFacts],
    ledgers: dict[int, Ledger] | None = None,
    authors: dict[MrKey, str] | None = None,
) -> dict[str, Any]:
    """The status of one issue as plain data (the --json document). Pure. ``facts`` holds every
    MR an approval names (None: it could not be read); ``ledgers`` the folds of the issues
    those MRs cite, for the independence rule (this issue's own is ``ledger``); ``authors`` who
    opened each citing MR that the gate lets out of scope on its citation alone."""
    labels = sorted(label for label in state.get("labels", []) if label.startswith("agent::"))
    scope = {**(ledgers or {}), issue: ledger}
    approvals = [
        {
            **approval_doc(issue, a, scope, facts.get((a.mr.project, a.mr.iid)), config),
            **approval_keys(ledger, a.note_id),
        }
        for a in ledger.approvals
    ]
    return {
        "issue": issue,
        "project": config.tracker_project,
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
        "independence_basis": basis_doc(config),
        "merge_requests": [
            {
                "project": m.project,
                "iid": m.iid,
                "title": m.title,
                "state": m.state,
                "head": m.head_sha,
                "web_url": m.web_url,
                "author": {"id": m.author_id, "username": m.author_username or None},
                "out_of_scope": (authors or {}).get((m.project, m.iid)),
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
        "unbound": list(ledger.unbound),
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


def mr_facts(client: GitLab, ledger: Ledger, *, cli: str) -> dict[MrKey, MergeRequestFacts | None]:
    """Every MR an approval names, read one by one: only GitLab's single-MR answer carries
    diff_refs, which an approval binds (a listing leaves them out)."""
    facts: dict[MrKey, MergeRequestFacts | None] = {}
    for approval in ledger.approvals:
        key = (approval.mr.project, approval.mr.iid)
        if key not in facts:
            facts[key] = read_mr(client, *key, cli=cli)
    return facts


def add_gate_runs(client: GitLab, ledger: Ledger, doc: dict[str, Any]) -> None:
    """Each approval at its MR's head gets ``gate``: the gate_runs document (has the head's
    pipeline run the gate since the approval?); the others get null."""
    wanted = [a for a in doc["approvals"] if a["status"] == "at-head"]
    gates: dict[int, Any] = {}
    if wanted:
        from pairgate.views.gate_runs import gate_run

        at = {e.note_id: e.created_at for e in ledger.trail}
        by_note = {a.note_id: a for a in ledger.approvals}
        found = pooled(
            lambda a: gate_run(client, by_note[a["note_id"]].mr, a["sha"], at.get(a["note_id"])),
            wanted,
        )
        gates = {a["note_id"]: gate for a, gate in zip(wanted, found, strict=True)}
    for approval in doc["approvals"]:
        approval["gate"] = gates.get(approval["note_id"])


def out_of_scope_authors(config: Config, mrs: list[MergeRequestFacts]) -> dict[MrKey, str]:
    """For each MR citing only the generic tracking issue: who opened it, and whether the
    automation roster says that account is automation (then, and only then, it is not gated)."""
    generic = config.generic_tracking_issue
    lone = [m for m in mrs if generic is not None and not cited_by(m, config)]
    if not lone:
        return {}
    families = load_automation_families(roster_path(config))
    return {
        (m.project, m.iid): (
            f"not gated: it cites only the generic tracking issue; its author "
            f"is {author_account(m, families, config)}"
            if is_automation_author(m, families, config)
            else f"gated and refused: it cites only the generic tracking issue, which exempts "
            f"unattended automation alone; its author is {author_account(m, families, config)}. "
            f"Cite the issue it works on in its description"
        )
        for m in lone
    }


def add_ci_rerun(client: GitLab, ledger: Ledger, doc: dict[str, Any]) -> None:
    """The pending offer, when it carries evidence, gets ``ci_rerun``: the CI job's re-run of
    it at its SHA (ci_result.read_ci_rerun's state document); otherwise null."""
    offer = doc["offer"]
    if offer is None:
        return
    evidence = offer.get("evidence")
    pending = ledger.offer
    if evidence is None or pending is None or pending.mr is None:
        offer["ci_rerun"] = None
        return
    from pairgate.evidence.ci_result import read_ci_rerun

    offer["ci_rerun"] = read_ci_rerun(
        client,
        pending.mr,
        sha=pending.sha,
        offer_note=pending.note_id,
        evidence_digest=str(evidence["digest"]),
    )


def _evidence_line(offer: dict[str, Any]) -> str:
    evidence = offer["evidence"]
    if evidence is None:
        return str(offer["evidence_summary"])
    return f"evidence: {offer['evidence_summary']} (digest {evidence['digest']}; {SELF_REPORTED})"


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
        if offer.get("ci_rerun"):
            from pairgate.evidence.ci_result import state_words

            lines.append(f"  {state_words(offer['ci_rerun'])}")
    else:
        lines.append("pending offer: none")
    lines.append("approvals:" if doc["approvals"] else "approvals: none")
    for a in doc["approvals"]:
        extra = f" ({a['why']})" if a["why"] and a["status"] != "stale" else ""
        if a["not_covering"]:
            extra += f"; not covering: {'; '.join(a['not_covering'])}"
        if a.get("gate"):
            from pairgate.views.gate_runs import gate_text

            extra += f"; gate since: {gate_text(a['gate'])}"
        lines.append(
            f"  note {a['note_id']}: {a['approver']} -> {a['to']}, "
            f"{a['mr']['project']}!{a['mr']['iid']} at {a['sha'][:12]}: {a['status']}{extra}"
            f"; {approval_words(a)}"
        )
        if a["status"] != "self" and a["independence_reasons"]:
            lines.append(f"    not independent: {'; '.join(a['independence_reasons'])}")
        if a["v1_note"]:
            lines.append(f"    {a['v1_note']}")
    if doc["approvals"]:
        lines.append(f"  ({doc['independence_basis']['says']})")
    lines.append(
        "merge requests citing it:"
        if doc["merge_requests"]
        else "merge requests citing it: none open"
    )
    for m in doc["merge_requests"]:
        lines.append(
            f"  {m['project']}!{m['iid']} ({m['state']}) head {str(m['head'])[:12]}: {m['title']}"
        )
        if m["out_of_scope"]:
            lines.append(f"    {m['out_of_scope']}")
    return "\n".join(lines)


def status(*, ctx: Context, config: Config, issue: int, json: bool, client: GitLab) -> int:
    state = read_issue(client, config, issue)
    ledger = read_ledger(client, config, issue)
    mrs = citing_mrs(client, config, issue)
    facts = mr_facts(client, ledger, cli=config.cli)
    ledgers = with_cited(client, config, {issue: ledger}, facts.values())
    authors = out_of_scope_authors(config, mrs)
    doc = report(config, issue, state, ledger, facts, mrs, ledgers, authors)
    add_gate_runs(client, ledger, doc)
    add_ci_rerun(client, ledger, doc)
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
