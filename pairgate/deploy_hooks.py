"""pairgate deploy-hooks (built by a later issue)."""

from __future__ import annotations

from typing import Any

from pairgate.commands._todo import not_yet


def deploy_hooks(**_: Any) -> int:
    raise not_yet("deploy-hooks", "a later issue")
