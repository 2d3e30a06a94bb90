"""pairgate's standalone reader: configuration, the GitLab read client, the ledger and the gate.

This one file is deployed flat (into a hooks directory, or a CI job's fetch directory) with no
package around it, so it imports only the standard library and the runtime dependencies
(requests, jsonschema, pyyaml; tree-sitter lazily), and never ``pairgate``.  Everything the gate
does not need lives in the package instead.

Sections:
  1. Exit codes, errors and the run context
  2. Configuration
  3. The GitLab client
  4. Records: markers and their schemas
  5. The fold: notes to state
  6. Verdicts: the merge gate
  7. The command reader (for the merge hook)
  8. Standalone entry point
"""

from __future__ import annotations

import enum
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import jsonschema

# ---------------------------------------------------------------------------------------------
# 1. Exit codes, errors and the run context
# ---------------------------------------------------------------------------------------------


class Exit(enum.IntEnum):
    """Every pairgate program exits with one of these (DESIGN.md section 9)."""

    OK = 0  # done, pass, in line
    REFUSED = 1  # refused by the protocol, or drift for --check
    ERROR = 2  # usage, configuration or environment error; could not decide


class PairgateError(Exception):
    """An expected failure: its message is for the user, its exit code says what kind it was.

    Anything else that escapes is a bug; the one translation point (``report``) still turns it
    into exit 2 rather than letting a traceback pass for a verdict.
    """

    exit_code: Exit = Exit.ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(PairgateError):
    """The configuration is missing, unreadable or malformed."""


class UsageError(PairgateError):
    """The command line asks for something that cannot be done as asked."""


class Refusal(PairgateError):
    """The protocol says no. The message names what is wrong and the command that fixes it."""

    exit_code = Exit.REFUSED


class NotImplementedYet(PairgateError):
    """A registered command whose behaviour is not built yet. It never pretends to succeed."""


@dataclass(frozen=True)
class Context:
    """What a run reads from outside: environment, clock and streams, injected so tests never
    read the real environment by accident and never sleep."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    now: Callable[[], float] = time.time
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)


def report(error: BaseException, stderr: TextIO) -> Exit:
    """The one place that turns an exception into a message and an exit code."""
    if isinstance(error, PairgateError):
        print(error.message, file=stderr)
        return error.exit_code
    print(f"pairgate: internal error: {type(error).__name__}: {error}", file=stderr)
    return Exit.ERROR


# ---------------------------------------------------------------------------------------------
# 2. Configuration
# ---------------------------------------------------------------------------------------------

CONFIG_ENV = "PAIRGATE_CONFIG"
CONFIG_FILENAME = "pairgate-config.json"

# The specification's seventeen keys, plus ledger_author_user_ids (DESIGN.md section 5).
CONFIG_KEYS: tuple[str, ...] = (
    "tracker_project",
    "group_path",
    "group_id",
    "env_prefix",
    "agent_identity_prefix",
    "review_bot_token_file",
    "deployed_paths",
    "generic_tracking_issue",
    "liveness_oracle_file",
    "cli_command",
    "renovate_bot_user_id",
    "renovate_branch_prefix",
    "renovate_exempt_namespaces",
    "cli_install_command",
    "hooks_install_command",
    "agent_text_dir",
    "handoff_doc",
    "ledger_author_user_ids",
)

# A configuration older than the Renovate namespaces key exempts nothing (the specification:
# "a gate newer than its configuration fails toward review rather than toward exemption").
OPTIONAL_CONFIG_KEYS = frozenset({"renovate_exempt_namespaces"})

_PATH_SEGMENT = r"[A-Za-z0-9_.][A-Za-z0-9_.-]*"
_NON_EMPTY = {"type": "string", "minLength": 1, "pattern": r"\S"}
# A path the specification reads relative to the configuration file: never absolute.
_RELATIVE_PATH = {"type": "string", "minLength": 1, "pattern": r"^[^/~]"}

CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pairgate configuration",
    "type": "object",
    "additionalProperties": False,
    "required": sorted(set(CONFIG_KEYS) - OPTIONAL_CONFIG_KEYS),
    "properties": {
        "tracker_project": {
            "type": "string",
            "pattern": rf"^{_PATH_SEGMENT}(/{_PATH_SEGMENT})+$",
            "description": "group/project of the issues that hold the ledger",
        },
        "group_path": {"type": "string", "pattern": rf"^{_PATH_SEGMENT}(/{_PATH_SEGMENT})*$"},
        "group_id": {"type": "string", "pattern": r"^[0-9]+$"},
        "env_prefix": {"type": "string", "pattern": r"^[A-Z][A-Z0-9_]*$"},
        "agent_identity_prefix": {"type": "string", "pattern": r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"},
        "review_bot_token_file": _NON_EMPTY,
        "deployed_paths": {"type": "array", "minItems": 1, "items": _NON_EMPTY},
        "generic_tracking_issue": {"type": ["integer", "null"], "minimum": 1},
        "liveness_oracle_file": _RELATIVE_PATH,
        "cli_command": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9._-]*$"},
        "renovate_bot_user_id": {"type": "integer", "minimum": 1},
        "renovate_branch_prefix": {"type": "string", "minLength": 1},
        "renovate_exempt_namespaces": {
            "type": "array",
            "items": {"type": "string", "pattern": rf"^{_PATH_SEGMENT}(/{_PATH_SEGMENT})*$"},
        },
        "cli_install_command": _NON_EMPTY,
        "hooks_install_command": _NON_EMPTY,
        "agent_text_dir": _RELATIVE_PATH,
        "handoff_doc": _NON_EMPTY,
        "ledger_author_user_ids": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"type": "integer", "minimum": 1},
        },
    },
}

_KEY_GRAMMAR_HINTS = {
    "tracker_project": "a full project path such as group/project",
    "group_path": "a group path such as group or group/subgroup",
    "group_id": 'the group\'s numeric id as a string of digits, such as "42"',
    "env_prefix": "upper case letters, digits and underscores, starting with a letter",
    "agent_identity_prefix": "lower case letters and digits in hyphen-separated words",
    "cli_command": "lower case letters, digits, '.', '_' and '-', starting with a letter or digit",
    "liveness_oracle_file": "a path relative to the configuration file",
    "agent_text_dir": "a path relative to the configuration file",
    "generic_tracking_issue": "an issue number, or null for none",
    "renovate_bot_user_id": "a GitLab user id (an integer)",
    "ledger_author_user_ids": "a non-empty list of distinct GitLab user ids (integers)",
    "deployed_paths": "a non-empty list of repository paths",
}


@dataclass(frozen=True)
class Config:
    """A loaded, validated configuration. ``values`` holds exactly the file's keys."""

    path: Path
    values: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        if key == "renovate_exempt_namespaces":
            return self.values.get(key, [])
        return self.values[key]

    def relative(self, key: str) -> Path:
        """A path-valued key resolved against the configuration file's directory."""
        return (self.path.parent / self.values[key]).resolve()

    @property
    def cli(self) -> str:
        return str(self.values["cli_command"])

    def env_name(self, suffix: str) -> str:
        """``<env_prefix>_<suffix>``: every variable the tool reads is named through this."""
        return f"{self.values['env_prefix']}_{suffix}"


def config_path(env: Mapping[str, str]) -> Path:
    """Which file configures this run: PAIRGATE_CONFIG when set, else the file beside this one.

    A set variable is used or is an error; it never falls through to the file beside.
    """
    if CONFIG_ENV in env:
        named = env[CONFIG_ENV]
        if not named.strip():
            raise ConfigError(
                f"{CONFIG_ENV} is set but empty: name a configuration file, or unset it to use "
                f"the {CONFIG_FILENAME} beside ownership.py"
            )
        return Path(named).expanduser()
    return Path(__file__).resolve().parent / CONFIG_FILENAME


def load_config(env: Mapping[str, str]) -> Config:
    """Read and validate the configuration. Every error names the file, and the key if one."""
    path = config_path(env)
    source = f"{CONFIG_ENV}={path}" if CONFIG_ENV in env else str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"pairgate: missing configuration: {source} does not exist. "
            f"Set {CONFIG_ENV} to a configuration file, or put {CONFIG_FILENAME} beside "
            f"ownership.py. There are no built-in values; see the README's Configuration section."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"pairgate: cannot read the configuration {source}: {exc}") from None
    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"pairgate: malformed configuration {source}: not JSON "
            f"(line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    return Config(path=path.resolve(), values=validate_config(values, source=source))


def validate_config(values: Any, *, source: str) -> dict[str, Any]:
    """Check a decoded configuration against CONFIG_SCHEMA and the rules a schema cannot say."""
    if not isinstance(values, dict):
        raise ConfigError(f"pairgate: malformed configuration {source}: not a JSON object")
    extra = sorted(set(values) - set(CONFIG_KEYS))
    if extra:
        raise ConfigError(
            f"pairgate: malformed configuration {source}: unknown key {extra[0]!r} "
            f"(the file holds exactly ownership.CONFIG_KEYS)"
        )
    missing = [k for k in CONFIG_KEYS if k not in values and k not in OPTIONAL_CONFIG_KEYS]
    if missing:
        raise ConfigError(
            f"pairgate: malformed configuration {source}: missing key {missing[0]!r} "
            f"(the file holds exactly ownership.CONFIG_KEYS)"
        )
    validator = jsonschema.Draft202012Validator(CONFIG_SCHEMA)
    errors = sorted(validator.iter_errors(values), key=lambda e: (list(e.path), e.message))
    if errors:
        err = errors[0]
        key = str(err.path[0]) if err.path else "?"
        hint = _KEY_GRAMMAR_HINTS.get(key)
        detail = f"{err.message}" + (f"; expected {hint}" if hint else "")
        raise ConfigError(f"pairgate: malformed configuration {source}: key {key!r}: {detail}")
    group, tracker = values["group_path"], values["tracker_project"]
    if not tracker.startswith(group + "/"):
        raise ConfigError(
            f"pairgate: malformed configuration {source}: key 'tracker_project': "
            f"{tracker!r} is not a project in group_path {group!r}"
        )
    return values


# ---------------------------------------------------------------------------------------------
# 3. The GitLab client
# ---------------------------------------------------------------------------------------------

# CONTRACT (the ledger issue builds it; other sections call only these names):
#   class GitLab:  one narrow transport over requests (HTTPS) or glab api
#       .get(path: str, **params) -> Any          one GET, path relative to /api/v4
#       .get_all(path: str, **params) -> list      every page, following the Link header
#       .write(method: str, path: str, data: Mapping[str, Any]) -> Any
#   def gitlab_from_env(config: Config, env: Mapping[str, str]) -> GitLab
#   def encode_project(project: str) -> str       "group/proj" -> "group%2Fproj"


# ---------------------------------------------------------------------------------------------
# 4. Records: markers and their schemas
# ---------------------------------------------------------------------------------------------

# (built by the ledger issue)


# ---------------------------------------------------------------------------------------------
# 5. The fold: notes to state
# ---------------------------------------------------------------------------------------------

# CONTRACT (the ledger issue builds it and may add fields; the gate reads these):
#   @dataclass(frozen=True) class Note:     id, author_id, author_username, body, created_at,
#                                           updated_at, system  (one GitLab note, as read)
#   @dataclass(frozen=True) class MrRef:    project: str (full path), iid: int
#   @dataclass(frozen=True) class Offer:    note_id, sender, to, role, sha, mr: MrRef | None, reason
#   @dataclass(frozen=True) class Approval: note_id, approver, to, mr: MrRef, sha: str,
#                                           self_approval: bool, not_covering: tuple[str, ...]
#   @dataclass(frozen=True) class Skipped:  note_id, kind ("forged"|"tampered"|"malformed"|...),
#                                           reason: str
#   @dataclass(frozen=True) class Ledger:   holder: str | None, role: str | None,
#                                           offer: Offer | None, approvals: tuple[Approval, ...],
#                                           skipped: tuple[Skipped, ...], breaks, trail, ...
#   def fold(notes: Sequence[Note], *, config: Config) -> Ledger     pure: no I/O, no clock
#   def read_ledger(client: GitLab, config: Config, issue: int) -> Ledger   (the I/O edge)


# ---------------------------------------------------------------------------------------------
# 6. Verdicts: the merge gate
# ---------------------------------------------------------------------------------------------

# CONTRACT (the merge gate issue builds it; merge-check, both validators and the hook call it):
#   @dataclass(frozen=True) class GateVerdict:  allowed: bool, in_scope: bool, message: str, ...
#   def gate_merge(client: GitLab, config: Config, project: str, iid: int) -> GateVerdict
#       reads the MR, the group listing and the cited issues' ledgers, then decides with pure
#       functions; any read error raises PairgateError (fail closed: never a pass).


# ---------------------------------------------------------------------------------------------
# 7. The command reader (for the merge hook)
# ---------------------------------------------------------------------------------------------

# (built by the merge hook issue)


# ---------------------------------------------------------------------------------------------
# 8. Standalone entry point
# ---------------------------------------------------------------------------------------------


def standalone_main(argv: list[str], ctx: Context | None = None) -> int:
    """``python3 ownership.py check-config``: load the configuration a flat deployment sees."""
    ctx = ctx or Context()
    try:
        if argv[:1] != ["check-config"] or len(argv) != 1:
            raise UsageError("usage: python3 ownership.py check-config")
        config = load_config(ctx.env)
        print(f"configuration OK: {config.path}", file=ctx.stdout)
        return Exit.OK
    except Exception as exc:  # the one translation point for the standalone door
        return report(exc, ctx.stderr)


if __name__ == "__main__":
    sys.exit(standalone_main(sys.argv[1:]))
