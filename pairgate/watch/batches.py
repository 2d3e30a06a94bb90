"""Events into batches for their recipients, batches moved when the turn moves, and which
batches are due a delivery. Pure: the store applies what these functions decide.

A batch keeps its id and its recipient for life. When the ledger names someone else, the
batch's unacknowledged events are re-issued to the new recipient as a NEW batch and the old one
is marked moved: a late acknowledgement from the old recipient then names only the old batch,
and cannot clear the work now waiting for the new one. New events always make a new batch, so
they never wait for an older batch's reminder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pairgate.watch.records import Batch, Event, Route


@dataclass(frozen=True)
class NewBatch:
    recipient: str | None
    subject: str
    rule: str
    event_ids: tuple[int, ...]
    final: bool = False
    replaces: tuple[int, ...] = ()  # the batches whose events it carries on (or ends, if final)


@dataclass(frozen=True)
class Plan:
    new: tuple[NewBatch, ...] = ()
    moved: Mapping[int, int | None] = field(default_factory=dict)  # batch -> index in new
    ended_batches: tuple[int, ...] = ()
    ended_events: tuple[int, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.new or self.moved or self.ended_batches or self.ended_events)


def plan(
    open_events: Sequence[Event],
    live: Sequence[Batch],
    routes: Mapping[str, Route | None],
    last_recipient: Mapping[str, str],
) -> Plan:
    """``open_events``: events in no live batch and not ended (just stored, or left without a
    recipient). ``live``: the pending and final batches. ``routes``: each subject's recipient
    now (None: unknown, leave things as they are). ``last_recipient``: who last had a batch of
    a subject, for a final notice when nobody owes a move any more."""
    subjects = sorted({e.subject for e in open_events} | {b.subject for b in live})
    new: list[NewBatch] = []
    moved: dict[int, int | None] = {}
    ended_batches: list[int] = []
    ended_events: list[int] = []
    for subject in subjects:
        events = [e for e in open_events if e.subject == subject]
        batches = [b for b in live if b.subject == subject and not b.final]
        route = routes.get(subject)
        finals = [e for e in events if e.final]
        if finals:
            ended_batches += [b.id for b in batches]
            ended_events += [e.id for e in events if not e.final]
            recipient = route.agent if route and route.agent else last_recipient.get(subject)
            if route and route.agent:
                rule = route.rule
            elif recipient:
                rule = f"the last recipient of its events ({route.rule if route else 'no route'})"
            else:
                rule = route.rule if route else "nobody had its events"
            ids = tuple(e.id for e in finals)
            new.append(NewBatch(recipient, subject, rule, ids, True, tuple(b.id for b in batches)))
            continue
        if route is None:
            continue
        leaving = [b for b in batches if b.recipient != route.agent]
        if route.agent is None:
            moved.update({b.id: None for b in leaving})
            continue
        ids = tuple(sorted({i for b in leaving for i in b.event_ids} | {e.id for e in events}))
        if ids:
            moved.update({b.id: len(new) for b in leaving})
            new.append(
                NewBatch(route.agent, subject, route.rule, ids, False, tuple(b.id for b in leaving))
            )
    return Plan(tuple(new), moved, tuple(ended_batches), tuple(ended_events))


def due(batch: Batch, *, now: float, remind_after: float) -> str | None:
    """Why ``batch`` should be delivered now, or None: ``new`` (never sent), ``retry`` (the last
    attempt failed), ``reminder`` (sent, unacknowledged for ``remind_after`` seconds) or
    ``final`` (the last notice of a merged or closed merge request: attempted once only)."""
    if batch.recipient is None:
        return None
    if batch.state == "final":
        return "final" if batch.attempts == 0 else None
    if batch.state != "pending":
        return None
    if batch.last_ok_at is None:
        return "new" if batch.attempts == 0 else "retry"
    if batch.last_attempt_ok is False:
        return "retry"
    if now - batch.last_ok_at >= remind_after:
        return "reminder"
    return None
