"""Protected branches as GitLab Free has them: one push, merge and unprotect access level per
rule, a rule's name may be a wildcard (``release/*``), and the most permissive matching rule
decides (ProtectedRef#protected_ref_accessible_to?). Rules live on the project as plain dicts
(``Project.protected_branches``) so the world saves without a serialiser."""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox.model import World
from pairgate.sandbox.records import DEVELOPER, MAINTAINER, Project, User

NO_ONE, ADMIN = 0, 60
LEVELS = (NO_ONE, DEVELOPER, MAINTAINER, ADMIN)  # ProtectedRefAccess.allowed_access_levels
DESCRIPTIONS = {
    NO_ONE: "No one",
    DEVELOPER: "Developers + Maintainers",
    MAINTAINER: "Maintainers",
    ADMIN: "Administrators",  # UNCONFIRMED wording (seen in clients, not in GitLab's docs)
}
ACTIONS = ("push", "merge", "unprotect")


def new_rule(world: World, name: str, levels: dict[str, int], **flags: bool) -> dict[str, Any]:
    """A rule: ``levels`` maps push/merge/unprotect to an access level (default Maintainer)."""
    rule: dict[str, Any] = {"id": world.next_id("protected_branch"), "name": name}
    for action in ACTIONS:
        rule[f"{action}_access_level"] = levels.get(action, MAINTAINER)
        rule[f"{action}_access_id"] = world.next_id("protected_access")
    rule["allow_force_push"] = flags.get("allow_force_push", False)
    rule["code_owner_approval_required"] = flags.get("code_owner_approval_required", False)
    return rule


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        "".join(".*?" if part == "*" else re.escape(part) for part in re.split(r"(\*)", name))
    )


def matching(project: Project, branch: str) -> list[dict[str, Any]]:
    """The rules whose name (or wildcard) matches ``branch``."""
    return [r for r in project.protected_branches if _pattern(r["name"]).fullmatch(branch)]


def rule_named(project: Project, name: str) -> dict[str, Any] | None:
    return next((r for r in project.protected_branches if r["name"] == name), None)


def _grants(level: int, user_level: int) -> bool:
    """ProtectedRefAccess#check_access: No one is no one, Administrators only admins (none
    here), otherwise at least that role."""
    return level not in (NO_ONE, ADMIN) and user_level >= level


def may(world: World, user: User | None, project: Project, branch: str, action: str) -> bool:
    """May ``user`` push to (or merge into) ``branch``? An unprotected branch takes Developer."""
    user_level = world.access_level(user, project)
    rules = matching(project, branch)
    if not rules:
        return user_level >= DEVELOPER
    return any(_grants(r[f"{action}_access_level"], user_level) for r in rules)


def developers_can(project: Project, branch: str, action: str) -> bool:
    """The branch entity's developers_can_push/merge: some matching rule grants Developer
    exactly (ProtectedRef.developers_can?), so an unprotected branch says false."""
    return any(r[f"{action}_access_level"] == DEVELOPER for r in matching(project, branch))


def render(rule: dict[str, Any]) -> dict[str, Any]:
    """API::Entities::ProtectedBranch as the EE code base (GitLab.com) answers on Free."""
    out: dict[str, Any] = {"id": rule["id"], "name": rule["name"]}
    for action in ACTIONS:
        level = rule[f"{action}_access_level"]
        out[f"{action}_access_levels"] = [
            {
                "id": rule[f"{action}_access_id"],
                "access_level": level,
                "access_level_description": DESCRIPTIONS[level],
            }
        ]
    out["allow_force_push"] = rule["allow_force_push"]
    out["code_owner_approval_required"] = rule["code_owner_approval_required"]
    return out
