"""Which CI/CD configuration a pipeline reads, as GitLab resolves it (docs/sandbox.md, "The
runner"): the project's ``ci_config_path`` (default ``.gitlab-ci.yml``) at the pipeline's commit,
or ``path@group/project[:ref]`` from that project; a child pipeline's ``trigger: include:``; and
``[skip ci]``. Pure functions over the world; nothing here runs anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pairgate.sandbox import repo
from pairgate.sandbox.model import World
from pairgate.sandbox.records import Project, User
from pairgate.sandbox.settings import setting

DEFAULT_PATH = ".gitlab-ci.yml"
# GitLab's ExternalProject source: "path/to/file.yml@group/project[:ref]".
_EXTERNAL = re.compile(r"\A.+(yml|yaml)@.+\Z", re.DOTALL)
# GitLab's Chain::Skip pattern, matched against the commit message.
SKIP_CI = re.compile(r"\[(ci[ _-]skip|skip[ _-]ci)\]", re.IGNORECASE)
# Variables in an include location ($NAME and ${NAME}), expanded as GitLab's VariablesExpander.
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
MAX_INCLUDES = 3  # trigger:include takes at most three files (Entry::Trigger)


class ConfigError(Exception):
    """The configuration cannot be read: GitLab's message for the pipeline's yaml_errors."""


@dataclass(frozen=True)
class Source:
    """A pipeline's configuration: its text, and where it came from (for CI_CONFIG_PATH and the
    messages)."""

    text: str
    path: str  # the ci_config_path value, or the file a child includes


def config_path(project: Project) -> str:
    return str(setting(project, "ci_config_path") or DEFAULT_PATH)


def checked_config_path(value: str | None) -> str | None:
    """A ci_config_path as PUT /projects/:id accepts it; raises ValueError with GitLab's message
    (Project's validation: no directory traversal, no leading slash, at most 255 characters)."""
    if not value:
        return None
    if ".." in value or value.startswith("/"):
        raise ValueError("cannot include leading slash or directory traversal.")
    if len(value) > 255:
        raise ValueError("is too long (maximum is 255 characters)")
    return value


def source_for(world: World, project: Project, sha: str, user: User | None) -> Source | None:
    """The configuration of a pipeline of ``project`` at ``sha``, run as ``user``; None when the
    project has none there (GitLab creates no pipeline). Raises ConfigError when the setting
    names a project or ref the user cannot read."""
    path = config_path(project)
    if path.startswith(("http://", "https://")):
        raise ConfigError(f"Remote CI/CD configuration files are not served here: {path}")
    if _EXTERNAL.match(path):
        file, _, where = path.partition("@")
        other, _, ref = where.partition(":")
        return Source(read_file(world, other, ref or None, file, user), path)
    tree = world.commits[sha].tree
    if path not in tree:
        return None
    return Source(tree[path], path)


def read_file(
    world: World, project_path: str, ref: str | None, file: str, user: User | None
) -> str:
    """A file of another project as ``include: project`` reads it: at ``ref`` (a branch, or a
    commit id), else the project's default branch; GitLab's messages when it cannot."""
    other = world.project_by_ref(project_path)
    if other is None or user is None or world.access_level(user, other) == 0:
        raise ConfigError(f"Project `{project_path}` not found or access denied!")
    commit = repo.resolve(world, other, ref or other.default_branch)
    if commit is None:
        raise ConfigError(f"Project `{project_path}` reference `{ref}` does not exist!")
    if file not in commit.tree:
        raise ConfigError(f"Project `{project_path}` file `{file}` does not exist!")
    return commit.tree[file]


def skips(message: str, push_options: Mapping[str, Any] | None = None) -> bool:
    """Does a push (its head commit's message, its push options) ask for a skipped pipeline?"""
    return bool(SKIP_CI.search(message)) or "ci.skip" in (push_options or {})


def expand(value: str, variables: Mapping[str, str]) -> str:
    """$NAME and ${NAME} replaced by their values (an unknown one by nothing), once."""
    return _VARIABLE.sub(lambda m: variables.get(m.group(1) or m.group(2), ""), value)


def child_sources(
    world: World,
    project: Project,
    sha: str,
    include: Any,
    variables: Mapping[str, str],
    user: User | None,
) -> list[Source]:
    """The files a ``trigger: include:`` names, each location expanded with the child's
    variables (GitLab expands them when it creates the child): ``local`` from the pipeline's
    project at its commit, ``project`` + ``file`` (+ ``ref``) from that project. Raises
    ConfigError with GitLab's message for a location it cannot read."""
    entries = [include] if isinstance(include, (str, dict)) else list(include or [])
    if len(entries) > MAX_INCLUDES:
        raise ConfigError("trigger:include config is too long")
    sources = []
    for entry in entries:
        if isinstance(entry, str):
            entry = {"local": entry}
        if not isinstance(entry, dict):
            raise ConfigError(f"trigger:include entry {entry!r} is not a location")
        if "local" in entry:
            path = expand(str(entry["local"]), variables).lstrip("/")
            tree = world.commits[sha].tree
            if path not in tree:
                raise ConfigError(f"Local file `{path}` does not exist!")
            sources.append(Source(tree[path], path))
        elif "project" in entry:
            if "file" not in entry:
                raise ConfigError(
                    "include config must specify the file where to fetch the config from"
                )
            other = expand(str(entry["project"]), variables)
            ref = expand(str(entry["ref"]), variables) if entry.get("ref") else None
            file = expand(str(entry["file"]), variables).lstrip("/")
            sources.append(Source(read_file(world, other, ref, file, user), f"{file}@{other}"))
        else:
            raise ConfigError(f"trigger:include entry {sorted(entry)} is not served here")
    return sources
