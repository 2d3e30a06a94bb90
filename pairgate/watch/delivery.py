"""Delivering batches: push to a configured command, or pull by the agent (``inbox`` and the
Claude Code hooks). Each attempt is recorded in the store, whatever came of it. A transport that
took a batch has not handled it: the batch stays pending until its recipient acknowledges it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pairgate.watch import notify
from pairgate.watch.batches import due
from pairgate.watch.records import Batch, Event
from pairgate.watch.store import Store

PUSH_TIMEOUT = 60.0  # seconds a push command may take before the attempt counts as failed
# How long a watcher's claim on a batch (or a webhook) lasts: past it, the watcher is taken for
# dead and another takes the work over. Longer than a push may take.
LEASE = 2 * PUSH_TIMEOUT


@dataclass(frozen=True)
class Shown:
    """A batch handed to a transport: why (new, retry, reminder, final, shown), what it said."""

    batch: Batch
    events: tuple[Event, ...]
    why: str
    doc: dict[str, Any]


def run_command(argv: Sequence[str], payload: dict[str, Any]) -> tuple[bool, str]:
    """Hand one batch to the push command as JSON on stdin. Exit 0 means the transport took it
    (still not handled); anything else, or no answer within PUSH_TIMEOUT, is a failed attempt,
    retried at the next poll."""
    try:
        proc = subprocess.run(
            list(argv),
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=PUSH_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        return False, f"{argv[0]}: command not found"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0:
        return True, "accepted (exit 0)"
    said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    return False, f"exit {proc.returncode}" + (f": {said[0][:200]}" if said else "")


def render(store: Store, batch: Batch, why: str, *, cli: str, store_flag: str, now: float) -> Shown:
    found = store.events(batch.event_ids)
    events = tuple(found[i] for i in batch.event_ids if i in found)
    doc = notify.batch_doc(
        batch, events, heads=store.heads(), cli=cli, store_flag=store_flag, now=now
    )
    return Shown(batch, events, why, doc | {"delivery": why})


def push_due(
    store: Store,
    argv: Sequence[str],
    *,
    cli: str,
    store_flag: str,
    now: float,
    remind_after: float,
    owner: str,
    lease: float = LEASE,
) -> list[tuple[Shown, bool, str]]:
    """Push every batch that is due (new, a retry, a reminder, or a final notice once), one
    recorded attempt each. Each is claimed first, under a lease of ``lease`` seconds for
    ``owner``: two watchers on one store never push one batch at once, and a batch is never
    claimed after its ACK. A batch once tried waits for the next round, even if it failed."""
    sent = []
    tried: list[int] = []
    while claimed := store.claim_due(
        owner, now=now, remind_after=remind_after, lease=lease, skip=tried
    ):
        for batch, why in claimed:
            tried.append(batch.id)
            shown = render(store, batch, why, cli=cli, store_flag=store_flag, now=now)
            ok, detail = run_command(argv, shown.doc)
            with store.writing():
                store.record_attempt(
                    batch.id, channel="push", kind=why, ok=ok, detail=detail, now=now
                )
            sent.append((shown, ok, detail))
    return sent


def pull(
    store: Store,
    agent: str,
    *,
    channel: str,
    only_due: bool,
    record: bool,
    cli: str,
    store_flag: str,
    now: float,
    remind_after: float,
) -> list[Shown]:
    """The agent's live batches (only the due ones when ``only_due``), oldest first. Showing a
    batch to its recipient is a delivery attempt, recorded when ``record``."""
    shown = []
    for batch in store.live_batches(agent):
        why = due(batch, now=now, remind_after=remind_after)
        if only_due and why is None:
            continue
        shown.append(render(store, batch, why or "shown", cli=cli, store_flag=store_flag, now=now))
    if record:
        recorded(store, shown, channel=channel, now=now)
    return shown


def recorded(store: Store, shown: Sequence[Shown], *, channel: str, now: float) -> None:
    """Record that these batches were shown to their recipient (one attempt each)."""
    if not shown:
        return
    with store.writing():
        for s in shown:
            store.record_attempt(
                s.batch.id, channel=channel, kind=s.why, ok=True, detail="shown", now=now
            )
