"""the ledger issue"""

from __future__ import annotations

from typing import Any

from pairgate.commands._todo import not_yet


def claim(**_: Any) -> int:
    raise not_yet("claim", "the ledger issue")


def handoff(**_: Any) -> int:
    raise not_yet("handoff", "the ledger issue")


def accept(**_: Any) -> int:
    raise not_yet("accept", "the ledger issue")


def decline(**_: Any) -> int:
    raise not_yet("decline", "the ledger issue")


def release(**_: Any) -> int:
    raise not_yet("release", "the ledger issue")


def approve(**_: Any) -> int:
    raise not_yet("approve", "the ledger issue")


def status(**_: Any) -> int:
    raise not_yet("status", "the ledger issue")


def close(**_: Any) -> int:
    raise not_yet("close", "the ledger issue")
