"""``inbox``: an agent reads its pending batches, acknowledges one it has handled, or lets
Claude Code's hooks do the reading (``--claude-hook``). The store is local: nothing here talks
to GitLab."""

from __future__ import annotations

import json as jsonlib
import sys
from pathlib import Path

from pairgate import output
from pairgate.commands.watch import store_flag
from pairgate.standalone.config import Config, load_config
from pairgate.standalone.errors import Context, Exit, Refusal, UsageError, report
from pairgate.verbs.turn import identity, session_id
from pairgate.watch import REMIND_AFTER, delivery, hooks
from pairgate.watch.backends import shown as shown_store
from pairgate.watch.records import subject_name
from pairgate.watch.store import Store, is_postgres, locate


def _batch_id(text: str, cli: str) -> int:
    digits = text[1:] if text[:1] in ("b", "B") else text
    if not digits.isdigit():
        raise UsageError(f"{cli} inbox ack: {text!r} is not a batch id (such as b12)")
    return int(digits)


def inbox(
    *,
    ctx: Context,
    agent: str | None = None,
    json: bool = False,
    claude_hook: str | None = None,
    store: str | None = None,
    remind_after: float | None = None,
) -> int:
    """Reads its own configuration (main does not), so that in a hook every failure, a broken
    configuration included, is exit 1, which Claude Code shows and passes, never exit 2, which
    would block the prompt or the stop."""
    if claude_hook is not None:
        try:
            return claude(
                ctx,
                load_config(ctx.env),
                event=claude_hook,
                raw=sys.stdin.read(),
                agent=agent,
                store=store,
                remind_after=remind_after,
            )
        except Exception as exc:
            report(exc, ctx)
            return Exit.REFUSED
    config = load_config(ctx.env)
    return listing(ctx, config, agent=agent, json=json, store=store, remind_after=remind_after)


def inbox_ack(
    *, ctx: Context, batch: str, note: str | None, as_agent: str | None, store: str | None
) -> int:
    """``inbox ack``: reads its own configuration, as ``inbox`` does."""
    return ack(ctx, load_config(ctx.env), batch=batch, note=note, as_agent=as_agent, store=store)


def _where(ctx: Context, config: Config, store: str | None) -> str | Path:
    return locate(store, ctx.env, config.env_name("WATCH_STORE"), config.tracker_project)


def _exists(where: str | Path) -> bool:
    """Has the watcher made this store yet? (A PostgreSQL store is there to be opened.)"""
    return is_postgres(where) or Path(where).exists()


def _open(ctx: Context, config: Config, where: str | Path) -> Store:
    return Store.open(where, tracker=config.tracker_project, now=ctx.now())


def _remind_after(db: Store, given: float | None) -> float:
    if given is not None:
        return given
    saved = db.meta("remind_after")
    return float(saved) if saved else REMIND_AFTER


def listing(
    ctx: Context,
    config: Config,
    *,
    agent: str | None,
    json: bool,
    store: str | None,
    remind_after: float | None,
) -> int:
    me = ctx.env.get(config.env_name("AGENT_ID"), "").strip() or None
    who = agent or me
    if who is None:
        raise UsageError(
            f"{config.cli} inbox: whose inbox? Pass --agent <agent> or set "
            f"{config.env_name('AGENT_ID')}"
        )
    path = _where(ctx, config, store)
    if not _exists(path):
        shown: list[delivery.Shown] = []
        where = f" (no watch store at {path} yet: the watcher has not run; {config.cli} watch)"
    else:
        db = _open(ctx, config, path)
        try:
            shown = delivery.pull(
                db,
                who,
                channel="inbox",
                only_due=False,
                record=who == me,
                cli=config.cli,
                store_flag=store_flag(store),
                now=ctx.now(),
                remind_after=_remind_after(db, remind_after),
            )
        finally:
            db.close()
        where = ""
    if json:
        output.dump(
            {"agent": who, "store": shown_store(path), "batches": [s.doc for s in shown]},
            ctx.stdout,
        )
    elif not shown:
        print(f"Nothing is waiting for {who}{where}.", file=ctx.stdout)
    else:
        print(("\n\n" + "-" * 72 + "\n\n").join(s.doc["text"] for s in shown), file=ctx.stdout)
    return Exit.OK


def _one_name(db: Store, session: str, me: str, number: int, cli: str) -> None:
    """A session speaks for one name: refuse an ACK as ``me`` from a session that wrote ledger
    records, or acknowledged batches, as another (the lead's session acting ``--as`` the
    reviewer). A hand-set session id gets past this; a restarted session is a new one."""
    other = next(((n, w) for n, w in db.names_of_session(session) if n != me), None)
    if other is None:
        return
    name, where = other
    raise Refusal(
        f"{cli} inbox ack: refused: this session ({session}) wrote as {name} ({where}); a "
        f"session speaks for one name only, so it does not acknowledge b{number} as {me}.\n"
        f"{me} acknowledges it from its own session: {cli} inbox ack b{number} --as {me}"
    )


def ack(
    ctx: Context,
    config: Config,
    *,
    batch: str,
    note: str | None,
    as_agent: str | None,
    store: str | None,
) -> int:
    me = identity(ctx, config, as_agent)
    number = _batch_id(batch, config.cli)
    path = _where(ctx, config, store)
    if not _exists(path):
        raise UsageError(
            f"{config.cli} inbox ack: there is no watch store at {path}: the watcher has not run "
            f"there (start it: {config.cli} watch)"
        )
    session = session_id(ctx, config)
    db = _open(ctx, config, path)
    try:
        with db.writing():
            before = db.batch(number)
            _one_name(db, session, me, number, config.cli)
            done = db.ack(
                number,
                agent=me,
                note=note,
                now=ctx.now(),
                cli=config.cli,
                session=session,
            )
        name = subject_name(done.subject)
        if before is not None and before.acked_at is not None:
            print(
                f"b{number} was already acknowledged by {before.ack_by} at {output.iso(before.acked_at)}.",
                file=ctx.stdout,
            )
            return Exit.OK
        print(
            f"acknowledged b{number} ({name}, {len(done.event_ids)} event(s)) as {me}",
            file=ctx.stdout,
        )
        if done.state == "moved":
            target = f"b{done.moved_to}" if done.moved_to else "no batch yet (nobody owes a move)"
            print(
                f"note: these events had been re-issued as {target}; that batch stays pending for its "
                f"recipient: your acknowledgement records what you did and clears nothing of theirs.",
                file=ctx.stdout,
            )
    finally:
        db.close()
    return Exit.OK


def claude(
    ctx: Context,
    config: Config,
    *,
    event: str,
    raw: str,
    agent: str | None,
    store: str | None,
    remind_after: float | None,
) -> int:
    """One Claude Code hook call: the hook's JSON in ``raw``, the answer on stdout."""
    data = hooks.parse(raw)
    said = data.get("hook_event_name")
    if said and said != event:
        print(
            f"{config.cli} inbox: note: registered for {event}, called for {said}; answering as {event}",
            file=ctx.stderr,
        )
    who = agent or ctx.env.get(config.env_name("AGENT_ID"), "").strip()
    if not who:
        why = (
            f"{config.cli} inbox: no agent identity ({config.env_name('AGENT_ID')} is unset): no "
            f"batches shown"
        )
        print(why, file=ctx.stderr)
        if event == "SessionStart":  # the agent is told once, not on every prompt
            said = (
                f"{why}. The GitLab events the watcher holds for this session's agent (review "
                f"comments, pipelines, offers) cannot reach it. To receive them, start the "
                f"session with {config.env_name('AGENT_ID')} set to the agent's name, or give "
                f"the hook's command --agent <agent>."
            )
            answer = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": said}}
            print(jsonlib.dumps(answer, ensure_ascii=False), file=ctx.stdout)
        return Exit.OK
    path = _where(ctx, config, store)
    if not _exists(path):
        return Exit.OK
    db = _open(ctx, config, path)
    try:
        out = hooks.answer(
            event,
            data,
            store=db,
            agent=who,
            cli=config.cli,
            store_flag=store_flag(store),
            now=ctx.now(),
            remind_after=_remind_after(db, remind_after),
        )
    finally:
        db.close()
    if out is not None:
        # Not ASCII-escaped: the size the hook budgets (hooks.size) is the size printed.
        print(jsonlib.dumps(out, ensure_ascii=False), file=ctx.stdout)
    return Exit.OK
