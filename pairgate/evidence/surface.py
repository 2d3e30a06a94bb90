"""What the ledger's records say about mutation evidence: the fields a handoff and an approval
write, which offer a re-run answers, and the words every surface (status, board, waiting, the
verbs' own output) shows. Pure.

The records carry only what binds the evidence (its digest, the SHA, each mutant's hash and
verdict); the documents themselves stay with whoever ran them, and the offer's note shows the
table and the patches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pairgate.standalone.ledger import Event, Ledger

NO_EVIDENCE = "no mutation evidence"
NO_RERUN = "no re-run"
NO_CI_RERUN = "no CI re-run"
# What evidence from an agent's session is, said on every surface that shows some.
SELF_REPORTED = (
    "self-reported: run in the agent's session, its digest catches accidents, not forgery; "
    "the reviewer's re-run is the check"
)


def evidence_field(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The ``evidence`` field of a handoff record, from the evidence document it carries."""
    iso = doc["baseline"]["isolation"]
    return {
        "digest": doc["digest"],
        "sha": doc["sha"],
        "command": doc["command"],
        "isolation": iso["mode"],
        "network": iso["network"],
        "weak": bool(doc["weak"]),
        "mutants": [
            {
                "index": m["index"],
                "sha256": m["patch"]["sha256"],
                "files": list(m["patch"]["files"]),
                "verdict": m["verdict"],
            }
            for m in doc["mutants"]
        ],
    }


def event_at(ledger: Ledger, note_id: int | None) -> Event | None:
    """The trail's record in this note (one that took effect or not), or None."""
    if note_id is None:
        return None
    return next((e for e in ledger.trail if e.note_id == note_id), None)


def accepted_offer(ledger: Ledger) -> Event | None:
    """The handoff the holder accepted to hold the issue; None when the holder claimed it, or
    accepted an approval's offer back."""
    taken = event_at(ledger, ledger.holder_since)
    if taken is None or taken.event != "accept":
        return None
    offer = event_at(ledger, int(taken.record["offer"]))
    return offer if offer is not None and offer.event == "handoff" else None


def offer_under_review(ledger: Ledger) -> Event | None:
    """The offer a re-run answers: the pending offer when it is a handoff, else the handoff
    the holder accepted."""
    if ledger.offer is not None:
        pending = event_at(ledger, ledger.offer.note_id)
        return pending if pending is not None and pending.event == "handoff" else None
    return accepted_offer(ledger)


def record_field(ledger: Ledger, note_id: int, name: str) -> dict[str, Any] | None:
    """``evidence`` or ``rerun`` of the record in this note, as written (None when absent: a
    record written before the field existed, or one that wrote null)."""
    event = event_at(ledger, note_id)
    value = event.record.get(name) if event is not None else None
    return dict(value) if isinstance(value, Mapping) else None


def isolation_words(mode: str, network: str) -> str:
    """What held less than the sealed filesystem with no network ("" when that held)."""
    parts = []
    if mode != "bubblewrap":
        parts.append(f"{mode}: the filesystem was not sealed")
    if network != "blocked":
        parts.append(f"network {network}")
    return ", ".join(parts)


def evidence_summary(evidence: Mapping[str, Any] | None) -> str:
    """``3/3 killed``, with the isolation when it was a weaker mode, and ``weak`` when the
    exit-code rule judged it; or NO_EVIDENCE."""
    if evidence is None:
        return NO_EVIDENCE
    mutants = evidence["mutants"]
    killed = sum(m["verdict"] == "killed" for m in mutants)
    text = f"{killed}/{len(mutants)} killed"
    words = isolation_words(evidence["isolation"], evidence["network"])
    if evidence.get("weak"):
        words = ", ".join(w for w in ("WEAK: exit-code rule", words) if w)
    return f"{text} ({words})" if words else text


def rerun_summary(rerun: Mapping[str, Any] | None) -> str:
    """``mutant 2 killed, own killed``, with what held less; or NO_RERUN."""
    if rerun is None:
        return NO_RERUN
    offered, own = rerun["offered"], rerun["own"]
    text = f"mutant {offered['index']} {offered['verdict']}, own {own['verdict']}"
    # A re-run recorded before the isolation was recorded says nothing of it.
    words = (
        isolation_words(rerun["isolation"], rerun.get("network", "blocked"))
        if "isolation" in rerun
        else ""
    )
    if rerun.get("weak"):
        words = ", ".join(w for w in ("WEAK: exit-code rule", words) if w)
    return f"{text} ({words})" if words else text


def ci_words(field: Mapping[str, Any] | None) -> str:
    """``CI re-run: job 57, 2/2 killed`` (with what held less), or NO_CI_RERUN, of an
    approval's ``ci_rerun`` field (ci_result.py reads it from the job's log)."""
    if field is None:
        return NO_CI_RERUN
    text = f"CI re-run: job {field['job']}, {field['killed']}/{field['total']} killed"
    words = isolation_words(field["isolation"], field["network"])
    if field["weak"]:
        words = ", ".join(w for w in ("WEAK: exit-code rule", words) if w)
    return f"{text} ({words})" if words else text


def approved_offer(ledger: Ledger, approval_note: int) -> Event | None:
    """The handoff the approver held the issue by when it approved in ``approval_note``: the
    last accept that took effect before it, unless a claim took the issue afresh after."""
    held: int | None = None
    for event in ledger.trail:
        if event.note_id >= approval_note:
            break
        if event.void is None and event.event == "accept":
            held = int(event.record["offer"])
        elif event.void is None and event.event in ("claim", "release", "close"):
            held = None
    offer = event_at(ledger, held)
    return offer if offer is not None and offer.event == "handoff" else None


def offer_keys(ledger: Ledger, note_id: int, *, kind: str, role: str) -> dict[str, Any]:
    """An offer's ``evidence`` (the record's field, or null) and ``evidence_summary`` (null for
    what is not an offer to review and carries none: an approval's offer back, a hand-back)."""
    evidence = record_field(ledger, note_id, "evidence")
    wanted = kind == "handoff" and role == "review"
    summary = evidence_summary(evidence) if evidence is not None or wanted else None
    return {"evidence": evidence, "evidence_summary": summary}


def approval_keys(ledger: Ledger, note_id: int) -> dict[str, Any]:
    """An approval's ``approved_offer`` (the note of the handoff it answers, or null), that
    offer's ``evidence`` and ``evidence_summary``, and its own ``rerun`` and ``rerun_summary``."""
    offer = approved_offer(ledger, note_id)
    evidence = None if offer is None else record_field(ledger, offer.note_id, "evidence")
    rerun = record_field(ledger, note_id, "rerun")
    ci = record_field(ledger, note_id, "ci_rerun")
    return {
        "approved_offer": None if offer is None else offer.note_id,
        "evidence": evidence,
        "evidence_summary": evidence_summary(evidence),
        "rerun": rerun,
        "rerun_summary": rerun_summary(rerun),
        "ci_rerun": ci,
        "ci_rerun_summary": ci_words(ci),
    }


def approval_words(keys: Mapping[str, Any]) -> str:
    """``evidence: 3/3 killed; re-run: mutant 2 killed, own killed`` (or the absences)."""
    evidence = keys["evidence_summary"]
    rerun = keys["rerun_summary"]
    first = evidence if evidence == NO_EVIDENCE else f"evidence: {evidence}"
    words = f"{first}; {rerun if rerun == NO_RERUN else f're-run: {rerun}'}"
    # An approval written before CI re-runs, or with none finished, says nothing of them.
    return f"{words}; {keys['ci_rerun_summary']}" if keys.get("ci_rerun") else words
