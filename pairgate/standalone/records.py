"""Records: the marker line, its JSON schemas, the digest, and composing a note."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from pairgate.standalone.config import _PATH_SEGMENT
from pairgate.standalone.errors import PairgateError
from pairgate.standalone.schema_check import _draft_validator

# A ledger note is short human text and then ONE marker line:
#     <!-- mochi-task:<kind> <json> -->
# The marker names are the record's persisted format: they never follow cli_command.
MARKER_OPEN = "<!-- mochi-task:"
_MARKER_LINE = re.compile(r"^<!-- mochi-task:(\S+) (.*) -->[ \t]*$", re.MULTILINE)
RECORD_VERSION = 1
ROLES = ("lead", "review")

_SHA = {"type": "string", "pattern": "^[0-9a-f]{40}$", "description": "a full commit SHA"}
_DIGEST = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_AGENT = {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"}
_ROLE = {"enum": list(ROLES)}
_NOTE_ID = {"type": "integer", "minimum": 1}
_REASON = {"type": ["string", "null"], "maxLength": 50_000}
_MR_REF = {
    "type": "object",
    "additionalProperties": False,
    "required": ["project", "iid"],
    "properties": {
        "project": {"type": "string", "pattern": rf"^{_PATH_SEGMENT}(/{_PATH_SEGMENT})+$"},
        "iid": {"type": "integer", "minimum": 1},
    },
}
_COMMON: dict[str, Any] = {
    "v": {"const": RECORD_VERSION},
    "agent": {**_AGENT, "description": "the identity that wrote the record"},
    "write_id": {
        "type": "string",
        "pattern": "^[0-9a-f]{32}$",
        "description": "fresh per write; a second note with the same write_id is ignored",
    },
    "session": {"type": "string", "minLength": 1, "maxLength": 200},
    "prev": {
        "type": ["string", "null"],
        "pattern": "^[0-9a-f]{64}$",
        "description": "digest of the last record the writer saw on this issue, or null",
    },
    "digest": {
        **_DIGEST,
        "description": "sha256 of the record's canonical content and the note's human text",
    },
}
_OFFER_FIELDS: dict[str, Any] = {
    "to": _AGENT,
    "role": _ROLE,
    "sha": _SHA,
    "mr": _MR_REF,
    "reason": _REASON,
    "supersedes": {"type": ["integer", "null"], "minimum": 1},
}


def _closed_object(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": dict(properties),
    }


# Mutation evidence (docs/agent-handoff-reference.md, "Mutation evidence"). Added after records
# were first written, so they are in OPTIONAL_FIELDS: every new handoff writes ``evidence`` and
# every new approval ``rerun`` (null or the object), and a record without them still reads.
OPTIONAL_FIELDS = frozenset({"evidence", "rerun"})
_EVIDENCE_DIGEST = {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
_VERDICT = {"enum": ["killed", "survived", "error", "refused"]}
_FILES = {"type": "array", "items": {"type": "string", "minLength": 1}}
_MUTANT_INDEX = {"type": "integer", "minimum": 1}
_EVIDENCE_FIELD = {
    "description": "the mutation evidence the offer carries: its digest and each mutant's hash",
    "oneOf": [
        {"type": "null"},
        _closed_object(
            {
                "digest": _EVIDENCE_DIGEST,
                "sha": _SHA,
                "command": {"type": "string", "minLength": 1, "maxLength": 10_000},
                "isolation": {"enum": ["namespaces", "env-only"]},
                "network": {"enum": ["blocked", "allowed", "not-blocked"]},
                "mutants": {
                    "type": "array",
                    "minItems": 1,
                    "items": _closed_object(
                        {
                            "index": _MUTANT_INDEX,
                            "sha256": _DIGEST,
                            "files": _FILES,
                            "verdict": _VERDICT,
                        }
                    ),
                },
            }
        ),
    ],
}
_RERUN_FIELD = {
    "description": "the reviewer's re-run before approving: one of the offer's mutants and one "
    "of its own, at the approved SHA",
    "oneOf": [
        {"type": "null"},
        _closed_object(
            {
                "offer_note": _NOTE_ID,
                "evidence_digest": _EVIDENCE_DIGEST,
                "sha": _SHA,
                "offered": _closed_object(
                    {"index": _MUTANT_INDEX, "sha256": _DIGEST, "verdict": _VERDICT}
                ),
                "own": _closed_object({"sha256": _DIGEST, "files": _FILES, "verdict": _VERDICT}),
                "digest": _EVIDENCE_DIGEST,
            }
        ),
    ],
}

# kind -> event -> the fields that event adds to the common ones (all required but
# OPTIONAL_FIELDS).
EVENT_FIELDS: dict[str, dict[str, dict[str, Any]]] = {
    "ownership": {
        "claim": {"role": _ROLE},
        "handoff": {**_OFFER_FIELDS, "evidence": _EVIDENCE_FIELD},
        "accept": {"offer": _NOTE_ID, "from": _AGENT, "role": _ROLE},
        "decline": {"offer": _NOTE_ID, "from": _AGENT},
        "release": {"role": _ROLE},
        "close": {},
    },
    "approval": {
        "approve": {
            **_OFFER_FIELDS,
            "not_covering": {"type": "array", "items": {"type": "string", "minLength": 1}},
            "self_approval": {"type": "boolean"},
            "rerun": _RERUN_FIELD,
        },
    },
}

# -- Board-wide kinds (the board issue): freeze windows and standing constraints --------------
# A freeze's scope is spelled out in the record, never relative to the issue that holds it:
# "board", "issue:<iid>" or "mr:<project>!<iid>".
_IID = "[1-9][0-9]{0,9}"
# (?!\n): Python's $ also matches before a final newline; a scope is exactly one of these.
FREEZE_SCOPE_PATTERN = rf"^(board|issue:{_IID}|mr:{_PATH_SEGMENT}(/{_PATH_SEGMENT})+!{_IID})$(?!\n)"
FREEZE_MAX_MINUTES = 7 * 24 * 60
EVENT_FIELDS["freeze"] = {
    "freeze": {
        "scope": {"type": "string", "pattern": FREEZE_SCOPE_PATTERN},
        "reason": {"type": "string", "minLength": 1, "maxLength": 50_000},
        "minutes": {"type": "integer", "minimum": 1, "maximum": FREEZE_MAX_MINUTES},
    },
    "thaw": {"freeze": _NOTE_ID},
}
EVENT_FIELDS["constraint"] = {
    "impose": {
        "id": {"type": "string", "pattern": "^c-[0-9a-f]{12}$", "description": "see constraint_id"},
        "text": {"type": "string", "minLength": 1, "maxLength": 50_000},
    },
}
BOARD_KINDS = frozenset({"freeze", "constraint"})


def constraint_id(text: str) -> str:
    """A standing constraint's stable id: the hash of its clause text, whitespace folded, so the
    same clause has the same id wherever and by whomever it is rendered."""
    return "c-" + hashlib.sha256(canonical_text(text).encode("utf-8")).hexdigest()[:12]


# -- end of the board-wide kinds ----------------------------------------------------------------


def _event_schema(event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    properties = {**_COMMON, "event": {"const": event}, **fields}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [name for name in properties if name not in OPTIONAL_FIELDS],
        "properties": properties,
    }


RECORD_SCHEMAS: dict[str, dict[str, Any]] = {
    kind: {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"pairgate {kind} record",
        "description": f"The JSON inside <!-- mochi-task:{kind} ... --> in an issue note.",
        "type": "object",
        "required": ["event"],
        "properties": {"event": {"enum": list(events)}},
        "allOf": [
            {
                "if": {"properties": {"event": {"const": event}}, "required": ["event"]},
                "then": _event_schema(event, fields),
            }
            for event, fields in events.items()
        ],
    }
    for kind, events in EVENT_FIELDS.items()
}
KIND_OF_EVENT = {event: kind for kind, events in EVENT_FIELDS.items() for event in events}


@functools.cache
def _event_validator(kind: str, event: str) -> Any:
    # One validator per event, built once and reused: the fold checks thousands of records.
    # RECORD_SCHEMAS[kind] is this schema under an if/then on ``event``, so checking the
    # event's own schema directly gives the same verdict without re-testing every branch.
    return _draft_validator(_event_schema(event, EVENT_FIELDS[kind][event]))


class MalformedRecord(Exception):
    """A marker that cannot be read as a record; the message says why."""


def schema_problem(kind: str, record: Any) -> str | None:
    """Why ``record`` is not a valid ``kind`` record, or None when it is."""
    if kind not in EVENT_FIELDS:
        return f"unknown record kind {kind!r}"
    if not isinstance(record, dict):
        return "the marker JSON is not an object"
    event = record.get("event")
    if not isinstance(event, str) or event not in EVENT_FIELDS[kind]:
        return f"unknown {kind} event {event!r}"
    validator = _event_validator(kind, event)
    if validator.is_valid(record):
        return None
    error = min(validator.iter_errors(record), key=lambda e: (len(e.path), e.message))
    where = "/".join(str(p) for p in error.path) or "record"
    return f"schema: {where}: {error.message}"


def canonical_text(text: str) -> str:
    """Whitespace folded, so GitLab's storage (CRLF, trailing blanks) cannot move a digest."""
    return " ".join(text.split())


# json.dumps with these options builds a new encoder per call; the digest is computed for every
# record read, so one encoder serves them all (its output is json.dumps's, byte for byte).
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def record_digest(kind: str, record: Mapping[str, Any], human: str) -> str:
    content = dict(record)
    content.pop("digest", None)
    canonical = _CANONICAL_JSON.encode(
        {"kind": kind, "record": content, "text": canonical_text(human)}
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def marker(kind: str, record: Mapping[str, Any]) -> str:
    """The marker line. ``<`` and ``>`` are escaped in the JSON so no value can close the HTML
    comment (``-->``, ``--!>``) or open another."""
    text = json.dumps(dict(record), separators=(",", ":"), ensure_ascii=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e")
    return f"{MARKER_OPEN}{kind} {text} -->"


_SLASH_LINE = re.compile(r"^([ \t]*)/", re.MULTILINE)


def neutralise_quick_actions(text: str) -> str:
    """GitLab runs a note line that starts with ``/`` as a quick action (``/close``) and strips
    it. A backslash in front keeps the line, renders as the same text, and runs nothing."""
    return _SLASH_LINE.sub(lambda m: f"{m.group(1)}\\/", text.replace("\r\n", "\n"))


def compose_note(kind: str, record: Mapping[str, Any], human: str) -> tuple[str, dict[str, Any]]:
    """The note body for a record: human text, then the marker. Fills in ``v`` and ``digest`` and
    checks the schema (a record that would be skipped on read is never written)."""
    text = neutralise_quick_actions(human).strip()
    # A marker-shaped line in the text would make the note carry two markers (and be skipped).
    text = _MARKER_LINE.sub(lambda m: "&lt;" + m.group(0)[1:], text)
    sealed = {"v": RECORD_VERSION, **{k: v for k, v in record.items() if k != "digest"}}
    sealed["digest"] = record_digest(kind, sealed, text)
    problem = schema_problem(kind, sealed)
    if problem:
        raise PairgateError(f"pairgate: refusing to write an invalid {kind} record: {problem}")
    return f"{text}\n\n{marker(kind, sealed)}\n", sealed


# Schema checks dominate the fold's cost, and readers fold the same notes again (a verb reads
# before and after it writes): remember the verdict per marker text. The text decides the
# record, so a verdict cannot go stale; the memory is bounded by starting afresh when full.
_PROBLEMS: dict[tuple[str, str], str | None] = {}
_PROBLEMS_MAX = 65536


def _cached_problem(kind: str, raw: str, record: dict[str, Any]) -> str | None:
    """schema_problem of ``record``, the parse of the marker JSON ``raw``, remembered."""
    key = (kind, raw)
    try:
        return _PROBLEMS[key]
    except KeyError:
        problem = schema_problem(kind, record)
    if len(_PROBLEMS) >= _PROBLEMS_MAX:
        _PROBLEMS.clear()
    _PROBLEMS[key] = problem
    return problem


def parse_marker(body: str) -> tuple[str, dict[str, Any], str]:
    """(kind, record, human text) of a note that carries a marker; MalformedRecord otherwise."""
    text = body.replace("\r\n", "\n")
    found = _MARKER_LINE.finditer(text)
    first = next(found, None)
    if first is None:
        raise MalformedRecord("a mochi-task marker that is not one well-formed line")
    more = sum(1 for _ in found)
    if more:
        raise MalformedRecord(f"{1 + more} markers in one note (a note carries one)")
    kind, raw = first.group(1), first.group(2)
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise MalformedRecord(f"the marker JSON does not parse: {exc}") from None
    problem = _cached_problem(kind, raw, record) if isinstance(record, dict) else "not an object"
    if problem:
        raise MalformedRecord(problem)
    return kind, record, text[: first.start()] + text[first.end() :]
