"""the ledger issue"""

from __future__ import annotations

from typing import Any

from pairgate.commands._todo import not_yet


def demo(**_: Any) -> int:
    raise not_yet("demo", "the ledger issue")
