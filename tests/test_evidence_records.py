"""The ledger's side of mutation evidence: the handoff's ``evidence`` and the approval's
``rerun`` fields (optional for reading, so records written before them still count), which offer
a re-run answers, the words every surface shows, and the re-run document's checks. Pure."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pairgate.evidence.rerun import check_rerun, rerun_document, rerun_field, verify_for_approve
from pairgate.evidence.schema import evidence_digest
from pairgate.evidence.surface import (
    accepted_offer,
    approval_keys,
    approval_words,
    approved_offer,
    ci_words,
    evidence_summary,
    offer_keys,
    offer_under_review,
    rerun_summary,
)
from pairgate.standalone.config import Config
from pairgate.standalone.ledger import Event
from pairgate.standalone.records import MalformedRecord, compose_note, parse_marker
from tests.kit.names import SHA, SHA2
from tests.kit.trail import Trail

H1, H2 = "1" * 64, "2" * 64
EVIDENCE = {
    "digest": "sha256:" + "e" * 64,
    "sha": SHA,
    "command": "pytest -q",
    "isolation": "bubblewrap",
    "network": "blocked",
    "weak": False,
    "mutants": [
        {"index": 1, "sha256": H1, "files": ["calc.py"], "verdict": "killed"},
        {"index": 2, "sha256": H2, "files": ["calc.py"], "verdict": "killed"},
    ],
}
RERUN = {
    "offer_note": 101,
    "evidence_digest": EVIDENCE["digest"],
    "sha": SHA,
    "offered": {"index": 2, "sha256": H2, "verdict": "killed"},
    "own": {"sha256": "3" * 64, "files": ["calc.py"], "verdict": "survived"},
    "digest": "sha256:" + "f" * 64,
}


def note_of(event: Event | None) -> int:
    assert event is not None
    return event.note_id


@pytest.fixture
def trail(config: Config) -> Trail:
    return Trail(config)


# -- the record fields ----------------------------------------------------------------------


def test_records_written_before_the_fields_still_read(trail: Trail) -> None:
    """A handoff without ``evidence`` and an approval without ``rerun`` are as valid as ever."""
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review")
    trail.accept("acme-review", offer, "acme-lead")
    trail.approve("acme-review", "acme-lead")
    ledger = trail.fold()
    assert ledger.skipped == () and len(ledger.approvals) == 1
    assert "evidence" not in ledger.trail[1].record and "rerun" not in ledger.trail[3].record
    keys = approval_keys(ledger, ledger.approvals[0].note_id)
    assert keys == {
        "approved_offer": offer.id,
        "evidence": None,
        "evidence_summary": "no mutation evidence",
        "rerun": None,
        "rerun_summary": "no re-run",
        "ci_rerun": None,
        "ci_rerun_summary": "no CI re-run",
    }


CI = {
    "job": 57,
    "pipeline": 901,
    "sha": SHA,
    "offer_note": 101,
    "evidence_digest": EVIDENCE["digest"],
    "status": "pass",
    "killed": 2,
    "total": 2,
    "isolation": "bubblewrap",
    "network": "blocked",
    "weak": False,
}


def test_the_fields_are_written_and_read_back(trail: Trail) -> None:
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review", evidence=EVIDENCE)
    trail.accept("acme-review", offer, "acme-lead")
    approval = trail.approve("acme-review", "acme-lead", rerun={**RERUN, "offer_note": offer.id})
    ledger = trail.fold()
    assert ledger.skipped == ()
    keys = approval_keys(ledger, approval.id)
    assert keys["evidence"] == EVIDENCE and keys["rerun"]["offer_note"] == offer.id
    assert approval_words(keys) == "evidence: 2/2 killed; re-run: mutant 2 killed, own survived"
    # the CI re-run, when one had finished, and its words
    ci = {**CI, "offer_note": offer.id}
    again = trail.approve("acme-review", "acme-lead", rerun=None, ci_rerun=ci, supersedes=None)
    keys = approval_keys(trail.fold(), again.id)
    assert keys["ci_rerun"] == ci and keys["ci_rerun_summary"] == "CI re-run: job 57, 2/2 killed"
    assert approval_words(keys).endswith("; no re-run; CI re-run: job 57, 2/2 killed")
    weaker = {**ci, "isolation": "env-only", "network": "not-blocked", "weak": True}
    assert approval_words({**keys, "ci_rerun": weaker, "ci_rerun_summary": ci_words(weaker)}) == (
        "evidence: 2/2 killed; no re-run; CI re-run: job 57, 2/2 killed (WEAK: exit-code rule, "
        "env-only: the filesystem was not sealed, network not-blocked)"
    )


@pytest.mark.parametrize(
    ("kind", "event", "field", "value", "said"),
    [
        ("ownership", "handoff", "evidence", {**EVIDENCE, "extra": 1}, "evidence"),
        ("ownership", "handoff", "evidence", {**EVIDENCE, "mutants": []}, "evidence"),
        ("ownership", "handoff", "evidence", {**EVIDENCE, "digest": "e" * 64}, "evidence"),
        ("ownership", "handoff", "evidence", "3/3 killed", "evidence"),
        ("approval", "approve", "rerun", {**RERUN, "own": None}, "rerun"),
        ("approval", "approve", "rerun", {**RERUN, "sha": "abc"}, "rerun"),
        ("approval", "approve", "ci_rerun", {**CI, "job": 0}, "ci_rerun"),
        ("approval", "approve", "ci_rerun", {**CI, "extra": 1}, "ci_rerun"),
        ("ownership", "handoff", "ci_rerun", None, "Additional properties"),
        ("ownership", "claim", "evidence", None, "Additional properties"),
        ("ownership", "handoff", "rerun", None, "Additional properties"),
    ],
)
def test_a_malformed_field_or_one_on_another_event_is_refused(
    kind: str, event: str, field: str, value: Any, said: str
) -> None:
    base: dict[str, Any] = {
        "event": event,
        "agent": "acme-lead",
        "write_id": "0" * 32,
        "session": "s",
        "prev": None,
        "role": "review" if event != "approve" else "lead",
        "issue": "acme/tracker#4",
    }
    if event != "claim":
        base |= {"to": "acme-review", "sha": SHA, "mr": {"project": "acme/app", "iid": 7}}
        base |= {"reason": None, "supersedes": None}
    if event == "approve":
        base |= {"not_covering": [], "self_approval": False}
        base |= {"target_branch": "main", "base_sha": SHA, "start_sha": SHA}
    with pytest.raises(Exception, match=said):
        compose_note(kind, {**base, field: value}, "text")


def test_a_note_whose_evidence_was_edited_is_tampered(trail: Trail) -> None:
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review", evidence=EVIDENCE)
    trail.edit(offer, offer.body.replace('"killed"', '"survived"', 1))
    ledger = trail.fold()
    assert [s.kind for s in ledger.skipped] == ["tampered"] and ledger.offer is None
    with pytest.raises(MalformedRecord):
        parse_marker(offer.body.replace('"isolation":"bubblewrap"', '"isolation":"none"'))


# -- which offer ------------------------------------------------------------------------------


def test_the_offer_under_review_is_the_pending_handoff_then_the_accepted_one(trail: Trail) -> None:
    trail.claim("acme-lead")
    assert offer_under_review(trail.fold()) is None  # claimed: nothing offered
    offer = trail.handoff("acme-lead", "acme-review", evidence=EVIDENCE)
    assert note_of(offer_under_review(trail.fold())) == offer.id
    assert accepted_offer(trail.fold()) is None  # pending, not yet accepted
    trail.accept("acme-review", offer, "acme-lead")
    assert note_of(offer_under_review(trail.fold())) == offer.id
    assert note_of(accepted_offer(trail.fold())) == offer.id
    back = trail.approve("acme-review", "acme-lead")
    assert offer_under_review(trail.fold()) is None  # an approval's offer back is no handoff
    trail.accept("acme-lead", back, "acme-review")
    assert accepted_offer(trail.fold()) is None


def test_the_approved_offer_is_the_one_its_approver_held_the_issue_by(trail: Trail) -> None:
    trail.claim("acme-lead")
    first = trail.handoff("acme-lead", "acme-review", evidence=EVIDENCE)
    trail.accept("acme-review", first, "acme-lead")
    one = trail.approve("acme-review", "acme-lead")
    trail.accept("acme-lead", one, "acme-review")
    second = trail.handoff("acme-lead", "acme-review", sha=SHA2)
    trail.accept("acme-review", second, "acme-lead")
    two = trail.approve("acme-review", "acme-lead", sha=SHA2)
    ledger = trail.fold()
    assert note_of(approved_offer(ledger, one.id)) == first.id
    assert note_of(approved_offer(ledger, two.id)) == second.id
    assert approval_keys(ledger, two.id)["evidence_summary"] == "no mutation evidence"


def test_an_approval_by_a_claimant_answers_no_offer(trail: Trail) -> None:
    trail.claim("acme-review", role="review")
    approval = trail.approve("acme-review", "acme-lead")
    assert approved_offer(trail.fold(), approval.id) is None


# -- the words ------------------------------------------------------------------------------


def test_the_summaries() -> None:
    assert evidence_summary(None) == "no mutation evidence"
    assert evidence_summary(EVIDENCE) == "2/2 killed"
    weaker = {**EVIDENCE, "isolation": "env-only", "network": "not-blocked"}
    assert evidence_summary(weaker) == (
        "2/2 killed (env-only: the filesystem was not sealed, network not-blocked)"
    )
    # a record written before bubblewrap: its namespaces did not seal the filesystem
    old = {k: v for k, v in EVIDENCE.items() if k != "weak"} | {"isolation": "namespaces"}
    assert evidence_summary(old) == "2/2 killed (namespaces: the filesystem was not sealed)"
    survived = copy.deepcopy(EVIDENCE)
    survived["mutants"][0]["verdict"] = "survived"
    assert evidence_summary(survived) == "1/2 killed"
    assert rerun_summary(None) == "no re-run"
    assert rerun_summary(RERUN) == "mutant 2 killed, own survived"
    weak = {**RERUN, "isolation": "bubblewrap", "network": "allowed", "weak": True}
    assert rerun_summary(weak) == (
        "mutant 2 killed, own survived (WEAK: exit-code rule, network allowed)"
    )


def test_only_an_offer_to_review_is_marked_for_lacking_evidence(trail: Trail) -> None:
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review")
    ledger = trail.fold()
    assert offer_keys(ledger, offer.id, kind="handoff", role="review") == {
        "evidence": None,
        "evidence_summary": "no mutation evidence",
    }
    assert offer_keys(ledger, offer.id, kind="handoff", role="lead")["evidence_summary"] is None
    assert offer_keys(ledger, offer.id, kind="approve", role="lead")["evidence_summary"] is None


# -- the re-run document ----------------------------------------------------------------------


def _mutant(index: int, sha256: str, verdict: str) -> dict[str, Any]:
    return {
        "index": index,
        "name": f"m{index}",
        "patch": {"sha256": sha256, "text": "", "files": ["calc.py"], "hunks": []},
        "sensitive_files": [],
        "applied": True,
        "apply_error": None,
        "run": None,
        "verdict": verdict,
        "reason": "why",
        "killed_by": [],
    }


def _inner(offered_verdict: str = "killed", *, sha: str = SHA) -> dict[str, Any]:
    """An evidence document as runner.rerun seals it (mutant 1 the offer's, 2 the own)."""
    run = {
        "command": "pytest -q",
        "runner": "pytest",
        "exit_code": 0,
        "timed_out": False,
        "duration_ms": 1,
        "isolation": {
            "mode": "bubblewrap",
            "filesystem": "sealed",
            "network": "blocked",
            "tree_kill": "pid-namespace",
            "processes": {"max": 256, "by": "pids-cgroup", "why": ""},
            "description": "d",
        },
        "outcome": "passed",
        "detail": "d",
        "failed_tests": [],
        "output_tail": "",
        "log_path": None,
        "changed_files": [],
        "unexpected_changes": [],
    }
    doc: dict[str, Any] = {
        "schema": "pairgate-evidence",
        "v": 2,
        "created_at": "2026-01-01T00:00:00Z",
        "status": "pass",
        "weak": False,
        "repository": {"path": "/r", "root_commit": SHA},
        "sha": sha,
        "command": "pytest -q",
        "timeout_seconds": 300,
        "network": False,
        "pids": 256,
        "environment": [],
        "workspace": {"kind": "tmpfs", "path": "/dev/shm"},
        "may_change": [],
        "baseline": run,
        "mutants": [_mutant(1, H2, offered_verdict), _mutant(2, "3" * 64, "killed")],
        "sensitive_changes": {"base": None, "base_source": "none", "patterns": [], "files": []},
        "summary": {"killed": 2, "survived": 0, "error": 0, "refused": 0},
    }
    doc["digest"] = evidence_digest(doc)
    return doc


def _doc(inner: dict[str, Any] | None = None, **offer: Any) -> dict[str, Any]:
    return rerun_document(
        inner or _inner(),
        project="acme/tracker",
        issue=4,
        offer_note=offer.get("offer_note", 101),
        sender="acme-lead",
        offered=offer.get("offered", EVIDENCE),
        index=2,
        now=0.0,
    )


def verify(doc: Any, **kw: Any) -> list[str]:
    args = {
        "sha": SHA,
        "project": "acme/tracker",
        "issue": 4,
        "offer_note": 101,
        "offer_evidence": EVIDENCE,
    }
    return verify_for_approve(doc, **{**args, **kw})


def test_a_good_rerun_backs_the_approval_and_gives_the_record_field() -> None:
    doc = _doc()
    assert check_rerun(doc) is None and verify(doc) == []
    assert rerun_field(doc) == {
        "offer_note": 101,
        "evidence_digest": EVIDENCE["digest"],
        "sha": SHA,
        "offered": {"index": 2, "sha256": H2, "verdict": "killed"},
        "own": {"sha256": "3" * 64, "files": ["calc.py"], "verdict": "killed"},
        "digest": doc["digest"],
        "isolation": "bubblewrap",
        "network": "blocked",
        "weak": False,
    }


@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({"issue": 5}, "it re-ran an offer on acme/tracker#4, not on #5"),
        ({"project": "acme/other"}, "it re-ran an offer on acme/tracker#4, not on #4"),
        ({"sha": SHA2}, f"it ran at {SHA}, not at the approved {SHA2}"),
        ({"offer_note": None}, "the approval answers no offer"),
        ({"offer_note": 102}, "it re-ran the offer in note 101, not the one being approved"),
        ({"offer_evidence": None}, "the offer in note 101 carries no mutation evidence"),
        (
            {"offer_evidence": {**EVIDENCE, "digest": "sha256:" + "d" * 64}},
            "it re-ran another evidence than the offer recorded",
        ),
        (
            {"offer_evidence": {**EVIDENCE, "mutants": EVIDENCE["mutants"][:1]}},
            "its mutant 2 is not the one the offer recorded",
        ),
    ],
)
def test_each_mismatch_is_named(kw: dict[str, Any], said: str) -> None:
    problems = verify(_doc(), **kw)
    assert len(problems) == 1 and problems[0].startswith(said), problems


def test_the_offered_mutant_must_be_killed_again_and_the_own_need_not_be() -> None:
    assert verify(_doc(_inner("survived"))) == [
        "the offer's mutant 2 was not killed again: survived, why"
    ]
    own_survived = _inner()
    own_survived["mutants"][1]["verdict"] = "survived"
    own_survived["digest"] = evidence_digest(own_survived)
    assert verify(_doc(own_survived)) == []


def test_a_rerun_that_is_not_whole_is_named() -> None:
    doc = _doc()
    assert str(check_rerun({"schema": "x"})).startswith("schema: ")
    edited = copy.deepcopy(doc)
    edited["offer"]["note_id"] = 102
    assert check_rerun(edited) == (
        "its digest does not match its content (it was changed after it was run)"
    )
    inner = copy.deepcopy(doc)
    inner["evidence"]["command"] = "true"
    inner["digest"] = evidence_digest(inner)
    assert check_rerun(inner) == (
        "the evidence inside it: its digest does not match its content (it was changed after "
        "it was run)"
    )
    with pytest.raises(ValueError, match="not at the offered"):
        _doc(_inner(sha=SHA2))
    with pytest.raises(ValueError, match="its first mutant is not the offer's"):
        _doc(offered={**EVIDENCE, "mutants": [EVIDENCE["mutants"][0]] * 2})
    verified = verify({"schema": "x"})
    assert verified[0].startswith("the file is not a re-run document (pairgate-evidence-rerun)")
