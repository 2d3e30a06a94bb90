"""``watch``: poll, store, batch, push; and ``watch --status``, what the store holds."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

from pairgate import output
from pairgate.commands.watch import store_flag
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, UsageError
from pairgate.standalone.gitlab import GitLab
from pairgate.watch import delivery, runner
from pairgate.watch.records import subject_name
from pairgate.watch.store import Store, default_path


def _open(ctx: Context, config: Config, store: Path | None) -> Store:
    return Store.open(
        store or default_path(ctx.env, config.tracker_project), tracker=config.tracker_project
    )


def watch(
    *,
    ctx: Context,
    config: Config,
    once: bool,
    interval: float,
    store: Path | None,
    status: bool,
    json: bool,
    deliver_command: str | None,
    remind_after: float,
    client: GitLab,
) -> int:
    db = _open(ctx, config, store)
    try:
        if status:
            doc = status_doc(db, now=ctx.now())
            if json:
                output.dump(doc, ctx.stdout)
            else:
                print(status_text(doc), file=ctx.stdout)
            return Exit.OK
        argv = shlex.split(deliver_command) if deliver_command else None
        if deliver_command is not None and not argv:
            raise UsageError(f"{config.cli} watch: --deliver-command is empty")
        with db.writing():
            db.set_meta("remind_after", str(remind_after))
        try:
            while True:
                code = _round(
                    ctx, config, db, client, argv, store=store, remind_after=remind_after, json=json
                )
                if once:
                    return code
                time.sleep(interval)
        except KeyboardInterrupt:  # the store's transactions are atomic: an interrupt loses nothing
            return Exit.OK
    finally:
        db.close()


def _round(
    ctx: Context,
    config: Config,
    db: Store,
    client: Any,
    argv: list[str] | None,
    *,
    store: Path | None,
    remind_after: float,
    json: bool,
) -> int:
    outcome = runner.poll(client, config, db, now=ctx.now())
    sent: list[tuple[delivery.Shown, bool, str]] = []
    if argv:
        sent = delivery.push_due(
            db,
            argv,
            cli=config.cli,
            store_flag=store_flag(store),
            now=ctx.now(),
            remind_after=remind_after,
        )
    doc = {
        "events": [
            {"id": e.id, "subject": subject_name(e.subject), "kind": e.kind, "sha": e.sha}
            for e in outcome.events
        ],
        "new_batches": [f"b{i}" for i in outcome.new_batches],
        "read": {
            "merge_requests": outcome.read_mrs,
            "issues": outcome.read_issues,
            "swept": outcome.swept,
        },
        "pushed": [
            {"batch": s.batch.label, "why": s.why, "ok": ok, "detail": detail}
            for s, ok, detail in sent
        ],
        "errors": list(outcome.errors),
    }
    if json:
        output.dump(doc, ctx.stdout)
    else:
        print(
            f"{config.cli} watch: {len(outcome.events)} new event(s), "
            f"{len(outcome.new_batches)} new batch(es) "
            f"({outcome.read_mrs} merge request(s) and {outcome.read_issues} issue(s) read"
            f"{', full sweep' if outcome.swept else ''})",
            file=ctx.stdout,
        )
        for s, ok, detail in sent:
            word = "pushed" if ok else "push failed"
            print(
                f"  {word}: {s.batch.label} ({s.why}) to {s.batch.recipient}: {detail}",
                file=ctx.stdout,
            )
    for s, ok, detail in sent:
        if not ok:
            print(
                f"{config.cli} watch: push of {s.batch.label} failed ({detail}); retried at the next poll",
                file=ctx.stderr,
            )
    if outcome.errors:
        print(
            f"{config.cli} watch: this poll could not read everything; nothing it did not read "
            f"was marked seen, and the next poll reads it again:\n  " + "\n  ".join(outcome.errors),
            file=ctx.stderr,
        )
        return Exit.ERROR
    return Exit.OK


def status_doc(db: Store, *, now: float) -> dict[str, Any]:
    def stamp(key: str) -> str | None:
        raw = db.meta(key)
        return output.iso(float(raw)) if raw else None

    agents: dict[str, dict[str, Any]] = {}
    final_unsent = 0
    for batch in db.live_batches():
        if batch.state == "final":
            final_unsent += 1
            continue
        row = agents.setdefault(
            str(batch.recipient),
            {"agent": batch.recipient, "pending": 0, "batches": [], "oldest_age_seconds": 0},
        )
        row["pending"] += 1
        row["batches"].append(batch.label)
        row["oldest_age_seconds"] = max(row["oldest_age_seconds"], int(now - batch.created_at))
    counts = db.counts()
    return {
        "store": str(db.path),
        "tracker": db.meta("tracker"),
        "last_poll_at": stamp("last_poll_at"),
        "last_ok_poll_at": stamp("last_ok_poll_at"),
        "last_error": db.meta("last_error"),
        "last_error_at": stamp("last_error_at"),
        "watching": {"merge_requests": counts["mrs"], "issues": counts["issues"]},
        "events": counts["events"],
        "batches": counts["batches"],
        "pending": sorted(agents.values(), key=lambda r: str(r["agent"])),
        "events_without_recipient": len(db.open_events()),
        "final_notices_unsent": final_unsent,
    }


def status_text(doc: dict[str, Any]) -> str:
    error = doc["last_error"]
    lines = [
        f"watch store {doc['store']} (tracker {doc['tracker']})",
        f"last poll: {doc['last_poll_at'] or 'never'}; last complete poll: {doc['last_ok_poll_at'] or 'never'}",
        f"last error: {error} (at {doc['last_error_at']})" if error else "last error: none",
        f"watching {doc['watching']['merge_requests']} open merge request(s) and "
        f"{doc['watching']['issues']} issue(s); {doc['events']} event(s) and {doc['batches']} batch(es) stored",
    ]
    if doc["pending"]:
        rows = [
            [
                str(r["agent"]),
                str(r["pending"]),
                output.duration(r["oldest_age_seconds"]),
                ", ".join(r["batches"]),
            ]
            for r in doc["pending"]
        ]
        lines.append(
            output.table(["AGENT", "PENDING", "OLDEST", "BATCHES"], rows, output.Style(False))
        )
    else:
        lines.append("no batch is pending")
    if doc["events_without_recipient"]:
        lines.append(
            f"{doc['events_without_recipient']} event(s) wait for a recipient (nobody owes a move)"
        )
    return "\n".join(lines)
