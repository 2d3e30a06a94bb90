"""the deployment issues"""

from __future__ import annotations

from typing import Any

from pairgate.commands._todo import not_yet


def deploy_agents(**_: Any) -> int:
    raise not_yet("deploy-agents", "the deployment issues")


def deploy_hooks(**_: Any) -> int:
    raise not_yet("deploy-hooks", "the deployment issues")
