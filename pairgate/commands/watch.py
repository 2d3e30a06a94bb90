"""``watch``, ``inbox`` and ``inbox ack`` on the command line: their argument functions (the
command table's rows name them). The handlers are ``commands/watcher.py`` (``watch`` and its
``--status``) and ``commands/inbox.py``; this module stays light, because main builds its parser
(and so imports this) for every command.

``watch`` polls GitLab and turns what changed into batches for the agent the ledger says owes
the next move; ``inbox`` is how that agent reads and acknowledges them.
"""

from __future__ import annotations

import argparse

from pairgate.watch import HOOK_EVENTS, REMIND_AFTER

INTERVAL = 180.0
HOOKED_INTERVAL = 900.0  # with webhooks the poll is the safety net for lost hooks
LEASE = 120.0  # pairgate.watch.delivery.LEASE
STORE_HELP = (
    "the watch store: a SQLite file or a postgresql:// URL (default: <env_prefix>_WATCH_STORE, "
    "else $XDG_STATE_HOME/pairgate/<tracker>.sqlite3)"
)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def watch(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--once", action="store_true", help="poll once and deliver (for a scheduled job)"
    )
    p.add_argument(
        "--interval",
        type=_seconds,
        metavar="SECONDS",
        help="seconds between polls (default: 180; 900 with --listen, where the poll is the "
        "safety net for lost webhooks)",
    )
    p.add_argument("--store", metavar="WHERE", help=STORE_HELP)
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="receive GitLab's webhooks (merge request, note, pipeline, job and push events) "
        "here; the secret token is <env_prefix>_WEBHOOK_TOKEN or --hook-token-file",
    )
    p.add_argument(
        "--hook-token-file",
        metavar="FILE",
        help="the webhooks' secret token, read from FILE (default: <env_prefix>_WEBHOOK_TOKEN)",
    )
    p.add_argument(
        "--no-poll",
        action="store_true",
        help="with --listen: never poll (a lost webhook is then never seen; not recommended)",
    )
    p.add_argument(
        "--lease",
        type=_seconds,
        default=LEASE,
        metavar="SECONDS",
        help="how long this watcher's claim on a batch or a webhook lasts before another "
        "watcher of the store takes it over (default: 120)",
    )
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


def inbox(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", metavar="AGENT", help="whose inbox (default: <env_prefix>_AGENT_ID)")
    p.add_argument("--json", action="store_true", help="print JSON with stable keys")
    p.add_argument(
        "--claude-hook",
        choices=HOOK_EVENTS,
        metavar="EVENT",
        help="speak Claude Code's hook protocol for EVENT (SessionStart, UserPromptSubmit, Stop), "
        "reading the hook's JSON on stdin",
    )
    p.add_argument("--store", metavar="WHERE", help=STORE_HELP)
    p.add_argument(
        "--remind-after",
        type=_seconds,
        metavar="SECONDS",
        help="when a shown batch is due again (default: the watcher's setting, else 1800)",
    )


def inbox_ack(p: argparse.ArgumentParser) -> None:
    p.add_argument("batch", metavar="BATCH", help="the batch id, such as b12")
    p.add_argument("--note", metavar="TEXT", help="what you did, recorded with the ack")
    p.add_argument(
        "--as",
        dest="as_agent",
        metavar="AGENT",
        help="act as this agent identity (default: <env_prefix>_AGENT_ID)",
    )
    p.add_argument("--store", metavar="WHERE", help=STORE_HELP)


def store_flag(store: str | None) -> str:
    """`` --store WHERE`` for a command a handler suggests, when the store was given: a
    PostgreSQL URL without its password."""
    if store is None:
        return ""
    import shlex  # here: --help builds this module's flags and needs no quoting

    from pairgate.watch.backends import shown

    return f" --store {shlex.quote(shown(store))}"
