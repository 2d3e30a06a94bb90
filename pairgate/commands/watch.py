"""``watch``, ``inbox`` and ``inbox ack`` on the command line: their argument functions (the
command table's rows name them). The handlers are ``commands/watcher.py`` (``watch`` and its
``--status``) and ``commands/inbox.py``; this module stays light, because main builds its parser
(and so imports this) for every command.

``watch`` polls GitLab and turns what changed into batches for the agent the ledger says owes
the next move; ``inbox`` is how that agent reads and acknowledges them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pairgate.watch import HOOK_EVENTS, REMIND_AFTER

INTERVAL = 180.0
STORE_HELP = "the watch store (default: $XDG_STATE_HOME/pairgate/<tracker>.sqlite3)"


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
        "--interval", type=_seconds, default=INTERVAL, metavar="SECONDS", help="default: 180"
    )
    p.add_argument("--store", type=Path, metavar="PATH", help=STORE_HELP)
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
    p.add_argument("--store", type=Path, metavar="PATH", help=STORE_HELP)
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
    p.add_argument("--store", type=Path, metavar="PATH", help=STORE_HELP)


def store_flag(store: Path | None) -> str:
    """`` --store PATH`` for a command a handler suggests, when the store was given."""
    import shlex  # here: --help builds this module's flags and needs no quoting

    return f" --store {shlex.quote(str(store))}" if store is not None else ""
