"""The re-run document: the reviewer's run of one of the offer's mutants and one of its own, at
the offered SHA, bound to the offer it answers. Pure, but for reading and writing the file and
``reproduce``.

It wraps the evidence document the runner made (``runner.rerun``: mutant 1 is the offer's,
mutant 2 the reviewer's own) with the offer it answers: the issue, the offer's note, its sender,
the evidence digest the offer recorded, which mutant was taken and the hash the offer recorded
for it. Its own digest covers all of it, like the evidence's.

The digest is a plain SHA-256: it catches an accident, not a forgery. A document written by hand
and sealed again (the red team built one without running anything) checks as well as a real
one. So ``approve --evidence`` does not take the document's word: after checking it against the
ledger (``verify_for_approve``) it runs the document's two mutants again itself, at the SHA, in
the same sandbox (``reproduce``), and records ``rerun_field`` only when its own run gives the
verdicts the document claims. What is left: the approval's record is still written from the
agent's session, by a pairgate the session could change, so it is self-reported like the
evidence; the CI re-run (``ci.py``) is the one check outside the session.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pairgate.evidence.schema import (
    DIGEST_FIELD,
    EVIDENCE_SCHEMA,
    SHA256_FIELD,
    SHA_FIELD,
    check_evidence,
    digest_problem,
    evidence_digest,
    first_problem,
    load_json,
    strict_object,
    write_json,
)

RERUN_SCHEMA_NAME = "pairgate-evidence-rerun"
RERUN_SCHEMA_VERSION = 1

_POSITIVE = {"type": "integer", "minimum": 1}


RERUN_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pairgate mutation evidence re-run",
    **strict_object(
        {
            "schema": {"const": RERUN_SCHEMA_NAME},
            "v": {"const": RERUN_SCHEMA_VERSION},
            "created_at": {"type": "string"},
            "issue": strict_object(
                {"project": {"type": "string", "minLength": 1}, "iid": _POSITIVE}
            ),
            "offer": strict_object(
                {
                    "note_id": _POSITIVE,
                    "sender": {"type": "string", "minLength": 1},
                    "sha": SHA_FIELD,
                    "evidence_digest": DIGEST_FIELD,
                    "mutant_index": _POSITIVE,
                    "mutant_sha256": SHA256_FIELD,
                }
            ),
            "evidence": {k: v for k, v in EVIDENCE_SCHEMA.items() if k not in ("$schema", "title")},
            "digest": DIGEST_FIELD,
        }
    ),
}


@functools.cache
def _validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(RERUN_SCHEMA)


def rerun_document(
    evidence: Mapping[str, Any],
    *,
    project: str,
    issue: int,
    offer_note: int,
    sender: str,
    offered: Mapping[str, Any],
    index: int,
    now: float,
) -> dict[str, Any]:
    """The sealed re-run document. ``offered`` is the offer record's ``evidence`` field, and
    ``evidence`` what the runner made of its mutant ``index`` and the reviewer's own."""
    doc = {
        "schema": RERUN_SCHEMA_NAME,
        "v": RERUN_SCHEMA_VERSION,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "issue": {"project": project, "iid": issue},
        "offer": {
            "note_id": offer_note,
            "sender": sender,
            "sha": offered["sha"],
            "evidence_digest": offered["digest"],
            "mutant_index": index,
            "mutant_sha256": offered["mutants"][index - 1]["sha256"],
        },
        "evidence": dict(evidence),
    }
    doc["digest"] = evidence_digest(doc)
    problem = check_rerun(doc)
    if problem:
        raise ValueError(f"refusing to write an invalid re-run: {problem}")
    return doc


def check_rerun(doc: object) -> str | None:
    """None when ``doc`` is a whole re-run document (schema, both digests, and the evidence
    inside run at the offer's SHA with the offer's mutant first), else the first problem."""
    problem = first_problem(_validator(), doc)
    if problem:
        return problem
    assert isinstance(doc, Mapping)
    evidence, offer = doc["evidence"], doc["offer"]
    if digest_problem(doc):
        return "its digest does not match its content (it was changed after it was run)"
    inner = check_evidence(evidence) or digest_problem(evidence)
    if inner:
        return f"the evidence inside it: {inner}"
    if len(evidence["mutants"]) != 2:
        return "the evidence inside it does not hold exactly the offer's mutant and one other"
    if evidence["sha"] != offer["sha"]:
        return f"it ran at {evidence['sha']}, not at the offered {offer['sha']}"
    if evidence["mutants"][0]["patch"]["sha256"] != offer["mutant_sha256"]:
        return "its first mutant is not the offer's (another SHA-256)"
    return None


def read_rerun(path: Path) -> Any:
    """The JSON in ``path`` (UsageError, exit 2, when it cannot be read); checking it is
    ``verify_for_approve``'s, so that a document that is not a re-run is a refusal."""
    return load_json(path, "the re-run")


def write_rerun(doc: Mapping[str, Any], path: Path) -> None:
    problem = check_rerun(doc)
    if problem:
        raise ValueError(f"refusing to write an invalid re-run: {problem}")
    write_json(doc, path)


def offered_mutant(doc: Mapping[str, Any]) -> dict[str, Any]:
    return dict(doc["evidence"]["mutants"][0])


def own_mutant(doc: Mapping[str, Any]) -> dict[str, Any]:
    return dict(doc["evidence"]["mutants"][1])


def rerun_field(
    doc: Mapping[str, Any], observed: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``rerun`` field of an approval record: the document's binding, with the isolation
    and the strength of the run that ``observed`` it (approve's own, else the document's)."""
    offer, offered, own = doc["offer"], offered_mutant(doc), own_mutant(doc)
    seen = observed if observed is not None else doc["evidence"]
    iso = seen["baseline"]["isolation"]
    return {
        "offer_note": offer["note_id"],
        "evidence_digest": offer["evidence_digest"],
        "sha": doc["evidence"]["sha"],
        "offered": {
            "index": offer["mutant_index"],
            "sha256": offered["patch"]["sha256"],
            "verdict": offered["verdict"],
        },
        "own": {
            "sha256": own["patch"]["sha256"],
            "files": list(own["patch"]["files"]),
            "verdict": own["verdict"],
        },
        "digest": doc["digest"],
        "isolation": iso["mode"],
        "network": iso["network"],
        "weak": bool(seen["weak"]),
    }


def reproduction_problems(doc: Mapping[str, Any], again: Mapping[str, Any]) -> list[str]:
    """Where ``again`` (approve's own run of the document's mutants) does not give what the
    re-run document ``doc`` claims; empty when it does."""
    claimed = doc["evidence"]
    problems = []
    if again["baseline"]["outcome"] != "passed":
        problems.append(f"the baseline did not pass: {again['baseline']['detail']}")
    names = ("the offer's mutant", "your own mutant")
    for name, said, got in zip(names, claimed["mutants"], again["mutants"], strict=True):
        if said["verdict"] != got["verdict"]:
            problems.append(
                f"{name}: the document says {said['verdict']}, approve's own run gives "
                f"{got['verdict']} ({got['reason']})"
            )
    return problems


def verify_for_approve(
    doc: object,
    *,
    sha: str,
    project: str,
    issue: int,
    offer_note: int | None,
    offer_evidence: Mapping[str, Any] | None,
) -> list[str]:
    """Why this re-run does not support an approval of ``sha`` of the offer in ``offer_note``
    (whose record's evidence is ``offer_evidence``); empty when it does."""
    problem = check_rerun(doc)
    if problem:
        return [f"the file is not a re-run document (pairgate-evidence-rerun): {problem}"]
    assert isinstance(doc, Mapping)
    offer, problems = doc["offer"], []
    where = doc["issue"]
    if (where["project"], where["iid"]) != (project, issue):
        problems.append(f"it re-ran an offer on {where['project']}#{where['iid']}, not on #{issue}")
    if doc["evidence"]["sha"] != sha:
        problems.append(f"it ran at {doc['evidence']['sha']}, not at the approved {sha}")
    if offer_note is None:
        problems.append("the approval answers no offer (the holder did not accept a handoff)")
    elif offer["note_id"] != offer_note:
        problems.append(
            f"it re-ran the offer in note {offer['note_id']}, not the one being approved "
            f"(note {offer_note})"
        )
    elif offer_evidence is None:
        problems.append(f"the offer in note {offer_note} carries no mutation evidence")
    else:
        recorded = offer_evidence["mutants"]
        index = offer["mutant_index"]
        if offer["evidence_digest"] != offer_evidence["digest"]:
            problems.append("it re-ran another evidence than the offer recorded (another digest)")
        elif index > len(recorded) or recorded[index - 1]["sha256"] != offer["mutant_sha256"]:
            problems.append(f"its mutant {index} is not the one the offer recorded")
    offered = offered_mutant(doc)
    if offered["verdict"] != "killed":
        problems.append(
            f"the offer's mutant {offer['mutant_index']} was not killed again: "
            f"{offered['verdict']}, {offered['reason']}"
        )
    return problems
