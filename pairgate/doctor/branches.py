"""doctor's protected-branch checks: the tracker's default branch (it holds the pipeline every
gated project runs) and Renovate's branches in the exempt namespaces. Pure.

GitLab's rules (doc/api/protected_branches.md): a rule's name may be a wildcard (``*`` matches
any characters), the most permissive matching rule decides, and an access level entry is a role
(0 No one, 30 Developers + Maintainers, 40 Maintainers, 60 Administrators) or, on Premium, a
user, a group or (push only) a deploy key. Reading the rules needs Maintainer; below it the
branch entity (doc/api/branches.md) still says ``protected``, ``developers_can_push`` and
``developers_can_merge``, but not the Premium entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pairgate.doctor.checks import CANNOT_READ, HOLE, MAINTAINER, PASS, ROLE_NAMES, DoctorCheck
from pairgate.standalone.gitlab import GitLabError

# The one remedy when protection rules cannot be read: GitLab shows them to Maintainers only.
MAINTAINER_READS = (
    "run doctor with a Maintainer's read_api token: only a Maintainer reads protected branch rules"
)


def _unread(error: object) -> str:
    """Why a read failed, without the client's general advice about the token's scope: a 403
    here is the account's role, not a scope the token lacks."""
    if isinstance(error, GitLabError) and error.status == 403:
        return "GitLab answered 403 Forbidden (the read token's account is not a Maintainer there)"
    return str(error)


RULES_READ = (
    "GET /projects/:id/protected_branches name, push_access_levels, merge_access_levels "
    "(doc/api/protected_branches.md; Maintainer)"
)
LevelOf = Callable[[int], int | Exception]


def wildcard(name: str) -> re.Pattern[str]:
    """A protected branch name as GitLab matches it: ``*`` is any run of characters."""
    return re.compile("".join(".*" if p == "*" else re.escape(p) for p in re.split(r"(\*)", name)))


def entry_problem(
    entry: Mapping[str, Any], action: str, level_of: LevelOf, allowed_user: int | None
) -> str | None:
    """Why this access entry lets someone below Maintainer ``action`` (push or merge)."""
    user, group, key = entry.get("user_id"), entry.get("group_id"), entry.get("deploy_key_id")
    if user is not None:
        if user == allowed_user:
            return None
        level = level_of(int(user))
        if isinstance(level, Exception):
            return f"user id {user} may {action} (its role could not be read: {level})"
        if level >= MAINTAINER:
            return None
        return f"user id {user} ({ROLE_NAMES.get(level, level)}) may {action}"
    if group is not None:
        return f"the members of group id {group} may {action}"
    if key is not None:
        return f"deploy key {key} may {action}"
    role = entry.get("access_level")
    if role in (0, 40, 60):
        return None
    described = entry.get("access_level_description") or f"access level {role}"
    return f"{described} may {action}"


def access_problems(
    rules: Sequence[Mapping[str, Any]],
    actions: Sequence[str],
    level_of: LevelOf,
    allowed_user: int | None = None,
) -> list[str]:
    return [
        f"rule {rule.get('name')!r}: {problem}"
        for rule in rules
        for action in actions
        for entry in rule.get(f"{action}_access_levels") or []
        if (problem := entry_problem(entry, action, level_of, allowed_user)) is not None
    ]


def default_branch_check(
    tracker: str,
    branch: str | None,
    rules: Sequence[Mapping[str, Any]] | Exception,
    branch_entity: Mapping[str, Any] | Exception | None,
    level_of: LevelOf,
    *,
    gated: bool = False,
) -> DoctorCheck:
    """Only Maintainers push to or merge into the tracker's default branch; with ``gated``,
    only Maintainers push to a gated project's default branch (merges into it pass the gate;
    a push does not)."""
    check = "default-branch" if gated else "tracker-default-branch"
    actions = ("push",) if gated else ("push", "merge")
    levels = "push_access_level=40" if gated else "push_access_level=40 merge_access_level=40"
    fix = (
        f"protect {tracker}'s {branch or 'default branch'} with {' and '.join(actions)} access "
        f"Maintainers (`doctor --fix`, or POST /projects/:id/protected_branches {levels}, "
        f"after DELETE of the rule there), and no user, group or deploy key entries"
    )
    exposed = (
        "every Developer, the agents included, pushes to it: a push lands with no merge "
        "request, so no gate job ever judges it"
        if gated
        else "every Developer, the agents included, pushes to it and merges into it, and it "
        "holds the gate's files and the pipeline every gated project runs"
    )
    if branch is None:
        return DoctorCheck(
            check,
            tracker,
            CANNOT_READ,
            ("GET /projects/:id default_branch",),
            f"{tracker} has no default branch (an empty repository)",
            "commit the tracker's files to its default branch",
        )
    if not isinstance(rules, Exception):
        matching = [r for r in rules if wildcard(str(r.get("name", ""))).fullmatch(branch)]
        if not matching:
            return DoctorCheck(
                check,
                tracker,
                HOLE,
                (RULES_READ,),
                f"{branch} is not protected: {exposed}",
                fix,
            )
        problems = access_problems(matching, actions, level_of)
        if problems:
            return DoctorCheck(
                check, tracker, HOLE, (RULES_READ,), f"{branch}: " + "; ".join(problems), fix
            )
        return DoctorCheck(
            check,
            tracker,
            PASS,
            (RULES_READ,),
            f"{branch}: only Maintainers {' and '.join(actions)}",
        )
    read = (
        f"GET /projects/:id/repository/branches/{branch} protected, developers_can_push, "
        f"developers_can_merge (doc/api/branches.md)",
    )
    denied = isinstance(rules, GitLabError) and rules.status == 403
    if not denied or not isinstance(branch_entity, Mapping):
        error = branch_entity if isinstance(branch_entity, Exception) else rules
        return DoctorCheck(
            check,
            tracker,
            CANNOT_READ,
            (RULES_READ, *read),
            f"the protection of {branch} could not be read: {_unread(error)}",
            MAINTAINER_READS,
        )
    problems = [
        text
        for key, text in (
            ("developers_can_push", "Developers may push"),
            ("developers_can_merge", "Developers may merge"),
        )
        if branch_entity.get(key) is not False and key.removeprefix("developers_can_") in actions
    ]
    if branch_entity.get("protected") is not True:
        problems = [f"it is not protected: {exposed}"]
    if problems:
        return DoctorCheck(check, tracker, HOLE, read, f"{branch}: " + "; ".join(problems), fix)
    return DoctorCheck(
        check,
        tracker,
        PASS,
        read,
        f"{branch} is protected and Developers may not {' or '.join(actions)} (read from the "
        f"branch "
        f"entity: the rules' user, group and deploy key entries, a Premium feature, need "
        f"Maintainer to read and were not checked)",
    )


def covers(name: str, prefix: str) -> bool:
    """Does a rule named ``name`` match every branch that starts with ``prefix``?"""
    return name == "*" or (
        name.endswith("*") and "*" not in name[:-1] and prefix.startswith(name[:-1])
    )


def renovate_check(
    project: str,
    prefix: str,
    renovate: int,
    rules: Sequence[Mapping[str, Any]] | Exception,
    level_of: LevelOf,
) -> DoctorCheck:
    """In a namespace the Renovate exemption covers, only Renovate pushes its branches: else
    an agent pushes onto a Renovate branch and its MR, still Renovate's, stays exempt."""
    check = "renovate-branches"
    fix = (
        f"protect {prefix}* in {project} (POST /projects/:id/protected_branches "
        f"name={prefix}* push_access_level=40): on Free that leaves Maintainers, so Renovate "
        f"must push as a Maintainer there; on Premium use push_access_level=0 with "
        f"allowed_to_push [{{user_id: {renovate}}}] (user entries are Premium)"
    )
    if isinstance(rules, Exception):
        return DoctorCheck(
            check,
            project,
            CANNOT_READ,
            (RULES_READ,),
            f"the protected branches of {project} could not be read: {_unread(rules)}",
            MAINTAINER_READS,
        )
    covering = [r for r in rules if covers(str(r.get("name", "")), prefix)]
    touching = covering + [
        r for r in rules if str(r.get("name", "")).startswith(prefix) and r not in covering
    ]
    if not covering:
        return DoctorCheck(
            check,
            project,
            HOLE,
            (RULES_READ,),
            f"no rule protects every {prefix}* branch: any Developer, the agents "
            f"included, can push onto a Renovate branch, and Renovate's merge "
            f"request from it stays exempt from the gate",
            fix,
        )
    problems = access_problems(touching, ("push",), level_of, allowed_user=renovate)
    if problems:
        return DoctorCheck(check, project, HOLE, (RULES_READ,), "; ".join(problems), fix)
    names = ", ".join(str(r.get("name")) for r in covering)
    return DoctorCheck(
        check,
        project,
        PASS,
        (RULES_READ,),
        f"{names}: only Maintainers or the Renovate account push there (only Premium can name "
        f"the Renovate account alone: on Free, Maintainers push there too)",
    )
