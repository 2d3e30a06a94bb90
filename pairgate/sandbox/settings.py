"""Project settings: the fields of ``GET /projects/:id`` that ``PUT /projects/:id`` sets
(projects.py serves both).

Each is checked against GitLab's Projects API documentation (doc/api/projects.md) and its
Project entity; where those do not give a default or a rule, docs/sandbox.md says UNCONFIRMED.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pairgate.sandbox.records import MAINTAINER, REPORTER, Project


@dataclass(frozen=True)
class Setting:
    default: Any
    values: tuple[str, ...] | None = None  # the allowed strings; None for a boolean
    text: bool = False  # free text (a blank value clears it to null)
    shown_to: int = 0  # the access level needed to see it (0: anyone who reads the project)


SETTINGS: dict[str, Setting] = {
    "only_allow_merge_if_pipeline_succeeds": Setting(False),
    "allow_merge_on_skipped_pipeline": Setting(False),
    "only_allow_merge_if_all_discussions_are_resolved": Setting(False),
    "only_allow_merge_if_all_status_checks_passed": Setting(False),  # Ultimate
    "merge_method": Setting("merge", ("merge", "rebase_merge", "ff")),
    "squash_option": Setting("default_off", ("never", "always", "default_on", "default_off")),
    "remove_source_branch_after_merge": Setting(True),
    "merge_pipelines_enabled": Setting(False),  # Premium: merged results pipelines
    "merge_trains_enabled": Setting(False),  # Premium
    "ci_config_path": Setting(None, text=True, shown_to=REPORTER),  # read_code
    "restrict_user_defined_variables": Setting(False, shown_to=MAINTAINER),
    "ci_pipeline_variables_minimum_override_role": Setting(
        "maintainer", ("no_one_allowed", "developer", "maintainer", "owner"), shown_to=MAINTAINER
    ),
    "ci_allow_fork_pipelines_to_run_in_parent_project": Setting(True, shown_to=MAINTAINER),
    # doc/api/projects.md: "Access level for forking the project": disabled, private (project
    # members only) or enabled (everyone with access). Who sees it is UNCONFIRMED: shown to
    # every reader here, as the other feature access levels are.
    "forking_access_level": Setting("enabled", ("disabled", "private", "enabled")),
    # The merge requests feature (lib/api/helpers/projects_helpers.rb, the Project entity):
    # shown to every reader; merge_requests_available says who may use it.
    "merge_requests_access_level": Setting("enabled", ("disabled", "private", "enabled")),
}

# The older booleans PUT still takes (ProjectFeaturesCompatibility): true sets the level
# "enabled", false "disabled". Sent with the level itself, the level wins, as GitLab assigns it
# after the boolean (UNCONFIRMED).
BOOLEAN_FEATURES = {"merge_requests_enabled": "merge_requests_access_level"}


def setting(project: Project, name: str) -> Any:
    """The project's value of a setting (its default until a PUT sets it)."""
    return project.settings.get(name, SETTINGS[name].default)


def shown(project: Project, level: int) -> dict[str, Any]:
    """The settings a viewer at ``level`` sees in the Project entity, and the older boolean
    merge_requests_enabled, which says whether that viewer may use the feature."""
    return {
        name: setting(project, name) for name, spec in SETTINGS.items() if level >= spec.shown_to
    } | {"merge_requests_enabled": merge_requests_available(project, level)}


def merge_requests_available(project: Project, level: int) -> bool:
    """ProjectFeature#feature_available? for merge requests, for a viewer at ``level`` who
    reads the project: never when disabled; when private, Reporter and above
    (PRIVATE_FEATURES_MIN_ACCESS_LEVEL); when enabled, every reader."""
    access = setting(project, "merge_requests_access_level")
    return access == "enabled" or (access == "private" and level >= REPORTER)
