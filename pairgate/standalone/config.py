"""The configuration: one JSON file, exactly CONFIG_KEYS, checked against its schema."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pairgate.standalone.errors import ConfigError, reader_dir
from pairgate.standalone.schema_check import SchemaCheck, draft_validator

__all__ = [
    "CONFIG_ENV",
    "CONFIG_FILENAME",
    "CONFIG_KEYS",
    "CONFIG_SCHEMA",
    "PATH_SEGMENT",
    "Config",
    "env_variable",
    "load_config",
    "validate_config",
]

CONFIG_ENV = "PAIRGATE_CONFIG"
CONFIG_FILENAME = "pairgate-config.json"


class Config(NamedTuple):
    """A loaded configuration: one attribute per key of the file, in the README's order, built
    only after the values pass ``validate_config`` (``load_config`` builds it), and ``path``, the
    file it came from. The keys are this class's fields: CONFIG_KEYS, the schema's required list
    and the missing-key check all read them from here; which of them may be absent, and the
    value an absent one has, is OPTIONAL_DEFAULTS."""

    path: Path
    tracker_project: str
    group_path: str
    group_id: str
    env_prefix: str
    agent_identity_prefix: str
    review_bot_token_file: str
    deployed_paths: tuple[str, ...]
    generic_tracking_issue: int | None
    liveness_oracle_file: str
    cli_command: str
    renovate_bot_user_id: int
    renovate_branch_prefix: str
    renovate_exempt_namespaces: tuple[str, ...]  # optional: OPTIONAL_DEFAULTS
    cli_install_command: str
    hooks_install_command: str
    agent_text_dir: str
    handoff_doc: str
    ledger_author_user_ids: tuple[int, ...]
    review_author_user_ids: tuple[int, ...]  # optional: OPTIONAL_DEFAULTS

    @property
    def account_bound(self) -> bool:
        """Is the review role bound to GitLab accounts (review_author_user_ids set)?"""
        return bool(self.review_author_user_ids)

    @property
    def record_author_ids(self) -> frozenset[int]:
        """The accounts whose notes carry ledger records: the agents' and the review ones."""
        return frozenset(self.ledger_author_user_ids) | frozenset(self.review_author_user_ids)

    def relative(self, key: Literal["agent_text_dir", "liveness_oracle_file"]) -> Path:
        """A path-valued key resolved against the configuration file's directory."""
        return (self.path.parent / str(getattr(self, key))).resolve()

    @property
    def cli(self) -> str:
        return self.cli_command

    def env_name(self, suffix: str) -> str:
        """``<env_prefix>_<suffix>``: every variable the tool reads is named through this."""
        return env_variable(self.env_prefix, suffix)

    def as_json(self) -> dict[str, Any]:
        """Every key with its value as the file spells it (a list for an array; an absent
        optional key with its default): for what names keys by their names, such as the agent
        templates' ``{{config:<key>}}``."""
        values = {key: getattr(self, key) for key in CONFIG_KEYS}
        return {key: list(v) if isinstance(v, tuple) else v for key, v in values.items()}


def env_variable(env_prefix: str, suffix: str) -> str:
    """``<env_prefix>_<suffix>``, for a run that has an env_prefix but no configuration yet
    (``pairgate init``); everything else asks its Config (``env_name``)."""
    return f"{env_prefix}_{suffix}"


# The specification's seventeen keys, plus ledger_author_user_ids (docs/agent-handoff-reference.md,
# "The fold": the accounts whose notes count) and the optional review_author_user_ids
# ("Account-bound roles"): Config's fields but its path.
CONFIG_KEYS: tuple[str, ...] = tuple(name for name in Config._fields if name != "path")
# The optional keys, with the value an absent one has.
OPTIONAL_DEFAULTS: dict[str, Any] = {
    # A configuration older than this key exempts nothing (the specification: "a gate newer
    # than its configuration fails toward review rather than toward exemption").
    "renovate_exempt_namespaces": (),
    # Absent: independence rests on the names and sessions records declare (the mode before
    # this key). Set: the review role is bound to these GitLab accounts (approvals.py).
    "review_author_user_ids": (),
}
OPTIONAL_CONFIG_KEYS = frozenset(OPTIONAL_DEFAULTS)


PATH_SEGMENT = r"[A-Za-z0-9_.][A-Za-z0-9_.-]*"
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
            "pattern": rf"^{PATH_SEGMENT}(/{PATH_SEGMENT})+$",
            "description": "group/project of the issues that hold the ledger",
        },
        "group_path": {"type": "string", "pattern": rf"^{PATH_SEGMENT}(/{PATH_SEGMENT})*$"},
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
            "items": {"type": "string", "pattern": rf"^{PATH_SEGMENT}(/{PATH_SEGMENT})*$"},
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
        "review_author_user_ids": {
            "type": "array",
            "uniqueItems": True,
            "items": {"type": "integer", "minimum": 1},
            "description": "the GitLab accounts review-side records are written as; absent "
            "or []: independence rests on names and sessions",
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
    "review_author_user_ids": "a list of distinct GitLab user ids (integers), or no key at all",
}


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
    return reader_dir() / CONFIG_FILENAME


def load_config(env: Mapping[str, str]) -> Config:
    """Read and validate the configuration. Every error names the file, and the key if one."""
    path = config_path(env)
    source = f"{CONFIG_ENV}={path}" if CONFIG_ENV in env else str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if CONFIG_ENV not in env and _installed(path.parent):
            # An installed copy: the file beside ownership.py is a flat deployment's form, and
            # nobody should be told to write into site-packages.
            remedy = (
                f"Set {CONFIG_ENV} to your deployment's configuration file (`pairgate init` "
                f"writes one from what GitLab says)."
            )
        else:
            remedy = (
                f"Set {CONFIG_ENV} to a configuration file, or put {CONFIG_FILENAME} beside "
                f"ownership.py."
            )
        raise ConfigError(
            f"pairgate: missing configuration: {source} does not exist. {remedy} There are no "
            f"built-in values; see the README's Configuration section."
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
    checked = validate_config(values, source=source)
    # A JSON array becomes a tuple: a Config is a value, compared and hashed by its fields.
    typed: dict[str, Any] = {
        key: tuple(v) if isinstance(v, list) else v for key, v in checked.items()
    }
    return Config(path=path.resolve(), **{**OPTIONAL_DEFAULTS, **typed})


def _installed(directory: Path) -> bool:
    """Is this the directory of an installed copy (inside a Python installation's packages)?"""
    return any(part in ("site-packages", "dist-packages") for part in directory.parts)


def _unknown(key: str, missing: list[str]) -> str:
    """An unknown key, with the known key it most likely misspells (a missing one first)."""
    import difflib  # only a misspelt configuration pays for it

    near = difflib.get_close_matches(key, missing, n=1, cutoff=0.6) or difflib.get_close_matches(
        key, CONFIG_KEYS, n=1, cutoff=0.6
    )
    return f"unknown key {key!r}" + (f" (did you mean {near[0]!r}?)" if near else "")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _whole_value_problem(values: Mapping[str, Any]) -> str | None:
    """What a schema pattern cannot say: every string is one line with no control character,
    and an anchored pattern matches the whole value (a JSON Schema pattern is a search, and
    Python's ``$`` also matches before a final newline)."""
    for key, spec in CONFIG_SCHEMA["properties"].items():
        value = values.get(key)
        pattern = spec.get("pattern") or (spec.get("items") or {}).get("pattern")
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str):
                continue
            anchored = isinstance(pattern, str) and pattern[:1] == "^" and pattern[-1:] == "$"
            if anchored and not re.fullmatch(str(pattern)[1:-1], item):
                hint = _KEY_GRAMMAR_HINTS.get(key)
                return f"key {key!r}: {item!r} is not a whole match" + (
                    f"; expected {hint}" if hint else ""
                )
            if _CONTROL.search(item):
                return (
                    f"key {key!r}: {item!r} holds a control character (a newline would escape "
                    f"into what pairgate writes from it)"
                )
    return None


def validate_config(values: Any, *, source: str) -> dict[str, Any]:
    """Check a decoded configuration against CONFIG_SCHEMA and the rules a schema cannot say."""
    if not isinstance(values, dict):
        raise ConfigError(f"pairgate: malformed configuration {source}: not a JSON object")
    extra = sorted(set(values) - set(CONFIG_KEYS))
    missing = [k for k in CONFIG_KEYS if k not in values and k not in OPTIONAL_CONFIG_KEYS]
    problems = [_unknown(key, missing) for key in extra]
    if missing:
        keys = ", ".join(repr(k) for k in missing)
        problems.append(f"missing key{'s' if len(missing) > 1 else ''} {keys}")
    if problems:
        raise ConfigError(
            f"pairgate: malformed configuration {source}: {'; '.join(problems)}. The file holds "
            f"exactly the keys the README's Configuration section lists, no more and no fewer."
        )
    errors = sorted(_config_check().iter_errors(values), key=lambda e: (list(e.path), e.message))
    if errors:
        err = errors[0]
        key = str(err.path[0]) if err.path else "?"
        hint = _KEY_GRAMMAR_HINTS.get(key)
        detail = f"{err.message}" + (f"; expected {hint}" if hint else "")
        raise ConfigError(f"pairgate: malformed configuration {source}: key {key!r}: {detail}")
    whole = _whole_value_problem(values)
    if whole is not None:
        raise ConfigError(f"pairgate: malformed configuration {source}: {whole}")
    group, tracker = values["group_path"], values["tracker_project"]
    if not tracker.startswith(group + "/"):
        raise ConfigError(
            f"pairgate: malformed configuration {source}: key 'tracker_project': "
            f"{tracker!r} is not a project in group_path {group!r}"
        )
    return values


@functools.cache
def _config_check() -> SchemaCheck:
    """The configuration's check, built once a process: a process that loads the configuration
    again (the demo, the watcher, a test) would build jsonschema-rs's validator each time."""
    return draft_validator(CONFIG_SCHEMA)
