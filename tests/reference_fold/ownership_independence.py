"""The reference fold: the reader commit 25165ec assembled (pairgate/ownership.py), cut to what
tests/test_fold_reference.py runs.

Every line is that file's, in its order, except this docstring, the imports (which name only
what is left), ``Unreached`` and the ``raise Unreached`` lines. What the comparison's trails
never reach was cut: the functions and methods they never call, and the definitions nothing left
uses. A block of a function that runs, but that the trails never enter, became ``raise
Unreached``, so a trail that strays past the cut fails loudly rather than folding otherwise.
tests/reference_fold/README.md says how it was cut.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any


class Unreached(BaseException):
    """A block the comparison's trails never entered, cut from this copy. A BaseException, so
    that no ``except Exception`` of the reader can mistake it for one of its own failures."""


# =============================================================================================
# begin pairgate/standalone/errors.py
# =============================================================================================


class Exit(enum.IntEnum):
    """Every pairgate program exits with one of these: 0 done or pass, 1 refused, 2 could not."""

    OK = 0  # done, pass, in line
    REFUSED = 1  # refused by the protocol, or drift for --check
    ERROR = 2  # usage, configuration or environment error; could not decide


class PairgateError(Exception):
    """An expected failure: its message is for the user, its exit code says what kind it was.

    Anything else that escapes is a bug; the one translation point (``report``) still turns it
    into exit 2 rather than letting a traceback pass for a verdict.
    """

    exit_code: Exit = Exit.ERROR


class ConfigError(PairgateError):
    """The configuration is missing, unreadable or malformed."""


# end pairgate/standalone/errors.py


# =============================================================================================
# begin pairgate/standalone/schema_check.py
# =============================================================================================


def _draft_validator(schema: Mapping[str, Any]) -> Any:
    """A jsonschema validator for one of this file's schemas (all draft 2020-12). Formats are
    not asserted (jsonschema's default): no schema here uses ``format``."""
    import jsonschema

    return jsonschema.Draft202012Validator(schema)


# end pairgate/standalone/schema_check.py


# =============================================================================================
# begin pairgate/standalone/config.py
# =============================================================================================


CONFIG_ENV = "PAIRGATE_CONFIG"
CONFIG_FILENAME = "pairgate-config.json"

# The specification's seventeen keys, plus ledger_author_user_ids (docs/agent-handoff-reference.md, "The fold": the accounts whose notes count).
CONFIG_KEYS: tuple[str, ...] = (
    "tracker_project",
    "group_path",
    "group_id",
    "env_prefix",
    "agent_identity_prefix",
    "review_bot_token_file",
    "deployed_paths",
    "generic_tracking_issue",
    "liveness_oracle_file",
    "cli_command",
    "renovate_bot_user_id",
    "renovate_branch_prefix",
    "renovate_exempt_namespaces",
    "cli_install_command",
    "hooks_install_command",
    "agent_text_dir",
    "handoff_doc",
    "ledger_author_user_ids",
)

# A configuration older than the Renovate namespaces key exempts nothing (the specification:
# "a gate newer than its configuration fails toward review rather than toward exemption").
OPTIONAL_CONFIG_KEYS = frozenset({"renovate_exempt_namespaces"})

_PATH_SEGMENT = r"[A-Za-z0-9_.][A-Za-z0-9_.-]*"
_NON_EMPTY = {"type": "string", "minLength": 1, "pattern": r"\S"}
# A path the specification reads relative to the configuration file: never absolute.
_RELATIVE_PATH = {"type": "string", "minLength": 1, "pattern": r"^[^/~]"}

CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pairgate configuration",
    "type": "object",
    "additionalProperties": False,
    "required": sorted(set(CONFIG_KEYS) - OPTIONAL_CONFIG_KEYS),
    "properties": {
        "tracker_project": {
            "type": "string",
            "pattern": rf"^{_PATH_SEGMENT}(/{_PATH_SEGMENT})+$",
            "description": "group/project of the issues that hold the ledger",
        },
        "group_path": {"type": "string", "pattern": rf"^{_PATH_SEGMENT}(/{_PATH_SEGMENT})*$"},
        "group_id": {"type": "string", "pattern": r"^[0-9]+$"},
        "env_prefix": {"type": "string", "pattern": r"^[A-Z][A-Z0-9_]*$"},
        "agent_identity_prefix": {"type": "string", "pattern": r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"},
        "review_bot_token_file": _NON_EMPTY,
        "deployed_paths": {"type": "array", "minItems": 1, "items": _NON_EMPTY},
        "generic_tracking_issue": {"type": ["integer", "null"], "minimum": 1},
        "liveness_oracle_file": _RELATIVE_PATH,
        "cli_command": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9._-]*$"},
        "renovate_bot_user_id": {"type": "integer", "minimum": 1},
        "renovate_branch_prefix": {"type": "string", "minLength": 1},
        "renovate_exempt_namespaces": {
            "type": "array",
            "items": {"type": "string", "pattern": rf"^{_PATH_SEGMENT}(/{_PATH_SEGMENT})*$"},
        },
        "cli_install_command": _NON_EMPTY,
        "hooks_install_command": _NON_EMPTY,
        "agent_text_dir": _RELATIVE_PATH,
        "handoff_doc": _NON_EMPTY,
        "ledger_author_user_ids": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"type": "integer", "minimum": 1},
        },
    },
}


@dataclass(frozen=True)
class Config:
    """A loaded, validated configuration. ``values`` holds exactly the file's keys."""

    path: Path
    values: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        if key == "renovate_exempt_namespaces":
            raise Unreached
        return self.values[key]


def config_path(env: Mapping[str, str]) -> Path:
    """Which file configures this run: PAIRGATE_CONFIG when set, else the file beside this one.

    A set variable is used or is an error; it never falls through to the file beside.
    """
    if CONFIG_ENV in env:
        named = env[CONFIG_ENV]
        if not named.strip():
            raise Unreached
        return Path(named).expanduser()
    raise Unreached


def load_config(env: Mapping[str, str]) -> Config:
    """Read and validate the configuration. Every error names the file, and the key if one."""
    path = config_path(env)
    source = f"{CONFIG_ENV}={path}" if CONFIG_ENV in env else str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise Unreached
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreached
    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unreached
    return Config(path=path.resolve(), values=validate_config(values, source=source))


def validate_config(values: Any, *, source: str) -> dict[str, Any]:
    """Check a decoded configuration against CONFIG_SCHEMA and the rules a schema cannot say."""
    if not isinstance(values, dict):
        raise Unreached
    extra = sorted(set(values) - set(CONFIG_KEYS))
    if extra:
        raise Unreached
    missing = [k for k in CONFIG_KEYS if k not in values and k not in OPTIONAL_CONFIG_KEYS]
    if missing:
        raise Unreached
    errors = sorted(
        _draft_validator(CONFIG_SCHEMA).iter_errors(values), key=lambda e: (list(e.path), e.message)
    )
    if errors:
        raise Unreached
    group, tracker = values["group_path"], values["tracker_project"]
    if not tracker.startswith(group + "/"):
        raise Unreached
    return values


# end pairgate/standalone/config.py


# =============================================================================================
# begin pairgate/standalone/records.py
# =============================================================================================


# A ledger note is short human text and then ONE marker line:
#     <!-- mochi-task:<kind> <json> -->
# The marker names are the record's persisted format: they never follow cli_command.
MARKER_OPEN = "<!-- mochi-task:"
_MARKER_LINE = re.compile(r"^<!-- mochi-task:(\S+) (.*) -->[ \t]*$", re.MULTILINE)
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

# kind -> event -> the fields that event adds to the common ones (all required).
EVENT_FIELDS: dict[str, dict[str, dict[str, Any]]] = {
    "ownership": {
        "claim": {"role": _ROLE},
        "handoff": _OFFER_FIELDS,
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


# -- record versions ---------------------------------------------------------------------------
# EVENT_FIELDS above is version 1. Version 2 adds ``issue`` to every kind bound to an issue, the
# diff the reviewer saw to an approval, and the withdrawal of an approval.
ISSUE_BOUND_KINDS = frozenset({"ownership", "approval", "freeze"})
_BRANCH = {"type": "string", "minLength": 1, "maxLength": 255}
_V2_ADDS: dict[str, dict[str, Any]] = {
    "approve": {
        "target_branch": {**_BRANCH, "description": "the branch the MR targeted when approved"},
        "base_sha": {**_SHA, "description": "diff_refs.base_sha when approved: the merge base"},
        "start_sha": {**_SHA, "description": "diff_refs.start_sha when approved"},
    },
}
_V2_EVENTS: dict[str, dict[str, dict[str, Any]]] = {
    "approval": {
        "withdraw": {
            "approval": {**_NOTE_ID, "description": "the note of the approval withdrawn"},
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


def _event_schema(version: int, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    properties = {"v": {"const": version}, **_COMMON, "event": {"const": event}, **fields}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


KIND_OF_EVENT = {
    event: kind
    for kind, versions in RECORD_FIELDS.items()
    for f in versions.values()
    for event in f
}


@functools.cache
def _event_validator(kind: str, version: int, event: str) -> Any:
    # One validator per event and version, built once and reused: the fold checks thousands of
    # records. RECORD_SCHEMAS[kind] is this schema under an if/then on ``v`` and ``event``, so
    # checking the event's own schema directly gives the same verdict without re-testing every
    # branch.
    return _draft_validator(_event_schema(version, event, RECORD_FIELDS[kind][version][event]))


class MalformedRecord(Exception):
    """A marker that cannot be read as a record; the message says why."""


def schema_problem(kind: str, record: Any) -> str | None:
    """Why ``record`` is not a valid ``kind`` record, or None when it is."""
    if kind not in RECORD_FIELDS:
        return f"unknown record kind {kind!r}"
    if not isinstance(record, dict):
        raise Unreached
    versions = RECORD_FIELDS[kind]
    event = record.get("event")
    if not isinstance(event, str) or KIND_OF_EVENT.get(event) != kind:
        return f"unknown {kind} event {event!r}"
    version = record.get("v")
    if type(version) is not int or event not in versions.get(version, {}):
        raise Unreached
    validator = _event_validator(kind, version, event)
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
        raise Unreached
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


# end pairgate/standalone/records.py


# =============================================================================================
# begin pairgate/standalone/ledger.py
# =============================================================================================


@dataclass(frozen=True)
class Note:
    """One GitLab note, as read."""

    id: int
    author_id: int
    author_username: str
    body: str
    created_at: str
    updated_at: str
    system: bool = False

    @classmethod
    def from_api(cls, note: Mapping[str, Any]) -> Note:
        author = note.get("author") or {}
        return cls(
            id=int(note["id"]),
            author_id=int(author.get("id", 0)),
            author_username=str(author.get("username", "?")),
            body=str(note.get("body") or ""),
            created_at=str(note.get("created_at", "")),
            updated_at=str(note.get("updated_at", "")),
            system=bool(note.get("system", False)),
        )


@dataclass(frozen=True)
class MrRef:
    project: str  # the full path
    iid: int


@dataclass(frozen=True)
class Offer:
    """A pending offer: a handoff, or the offer back that an approval carries."""

    note_id: int
    sender: str
    to: str
    role: str
    sha: str
    mr: MrRef | None
    reason: str | None
    event: str = "handoff"  # or "approve"
    supersedes: int | None = None


@dataclass(frozen=True)
class Approval:
    note_id: int
    approver: str
    to: str
    mr: MrRef
    sha: str
    self_approval: bool  # by the two rules of one issue's trail; see independence.py for all
    not_covering: tuple[str, ...]
    reason: str | None = None
    self_because: str | None = None  # which self-approval rule, said in words
    version: int = 1  # the record's: a v1 approval binds no target branch or merge base
    target_branch: str | None = None  # what the reviewer saw (v2): the target branch
    base_sha: str | None = None  # and diff_refs.base_sha (the merge base) ...
    start_sha: str | None = None  # ... and start_sha, read from GitLab when approved
    session: str = ""  # the session that wrote it
    accepted_from: str | None = None  # who sent the offer the approver accepted
    withdrawn_by: int | None = None  # the note of its approver's withdrawal
    withdraw_reason: str | None = None


@dataclass(frozen=True)
class Skipped:
    """A note whose marker is not part of the state, and why."""

    note_id: int
    kind: str  # forged | malformed | tampered | replayed | duplicate
    reason: str
    author: str = ""


@dataclass(frozen=True)
class Break:
    """A record whose ``prev`` names no earlier record: something before it was deleted or
    rewritten."""

    note_id: int
    prev: str
    reason: str


@dataclass(frozen=True)
class Event:
    """One authentic, well-formed record on the trail. ``void`` says why the fold gave it no
    effect (a claim while held, an accept of a stale offer, ...); None when it took effect."""

    note_id: int
    kind: str
    event: str
    agent: str
    record: Mapping[str, Any]
    created_at: str
    void: str | None = None


@dataclass(frozen=True)
class Ledger:
    holder: str | None = None
    role: str | None = None
    offer: Offer | None = None
    approvals: tuple[Approval, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    breaks: tuple[Break, ...] = ()
    trail: tuple[Event, ...] = ()
    edited: tuple[int, ...] = ()  # note ids whose updated_at is later than created_at
    concurrent: tuple[tuple[int, ...], ...] = ()  # notes that name the same prev
    head: str | None = None  # the digest of the latest record: the next writer's prev
    holder_since: int | None = None  # the note that made the holder the holder
    accepted_from: str | None = None  # who sent the offer the holder accepted
    freezes: tuple[Freeze, ...] = ()  # every freeze window recorded here (see section 5b)
    constraints: tuple[Constraint, ...] = ()  # every standing constraint recorded here
    unbound: tuple[int, ...] = ()  # v1 records: they name no issue, so replay goes unseen

    @property
    def label(self) -> str | None:
        """The role label the notes call for."""
        return f"agent::{self.role}" if self.role else None

    @property
    def names(self) -> frozenset[str]:
        """Every identity the trail names, as writer or receiver."""
        named = {e.agent for e in self.trail}
        named |= {str(e.record["to"]) for e in self.trail if "to" in e.record}
        return frozenset(named)


@dataclass(frozen=True)
class Freeze:
    """One recorded freeze window. ``until`` is the note's server time plus ``minutes``."""

    note_id: int
    agent: str
    scope: str  # "board" | "issue:<iid>" | "mr:<project>!<iid>"
    reason: str
    minutes: int
    created_at: str
    thawed_by: int | None = None  # the note that lifted it early


@dataclass(frozen=True)
class Constraint:
    """A standing constraint recorded on the issue: only ``imposer`` may lift it."""

    note_id: int
    id: str
    text: str
    imposer: str


# end pairgate/standalone/ledger.py


# =============================================================================================
# begin pairgate/standalone/fold.py
# =============================================================================================


def identity_pattern(config: Config) -> re.Pattern[str]:
    """<agent_identity_prefix>-lead|-review|-solo|-finder, optionally with a suffix (-42)."""
    prefix = re.escape(str(config["agent_identity_prefix"]))
    return re.compile(rf"^{prefix}-(lead|review|solo|finder)(-[a-z0-9]+)*$")


def is_finder(agent: str, config: Config) -> bool:
    match = identity_pattern(config).match(agent)
    return bool(match and match.group(1) == "finder")


def _edited(note: Note) -> bool:
    if note.updated_at == note.created_at:
        return False
    try:
        created = datetime.fromisoformat(note.created_at)
        updated = datetime.fromisoformat(note.updated_at)
    except ValueError:
        return note.updated_at != note.created_at
    return updated > created


class _Fold:
    """The fold's working state: mutable here, frozen into a Ledger at the end."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.holder: str | None = None
        self.role: str | None = None
        self.holder_since: int | None = None
        self.accepted_from: str | None = None
        self.offer: Offer | None = None
        self.approvals: list[Approval] = []
        # (digest, note id) of the last record before the one being applied
        self.seen: tuple[str | None, int | None] = (None, None)

    def apply(self, note_id: int, record: Mapping[str, Any]) -> str | None:
        """Apply one record; return why it is void, or None when it took effect."""
        return getattr(self, f"_{record['event']}")(note_id, record)

    def _not_holder(self, agent: str) -> str | None:
        if agent == self.holder:
            return None
        who = f"{self.holder} holds it" if self.holder else "nobody holds it"
        return f"{agent} does not hold the issue ({who})"

    def _offer_blocked(self, record: Mapping[str, Any]) -> str | None:
        supersedes = record["supersedes"]
        if self.offer is not None and supersedes != self.offer.note_id:
            return f"an offer is already pending (note {self.offer.note_id})"
        if self.offer is None and supersedes is not None:
            return f"it supersedes note {supersedes}, which is not a pending offer"
        return None

    def _take(self, note_id: int, agent: str, role: str, sender: str | None) -> None:
        self.holder, self.role, self.holder_since, self.accepted_from = agent, role, note_id, sender

    def _claim(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        if is_finder(r["agent"], self.config):
            return "a finder never claims"
        if self.holder is not None:
            return f"{self.holder} already holds the issue (note {self.holder_since})"
        self._take(note_id, r["agent"], r["role"], None)
        return None

    def _new_offer(self, note_id: int, r: Mapping[str, Any]) -> Offer:
        return Offer(
            note_id=note_id,
            sender=r["agent"],
            to=r["to"],
            role=r["role"],
            sha=r["sha"],
            mr=MrRef(r["mr"]["project"], r["mr"]["iid"]),
            reason=r["reason"],
            event=r["event"],
            supersedes=r["supersedes"],
        )

    def _handoff(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._not_holder(r["agent"]) or self._offer_blocked(r)
        if void is None:
            self.offer = self._new_offer(note_id, r)
        return void

    def _approve(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._not_holder(r["agent"])
        if void is None and self.role != "review":
            void = f"{r['agent']} holds the issue as {self.role}, and only a review approves"
        void = void or self._offer_blocked(r)
        if void is not None:
            return void
        because = self_approval_rule(r["agent"], r["to"], self.accepted_from)
        offer = self._new_offer(note_id, r)
        assert offer.mr is not None
        self.approvals.append(
            Approval(
                note_id=note_id,
                approver=r["agent"],
                to=r["to"],
                mr=offer.mr,
                sha=r["sha"],
                self_approval=because is not None or bool(r["self_approval"]),
                not_covering=tuple(r["not_covering"]),
                reason=r["reason"],
                self_because=because or (WRITER_SAYS if r["self_approval"] else None),
                version=r["v"],
                target_branch=r.get("target_branch"),
                base_sha=r.get("base_sha"),
                start_sha=r.get("start_sha"),
                session=r["session"],
                accepted_from=self.accepted_from,
            )
        )
        self.offer = offer
        return None

    def _answerable(self, r: Mapping[str, Any]) -> str | None:
        if self.offer is None or self.offer.note_id != r["offer"]:
            pending = f"note {self.offer.note_id} is" if self.offer else "no offer is"
            return f"note {r['offer']} is not the pending offer ({pending} pending)"
        if self.offer.to != r["agent"]:
            return f"the offer is to {self.offer.to}, not {r['agent']}"
        return None

    def _accept(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._answerable(r)
        if void is None:
            assert self.offer is not None
            self._take(note_id, r["agent"], self.offer.role, self.offer.sender)
            self.offer = None
        return void

    def _decline(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._answerable(r)
        if void is None:
            self.offer = None
        return void

    def _release(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._not_holder(r["agent"])
        if void is None and self.offer is not None:
            void = f"an offer is pending (note {self.offer.note_id})"
        if void is None:
            self.holder = self.role = self.holder_since = self.accepted_from = None
        return void

    def _close(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        # A close ends the issue for whoever holds it, so it counts only over the state its
        # writer saw: otherwise a claim racing a close of an unheld issue would be wiped out.
        if r["prev"] != self.seen[0]:
            return (
                f"its writer had not seen note {self.seen[1]}: a close acts only on the state "
                f"it saw"
            )
        if self.offer is not None:
            return f"an offer is pending (note {self.offer.note_id})"
        self.holder = self.role = self.holder_since = self.accepted_from = None
        return None


# The reason an approval is a self-approval when only its writer's flag says so: approve sets
# the flag when the independence rule finds a hand in the work, which every reader re-derives.
WRITER_SAYS = "recorded so by its writer"


def self_approval_rule(approver: str, to: str, accepted_from: str | None) -> str | None:
    """Why an approval is a self-approval, or None. Both rules are in docs/agent-handoff-reference.md, "The fold"."""
    if approver == to:
        return f"{approver} offers the work back to itself"
    if accepted_from == approver:
        raise Unreached
    return None


def fold(notes: Sequence[Note], *, config: Config, issue: int) -> Ledger:
    """Notes to state. Pure: no I/O, no clock. Every reader calls this; nothing else reads
    markers. Notes are taken in id order (GitLab's creation order). ``issue`` is the tracker
    issue the notes were read from: a record naming another is skipped as replayed."""
    authors = frozenset(config["ledger_author_user_ids"])
    here = f"{config['tracker_project']}#{issue}"  # what a record of this issue names
    here_folded = here.casefold()
    state = _Fold(config)
    board = _BoardFold()
    skipped: list[Skipped] = []
    breaks: list[Break] = []
    trail: list[Event] = []
    edited: list[int] = []
    digests: dict[str, int] = {}  # digest of every record read so far -> its note
    rejected: dict[str, tuple[int, str]] = {}  # digest a skipped record claims -> (note, why)
    write_ids: dict[str, int] = {}
    unbound: list[int] = []
    by_prev: dict[str | None, list[int]] = {}
    head: str | None = None
    head_note: int | None = None
    for note in sorted(notes, key=lambda n: n.id):
        if note.system or MARKER_OPEN not in note.body:
            continue
        author = f"{note.author_username} (user {note.author_id})"
        if note.author_id not in authors:
            skipped.append(
                Skipped(note.id, "forged", f"a marker in a note by {author}, not a ledger author")
            )
            continue
        if _edited(note):
            edited.append(note.id)
        try:
            kind, record, human = parse_marker(note.body)
        except MalformedRecord as exc:
            skipped.append(Skipped(note.id, "malformed", str(exc), author))
            continue
        if record_digest(kind, record, human) != record["digest"]:
            rejected[record["digest"]] = (note.id, "tampered")
            reason = "its digest does not match its content: the note was changed after writing"
            skipped.append(Skipped(note.id, "tampered", reason, author))
            continue
        if KIND_OF_EVENT[record["event"]] != kind:
            raise Unreached
        named = record.get("issue")
        if named is None:
            if kind in ISSUE_BOUND_KINDS:
                unbound.append(note.id)
        elif named != here and named.casefold() != here_folded:
            raise Unreached
        first = write_ids.get(record["write_id"])
        if first is not None:
            reason = f"repeats the write_id of note {first} (a retried write); ignored"
            skipped.append(Skipped(note.id, "duplicate", reason, author))
            continue
        write_ids[record["write_id"]] = note.id
        prev = record["prev"]
        if prev is not None and prev not in digests:
            where = rejected.get(prev)
            reason = (
                f"its prev names note {where[0]}, which was skipped as {where[1]}"
                if where
                else "its prev names no earlier record: an earlier note was deleted or rewritten"
            )
            breaks.append(Break(note.id, prev, reason))
        by_prev.setdefault(prev, []).append(note.id)
        digests[record["digest"]] = note.id
        state.seen = (head, head_note)
        head, head_note = record["digest"], note.id
        void = board.apply(note, record) if kind in BOARD_KINDS else state.apply(note.id, record)
        trail.append(
            Event(note.id, kind, record["event"], record["agent"], record, note.created_at, void)
        )
    return Ledger(
        holder=state.holder,
        role=state.role,
        offer=state.offer,
        approvals=tuple(state.approvals),
        skipped=tuple(skipped),
        breaks=tuple(breaks),
        trail=tuple(trail),
        edited=tuple(edited),
        concurrent=tuple(tuple(ids) for ids in by_prev.values() if len(ids) > 1),
        head=head,
        holder_since=state.holder_since,
        accepted_from=state.accepted_from,
        freezes=tuple(board.freezes.values()),
        constraints=tuple(board.constraints),
        unbound=tuple(unbound),
    )


class _BoardFold:
    """The fold's state for the board-wide kinds; ``apply`` returns why a record is void."""

    def __init__(self) -> None:
        self.freezes: dict[int, Freeze] = {}
        self.constraints: list[Constraint] = []

    def apply(self, note: Note, r: Mapping[str, Any]) -> str | None:
        if r["event"] == "freeze":
            self.freezes[note.id] = Freeze(
                note.id, r["agent"], r["scope"], r["reason"], r["minutes"], note.created_at
            )
            return None
        if r["event"] == "thaw":
            window = self.freezes.get(r["freeze"])
            if window is None:
                return f"note {r['freeze']} is not a freeze recorded on this issue"
            if window.agent != r["agent"]:
                return f"the freeze of note {window.note_id} is {window.agent}'s to thaw"
            if window.thawed_by is not None:
                raise Unreached
            self.freezes[window.note_id] = replace(window, thawed_by=note.id)
            return None
        if constraint_id(r["text"]) != r["id"]:
            return f"its id {r['id']} is not the hash of its text ({constraint_id(r['text'])})"
        self.constraints.append(Constraint(note.id, r["id"], r["text"], r["agent"]))
        return None


# end pairgate/standalone/fold.py


