"""The fold's reads: an issue's notes, its ledger, the board's freeze windows."""

from __future__ import annotations

from collections.abc import Mapping

from pairgate.standalone.config import Config
from pairgate.standalone.fold import binding_freeze, fold, freeze_refusal
from pairgate.standalone.gitlab import GitLab, encode_project
from pairgate.standalone.ledger import FROZEN_LABEL, Freeze, Ledger, MrRef, Note


def notes_path(config: Config, issue: int) -> str:
    return f"projects/{encode_project(config['tracker_project'])}/issues/{issue}/notes"


def read_notes(client: GitLab, config: Config, issue: int) -> list[Note]:
    """Every note on a tracker issue, oldest first (``sort=asc``: GitLab's default is newest
    first, and ``created_at`` order is id order)."""
    raw = client.get_all(notes_path(config, issue), sort="asc", order_by="created_at")
    return [Note.from_api(n) for n in raw]


def read_ledger(client: GitLab, config: Config, issue: int) -> Ledger:
    """The I/O edge of the fold: read the issue's notes, fold them."""
    return fold(read_notes(client, config, issue), config=config)


def read_freezes(
    client: GitLab, config: Config, *, known: Mapping[int, Ledger] | None = None
) -> list[tuple[int, Freeze]]:
    """Every freeze window on the issues labelled FROZEN_LABEL and in ``known`` (ledgers already
    folded, not read again), as (issue, window). One issue listing, then one notes listing per
    labelled issue."""
    project = encode_project(config["tracker_project"])
    listed = client.get_all(f"projects/{project}/issues", labels=FROZEN_LABEL, state="all")
    ledgers = dict(known or {})
    for issue in sorted({int(i["iid"]) for i in listed} - set(ledgers)):
        ledgers[issue] = read_ledger(client, config, issue)
    return [(issue, w) for issue, ledger in sorted(ledgers.items()) for w in ledger.freezes]


def mr_freeze(
    client: GitLab, config: Config, mr: MrRef, *, known: Mapping[int, Ledger], now: float
) -> str | None:
    """Why a live window on ``mr`` holds its merge back (the merge gate's freeze rule), or None.
    Only ``mr:`` windows bind the gate: a board or issue window holds back writes, not merges."""
    windows = [w for w in read_freezes(client, config, known=known) if w[1].scope.startswith("mr:")]
    found = binding_freeze(windows, now=now, mr=mr)
    return None if found is None else freeze_refusal(*found, now=now, config=config)


# -- end of 5b -----------------------------------------------------------------------------------
