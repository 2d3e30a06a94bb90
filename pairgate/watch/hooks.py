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
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pairgate.standalone.errors import UsageError
from pairgate.watch import HOOK_EVENTS, delivery, notify
from pairgate.watch.delivery import Shown
from pairgate.watch.records import subject_name
from pairgate.watch.store import Store

EVENTS = HOOK_EVENTS
STOP_LIMIT = 3
# Claude Code caps a hook's output string at 10,000 characters: the answer, JSON and all,
# stays under it. MORE_MAX is kept back for the line naming the batches left out.
CONTEXT_MAX = 9000
MORE_MAX = 600
LIST_MAX = 20  # batches a hook names one by one; the rest are counted


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


def size(text: str) -> int:
    """The characters ``text`` takes in the hook's JSON answer (quotes and escapes included)."""
    return len(json.dumps(text, ensure_ascii=False))


def _counts(s: Shown) -> str:
    kinds = Counter(e.kind for e in s.events)
    return ", ".join(f"{n} {kind}" for kind, n in kinds.items())


def summary(s: Shown, cli: str, store_flag: str) -> str:
    """A batch too long for the hook: what it is, the rule and the ack command, and where to
    read it whole. Its header holds no text from GitLab."""
    header = str(s.doc["text"]).split("\n", 1)[0]
    return "\n".join(
        [
            header,
            f"Not shown here: its {len(s.events)} event(s) ({_counts(s)}) take more room than a "
            f"hook may give. Read the batch in full with `{cli} inbox{store_flag}` before you "
            f"act; it counts as delivered only once you have.",
            "",
            notify.RULE,
            "When you have handled these events, or reported a blocker to the user, "
            "acknowledge this batch:",
            f"    {notify.ack_command(s.batch, cli, store_flag)}",
        ]
    )


def more(labels: list[str], cli: str, store_flag: str) -> str:
    """The batches left out, named up to LIST_MAX."""
    named = ", ".join(labels[:LIST_MAX])
    if len(labels) > LIST_MAX:
        named += f" and {len(labels) - LIST_MAX} more"
    return f"More batches wait for you ({named}): read them with `{cli} inbox{store_flag}`."


def context(shown: list[Shown], cli: str, store_flag: str = "") -> tuple[str, list[Shown]]:
    """The batches' notifications, whole, as many as fit, and which those were (only those
    count as delivered). A batch that does not fit is summarised while summaries fit; the
    rest are named, LIST_MAX at most, with where to read them."""
    budget = CONTEXT_MAX - MORE_MAX
    parts: list[str] = []
    used = 0
    included: list[Shown] = []
    rest: list[str] = []
    for s in shown:
        for block, whole in ((str(s.doc["text"]), True), (summary(s, cli, store_flag), False)):
            if used + size(block) <= budget:
                parts.append(block)
                used += size(block)
                if whole:
                    included.append(s)
                break
        else:
            rest.append(s.batch.label)
    if rest:
        parts.append(more(rest, cli, store_flag))
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
        said, included = context(shown, cli, store_flag)
        delivery.recorded(store, included, channel=f"hook:{event}", now=now)
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": said}}
    session = str(data.get("session_id") or "")
    pending = [b for b in store.live_batches(agent) if b.state == "pending"]
    if not pending:
        with store.writing():
            store.set_stop_count(session, 0, now)
        return None
    count = store.stop_count(session) if data.get("stop_hook_active") else 0
    labels = ", ".join(b.label for b in pending[:LIST_MAX]) + (
        f" and {len(pending) - LIST_MAX} more" if len(pending) > LIST_MAX else ""
    )
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
    shown = pull("hook:Stop", False, record=False)
    shown = [s for s in shown if s.batch.state == "pending"]
    listed = shown[:LIST_MAX]
    lines = [
        f"{cli}: {agent} holds {len(shown)} unacknowledged batch(es) of GitLab events. Read them "
        f"in full with `{cli} inbox{store_flag}`, check what has already happened, handle each "
        f"(or report a blocker to the user), then acknowledge it:",
        *(_line(s, cli, store_flag) for s in listed),
    ]
    if len(shown) > len(listed):
        lines.append(f"- and {len(shown) - len(listed)} more: `{cli} inbox{store_flag}` lists them")
    lines.append(
        f"(Reminder {count + 1} of at most {STOP_LIMIT} in a row: after that the turn may end and "
        f"the batches stay pending.)"
    )
    delivery.recorded(store, listed, channel="hook:Stop", now=now)
    with store.writing():
        store.set_stop_count(session, count + 1, now)
    return {"decision": "block", "reason": "\n".join(lines)}
