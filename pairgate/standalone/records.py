"""Records: the marker line, its JSON schemas, the digest, and composing a note."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Mapping
from typing import Any

from pairgate.standalone.config import PATH_SEGMENT
from pairgate.standalone.errors import PairgateError
from pairgate.standalone.record_parts import (
    CI_RERUN_FIELD,
    DIGEST_FIELD,
    EVIDENCE_FIELD,
    NOTE_ID_FIELD,
    OPTIONAL_FIELDS,
    RERUN_FIELD,
    SHA_FIELD,
)
from pairgate.standalone.schema_check import SchemaCheck, draft_validator

__all__ = [
    "BOARD_KINDS",
    "FREEZE_MAX_MINUTES",
    "ISSUE_BOUND_KINDS",
    "KIND_OF_EVENT",
    "MARKER_OPEN",
    "RECORD_FIELDS",
    "RECORD_SCHEMAS",
    "ROLES",
    "IssueReads",
    "MalformedRecord",
    "compose_note",
    "constraint_id",
    "fold_done",
    "forget_reads",
    "marker",
    "neutralise_quick_actions",
    "parse_marker",
    "read_record",
    "record_digest",
    "remembered",
    "schema_problem",
]

# A ledger note is short human text and then ONE marker line:
#     <!-- mochi-task:<kind> <json> -->
# The marker names are the record's persisted format: they never follow cli_command.
MARKER_OPEN = "<!-- mochi-task:"
_MARKER_LINE = re.compile(r"^<!-- mochi-task:(\S+) (.*) -->[ \t]*$", re.MULTILINE)
# v2 (the version written) names the tracker issue a record belongs to inside what its digest
# covers, so a record copied onto another issue is caught as replayed; v1 records (written before
# that) are still read, but cannot be checked for replay. The constraint kind names no issue (a
# clause is quoted wherever it must stand), so it stays at v1.
RECORD_VERSION = 2
ROLES = ("lead", "review")

_AGENT = {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"}
_ROLE = {"enum": list(ROLES)}
_REASON = {"type": ["string", "null"], "maxLength": 50_000}
_MR_REF = {
    "type": "object",
    "additionalProperties": False,
    "required": ["project", "iid"],
    "properties": {
        "project": {"type": "string", "pattern": rf"^{PATH_SEGMENT}(/{PATH_SEGMENT})+$"},
        "iid": {"type": "integer", "minimum": 1},
    },
}
# GitLab's own reference form, group/project#iid: one string, cheap to seal and to compare.
# The fold compares it with the issue it reads (anything else is skipped as replayed), so the
# schema checks only that it is a string: every keyword costs every record a check.
_ISSUE_REF = {
    "type": "string",
    "description": "the tracker issue the record was written on, as group/project#iid",
}
_COMMON: dict[str, Any] = {
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
        **DIGEST_FIELD,
        "description": "sha256 of the record's canonical content and the note's human text",
    },
}
_OFFER_FIELDS: dict[str, Any] = {
    "to": _AGENT,
    "role": _ROLE,
    "sha": SHA_FIELD,
    "mr": _MR_REF,
    "reason": _REASON,
    "supersedes": {"type": ["integer", "null"], "minimum": 1},
}


# kind -> event -> the fields that event adds to the common ones (all required but
# OPTIONAL_FIELDS).
EVENT_FIELDS: dict[str, dict[str, dict[str, Any]]] = {
    "ownership": {
        "claim": {"role": _ROLE},
        "handoff": {**_OFFER_FIELDS, "evidence": EVIDENCE_FIELD},
        "accept": {"offer": NOTE_ID_FIELD, "from": _AGENT, "role": _ROLE},
        "decline": {"offer": NOTE_ID_FIELD, "from": _AGENT},
        "release": {"role": _ROLE},
        "close": {},
    },
    "approval": {
        "approve": {
            **_OFFER_FIELDS,
            "not_covering": {"type": "array", "items": {"type": "string", "minLength": 1}},
            "self_approval": {"type": "boolean"},
            "rerun": RERUN_FIELD,
            "ci_rerun": CI_RERUN_FIELD,
        },
    },
}

# -- Board-wide kinds (the board issue): freeze windows and standing constraints --------------
# A freeze's scope is spelled out in the record, never relative to the issue that holds it:
# "board", "issue:<iid>" or "mr:<project>!<iid>".
_IID = "[1-9][0-9]{0,9}"
# (?!\n): Python's $ also matches before a final newline; a scope is exactly one of these.
FREEZE_SCOPE_PATTERN = rf"^(board|issue:{_IID}|mr:{PATH_SEGMENT}(/{PATH_SEGMENT})+!{_IID})$(?!\n)"
FREEZE_MAX_MINUTES = 7 * 24 * 60
EVENT_FIELDS["freeze"] = {
    "freeze": {
        "scope": {"type": "string", "pattern": FREEZE_SCOPE_PATTERN},
        "reason": {"type": "string", "minLength": 1, "maxLength": 50_000},
        "minutes": {"type": "integer", "minimum": 1, "maximum": FREEZE_MAX_MINUTES},
    },
    "thaw": {"freeze": NOTE_ID_FIELD},
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


# -- record versions ---------------------------------------------------------------------------
# EVENT_FIELDS above is version 1. Version 2 adds ``issue`` to every kind bound to an issue, the
# diff the reviewer saw to an approval, and the withdrawal of an approval.
ISSUE_BOUND_KINDS = frozenset({"ownership", "approval", "freeze"})
_BRANCH = {"type": "string", "minLength": 1, "maxLength": 255}
_V2_ADDS: dict[str, dict[str, Any]] = {
    "approve": {
        "target_branch": {**_BRANCH, "description": "the branch the MR targeted when approved"},
        "base_sha": {
            **SHA_FIELD,
            "description": "diff_refs.base_sha when approved: the merge base",
        },
        "start_sha": {**SHA_FIELD, "description": "diff_refs.start_sha when approved"},
    },
}
_V2_EVENTS: dict[str, dict[str, dict[str, Any]]] = {
    "approval": {
        "withdraw": {
            "approval": {**NOTE_ID_FIELD, "description": "the note of the approval withdrawn"},
            "reason": {"type": "string", "minLength": 1, "maxLength": 50_000},
        },
    },
}
# kind -> version -> event -> the fields that event adds to the common ones (all required).
RECORD_FIELDS: dict[str, dict[int, dict[str, dict[str, Any]]]] = {
    kind: (
        {
            1: events,
            2: {
                **{
                    event: {"issue": _ISSUE_REF, **fields, **_V2_ADDS.get(event, {})}
                    for event, fields in events.items()
                },
                **{
                    event: {"issue": _ISSUE_REF, **fields}
                    for event, fields in _V2_EVENTS.get(kind, {}).items()
                },
            },
        }
        if kind in ISSUE_BOUND_KINDS
        else {1: events}
    )
    for kind, events in EVENT_FIELDS.items()
}
KIND_VERSION = {kind: max(versions) for kind, versions in RECORD_FIELDS.items()}


def _event_schema(version: int, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    properties = {"v": {"const": version}, **_COMMON, "event": {"const": event}, **fields}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [name for name in properties if name not in OPTIONAL_FIELDS],
        "properties": properties,
    }


def _kind_schema(kind: str) -> dict[str, Any]:
    versions = RECORD_FIELDS[kind]
    events = sorted({event for fields in versions.values() for event in fields})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"pairgate {kind} record",
        "description": f"The JSON inside <!-- mochi-task:{kind} ... --> in an issue note.",
        "type": "object",
        "required": ["v", "event"],
        "properties": {"v": {"enum": sorted(versions)}, "event": {"enum": events}},
        "allOf": [
            {
                "if": {
                    "properties": {"v": {"const": version}, "event": {"const": event}},
                    "required": ["v", "event"],
                },
                "then": _event_schema(version, event, fields),
            }
            for version, by_event in sorted(versions.items())
            for event, fields in by_event.items()
        ]
        + [  # an event that a version does not have (a v1 withdraw) is no record
            {
                "if": {
                    "properties": {"v": {"const": version}, "event": {"const": event}},
                    "required": ["v", "event"],
                },
                "then": False,
            }
            for version, by_event in sorted(versions.items())
            for event in events
            if event not in by_event
        ],
    }


RECORD_SCHEMAS: dict[str, dict[str, Any]] = {kind: _kind_schema(kind) for kind in RECORD_FIELDS}
KIND_OF_EVENT = {
    event: kind
    for kind, versions in RECORD_FIELDS.items()
    for f in versions.values()
    for event in f
}


# One check per event and version, built once and reused: the fold checks thousands of records.
_CHECKS: dict[tuple[str, int, str], SchemaCheck] = {}


def _event_validator(kind: str, version: int, event: str) -> SchemaCheck:
    # RECORD_SCHEMAS[kind] is this schema under an if/then on ``v`` and ``event``, so checking
    # the event's own schema directly gives the same verdict without re-testing every branch.
    check = _CHECKS.get((kind, version, event))
    if check is None:
        check = _CHECKS[kind, version, event] = draft_validator(
            _event_schema(version, event, RECORD_FIELDS[kind][version][event])
        )
    return check


class MalformedRecord(Exception):
    """A marker that cannot be read as a record; the message says why."""


def schema_problem(kind: str, record: Any, *, decoded: bool = False) -> str | None:
    """Why ``record`` is not a valid ``kind`` record, or None when it is. ``decoded``: the
    record is json.loads's answer (see SchemaCheck)."""
    if kind not in RECORD_FIELDS:
        return f"unknown record kind {kind!r}"
    if not isinstance(record, dict):
        return "the marker JSON is not an object"
    versions = RECORD_FIELDS[kind]
    event = record.get("event")
    if not isinstance(event, str) or KIND_OF_EVENT.get(event) != kind:
        return f"unknown {kind} event {event!r}"
    version = record.get("v")
    if type(version) is not int or event not in versions.get(version, {}):
        known = ", ".join(str(v) for v in sorted(versions) if event in versions[v])
        return f"schema: v: {version!r} is not a version of the {kind} {event} record ({known})"
    check = _event_validator(kind, version, event)
    if check.accepts(record, decoded=decoded):
        return None
    # One pass of the authority, not is_valid and then iter_errors: both walk the whole record.
    errors = list(check.authority().iter_errors(record))
    if not errors:
        return None
    error = min(errors, key=lambda e: (len(e.path), e.message))
    where = "/".join(str(p) for p in error.path) or "record"
    return f"schema: {where}: {error.message}"


def canonical_text(text: str) -> str:
    """Whitespace folded, so GitLab's storage (CRLF, trailing blanks) cannot move a digest."""
    return " ".join(text.split())


# json.dumps(sort_keys=True, separators=(",", ":")) builds an encoder per call, and
# JSONEncoder.encode a C encoder and a circular-reference memo per call; the digest is computed
# for every record read, so one C encoder serves them all. Its output is json.dumps's, byte for
# byte; what it encodes (decoded JSON, records the verbs build) cannot be circular.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _c_canonical() -> Any:
    """The C encoder with the arguments JSONEncoder.iterencode gives it, less the memo; None
    where the interpreter has no C encoder."""
    make, enc = getattr(json.encoder, "c_make_encoder", None), _CANONICAL_JSON
    if make is None:
        return None
    return make(
        None, enc.default, json.encoder.encode_basestring_ascii, enc.indent,
        enc.key_separator, enc.item_separator, enc.sort_keys, enc.skipkeys, enc.allow_nan,
    )  # fmt: skip


_C_CANONICAL = _c_canonical()


def _canonical_json(value: Any) -> str:
    if _C_CANONICAL is None:
        return _CANONICAL_JSON.encode(value)
    return "".join(_C_CANONICAL(value, 0))


def record_digest(kind: str, record: Mapping[str, Any], human: str) -> str:
    content = dict(record)
    content.pop("digest", None)
    canonical = _canonical_json({"kind": kind, "record": content, "text": canonical_text(human)})
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _digest_matches(kind: str, record: dict[str, Any], human: str) -> bool:
    """record_digest(kind, record, human) == record["digest"], for a record just decoded: its
    digest is taken out and put back instead of copying the record (when it is the last key, as
    every writer puts it, so the record's key order is kept)."""
    digest: object
    if next(reversed(record)) != "digest":
        digest = record["digest"]
        return record_digest(kind, record, human) == digest
    digest = record.pop("digest")
    try:
        canonical = _canonical_json(
            {"kind": kind, "record": record, "text": " ".join(human.split())}
        )
    finally:
        record["digest"] = digest
    return hashlib.sha256(canonical.encode("ascii")).hexdigest() == digest


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
    # The reader folds CRLF once (_parsed): folded here until none is left, the text is what the
    # reader will see, so a line that would read as a marker there is escaped below.
    while "\r\n" in human:
        human = human.replace("\r\n", "\n")
    text = neutralise_quick_actions(human).strip()
    # A marker-shaped line in the text would make the note carry two markers (and be skipped).
    text = _MARKER_LINE.sub(lambda m: "&lt;" + m.group(0)[1:], text)
    sealed = {"v": KIND_VERSION[kind], **{k: v for k, v in record.items() if k != "digest"}}
    sealed["digest"] = record_digest(kind, sealed, text)
    problem = schema_problem(kind, sealed)
    if problem:
        raise PairgateError(f"pairgate: refusing to write an invalid {kind} record: {problem}")
    return f"{text}\n\n{marker(kind, sealed)}\n", sealed


_DECODER = json.JSONDecoder()


def _json_decoded(raw: str) -> Any:
    """json.loads(raw), sooner: raw_decode skips loads's two whitespace scans, and loads itself
    decides (and words the error for) anything raw_decode does not take whole."""
    try:
        value, end = _DECODER.raw_decode(raw)
    except ValueError:
        end = -1
    return value if end == len(raw) else json.loads(raw)


def _parsed(body: str) -> tuple[str, str, dict[str, Any], str]:
    """(kind, marker JSON, record, human text) of a note that carries a well-formed, valid
    marker; MalformedRecord otherwise."""
    text = body.replace("\r\n", "\n") if "\r" in body else body
    first = _MARKER_LINE.search(text)
    if first is None:
        raise MalformedRecord("a mochi-task marker that is not one well-formed line")
    # (Another marker line would start with MARKER_OPEN: a find rules most out cheaply.)
    second = (
        _MARKER_LINE.search(text, first.end()) if text.find(MARKER_OPEN, first.end()) >= 0 else None
    )
    if second is not None:
        more = 2 + sum(1 for _ in _MARKER_LINE.finditer(text, second.end()))
        raise MalformedRecord(f"{more} markers in one note (a note carries one)")
    kind, raw = first.group(1, 2)
    try:
        record = _json_decoded(raw)
    except ValueError as exc:
        raise MalformedRecord(f"the marker JSON does not parse: {exc}") from None
    if not isinstance(record, dict):
        raise MalformedRecord("not an object")
    # The fast check first, straight from the table (the fold's hot path); schema_problem for
    # what it does not accept, and for a check not built yet.
    event, version = record.get("event"), record.get("v")
    check = (
        _CHECKS.get((kind, version, event)) if type(event) is str and type(version) is int else None
    )
    if check is None or not check.accepts_decoded(record):
        problem = schema_problem(kind, record, decoded=True)
        if problem:
            raise MalformedRecord(problem)
    return kind, raw, record, text[: first.start()] + text[first.end() :]


def parse_marker(body: str) -> tuple[str, dict[str, Any], str]:
    """(kind, record, human text) of a note that carries a marker; MalformedRecord otherwise."""
    kind, _, record, human = _parsed(body)
    return kind, record, human


# Readers fold the same notes again (a verb reads before and after it writes; the board reads
# every issue; watch reads the same issues over and over), and a note's body decides all that
# reading it finds. So the reader remembers, per note, its body when it read as a valid record
# whose digest matches (nearly every note a fold reads), and otherwise (body, kind, marker JSON)
# for a tampered record or (body, None, why) for a malformed one. The common case keeps a str
# alone: a tuple for each of ten thousand records cost a first fold 3-4 ms in allocations and the
# cyclic collector's passes over them, more than finding the marker again on a hit (one regex
# search) costs a second. Keyed by note id, not by body: hashing every body cost a first fold a
# twentieth of its time, and the body kept is compared on every hit, so the answer is always the
# body's own (an edited note, or another instance's note of the same id, reads afresh). A record
# is decoded afresh for every fold, so no two ledgers share one.
#
# What is remembered is kept per issue, and bounded (in notes and in the characters held) by
# forgetting the issues read least recently, never one being folded. So one issue's notes are
# always remembered whole, however many there are (they were all in memory for its fold anyway),
# and a second fold of an issue always finds what its first read: forgetting by note, or all at
# once when full, would read a ledger longer than the bound afresh on every fold.
_READS_MAX = 65536
_READS_MAX_CHARS = 64 * 1024 * 1024


class IssueReads:
    """What the reader remembers of one issue's notes (``remembered`` hands it out)."""

    __slots__ = ("chars", "counted", "folding", "issue", "sealed", "unsealed")

    def __init__(self, issue: str) -> None:
        self.issue = issue
        self.sealed: dict[int, str] = {}
        self.unsealed: dict[int, tuple[str, str | None, str]] = {}
        self.chars = 0  # the characters held: bodies, and the marker JSON or why kept with them
        self.counted = (0, 0)  # (notes, characters) as _held last counted them
        self.folding = 0  # folds of this issue under way: it is not forgotten while any is


_READS: dict[str, IssueReads] = {}  # least recently read first
_held = [0, 0]  # (notes, characters) of every issue, as counted when its last fold ended
_reads_lock = threading.Lock()


def forget_reads() -> None:
    """Forget every note read, as in a fresh process (for tests and benchmarks)."""
    with _reads_lock:
        _READS.clear()
        _held[:] = [0, 0]


def remembered(issue: str) -> IssueReads:
    """What is remembered of ``issue``'s notes (its tracker reference), made the most recently
    read, for a fold to read them with; ``fold_done`` is called when that fold ends."""
    with _reads_lock:
        reads = _READS.pop(issue, None)
        if reads is None:
            reads = IssueReads(issue)
        _READS[issue] = reads
        reads.folding += 1
    return reads


def fold_done(reads: IssueReads) -> None:
    """Count what a fold added, then forget the issues read least recently (but any being
    folded) until what is held is within its bounds again."""
    with _reads_lock:
        reads.folding -= 1
        if _READS.get(reads.issue) is not reads:  # forgotten meanwhile (forget_reads)
            return
        now = (len(reads.sealed) + len(reads.unsealed), reads.chars)
        _held[0] += now[0] - reads.counted[0]
        _held[1] += now[1] - reads.counted[1]
        reads.counted = now
        if _held[0] <= _READS_MAX and _held[1] <= _READS_MAX_CHARS:
            return
        for issue, oldest in list(_READS.items()):
            if _held[0] <= _READS_MAX and _held[1] <= _READS_MAX_CHARS:
                break
            if oldest.folding or oldest is reads:
                continue
            del _READS[issue]
            _held[0] -= oldest.counted[0]
            _held[1] -= oldest.counted[1]


def read_record(note_id: int, body: str, reads: IssueReads) -> tuple[str, dict[str, Any], bool]:
    """(kind, record, whether its digest matches its content) of note ``note_id``, whose body
    carries a marker; MalformedRecord otherwise. What the fold reads a note with, remembering
    it in ``reads``."""
    if reads.sealed.get(note_id) == body:
        found = _MARKER_LINE.search(body.replace("\r\n", "\n") if "\r" in body else body)
        if found is not None:  # (always: the same body read as a record before)
            kind, raw = found.group(1, 2)
            return kind, _json_decoded(raw), True
    if reads.unsealed:
        unsealed = reads.unsealed.get(note_id)
        if unsealed is not None and unsealed[0] == body:
            _, kind_seen, json_or_why = unsealed
            if kind_seen is None:
                raise MalformedRecord(json_or_why)
            return kind_seen, _json_decoded(json_or_why), False
    try:
        kind, raw, record, human = _parsed(body)
    except MalformedRecord as exc:
        why = str(exc)
        reads.unsealed[note_id] = (body, None, why)
        reads.chars += len(body) + len(why)
        raise
    if _digest_matches(kind, record, human):
        reads.sealed[note_id] = body
        reads.chars += len(body)
        return kind, record, True
    reads.unsealed[note_id] = (body, kind, raw)
    reads.chars += 2 * len(body)  # the body, and the marker JSON cut from it
    return kind, record, False
