"""``watch`` and ``inbox`` on the command line: ``add_parser`` registers both (and ``inbox ack``)
on the main parser's subcommands; ``watch`` and its ``--status`` are handled here, ``inbox`` in
``commands/inbox.py``.

``watch`` polls GitLab and turns what changed into batches for the agent the ledger says owes
the next move; ``inbox`` is how that agent reads and acknowledges them.
"""

from __future__ import annotations

import argparse
import shlex
import time
from pathlib import Path
from typing import Any

from pairgate.commands import render
from pairgate.ownership import (
    Config,
    Context,
    Exit,
    UsageError,
    gitlab_from_env,
)
from pairgate.watch import delivery, hooks, runner
from pairgate.watch.batches import REMIND_AFTER
from pairgate.watch.records import subject_name
from pairgate.watch.store import Store, default_path

INTERVAL = 180.0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def add_parser(subparsers: Any) -> None:
    """Register ``watch`` and ``inbox`` (with ``inbox ack``) on main's subparsers."""
    store_help = "the watch store (default: $XDG_STATE_HOME/pairgate/<tracker>.sqlite3)"
    text = "poll GitLab and deliver merge request and ledger events to the agent who owes the next move"
    p = subparsers.add_parser("watch", help=text, description=text)
    p.set_defaults(handler="commands.watch:watch", reads_config=True, writes=False)
    p.add_argument(
        "--once", action="store_true", help="poll once and deliver (for a scheduled job)"
    )
    p.add_argument(
        "--interval", type=_seconds, default=INTERVAL, metavar="SECONDS", help="default: 180"
    )
    p.add_argument("--store", type=Path, metavar="PATH", help=store_help)
    p.add_argument("--status", action="store_true", help="say what the store holds; poll nothing")
    p.add_argument("--json", action="store_true", help="print JSON with stable keys")
    p.add_argument(
        "--deliver-command",
        metavar="CMD",
        help="push each due batch to CMD as JSON on stdin (exit 0 = accepted, not handled)",
    )
    p.add_argument(
        "--remind-after",
        type=_seconds,
        default=REMIND_AFTER,
        metavar="SECONDS",
        help="re-send an unacknowledged batch after this long (default: 1800)",
    )
    p.add_argument(
        "--verbose", action="store_true", help="say which GitLab URL and transport were used"
    )

    text = "your pending batches of GitLab events; ack one when handled"
    p = subparsers.add_parser("inbox", help=text, description=text)
    p.set_defaults(handler="commands.inbox:inbox", reads_config=False, writes=False)
    p.add_argument("--agent", metavar="AGENT", help="whose inbox (default: <env_prefix>_AGENT_ID)")
    p.add_argument("--json", action="store_true", help="print JSON with stable keys")
    p.add_argument(
        "--claude-hook",
        choices=hooks.EVENTS,
        metavar="EVENT",
        help="speak Claude Code's hook protocol for EVENT (SessionStart, UserPromptSubmit, Stop), "
        "reading the hook's JSON on stdin",
    )
    p.add_argument("--store", type=Path, metavar="PATH", help=store_help)
    p.add_argument(
        "--remind-after",
        type=_seconds,
        metavar="SECONDS",
        help="when a shown batch is due again (default: the watcher's setting, else 1800)",
    )
    actions = p.add_subparsers(dest="inbox_action", metavar="ack")
    ack = actions.add_parser(
        "ack",
        help="acknowledge a batch you have handled",
        description="acknowledge a batch you have handled (only its recipient may)",
    )
    ack.add_argument("batch", metavar="BATCH", help="the batch id, such as b12")
    ack.add_argument("--note", metavar="TEXT", help="what you did, recorded with the ack")
    ack.add_argument(
        "--as",
        dest="as_agent",
        metavar="AGENT",
        help="act as this agent identity (default: <env_prefix>_AGENT_ID)",
    )
    ack.add_argument("--store", type=Path, metavar="PATH", help=store_help)


def _open(ctx: Context, config: Config, store: Path | None) -> Store:
    return Store.open(
        store or default_path(ctx.env, config["tracker_project"]), tracker=config["tracker_project"]
    )


def store_flag(store: Path | None) -> str:
    return f" --store {shlex.quote(str(store))}" if store is not None else ""


# -- watch -------------------------------------------------------------------------------------


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
    verbose: bool,
) -> int:
    db = _open(ctx, config, store)
    try:
        if status:
            doc = status_doc(db, now=ctx.now())
            if json:
                render.dump(doc, ctx.stdout)
            else:
                print(status_text(doc), file=ctx.stdout)
            return Exit.OK
        argv = shlex.split(deliver_command) if deliver_command else None
        if deliver_command is not None and not argv:
            raise UsageError("pairgate watch: --deliver-command is empty")
        client = gitlab_from_env(config, ctx.env)
        if verbose:
            print(client.describe(), file=ctx.stderr)
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
        render.dump(doc, ctx.stdout)
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
        return render.iso(float(raw)) if raw else None

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
                render.duration(r["oldest_age_seconds"]),
                ", ".join(r["batches"]),
            ]
            for r in doc["pending"]
        ]
        lines.append(
            render.table(["AGENT", "PENDING", "OLDEST", "BATCHES"], rows, render.Style(False))
        )
    else:
        lines.append("no batch is pending")
    if doc["events_without_recipient"]:
        lines.append(
            f"{doc['events_without_recipient']} event(s) wait for a recipient (nobody owes a move)"
        )
    return "\n".join(lines)
