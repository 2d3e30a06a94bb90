"""doctor --fix: what doctor can close through the API, as a Maintainer, and the change each
makes (before and after). ``--dry-run`` plans the same calls and makes none.

The settings (PUT /projects/:id, doc/api/projects.md; Maintainer): "Pipelines must succeed" on,
"Skipped pipelines are considered successful" off, the CI/CD configuration file (when --pipeline
names the tracker's pipeline file, or it already names a tracker file), forking off, pipeline
variables restricted (both fields: the role has no effect without the switch). The branch
protections (doc/api/protected_branches.md; Free has no PATCH of access levels, so a rule is
replaced: DELETE, then POST): the tracker's default branch (push and merge: Maintainers), each
gated project's default branch (push: Maintainers; merge: the level the rule had, else
Developers, since merges pass the gate), and ``<renovate_branch_prefix>*`` in the exempt
namespaces (push and merge: Maintainers). A wildcard rule that opens a branch is not rewritten:
doctor names it afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pairgate.doctor.branches import access_problems, wildcard
from pairgate.doctor.checks import MAINTAINER, ROLE_NAMES, PipelineFile, pipeline_file
from pairgate.standalone.config import Config
from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.scope import under

DEVELOPER = 30
WANTED: dict[str, Any] = {
    "only_allow_merge_if_pipeline_succeeds": True,
    "allow_merge_on_skipped_pipeline": False,
    "forking_access_level": "disabled",
    "restrict_user_defined_variables": True,
}
RESTRICTED_ROLES = ("maintainer", "owner", "no_one_allowed")


@dataclass
class Change:
    """One call: what it changes, from what to what, and how to make it."""

    subject: str
    call: str
    what: str
    before: str
    after: str
    apply: Callable[[], None] = field(repr=False)

    def line(self, done: bool) -> str:
        verb = "changed" if done else "would change"
        return f"{verb}: {self.subject}: {self.what}: {self.before} -> {self.after}  ({self.call})"


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value)


def setting_changes(
    client: GitLab, config: Config, path: str, data: Mapping[str, Any], pipeline: str | None
) -> tuple[list[Change], list[str]]:
    """One PUT for every setting of ``path`` that differs from the wanted one, each field its
    own Change line (the first carries the call); and what it could not fix, and why."""
    wanted = dict(WANTED)
    if data.get("ci_pipeline_variables_minimum_override_role") not in RESTRICTED_ROLES:
        wanted["ci_pipeline_variables_minimum_override_role"] = "maintainer"
    notes = []
    current = data.get("ci_config_path")
    if pipeline is not None:
        wanted["ci_config_path"] = f"{pipeline}@{config.tracker_project}"
    elif not isinstance(pipeline_file(current, config.tracker_project), PipelineFile):
        notes.append(
            f"not fixed: {path}: ci_config_path is {_shown(current)}; name the tracker's "
            f"pipeline file with --pipeline PATH (deploy-pipeline --publish PATH printed it)"
        )
    body = {k: v for k, v in wanted.items() if data.get(k) != v}
    if not body:
        return [], notes
    project = f"projects/{encode_project(path)}"

    def put() -> None:
        client.write("PUT", project, body)

    call = f"PUT /projects/{encode_project(path)}"
    changes = [
        Change(path, call, key, _shown(data.get(key)), _shown(value), lambda: None)
        for key, value in body.items()
    ]
    changes[0].apply = put
    return changes, notes


def _levels(rule: Mapping[str, Any] | None) -> str:
    if rule is None:
        return "unprotected"
    parts = []
    for action in ("push", "merge"):
        entries = rule.get(f"{action}_access_levels") or []
        named = [
            str(e.get("access_level_description") or ROLE_NAMES.get(e.get("access_level"), "?"))
            for e in entries
        ]
        parts.append(f"{action} {', '.join(named) or 'No one'}")
    return "; ".join(parts)


def protection_change(
    client: GitLab,
    project: str,
    name: str,
    rules: list[Mapping[str, Any]],
    actions: tuple[str, ...],
    level_of: Callable[[int], int | Exception],
    *,
    merge_default: int = MAINTAINER,
) -> Change | None:
    """Replace the rule named ``name`` when it is absent or lets someone below Maintainer
    ``actions``; None when it is sound (a wildcard's problem is left for doctor to name)."""
    exact = next((r for r in rules if r.get("name") == name), None)
    if exact is not None and not access_problems([exact], actions, level_of):
        return None
    if exact is None and any(wildcard(str(r.get("name", ""))).fullmatch(name) for r in rules):
        matching = [r for r in rules if wildcard(str(r.get("name", ""))).fullmatch(name)]
        if not access_problems(matching, actions, level_of):
            return None
    merge = MAINTAINER
    if "merge" not in actions:
        kept = [
            e.get("access_level")
            for e in (exact or {}).get("merge_access_levels") or []
            if e.get("access_level") in (DEVELOPER, MAINTAINER)
        ]
        merge = int(kept[0]) if kept else merge_default
    base = f"projects/{encode_project(project)}/protected_branches"
    body = {"name": name, "push_access_level": MAINTAINER, "merge_access_level": merge}

    def replace() -> None:
        if exact is not None:
            client.write("DELETE", f"{base}/{encode_project(name)}", {})
        client.write("POST", base, body)

    call = (
        f"DELETE then POST /projects/{encode_project(project)}/protected_branches"
        if exact is not None
        else f"POST /projects/{encode_project(project)}/protected_branches"
    )
    after = "push Maintainers; merge " + (
        "Developers + Maintainers" if merge == DEVELOPER else "Maintainers"
    )
    return Change(project, call, f"protected branch {name}", _levels(exact), after, replace)


def _published(client: GitLab, tracker: str, path: str) -> bool:
    """Is ``path`` on the tracker's default branch (doc/api/repository_files.md)?"""
    project = f"projects/{encode_project(tracker)}"
    branch = client.get(project).get("default_branch") or "HEAD"
    try:
        client.get(f"{project}/repository/files/{encode_project(path)}", ref=branch)
    except GitLabError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def plan(
    client: GitLab, config: Config, paths: list[str], pipeline: str | None
) -> tuple[list[Change], list[str]]:
    """Every change --fix would make, read with the Maintainer's ``client``."""
    changes: list[Change] = []
    notes: list[str] = []
    tracker = config.tracker_project

    def level_of(project: str) -> Callable[[int], int | Exception]:
        def level(user: int) -> int | Exception:
            where = f"projects/{encode_project(project)}/members/all/{user}"
            try:
                return int(client.get(where)["access_level"])
            except GitLabError as exc:
                return 0 if exc.status == 404 else exc

        return level

    if pipeline is not None and not _published(client, tracker, pipeline):
        notes.append(
            f"not fixed: ci_config_path: {pipeline} is not on {tracker}'s default branch, and "
            f"a CI/CD configuration file that does not exist fails every pipeline; publish it "
            f"first ({config.cli} deploy-pipeline --publish {pipeline} ...)"
        )
        pipeline = None
    for path in [*paths, *([tracker] if tracker not in paths else [])]:
        data = client.get(f"projects/{encode_project(path)}")
        if path in paths:
            found, why = setting_changes(client, config, path, data, pipeline)
            changes += found
            notes += why
        rules = client.get_all(f"projects/{encode_project(path)}/protected_branches")
        branch = data.get("default_branch")
        if branch:
            actions = ("push", "merge") if path == tracker else ("push",)
            change = protection_change(
                client, path, branch, rules, actions, level_of(path), merge_default=DEVELOPER
            )
            if change is not None:
                changes.append(change)
        if path in paths and any(under(path, ns) for ns in config.renovate_exempt_namespaces):
            name = f"{config.renovate_branch_prefix}*"
            change = protection_change(client, path, name, rules, ("push",), level_of(path))
            if change is not None:
                changes.append(change)
    return changes, notes
