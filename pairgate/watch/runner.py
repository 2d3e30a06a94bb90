"""One poll, end to end: read what changed, then in ONE store transaction compare it with the
snapshot, store the events, and batch every open event for the agent the ledger names. Delivery
comes after, from the store, so a crash between storing and sending re-sends on restart.

Several watchers may share a store. A read is committed only over the snapshot it started from
(``settle``): when another watcher committed a snapshot of the same merge request or issue
meanwhile, what was read may be older than what is stored, so it is read again rather than
committed over the newer one (which would report a change backwards)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

from pairgate.standalone.config import Config
from pairgate.standalone.gitlab import GitLab
from pairgate.watch import batches, routing
from pairgate.watch.diff import issue_changes, mr_changes, pipeline_changes
from pairgate.watch.read import Marks, Reading, read_mrs, read_named, read_pipelines
from pairgate.watch.read_ledgers import read_issues, read_some
from pairgate.watch.records import Event, IssueSnap, MrSnap, issue_subject
from pairgate.watch.store import Store

ROUNDS = 3  # reads again of what another watcher committed first, before giving up until later


@dataclass(frozen=True)
class Outcome:
    events: tuple[Event, ...] = ()
    new_batches: tuple[int, ...] = ()
    errors: tuple[str, ...] = ()
    swept: bool = False
    read_mrs: int = 0
    read_issues: int = 0
    extra: dict[str, int] = field(default_factory=dict)


def load_marks(store: Store) -> Marks:
    doc = store.meta_json("marks", {})
    return Marks(
        mrs=doc.get("mrs"),
        issues=doc.get("issues"),
        pipelines=dict(doc.get("pipelines") or {}),
        swept_at=doc.get("swept_at"),
    )


def poll(client: GitLab, config: Config, store: Store, *, now: float) -> Outcome:
    marks = load_marks(store)
    known = store.known()
    versions = store.versions()
    open_mrs = [s for s, k in known.items() if s.startswith("mr:") and k[2] == "opened"]
    watched = {s: m for s, m in store.subjects(open_mrs).items() if isinstance(m, MrSnap)}
    reading = Reading()
    after_mrs = read_mrs(
        client, config, marks=marks, known=known, watched=watched, now=now, reading=reading
    )
    mrs = watched | {s: m for s, m in reading.mrs.items() if m.state == "opened"}
    pipelines = read_pipelines(client, marks=marks, mrs=mrs, reading=reading)
    cited = {i for m in mrs.values() for i in m.cites}
    issues = read_issues(
        client,
        config,
        marks=marks,
        known=known,
        cited=cited,
        sweep=reading.swept,
        reading=reading,
    )
    reading.marks = Marks(after_mrs.mrs, issues, pipelines, after_mrs.swept_at)
    counts = (len(reading.mrs), len(reading.issues))

    def finish(settled: bool) -> None:
        if settled:  # else the listings are read again from the old marks: nothing is lost
            store.set_meta("marks", json.dumps(asdict(reading.marks)))
        store.set_meta("last_poll_at", str(now))
        if reading.errors:
            store.set_meta("last_error", "; ".join(reading.errors)[:2000])
            store.set_meta("last_error_at", str(now))
        else:
            store.set_meta("last_ok_poll_at", str(now))

    events, created = settle(client, config, store, reading, versions, now=now, finish=finish)
    return Outcome(tuple(events), tuple(created), tuple(reading.errors), reading.swept, *counts)


def settle(
    client: GitLab,
    config: Config,
    store: Store,
    reading: Reading,
    versions: Mapping[str, int],
    *,
    now: float,
    finish: Callable[[bool], None],
) -> tuple[list[Event], list[int]]:
    """Commit ``reading``, read with the store's snapshots at ``versions``. A merge request or
    issue some other watcher committed meanwhile is left out and read again (at most ROUNDS
    times); pipelines always go in (an older pipeline answer is never news). ``finish(settled)``
    runs inside the last transaction; ``reading.errors`` gains what could not be settled."""
    events: list[Event] = []
    created: list[int] = []
    current = reading
    for round_ in range(ROUNDS):
        with store.writing():
            now_at = store.versions([*current.mrs, *current.issues])
            stale = sorted(
                s for s in (*current.mrs, *current.issues) if now_at.get(s, 0) != versions.get(s, 0)
            )
            for subject in stale:
                current.mrs.pop(subject, None)
                current.issues.pop(subject, None)
            events += commit(store, current, now=now)
            created += replan(store, config, now=now)
            if not stale or round_ == ROUNDS - 1:
                if stale:
                    reading.errors.append(
                        f"{', '.join(s.split(':', 1)[1] for s in stale)}: changed by another "
                        "watcher while read; read again at the next poll"
                    )
                finish(not stale)
                break
        versions = store.versions(stale)
        current = reread(client, config, stale)
        reading.errors += current.errors
        current.errors = []
    return events, created


def reread(client: GitLab, config: Config, subjects: list[str]) -> Reading:
    """These merge requests and issues (subjects), read again in full."""
    again = Reading()
    named = {}
    for subject in subjects:
        if subject.startswith("mr:"):
            project, iid = subject[3:].rsplit("!", 1)
            named[subject] = (project, int(iid))
    read_named(client, config, named, again)
    issues = [int(s.rsplit("#", 1)[1]) for s in subjects if s.startswith("issue:")]
    if issues:
        read_some(client, config, issues, again)
    return again


def commit(store: Store, reading: Reading, *, now: float) -> list[Event]:
    """Inside the poll's transaction: compare what was read with the stored snapshot (read again
    here, so a second watcher on the same store cannot report the same change twice), save the
    new snapshots and store the events."""
    keys = set(reading.mrs) | set(reading.pipelines) | set(reading.issues)
    old = store.subjects(keys)
    snaps: dict[str, MrSnap | IssueSnap] = {}
    events: list[Event] = []
    for subject in sorted(set(reading.mrs) | set(reading.pipelines)):
        before = old.get(subject)
        snap = before if isinstance(before, MrSnap) else None
        if subject in reading.mrs:
            snap, found = mr_changes(snap, reading.mrs[subject])
            events += found
        if snap is not None and subject in reading.pipelines:
            snap, found = pipeline_changes(snap, reading.pipelines[subject])
            events += found
        if snap is not None:
            snaps[subject] = snap
    for subject, issue in sorted(reading.issues.items()):
        before = old.get(subject)
        events += issue_changes(before if isinstance(before, IssueSnap) else None, issue, subject)
        snaps[subject] = issue
    store.save_subjects(snaps)
    return store.add_events(events, now)


def replan(store: Store, config: Config, *, now: float) -> list[int]:
    """Batch the open events and move batches whose subject the ledger now gives to someone
    else (inside a transaction)."""
    tracker = config.tracker_project
    open_events = store.open_events()
    live = store.live_batches()
    subjects = store.subjects({e.subject for e in open_events} | {b.subject for b in live})
    cited = {i for s in subjects.values() if isinstance(s, MrSnap) for i in s.cites}
    issues: Mapping[int, IssueSnap] = {
        s.iid: s
        for s in store.subjects(issue_subject(tracker, i) for i in cited).values()
        if isinstance(s, IssueSnap)
    } | {s.iid: s for s in subjects.values() if isinstance(s, IssueSnap)}
    routes = routing.routes(subjects, issues, tracker)
    plan = batches.plan(open_events, live, routes, store.last_recipients(subjects))
    return store.apply(plan, now) if not plan.empty else []
