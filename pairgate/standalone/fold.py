"""The fold: notes to state. Pure: no I/O, no clock, no environment."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any

from pairgate.standalone.collector import hold_collector, release_collector
from pairgate.standalone.config import Config
from pairgate.standalone.ledger import (
    Approval,
    Break,
    Constraint,
    Event,
    Freeze,
    Ledger,
    MrRef,
    Note,
    Offer,
    Skipped,
)
from pairgate.standalone.records import (
    BOARD_KINDS,
    ISSUE_BOUND_KINDS,
    KIND_OF_EVENT,
    MARKER_OPEN,
    MalformedRecord,
    constraint_id,
    fold_done,
    read_record,
    remembered,
)

__all__ = [
    "WRITER_SAYS",
    "binding_freeze",
    "fold",
    "freeze_refusal",
    "identity_pattern",
    "is_finder",
    "mr_freeze_reason",
    "self_approval_rule",
]

# The events _Fold applies (the board-wide kinds are _BoardFold's).
_ISSUE_EVENTS = tuple(event for event, kind in KIND_OF_EVENT.items() if kind not in BOARD_KINDS)


def identity_pattern(config: Config) -> re.Pattern[str]:
    """<agent_identity_prefix>-lead|-review|-solo|-finder, optionally with a suffix (-42)."""
    prefix = re.escape(config.agent_identity_prefix)
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
        # The pending offer as (its note, its record): a handoff, or the offer back an approval
        # carries. Its Offer is built once, for the ledger: most offers are answered before the
        # fold ends, and building one for each cost a fold of handoffs 3% of its time.
        self.pending: tuple[int, Mapping[str, Any]] | None = None
        self.approvals: list[Approval] = []
        # (digest, note id) of the last record before the one being applied
        self.seen: tuple[str | None, int | None] = (None, None)
        # event -> its rule: applying a record returns why it is void, or None when it took
        # effect. Looked up once here rather than by name for every record.
        self.rules: dict[str, Callable[[int, Mapping[str, Any]], str | None]] = {
            event: getattr(self, f"_{event}") for event in _ISSUE_EVENTS
        }

    def _not_holder(self, agent: str) -> str | None:
        if agent == self.holder:
            return None
        who = f"{self.holder} holds it" if self.holder else "nobody holds it"
        return f"{agent} does not hold the issue ({who})"

    def _offer_blocked(self, record: Mapping[str, Any]) -> str | None:
        supersedes = record["supersedes"]
        if self.pending is not None and supersedes != self.pending[0]:
            return f"an offer is already pending (note {self.pending[0]})"
        if self.pending is None and supersedes is not None:
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

    def offer(self) -> Offer | None:
        """The pending offer, as the ledger holds it."""
        if self.pending is None:
            return None
        note_id, r = self.pending
        mr = r["mr"]
        return Offer(
            note_id, r["agent"], r["to"], r["role"], r["sha"], MrRef(mr["project"], mr["iid"]),
            r["reason"], r["event"], r["supersedes"],
        )  # fmt: skip

    def _handoff(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        if r["agent"] == self.holder and self.pending is None and r["supersedes"] is None:
            self.pending = (note_id, r)  # the usual case, without the two checks
            return None
        void = self._not_holder(r["agent"]) or self._offer_blocked(r)
        if void is None:
            self.pending = (note_id, r)
        return void

    def _approve(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._not_holder(r["agent"])
        if void is None and self.role != "review":
            void = f"{r['agent']} holds the issue as {self.role}, and only a review approves"
        void = void or self._offer_blocked(r)
        if void is not None:
            return void
        because = self_approval_rule(r["agent"], r["to"], self.accepted_from)
        mr = r["mr"]
        self.approvals.append(
            Approval(
                note_id=note_id,
                approver=r["agent"],
                to=r["to"],
                mr=MrRef(mr["project"], mr["iid"]),
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
        self.pending = (note_id, r)
        return None

    def _withdraw(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        """The approver takes an approval back: it stops counting, and the offer back to the
        lead that it made is voided if it is still pending. Anyone may hold the issue."""
        found = next((i for i, a in enumerate(self.approvals) if a.note_id == r["approval"]), None)
        if found is None:
            return f"note {r['approval']} is not an approval recorded on this issue"
        approval = self.approvals[found]
        if approval.approver != r["agent"]:
            return f"the approval in note {approval.note_id} is {approval.approver}'s to withdraw"
        if approval.withdrawn_by is not None:
            return f"note {approval.withdrawn_by} already withdrew it"
        self.approvals[found] = approval._replace(withdrawn_by=note_id, withdraw_reason=r["reason"])
        if self.pending is not None and self.pending[0] == approval.note_id:
            self.pending = None
        return None

    def _answerable(self, r: Mapping[str, Any]) -> str | None:
        if self.pending is None or self.pending[0] != r["offer"]:
            pending = f"note {self.pending[0]} is" if self.pending else "no offer is"
            return f"note {r['offer']} is not the pending offer ({pending} pending)"
        to = self.pending[1]["to"]
        if to != r["agent"]:
            return f"the offer is to {to}, not {r['agent']}"
        return None

    def _accept(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        pending = self.pending
        if pending is None or pending[0] != r["offer"] or pending[1]["to"] != r["agent"]:
            return self._answerable(r)  # which says why
        offer = pending[1]
        self._take(note_id, r["agent"], offer["role"], offer["agent"])
        self.pending = None
        return None

    def _decline(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._answerable(r)
        if void is None:
            self.pending = None
        return void

    def _release(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._not_holder(r["agent"])
        if void is None and self.pending is not None:
            void = f"an offer is pending (note {self.pending[0]})"
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
        if self.pending is not None:
            return f"an offer is pending (note {self.pending[0]})"
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
        return f"{approver} reviewed an offer it sent itself"
    return None


_BY_ID = attrgetter("id")


def _author(note: Note) -> str:
    return f"{note.author_username} (user {note.author_id})"


def fold(notes: Sequence[Note], *, config: Config, issue: int) -> Ledger:
    """Notes to state. Pure: no I/O, no clock. Every reader calls this; nothing else reads
    markers. Notes are taken in id order (GitLab's creation order). ``issue`` is the tracker
    issue the notes were read from: a record naming another is skipped as replayed."""
    authors = config.record_author_ids
    here = f"{config.tracker_project}#{issue}"  # what a record of this issue names
    here_folded = here.casefold()
    state = _Fold(config)
    rules = state.rules
    board = _BoardFold()
    skipped: list[Skipped] = []
    breaks: list[Break] = []
    trail: list[Event] = []
    edited: list[int] = []
    digests: dict[str, int] = {}  # digest of every record read so far -> its note
    rejected: dict[str, tuple[int, str]] = {}  # digest a skipped record claims -> (note, why)
    write_ids: dict[str, int] = {}
    first_of_prev: dict[str | None, int] = {}  # each prev -> the first note naming it
    more_of_prev: dict[str | None, list[int]] = {}  # a prev named by two notes or more -> them
    unbound: list[int] = []
    head: str | None = None
    head_note: int | None = None
    reads = remembered(here)  # what this process read of these notes before
    hold_collector()  # none of what a fold builds is in a cycle (see collector.py)
    try:
        for note in sorted(notes, key=_BY_ID):
            body = note.body
            if note.system or MARKER_OPEN not in body:
                continue
            note_id = note.id
            if note.author_id not in authors:
                reason = f"a marker in a note by {_author(note)}, not a ledger author"
                skipped.append(Skipped(note_id, "forged", reason))
                continue
            if note.updated_at != note.created_at and _edited(note):
                edited.append(note_id)
            try:
                kind, record, sealed = read_record(note_id, body, reads)
            except MalformedRecord as exc:
                skipped.append(Skipped(note_id, "malformed", str(exc), _author(note)))
                continue
            digest = record["digest"]
            if not sealed:
                rejected[digest] = (note_id, "tampered")
                reason = "its digest does not match its content: the note was changed after writing"
                skipped.append(Skipped(note_id, "tampered", reason, _author(note)))
                continue
            event = record["event"]
            if KIND_OF_EVENT[event] != kind:
                skipped.append(
                    Skipped(note_id, "malformed", "event of another kind", _author(note))
                )
                continue
            named = record.get("issue")
            if named is None:
                if kind in ISSUE_BOUND_KINDS:
                    unbound.append(note_id)
            elif named != here and named.casefold() != here_folded:
                rejected[digest] = (note_id, "replayed")
                reason = (
                    f"it names {named}, not this issue (#{issue}): a record copied from another "
                    f"issue counts nowhere"
                )
                skipped.append(Skipped(note_id, "replayed", reason, _author(note)))
                continue
            write_id = record["write_id"]
            first = write_ids.get(write_id)
            if first is not None:
                reason = f"repeats the write_id of note {first} (a retried write); ignored"
                skipped.append(Skipped(note_id, "duplicate", reason, _author(note)))
                continue
            write_ids[write_id] = note_id
            prev = record["prev"]
            if prev is not None and prev not in digests:
                where = rejected.get(prev)
                reason = (
                    f"its prev names note {where[0]}, which was skipped as {where[1]}"
                    if where
                    else "its prev names no earlier record: an earlier note was deleted or rewritten"
                )
                breaks.append(Break(note_id, prev, reason))
            if prev in first_of_prev:
                more_of_prev.setdefault(prev, [first_of_prev[prev]]).append(note_id)
            else:
                first_of_prev[prev] = note_id
            digests[digest] = note_id
            state.seen = (head, head_note)
            head, head_note = digest, note_id
            void = (
                board.apply(note, record) if kind in BOARD_KINDS else rules[event](note_id, record)
            )
            trail.append(
                Event(
                    note_id,
                    kind,
                    event,
                    record["agent"],
                    record,
                    note.created_at,
                    void,
                    note.author_id,
                )
            )
    finally:
        release_collector()
        fold_done(reads)
    return Ledger(
        holder=state.holder,
        role=state.role,
        offer=state.offer(),
        approvals=tuple(state.approvals),
        skipped=tuple(skipped),
        breaks=tuple(breaks),
        trail=tuple(trail),
        edited=tuple(edited),
        # in the order each prev was first named
        concurrent=tuple(tuple(more_of_prev[p]) for p in first_of_prev if p in more_of_prev),
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
        self.froze: dict[int, Note] = {}  # each freeze's note: who wrote it

    def apply(self, note: Note, r: Mapping[str, Any]) -> str | None:
        if r["event"] == "freeze":
            self.freezes[note.id] = Freeze(
                note.id, r["agent"], r["scope"], r["reason"], r["minutes"], note.created_at
            )
            self.froze[note.id] = note
            return None
        if r["event"] == "thaw":
            window = self.freezes.get(r["freeze"])
            if window is None:
                return f"note {r['freeze']} is not a freeze recorded on this issue"
            if window.agent != r["agent"]:
                return f"the freeze of note {window.note_id} is {window.agent}'s to thaw"
            froze = self.froze[window.note_id]
            if froze.author_id != note.author_id:
                # An agent's name is text anyone with a ledger account can write; the account
                # that wrote the note is GitLab's record (where a review account froze, the
                # lead's account cannot thaw in its name).
                return (
                    f"the freeze of note {window.note_id} was written by {_author(froze)}; a "
                    f"thaw by {_author(note)} does not lift it"
                )
            if window.thawed_by is not None:
                return f"note {window.thawed_by} already thawed it"
            self.freezes[window.note_id] = window._replace(thawed_by=note.id)
            return None
        if constraint_id(r["text"]) != r["id"]:
            return f"its id {r['id']} is not the hash of its text ({constraint_id(r['text'])})"
        self.constraints.append(Constraint(note.id, r["id"], r["text"], r["agent"]))
        return None


def binding_freeze(
    windows: Iterable[tuple[int, Freeze]],
    *,
    now: float,
    agent: str | None = None,
    issue: int | None = None,
    mr: MrRef | None = None,
) -> tuple[int, Freeze] | None:
    """The first live window that binds ``agent`` writing on ``issue`` (or about ``mr``), as
    (the issue holding it, the window). A window never binds the agent that declared it;
    ``agent=None`` is bound by every window covering what it names. Pure."""
    for holder, window in windows:
        if window.live(now) and agent != window.agent and window.covers(issue=issue, mr=mr):
            return holder, window
    return None


def mr_freeze_reason(
    windows: Iterable[tuple[int, Freeze]], *, mr: MrRef, now: float, config: Config
) -> str | None:
    """Why a live window on ``mr`` holds its merge back at ``now`` (the merge gate's freeze
    rule), or None. Only ``mr:`` windows bind the gate: a board or issue window holds back
    writes, not merges. Pure."""
    found = binding_freeze([w for w in windows if w[1].scope.startswith("mr:")], now=now, mr=mr)
    return None if found is None else freeze_refusal(*found, now=now, config=config)


def freeze_refusal(holder: int, window: Freeze, *, now: float, config: Config) -> str:
    """Who froze what, why and until when; a refusal (a writer's, the gate's) starts with it."""
    until = window.until
    when = (
        "until further notice (its time does not parse)"
        if until is None
        else f"until {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(until))} "
        f"(another {max(1, round((until - now) / 60))} min)"
    )
    scope = "the board" if window.scope == "board" else window.scope
    return (
        f"{window.agent} froze {scope} {when}: {window.reason}\n"
        f"(note {window.note_id} on {config.tracker_project}#{holder}). Wait for it to "
        f"expire, or ask {window.agent} to run `{config.cli} thaw`."
    )
