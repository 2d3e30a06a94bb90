"""The fold's output: notes as read, and the typed state they fold into.

The reader's value types, here and in the modules beside it, are ``typing.NamedTuple``s: CPython
3.11 builds a NamedTuple class in a fifth of a dataclass's time, and importing dataclasses (with
inspect, ast and dis behind it) and building the classes was a sixth of ``pairgate status``'s
run and a third of importing the reader from its bytecode (each merge hook decision). The
builders the command reader fills in as it reads are plain classes with slots.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from pairgate.standalone.records import ROLES

__all__ = [
    "FROZEN_LABEL",
    "ROLE_LABELS",
    "Approval",
    "Break",
    "Constraint",
    "Event",
    "Freeze",
    "Hold",
    "Ledger",
    "MrRef",
    "Note",
    "Offer",
    "Skipped",
    "stamp_epoch",
]


class Note(NamedTuple):
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
        # Positional, in the fields' order: a reader builds one per note (10,000 on a board).
        return cls(
            int(note["id"]),
            int(author.get("id", 0)),
            str(author.get("username", "?")),
            str(note.get("body") or ""),
            str(note.get("created_at", "")),
            str(note.get("updated_at", "")),
            bool(note.get("system", False)),
        )


class MrRef(NamedTuple):
    """A merge request, by its project's full path and its iid."""

    project: str  # the full path
    iid: int

    def __str__(self) -> str:
        return f"{self.project}!{self.iid}"


class Offer(NamedTuple):
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


class Approval(NamedTuple):
    """An approval on the trail: who approved which merge request at which head, for whom."""

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


class Hold(NamedTuple):
    """Someone took the issue (a claim or an accept) at ``note_id``, in ``role``."""

    agent: str
    role: str
    note_id: int
    author_id: int = 0  # the GitLab account that wrote that note


class Skipped(NamedTuple):
    """A note whose marker is not part of the state, and why."""

    note_id: int
    kind: str  # forged | malformed | tampered | replayed | duplicate
    reason: str
    author: str = ""


class Break(NamedTuple):
    """A record whose ``prev`` names no earlier record: something before it was deleted or
    rewritten."""

    note_id: int
    prev: str
    reason: str


class Event(NamedTuple):
    """One authentic, well-formed record on the trail. ``void`` says why the fold gave it no
    effect (a claim while held, an accept of a stale offer, ...); None when it took effect."""

    note_id: int
    kind: str
    event: str
    agent: str
    record: Mapping[str, Any]
    created_at: str
    void: str | None = None
    author_id: int = 0  # the GitLab account that wrote its note, as GitLab reports it


class _LedgerFields(NamedTuple):
    """What an issue's notes fold into: holder, pending offer, approvals, and the trail."""

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
    freezes: tuple[Freeze, ...] = ()  # every freeze window recorded here
    constraints: tuple[Constraint, ...] = ()  # every standing constraint recorded here
    unbound: tuple[int, ...] = ()  # v1 records: they name no issue, so replay goes unseen


class Ledger(_LedgerFields):
    """What an issue's notes fold into: holder, pending offer, approvals, and the trail. (The
    fields are _LedgerFields'; this subclass has the instance dictionary the facts below are
    remembered in, which a NamedTuple's own instances have no room for.)"""

    @property
    def unbound_notice(self) -> str | None:
        """What every surface says of the v1 records (the first five named), or None."""
        if not self.unbound:
            return None
        notes = ", ".join(str(n) for n in self.unbound[:5])
        more = f" and {len(self.unbound) - 5} more" if len(self.unbound) > 5 else ""
        return (
            f"notes {notes}{more} are v1 records, written before records named their issue: "
            f"they cannot be checked for replay"
        )

    # The facts the independence rule reads (approvals.py), derived from the trail when first
    # asked for, so the fold itself pays nothing for them.

    @functools.cached_property
    def holds(self) -> tuple[Hold, ...]:
        """Every take of the issue (a claim or an accept that took effect), in note order."""
        return tuple(
            Hold(e.agent, str(e.record["role"]), e.note_id, e.author_id)
            for e in self.trail
            if e.void is None and e.event in ("claim", "accept")
        )

    @functools.cached_property
    def review_offers(self) -> tuple[Offer, ...]:
        """Every offer of a merge request for review that took effect, in note order."""
        return tuple(
            Offer(
                note_id=e.note_id,
                sender=e.agent,
                to=e.record["to"],
                role=e.record["role"],
                sha=e.record["sha"],
                mr=MrRef(e.record["mr"]["project"], e.record["mr"]["iid"]),
                reason=e.record["reason"],
                supersedes=e.record["supersedes"],
            )
            for e in self.trail
            if e.void is None and e.event == "handoff" and e.record["role"] == "review"
        )

    @functools.cached_property
    def sessions(self) -> tuple[tuple[str, str, int], ...]:
        """Each (agent, session) pair on the trail, with the first note written so."""
        first: dict[tuple[str, str], int] = {}
        for e in self.trail:
            first.setdefault((e.agent, str(e.record["session"])), e.note_id)
        return tuple((agent, session, note) for (agent, session), note in first.items())

    @functools.cached_property
    def _authors(self) -> dict[int, int]:
        return {e.note_id: e.author_id for e in self.trail}

    def author_of(self, note_id: int) -> int | None:
        """The GitLab account that wrote the record in ``note_id``, as GitLab reports it."""
        return self._authors.get(note_id)

    @functools.cached_property
    def _digest_notes(self) -> dict[str, int]:
        return {str(e.record["digest"]): e.note_id for e in self.trail}

    def prev_note(self, note_id: int) -> int | None:
        """The note the record in ``note_id`` names as its prev: the last record its writer
        saw (None for a first record, or one whose prev names nothing here)."""
        event = next((e for e in self.trail if e.note_id == note_id), None)
        prev = event.record.get("prev") if event else None
        return None if prev is None else self._digest_notes.get(str(prev))

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

    def written(self, write_id: str) -> Event | None:
        """The trail's record carrying this write_id (the first, if a retry posted it twice)."""
        return next((e for e in self.trail if e.record.get("write_id") == write_id), None)


ROLE_LABELS = tuple(f"agent::{role}" for role in ROLES)
# -- 5b. Board-wide records: freeze windows and standing constraints (the board issue) ---------
# The fold hands freeze and constraint records to _BoardFold; they never touch ownership.
# Freeze windows are found board-wide through FROZEN_LABEL: every issue that holds a freeze
# record carries it (freeze adds it; thaw removes it when no window there is still live), so a
# reader lists issues by that one label instead of scanning every issue. The label is an index
# only: the records decide, and an expired window binds nobody whatever the label says.

FROZEN_LABEL = "pairgate::frozen"


def stamp_epoch(stamp: str) -> float | None:
    """A GitLab ISO 8601 timestamp as epoch seconds; None when it does not parse."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Freeze(NamedTuple):
    """One recorded freeze window. ``until`` is the note's server time plus ``minutes``."""

    note_id: int
    agent: str
    scope: str  # "board" | "issue:<iid>" | "mr:<project>!<iid>"
    reason: str
    minutes: int
    created_at: str
    thawed_by: int | None = None  # the note that lifted it early

    @property
    def until(self) -> float | None:
        """Epoch seconds the window ends at; None when GitLab's timestamp does not parse."""
        start = stamp_epoch(self.created_at)
        return None if start is None else start + self.minutes * 60

    def live(self, now: float) -> bool:
        """Does it bind at ``now``? A window whose end cannot be read binds (fail closed)."""
        until = self.until
        return self.thawed_by is None and (until is None or now < until)

    def covers(self, *, issue: int | None = None, mr: MrRef | None = None) -> bool:
        """Is ``issue`` (a write on it) or ``mr`` inside this window's scope?"""
        if self.scope == "board":
            return True
        kind, _, target = self.scope.partition(":")
        if kind == "issue":
            return issue is not None and int(target) == issue
        project, _, iid = target.rpartition("!")
        return mr is not None and mr.iid == int(iid) and mr.project.casefold() == project.casefold()


class Constraint(NamedTuple):
    """A standing constraint recorded on the issue: only ``imposer`` may lift it."""

    note_id: int
    id: str
    text: str
    imposer: str
