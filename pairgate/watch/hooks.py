"""Claude Code's hook protocol for the inbox (reference: the Stop, SessionStart and
UserPromptSubmit sections of Claude Code's hooks documentation).

- SessionStart: every live batch of the agent, as ``hookSpecificOutput.additionalContext``
  (a new or resumed session has not seen them).
- UserPromptSubmit: only the batches due (never shown, a failed attempt, or unacknowledged for
  the reminder time), the same way; nothing otherwise.
- Stop: while the agent holds unacknowledged batches, ``{"decision": "block", "reason": ...}``
  with the list and the ack commands, so the turn goes on. Bounded: pairgate blocks at most
  STOP_LIMIT times in a row in one session (counted in the store, reset by a stop that
  ``stop_hook_active`` says is not a continuation), well under Claude Code's own cap of 8
  consecutive blocks; then it lets the turn end, says so in ``systemMessage``, and keeps the
  batches pending (they are re-sent as reminders).

Every hook answers with exit 0. Exit 2 would block the prompt or the stop with a message the
agent cannot act on, so a failure is exit 1: Claude Code shows it and carries on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pairgate.standalone.errors import UsageError
from pairgate.watch import HOOK_EVENTS, delivery
from pairgate.watch.delivery import Shown
from pairgate.watch.records import subject_name
from pairgate.watch.store import Store

EVENTS = HOOK_EVENTS
STOP_LIMIT = 3
CONTEXT_MAX = 9000  # Claude Code caps a hook's output string at 10,000 characters


class HookInputError(UsageError):
    """The hook's stdin is not the JSON object Claude Code sends."""


def parse(raw: str) -> dict[str, Any]:
    try:
        data = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise HookInputError(f"pairgate inbox: the hook input is not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise HookInputError("pairgate inbox: the hook input is not a JSON object")
    return data


def context(shown: list[Shown], cli: str) -> tuple[str, list[Shown]]:
    """The batches' notifications, whole, as many as fit, and which those were; the rest are
    named with where to read them (and not counted as delivered)."""
    parts: list[str] = []
    used = 0
    included: list[Shown] = []
    rest = []
    for s in shown:
        block = s.doc["text"]
        if used + len(block) > CONTEXT_MAX and parts:
            rest.append(s.batch.label)
            continue
        parts.append(block[:CONTEXT_MAX])
        included.append(s)
        used += len(block)
    if rest:
        parts.append(
            f"More batches wait for you ({', '.join(rest)}): read them with `{cli} inbox`."
        )
    return "\n\n".join(parts), included


def _line(s: Shown, cli: str, store_flag: str) -> str:
    kinds = ", ".join(dict.fromkeys(e.kind for e in s.events))
    return (
        f"- {s.batch.label} on {subject_name(s.batch.subject)}: {len(s.events)} event(s) "
        f'({kinds}); when handled: {cli} inbox ack {s.batch.label}{store_flag} --note "<what you did>"'
    )


def answer(
    event: str,
    data: Mapping[str, Any],
    *,
    store: Store,
    agent: str,
    cli: str,
    store_flag: str,
    now: float,
    remind_after: float,
) -> dict[str, Any] | None:
    """The JSON to print for one hook call, or None for no output."""

    def pull(channel: str, only_due: bool, *, record: bool) -> list[Shown]:
        return delivery.pull(
            store,
            agent,
            channel=channel,
            only_due=only_due,
            record=record,
            cli=cli,
            store_flag=store_flag,
            now=now,
            remind_after=remind_after,
        )

    if event in ("SessionStart", "UserPromptSubmit"):
        shown = pull(f"hook:{event}", event == "UserPromptSubmit", record=False)
        if not shown:
            return None
        said, included = context(shown, cli)
        delivery.recorded(store, included, channel=f"hook:{event}", now=now)
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": said}}
    session = str(data.get("session_id") or "")
    pending = [b for b in store.live_batches(agent) if b.state == "pending"]
    if not pending:
        with store.writing():
            store.set_stop_count(session, 0, now)
        return None
    count = store.stop_count(session) if data.get("stop_hook_active") else 0
    labels = ", ".join(b.label for b in pending)
    if count >= STOP_LIMIT:
        with store.writing():
            store.set_stop_count(session, 0, now)
        return {
            "systemMessage": (
                f"{cli}: {agent} still holds {len(pending)} unacknowledged batch(es) ({labels}) "
                f"after {STOP_LIMIT} reminders in a row; the turn may end. They stay pending and "
                f"are re-sent as reminders."
            )
        }
    shown = pull("hook:Stop", False, record=True)
    shown = [s for s in shown if s.batch.state == "pending"]
    lines = [
        f"{cli}: {agent} holds {len(shown)} unacknowledged batch(es) of GitLab events. Read them "
        f"in full with `{cli} inbox`, check what has already happened, handle each (or report a "
        f"blocker to the user), then acknowledge it:",
        *(_line(s, cli, store_flag) for s in shown),
        f"(Reminder {count + 1} of at most {STOP_LIMIT} in a row: after that the turn may end and "
        f"the batches stay pending.)",
    ]
    with store.writing():
        store.set_stop_count(session, count + 1, now)
    return {"decision": "block", "reason": "\n".join(lines)[:CONTEXT_MAX]}
