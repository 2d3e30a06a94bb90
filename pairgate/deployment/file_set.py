"""A deployment's own files, written as one set: what `pairgate init` and `pairgate sandbox
--config-out` both write beside a configuration.

The set: the configuration, the agent-text directory (one starter text per ``{{text:<name>}}``
the agent templates carry), a liveness-oracle starter, an automation roster that explains itself,
and a ``_hooklib.sh`` that names the Python pairgate is installed in. Nothing is overwritten: an
existing file is named and nothing at all is written; the configuration written is loaded back,
so a set that would not load is never left behind as if it were good.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pairgate.deployment.agent_templates import read_templates, texts_named
from pairgate.resources import resource_dir
from pairgate.standalone.config import CONFIG_FILENAME, Config, load_config
from pairgate.standalone.errors import PairgateError, UsageError
from pairgate.standalone.scope import ROSTER_FILENAME

HOOKLIB = "_hooklib.sh"

ROSTER = '''"""The automation roster: the unattended merge request families the merge gate leaves alone.

A merge request belongs to a family when all three hold: GitLab says its author is
``author_id`` (a user id: an id is never reused, a username can be); its source branch starts
with ``branch_prefix``; and the tracker issues it cites are exactly ``cites_issue`` (``None``:
it cites none). Everything else stays in the gate's scope and needs an independent review.

This file is data: the gate reads FAMILIES as a Python literal and never runs the file, so it
holds that one assignment (comments and this docstring aside). Protect each branch prefix so
that only the family's account can push to it: the gate cannot see who pushed a commit.
Renovate is not listed here: the configuration's renovate_* keys cover it.

    FAMILIES = [
        {"name": "nightly-lockfiles", "author_id": 5150,
         "branch_prefix": "automation/lockfiles/", "cites_issue": None},
    ]
"""

FAMILIES: list[dict[str, object]] = []
'''

ORACLE = """How to tell whether a finding is still live in this deployment: which branch, which
environment and which command show the current behaviour. Replace this text with your own
before the finder runs; `pairgate deploy-agents` puts it into the finder's definition.
"""


def starter_text(name: str) -> str:
    """A text the deployment replaces: it says what belongs there, and renders as-is."""
    return (
        f"(This deployment's own **{name}** text goes here: replace this line in "
        f"{name}.md of the agent-text directory, then run deploy-agents again.)\n"
    )


def hooklib(python: str) -> str:
    """The preflight library the merge hook sources, naming the interpreter it runs."""
    return f"""# shellcheck shell=bash
# _hooklib.sh: the preflight library the merge hook sources (written by pairgate).
#
#   hooklib_python      the Python the merge hook runs: the one pairgate (with tree-sitter) is
#                       installed in. Without it the hook runs python3 from PATH.
#   hooklib_preflight   exit status 0 when this machine can run the hooks, else non-zero with
#                       the reason; the merge hook blocks the command when it fails.
#
# Sourced, not run: it sets a variable, defines a function, and changes no shell option.

hooklib_python={shlex.quote(python)}

hooklib_preflight() {{
  if [[ ! -x $hooklib_python ]]; then
    echo "$hooklib_python (hooklib_python in _hooklib.sh) is not an executable"
    return 1
  fi
}}
"""


def files_of(
    values: Mapping[str, Any],
    *,
    python: str | None = None,
    texts: Mapping[str, str] | None = None,
    oracle: str = ORACLE,
    roster: str = ROSTER,
) -> dict[str, str]:
    """Every file of the set, by its path relative to the configuration's directory. ``texts``
    gives some placeholders a text of the caller's own (the sandbox's, say); the others get a
    starter that says what belongs there."""
    problems: list[str] = []
    names = texts_named(read_templates(resource_dir("agents"), problems))
    if problems:
        raise PairgateError("pairgate: " + "; ".join(problems))
    files = {CONFIG_FILENAME: json.dumps(dict(values), indent=2) + "\n"}
    text_dir = str(values["agent_text_dir"])
    own = texts or {}
    files.update(
        {f"{text_dir}/{name}.md": own.get(name) or starter_text(name) for name in sorted(names)}
    )
    files[str(values["liveness_oracle_file"])] = oracle
    files[ROSTER_FILENAME] = roster
    files[HOOKLIB] = hooklib(python or sys.executable)
    return files


def _create(path: Path, text: str, mode: int) -> None:
    """A new file, never through a symbolic link (a dangling one planted in the target
    included): O_CREAT|O_EXCL|O_NOFOLLOW."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:
        raise UsageError(
            f"pairgate: {path} appeared (or is a symbolic link) while the set was being "
            f"written; nothing more was written. Remove it and run again."
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)


def write_set(
    directory: Path,
    values: Mapping[str, Any],
    *,
    python: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> Config:
    """Write the set into ``directory`` (created if absent) and return the loaded
    configuration. Refuses, writing nothing, when any of its files exists already."""
    files = {**files_of(values, python=python), **(extra or {})}
    existing = sorted(
        name for name in files if (directory / name).exists() or (directory / name).is_symlink()
    )
    if existing:
        raise UsageError(
            f"pairgate: {directory} already holds {', '.join(existing)}; nothing was written. "
            f"Move them away, or write the set into another directory."
        )
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        _create(path, text, 0o755 if name == HOOKLIB else 0o644)
    return load_config({"PAIRGATE_CONFIG": str(directory / CONFIG_FILENAME)})
