"""The pieces the record schemas are built from: shared field types and the evidence fields.

records.py builds each kind's schema from these; the mutation-evidence fields are the ones a
handoff and an approval carry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "CI_RERUN_FIELD",
    "DIGEST_FIELD",
    "EVIDENCE_FIELD",
    "NOTE_ID_FIELD",
    "OPTIONAL_FIELDS",
    "RERUN_FIELD",
    "SHA_FIELD",
    "closed_object",
]

SHA_FIELD = {"type": "string", "pattern": "^[0-9a-f]{40}$", "description": "a full commit SHA"}
DIGEST_FIELD = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
NOTE_ID_FIELD = {"type": "integer", "minimum": 1}


def closed_object(
    properties: Mapping[str, Any], optional: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """An object with exactly these keys, and ``optional`` ones added after records without
    them were written."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": {**properties, **(optional or {})},
    }


# Mutation evidence (docs/agent-handoff-reference.md, "Mutation evidence"). Added after records
# were first written, so they are in OPTIONAL_FIELDS: every new handoff writes ``evidence`` and
# every new approval ``rerun`` and ``ci_rerun`` (null or the object), and a record without them
# still reads. Keys added to those objects later are optional in them for the same reason.
OPTIONAL_FIELDS = frozenset({"evidence", "rerun", "ci_rerun"})
_EVIDENCE_DIGEST = {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
_VERDICT = {"enum": ["killed", "survived", "error", "refused"]}
_FILES = {"type": "array", "items": {"type": "string", "minLength": 1}}
_MUTANT_INDEX = {"type": "integer", "minimum": 1}
_ISOLATION_MODE = {"enum": ["bubblewrap", "namespaces", "env-only"]}
_NETWORK = {"enum": ["blocked", "allowed", "not-blocked"]}
_WEAK = {
    "type": "boolean",
    "description": "judged by the exit-code rule: nothing shows that a test judged a mutant",
}
_COUNT = {"type": "integer", "minimum": 0}
EVIDENCE_FIELD = {
    "description": "the mutation evidence the offer carries: its digest and each mutant's hash",
    "oneOf": [
        {"type": "null"},
        closed_object(
            {
                "digest": _EVIDENCE_DIGEST,
                "sha": SHA_FIELD,
                "command": {"type": "string", "minLength": 1, "maxLength": 10_000},
                "isolation": _ISOLATION_MODE,
                "network": _NETWORK,
                "mutants": {
                    "type": "array",
                    "minItems": 1,
                    "items": closed_object(
                        {
                            "index": _MUTANT_INDEX,
                            "sha256": DIGEST_FIELD,
                            "files": _FILES,
                            "verdict": _VERDICT,
                        }
                    ),
                },
            },
            {"weak": _WEAK},
        ),
    ],
}
RERUN_FIELD = {
    "description": "the reviewer's re-run before approving: one of the offer's mutants and one "
    "of its own, at the approved SHA",
    "oneOf": [
        {"type": "null"},
        closed_object(
            {
                "offer_note": NOTE_ID_FIELD,
                "evidence_digest": _EVIDENCE_DIGEST,
                "sha": SHA_FIELD,
                "offered": closed_object(
                    {"index": _MUTANT_INDEX, "sha256": DIGEST_FIELD, "verdict": _VERDICT}
                ),
                "own": closed_object(
                    {"sha256": DIGEST_FIELD, "files": _FILES, "verdict": _VERDICT}
                ),
                "digest": _EVIDENCE_DIGEST,
            },
            {"isolation": _ISOLATION_MODE, "network": _NETWORK, "weak": _WEAK},
        ),
    ],
}
CI_RERUN_FIELD = {
    "description": "the CI job's re-run of the approved offer's mutants at the approved SHA, as "
    "its job log said it, when one had finished",
    "oneOf": [
        {"type": "null"},
        closed_object(
            {
                "job": NOTE_ID_FIELD,
                "pipeline": NOTE_ID_FIELD,
                "sha": SHA_FIELD,
                "offer_note": NOTE_ID_FIELD,
                "evidence_digest": _EVIDENCE_DIGEST,
                "status": {"enum": ["pass", "fail", "error"]},
                "killed": _COUNT,
                "total": _COUNT,
                "isolation": _ISOLATION_MODE,
                "network": _NETWORK,
                "weak": _WEAK,
            }
        ),
    ],
}
