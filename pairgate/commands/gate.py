"""the merge gate issue"""

from __future__ import annotations

from typing import Any

from pairgate.commands._todo import not_yet


def merge_check(**_: Any) -> int:
    raise not_yet("merge-check", "the merge gate issue")
