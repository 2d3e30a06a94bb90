"""The fold's reads: an issue's notes, its ledger, the board's freeze windows."""

from __future__ import annotations

from collections.abc import Mapping

from pairgate.standalone.config import Config
from pairgate.standalone.fold import fold
from pairgate.standalone.gitlab import GitLab, encode_project
from pairgate.standalone.ledger import FROZEN_LABEL, Freeze, Ledger, Note


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


def frozen_issues(client: GitLab, config: Config) -> list[int]:
    """The tracker issues labelled as holding a freeze window (open or closed): one listing."""
    project = encode_project(config["tracker_project"])
    listed = client.get_all(f"projects/{project}/issues", labels=FROZEN_LABEL, state="all")
    return sorted({int(i["iid"]) for i in listed})


def read_freezes(
    client: GitLab, config: Config, *, known: Mapping[int, Ledger] | None = None
) -> list[tuple[int, Freeze]]:
    """Every freeze window on the issues labelled FROZEN_LABEL and in ``known`` (ledgers already
    folded, not read again), as (issue, window). One issue listing, then one notes listing per
    labelled issue."""
    ledgers = dict(known or {})
    for issue in sorted(set(frozen_issues(client, config)) - set(ledgers)):
        ledgers[issue] = read_ledger(client, config, issue)
    return [(issue, w) for issue, ledger in sorted(ledgers.items()) for w in ledger.freezes]


# -- end of 5b -----------------------------------------------------------------------------------
