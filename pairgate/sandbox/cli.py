"""pairgate sandbox (built by the sandbox issue)."""

from __future__ import annotations

from typing import Any

from pairgate.commands._todo import not_yet


def serve(**_: Any) -> int:
    raise not_yet("sandbox", "the sandbox issue")
