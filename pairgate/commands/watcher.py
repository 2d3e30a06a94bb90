"""``watch``: poll, receive webhooks, store, batch, push; and ``watch --status``, what the store
holds.

Without ``--listen`` the loop polls, delivers and sleeps ``--interval`` seconds. With it, the
loop also wakes for each webhook stored, turns the stored hooks into observations
(``refresh``), and polls every ``--interval`` seconds (900 by default) as the safety net for the
hooks GitLab loses. Watchers sharing a store take turns at the poll and claim each delivery and
each hook under a lease, so each is done by one of them at a time. The store failing ends the
watcher (exit 2, the store's message): it never reconnects, a supervisor restarts it.
"""

from __future__ import annotations

import os
import secrets
import shlex
import socket
import time
from pathlib import Path
from typing import Any

from pairgate import output
from pairgate.commands.watch import HOOKED_INTERVAL, INTERVAL, store_flag
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, PairgateError, UsageError
from pairgate.standalone.gitlab import GitLab
from pairgate.watch import delivery, runner
from pairgate.watch.records import subject_name
from pairgate.watch.store import Store, StoreError, locate

TICK = 30.0  # with --listen: how often the loop looks for due reminders and orphaned work


def open_store(ctx: Context, config: Config, store: str | None) -> Store:
    where = locate(store, ctx.env, config.env_name("WATCH_STORE"), config.tracker_project)
    return Store.open(where, tracker=config.tracker_project, now=ctx.now())


def owner_id() -> str:
    """This watcher, as its leases name it: host, process and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def _token(ctx: Context, config: Config, token_file: str | None) -> str:
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"{config.cli} watch: cannot read --hook-token-file: {exc}") from None
    else:
        token = ctx.env.get(config.env_name("WEBHOOK_TOKEN"), "").strip()
    if not token:
        raise UsageError(
            f"{config.cli} watch: --listen needs the webhooks' secret token: set "
            f"{config.env_name('WEBHOOK_TOKEN')} or pass --hook-token-file FILE (the same token "
            "the hook was registered with)"
        )
    return token


def watch(
    *,
    ctx: Context,
    config: Config,
    once: bool,
    interval: float | None,
    store: str | None,
    status: bool,
    json: bool,
    deliver_command: str | None,
    remind_after: float,
    client: GitLab,
    listen: str | None = None,
    hook_token_file: str | None = None,
    no_poll: bool = False,
    lease: float = delivery.LEASE,
) -> int:
    if listen and once:
        raise UsageError(f"{config.cli} watch: --listen runs a service; it cannot be --once")
    if no_poll and not listen:
        raise UsageError(f"{config.cli} watch: --no-poll needs --listen (else nothing is watched)")
    db = open_store(ctx, config, store)
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
        run = Rounds(ctx, config, db, client, argv, store=store, remind_after=remind_after,
                     json=json, lease=lease)  # fmt: skip
        if listen:
            from pairgate.watch import listen as hooks_in

            receiver = hooks_in.Receiver(
                hooks_in.parse_address(listen, config.cli),
                token=_token(ctx, config, hook_token_file),
                open_store=lambda: open_store(ctx, config, store),
                now=ctx.now,
            ).start()
            print(
                f"{config.cli} watch: receiving GitLab webhooks at {receiver.url}", file=ctx.stderr
            )
            try:
                return run.service(receiver, None if no_poll else interval or HOOKED_INTERVAL)
            finally:
                receiver.stop()
        try:
            while True:
                code = run.poll(claim=not once, interval=interval or INTERVAL)
                if once:
                    return code
                time.sleep(interval or INTERVAL)
        except KeyboardInterrupt:  # the store's transactions are atomic: an interrupt loses nothing
            return Exit.OK
    finally:
        db.close()


class Rounds:
    """What one loop of the watcher does: poll, take the webhooks, push what is due; each
    says what it did."""

    def __init__(
        self,
        ctx: Context,
        config: Config,
        db: Store,
        client: Any,
        argv: list[str] | None,
        *,
        store: str | None,
        remind_after: float,
        json: bool,
        lease: float,
    ) -> None:
        self.ctx, self.config, self.db, self.client, self.argv = ctx, config, db, client, argv
        self.store, self.remind_after, self.json, self.lease = store, remind_after, json, lease
        self.owner = owner_id()

    def service(self, receiver: Any, interval: float | None) -> int:
        """The loop with webhooks: woken by each one stored, polling every ``interval``
        seconds (None: never)."""
        next_poll = self.ctx.now()
        try:
            while True:
                now = self.ctx.now()
                if interval is not None and now >= next_poll:
                    self.poll(claim=True, interval=interval)
                    next_poll = now + interval
                self.hooks()
                # Wake at least once a lease: a dead watcher's work is taken over in time.
                wait = min(TICK, self.lease)
                if interval is not None:
                    wait = min(wait, max(0.0, next_poll - self.ctx.now()))
                receiver.wait(wait, self.db)
                # The store failing, here or under the receiver, ends the watcher (exit 2, its
                # message printed once by main): a broken connection never comes back, and a
                # supervisor's restart opens a fresh one; nothing stored is lost.
                receiver.check()
        except KeyboardInterrupt:
            return Exit.OK

    def poll(self, *, claim: bool, interval: float) -> int:
        """One poll and the deliveries due; when ``claim``, only if no other watcher of the
        store holds the turn (it polled less than ``interval`` ago)."""
        now = self.ctx.now()
        if claim and not self.db.claim_poll(self.owner, now=now, interval=interval * 0.9):
            self._report(None, "another watcher of this store polled", "poll", self.push())
            return Exit.OK
        outcome = runner.poll(self.client, self.config, self.db, now=now)
        read = f"{outcome.read_mrs} merge request(s) and {outcome.read_issues} issue(s) read"
        self._report(outcome, read + (", full sweep" if outcome.swept else ""), "poll", self.push())
        if outcome.errors:
            print(
                f"{self.config.cli} watch: this poll could not read everything; nothing it did "
                f"not read was marked seen, and the next poll reads it again:\n  "
                + "\n  ".join(outcome.errors),
                file=self.ctx.stderr,
            )
            return Exit.ERROR
        return Exit.OK

    def hooks(self) -> None:
        """Turn the webhooks stored (here, or by a watcher whose lease ran out) into
        observations, one read of each merge request and issue they name; then deliver."""
        from pairgate.watch import webhook
        from pairgate.watch.refresh import refresh

        now = self.ctx.now()
        taken = self.db.claim_hooks(self.owner, now=now, lease=self.lease)
        if not taken:
            self._report(None, "", "webhooks", self.push(), quiet=True)
            return
        targets = webhook.Targets()
        for hook in taken:
            targets |= webhook.targets(
                hook.event,
                hook.body,
                tracker=self.config.tracker_project,
                generic=self.config.generic_tracking_issue,
            )
        done = f"{len(taken)} webhook(s)"

        def finish(settled: bool) -> None:
            self.db.finish_hooks([(h.id, done) for h in taken], now=now)

        try:
            outcome = refresh(self.client, self.config, self.db, targets, now=now, finish=finish)
        except StoreError:
            raise  # not the hooks' fault: the store failing ends the watcher (``service``)
        except PairgateError as exc:
            self.db.release_hooks([h.id for h in taken], error=exc.message)
            print(
                f"{self.config.cli} watch: {done} not taken in: {exc.message}", file=self.ctx.stderr
            )
            return
        read = (
            f"{done}: {outcome.read_mrs} merge request(s) and {outcome.read_issues} issue(s) read"
        )
        self._report(outcome, read, "webhooks", self.push())
        if outcome.errors:
            print(
                f"{self.config.cli} watch: these webhooks' reads failed (the safety-net poll "
                "reads them again):\n  " + "\n  ".join(outcome.errors),
                file=self.ctx.stderr,
            )

    def push(self) -> list[tuple[delivery.Shown, bool, str]]:
        if not self.argv:
            return []
        return delivery.push_due(
            self.db,
            self.argv,
            cli=self.config.cli,
            store_flag=store_flag(self.store),
            now=self.ctx.now(),
            remind_after=self.remind_after,
            owner=self.owner,
            lease=self.lease,
        )

    def _report(
        self,
        outcome: runner.Outcome | None,
        read: str,
        source: str,
        sent: list[tuple[delivery.Shown, bool, str]],
        *,
        quiet: bool = False,
    ) -> None:
        """One round: what it read and stored, what it pushed (``quiet``: only if it pushed)."""
        if quiet and not sent:
            return
        got = outcome or runner.Outcome()
        if self.json:
            doc = {
                "source": source,
                "events": [
                    {"id": e.id, "subject": subject_name(e.subject), "kind": e.kind, "sha": e.sha}
                    for e in got.events
                ],
                "new_batches": [f"b{i}" for i in got.new_batches],
                "read": {
                    "merge_requests": got.read_mrs,
                    "issues": got.read_issues,
                    "swept": got.swept,
                },
                "pushed": [
                    {"batch": s.batch.label, "why": s.why, "ok": ok, "detail": detail}
                    for s, ok, detail in sent
                ],
                "errors": list(got.errors),
            }
            output.dump(doc, self.ctx.stdout)
        elif not quiet:
            print(
                f"{self.config.cli} watch: {len(got.events)} new event(s), "
                f"{len(got.new_batches)} new batch(es) ({read})",
                file=self.ctx.stdout,
            )
        for s, ok, detail in sent:
            if not self.json:
                word = "pushed" if ok else "push failed"
                print(
                    f"  {word}: {s.batch.label} ({s.why}) to {s.batch.recipient}: {detail}",
                    file=self.ctx.stdout,
                )
            if not ok:
                print(
                    f"{self.config.cli} watch: push of {s.batch.label} failed ({detail}); "
                    "retried at the next poll",
                    file=self.ctx.stderr,
                )


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
    refused = db.meta_json("last_hook_refused", None)
    return {
        "store": db.where,
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
        "webhooks": {
            "last_at": stamp("last_hook_at"),
            "stored": counts["hooks"],
            "waiting": counts["hooks_waiting"],
            "redelivered": int(db.meta("hooks_redelivered") or 0),
            "refused": int(db.meta("hooks_refused") or 0),
            "last_refused": None
            if refused is None
            else {
                "at": output.iso(float(refused["at"])),
                "reason": refused["reason"],
                "from": refused["from"],
            },
        },
    }


def status_text(doc: dict[str, Any]) -> str:
    error = doc["last_error"]
    hooks = doc["webhooks"]
    lines = [
        f"watch store {doc['store']} (tracker {doc['tracker']})",
        f"last poll: {doc['last_poll_at'] or 'never'}; last complete poll: {doc['last_ok_poll_at'] or 'never'}",
        f"last error: {error} (at {doc['last_error_at']})" if error else "last error: none",
        f"last webhook: {hooks['last_at'] or 'never'}"
        + (
            f"; {hooks['stored']} stored, {hooks['waiting']} waiting, {hooks['redelivered']} "
            f"redelivered, {hooks['refused']} refused"
            if hooks["last_at"] or hooks["refused"]
            else ""
        ),
        f"watching {doc['watching']['merge_requests']} open merge request(s) and "
        f"{doc['watching']['issues']} issue(s); {doc['events']} event(s) and {doc['batches']} batch(es) stored",
    ]
    if hooks["last_refused"]:
        last = hooks["last_refused"]
        lines.append(f"last refused webhook: {last['reason']} from {last['from']} at {last['at']}")
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
