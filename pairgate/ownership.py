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

import argparse
import ast
import enum
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote, urlencode, urlsplit

import jsonschema
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

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


def fresh_id() -> str:
    """A fresh random id (a record's write_id)."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Context:
    """What a run reads from outside: environment, clock and streams, injected so tests never
    read the real environment by accident and never sleep."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    now: Callable[[], float] = time.time
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    new_id: Callable[[], str] = fresh_id  # write ids: the example trail makes them deterministic


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

# Every call has a timeout: (connect, read) seconds for HTTPS, one bound for a glab process.
TIMEOUT: tuple[float, float] = (5.0, 30.0)
GLAB_TIMEOUT = 120.0
PER_PAGE = 100  # GitLab's maximum; it clamps larger values rather than refusing them
# A read is retried on these. A write never is: see GitLab.write.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class GitLabError(PairgateError):
    """A GitLab call failed: ``status`` is the HTTP status, or None when no answer came back."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class WriteUncertain(GitLabError):
    """A write whose outcome is unknown (no answer, 429 or 5xx): it may have landed. Whoever
    wrote re-reads before writing again; nothing repeats a write blindly."""


def encode_project(project: str) -> str:
    """``group/proj`` -> ``group%2Fproj``: GitLab takes a project path as ONE URL segment, and an
    unencoded slash matches no route at all (404 ``{"error": ...}``)."""
    return quote(str(project), safe="")


class _Retry(Retry):
    """urllib3's Retry with Retry-After capped, so one answer cannot park a reader for hours."""

    MAX_RETRY_AFTER = 60.0

    def get_retry_after(self, response: Any) -> float | None:
        seconds = super().get_retry_after(response)
        return None if seconds is None else min(seconds, self.MAX_RETRY_AFTER)


def read_retry(*, attempts: int = 4, backoff_factor: float = 0.5) -> Retry:
    """The retry policy: GET is retried on connection errors, 429 and 5xx (Retry-After honoured
    on 429 and 503, exponential backoff otherwise). Other methods are retried only when the
    connection was never made, because then nothing was sent."""
    return _Retry(
        total=attempts,
        other=0,
        allowed_methods=frozenset({"GET", "HEAD"}),
        status_forcelist=RETRY_STATUSES,
        backoff_factor=backoff_factor,
        backoff_max=30.0,
        respect_retry_after_header=True,
        raise_on_status=False,
    )


def _query(params: Mapping[str, Any]) -> dict[str, str]:
    # GitLab wants true/false; requests would send True/False.
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in params.items()}


def _uncertain(status: int | None) -> bool:
    return status is None or status == 429 or status >= 500


def _error(method: str, what: str, status: int | None, detail: str) -> GitLabError:
    cls = WriteUncertain if method != "GET" and _uncertain(status) else GitLabError
    answer = f"HTTP {status}" if status is not None else "no answer"
    return cls(f"pairgate: GitLab {method} {what}: {answer}: {detail}".rstrip(": "), status=status)


def _error_detail(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200]
    if isinstance(body, dict):
        return str(body.get("message", body.get("error", body)))[:200]
    return str(body)[:200]


class _Https:
    """One token, one session: requests with urllib3 Retry and a timeout on every call."""

    name = "HTTPS"

    def __init__(self, api_url: str, token: str, *, retry: Retry, timeout: Any) -> None:
        self.api_url = api_url.rstrip("/")
        self._origin = urlsplit(self.api_url)[:2]
        self._timeout = timeout
        self._session = requests.Session()
        self._session.headers.update({"PRIVATE-TOKEN": token, "User-Agent": "pairgate"})
        adapter = HTTPAdapter(max_retries=retry)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def __repr__(self) -> str:  # the token never appears in a repr or a traceback
        return f"_Https({self.api_url!r}, token=<hidden>)"

    def _call(
        self, method: str, url: str, *, params: Any = None, body: Any = None
    ) -> requests.Response:
        what = urlsplit(url).path.removeprefix(urlsplit(self.api_url).path)
        try:
            response = self._session.request(
                method, url, params=params, json=body, timeout=self._timeout
            )
        except requests.RequestException as exc:
            raise _error(method, what, None, type(exc).__name__) from None
        if response.status_code >= 400:
            raise _error(method, what, response.status_code, _error_detail(response))
        return response

    def get(self, path: str, params: Mapping[str, Any]) -> Any:
        return _decoded(self._call("GET", f"{self.api_url}/{path}", params=_query(params)))

    def get_all(self, path: str, params: Mapping[str, Any]) -> list[Any]:
        url: str | None = f"{self.api_url}/{path}"
        query: dict[str, str] | None = _query({**params, "per_page": PER_PAGE})
        items: list[Any] = []
        seen: set[str] = set()
        while url:
            response = self._call("GET", url, params=query)
            page = _decoded(response)
            if not isinstance(page, list):
                raise GitLabError(f"pairgate: GitLab GET {path}: expected a list, got {page!r:.80}")
            items.extend(page)
            # Follow rel="next" until it is absent: a page may be short, even empty, while more
            # exist. The link carries every parameter, and must stay on this instance (it is
            # sent our token).
            url = response.links.get("next", {}).get("url")
            if url and (urlsplit(url)[:2] != self._origin or url in seen):
                raise GitLabError(f"pairgate: GitLab GET {path}: refusing next-page link {url}")
            seen.add(url or "")
            query = None
        return items

    def send(self, method: str, path: str, data: Mapping[str, Any]) -> Any:
        return _decoded(self._call(method, f"{self.api_url}/{path}", body=dict(data)))


def _decoded(response: requests.Response) -> Any:
    if response.status_code in (202, 204, 304) and not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        raise GitLabError(f"pairgate: GitLab answered {response.url} with non-JSON") from None


def decode_pages(text: str) -> list[Any]:
    """Parse ``glab api --paginate`` output: each page's JSON array printed back to back
    (``[..][..]``), with no separator."""
    decoder = json.JSONDecoder()
    items: list[Any] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return items
        page, at = decoder.raw_decode(text, at)
        if not isinstance(page, list):
            raise GitLabError(
                f"pairgate: glab api --paginate printed a non-list page: {page!r:.80}"
            )
        items.extend(page)


class _Glab:
    """``glab api``, as the account glab is logged in as. Fields travel as a JSON body on
    stdin (``--input -``), because glab turns a -f value that looks like ``[a, b]`` into an
    array."""

    name = "glab api"

    def __init__(self, hostname: str | None, env: Mapping[str, str]) -> None:
        self.hostname = hostname
        self._env = {"PATH": os.environ.get("PATH", os.defpath), **env}

    def __repr__(self) -> str:
        return f"_Glab(hostname={self.hostname!r})"

    def argv(self, endpoint: str, *flags: str) -> list[str]:
        host = ["--hostname", self.hostname] if self.hostname else []
        return ["glab", "api", endpoint, *flags, *host]

    def _run(self, method: str, argv: list[str], stdin: str | None = None) -> str:
        try:
            proc = subprocess.run(
                argv,
                input=stdin,
                capture_output=True,
                text=True,
                env=self._env,
                timeout=GLAB_TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            raise GitLabError(
                "pairgate: glab is not installed. Install and log in to glab, or set the token "
                "variables for HTTPS (see docs/agent-handoff-reference.md, The GitLab client)"
            ) from None
        except subprocess.TimeoutExpired:
            raise _error(method, argv[2], None, f"glab ran past {GLAB_TIMEOUT:.0f}s") from None
        if proc.returncode != 0:
            match = re.search(r"\(HTTP (\d{3})\)|HTTP (\d{3})", proc.stderr)
            status = int(match.group(1) or match.group(2)) if match else None
            detail = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "glab failed"
            raise _error(method, argv[2], status, detail)
        return proc.stdout

    def get(self, path: str, params: Mapping[str, Any]) -> Any:
        out = self._run("GET", self.argv(_with_query(path, params)))
        return json.loads(out) if out.strip() else None

    def get_all(self, path: str, params: Mapping[str, Any]) -> list[Any]:
        endpoint = _with_query(path, {**params, "per_page": PER_PAGE})
        return decode_pages(self._run("GET", self.argv(endpoint, "--paginate")))

    def send(self, method: str, path: str, data: Mapping[str, Any]) -> Any:
        flags = ("-X", method, "--input", "-", "-H", "Content-Type: application/json")
        out = self._run(method, self.argv(path, *flags), stdin=json.dumps(dict(data)))
        return json.loads(out) if out.strip() else None


def _with_query(path: str, params: Mapping[str, Any]) -> str:
    return f"{path}?{urlencode(_query(params))}" if params else path


class GitLab:
    """The narrow door to GitLab: reads through one transport, writes through another.

    Paths are relative to ``/api/v4`` (``projects/acme%2Ftracker/issues/4/notes``).
    """

    def __init__(self, *, reader: Any, writer: Any, api_url: str | None, origin: str) -> None:
        self._reader = reader
        self._writer = writer
        self.api_url = api_url
        self.origin = origin  # where api_url came from, for --verbose

    def __repr__(self) -> str:
        return f"GitLab(api_url={self.api_url!r}, reader={self._reader!r}, writer={self._writer!r})"

    def get(self, path: str, **params: Any) -> Any:
        """One GET. Retried on 429/5xx/dropped connections (HTTPS); raises GitLabError."""
        return self._reader.get(path, params)

    def get_all(self, path: str, **params: Any) -> list[Any]:
        """Every page of a list, following the next-page link until there is none."""
        return self._reader.get_all(path, params)

    def write(self, method: str, path: str, data: Mapping[str, Any]) -> Any:
        """ONE attempt at a write. Raises WriteUncertain when it may have landed, GitLabError
        when GitLab refused it. It is never retried here: a retry could post twice."""
        return self._writer.send(method, path, data)

    def describe(self) -> str:
        where = self.api_url or "glab's configured host"
        return (
            f"GitLab API {where} (from {self.origin}); reads via {self._reader.name}, "
            f"writes via {self._writer.name}"
        )


def api_url_from_env(config: Config, env: Mapping[str, str]) -> tuple[str | None, str]:
    """The API root and where it came from: <env_prefix>_GITLAB_URL (the instance URL), else
    CI_API_V4_URL, else None (glab's configured host)."""
    name = config.env_name("GITLAB_URL")
    if env.get(name, "").strip():
        url = env[name].strip().rstrip("/")
        return (url if url.endswith("/api/v4") else f"{url}/api/v4"), name
    if env.get("CI_API_V4_URL", "").strip():
        return env["CI_API_V4_URL"].strip().rstrip("/"), "CI_API_V4_URL"
    return None, "glab's configured host"


def _glab_host(env: Mapping[str, str], url_variable: str) -> str:
    try:
        proc = subprocess.run(
            ["glab", "config", "get", "host"],
            capture_output=True,
            text=True,
            env={"PATH": os.environ.get("PATH", os.defpath), **env},
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        proc = None
    if proc is None or proc.returncode != 0 or not proc.stdout.strip():
        raise PairgateError(
            f"pairgate: no GitLab URL: set {url_variable} to the instance URL (such as "
            "https://gitlab.example.com), or run in GitLab CI, or configure glab's host"
        )
    return proc.stdout.strip()


def _checked_url(url: str, origin: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PairgateError(f"pairgate: {origin}={url!r} is not an http(s) URL")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise PairgateError(
            f"pairgate: {origin}={url!r}: refusing to send a token over plain http to a host "
            "that is not loopback; use https"
        )
    return url


def gitlab_from_env(
    config: Config,
    env: Mapping[str, str],
    *,
    retry: Retry | None = None,
    timeout: Any = TIMEOUT,
) -> GitLab:
    """The client a run uses: HTTPS with <env_prefix>_TASK_API_TOKEN for reads and
    <env_prefix>_TASK_WRITE_TOKEN for writes, ``glab api`` for whichever is not set."""
    read_token = env.get(config.env_name("TASK_API_TOKEN"), "").strip()
    write_token = env.get(config.env_name("TASK_WRITE_TOKEN"), "").strip()
    api_url, origin = api_url_from_env(config, env)
    if api_url is None and (read_token or write_token):
        api_url = f"https://{_glab_host(env, config.env_name('GITLAB_URL'))}/api/v4"
    if api_url is not None:
        api_url = _checked_url(api_url, origin)
    hostname = urlsplit(api_url).netloc if api_url and origin != "glab's configured host" else None
    glab = _Glab(hostname, env)
    retry = retry or read_retry()

    def https(token: str) -> _Https:
        assert api_url is not None
        return _Https(api_url, token, retry=retry, timeout=timeout)

    return GitLab(
        reader=https(read_token) if read_token else glab,
        writer=https(write_token) if write_token else glab,
        api_url=api_url,
        origin=origin,
    )


def gitlab_with_token(client: GitLab, token: str, *, retry: Retry | None = None) -> GitLab:
    """The same instance as another account (the review bot), over HTTPS with its token."""
    if client.api_url is None:
        raise PairgateError("pairgate: the GitLab URL is unknown; set <env_prefix>_GITLAB_URL")
    transport = _Https(client.api_url, token, retry=retry or read_retry(), timeout=TIMEOUT)
    return GitLab(reader=transport, writer=transport, api_url=client.api_url, origin=client.origin)


# ---------------------------------------------------------------------------------------------
# 4. Records: markers and their schemas
# ---------------------------------------------------------------------------------------------

# A ledger note is short human text and then ONE marker line:
#     <!-- mochi-task:<kind> <json> -->
# The marker names are the record's persisted format: they never follow cli_command.
MARKER_OPEN = "<!-- mochi-task:"
_MARKER_LINE = re.compile(r"^<!-- mochi-task:(\S+) (.*) -->[ \t]*$", re.MULTILINE)
RECORD_VERSION = 1
ROLES = ("lead", "review")

_SHA = {"type": "string", "pattern": "^[0-9a-f]{40}$", "description": "a full commit SHA"}
_DIGEST = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_AGENT = {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"}
_ROLE = {"enum": list(ROLES)}
_NOTE_ID = {"type": "integer", "minimum": 1}
_REASON = {"type": ["string", "null"], "maxLength": 50_000}
_MR_REF = {
    "type": "object",
    "additionalProperties": False,
    "required": ["project", "iid"],
    "properties": {
        "project": {"type": "string", "pattern": rf"^{_PATH_SEGMENT}(/{_PATH_SEGMENT})+$"},
        "iid": {"type": "integer", "minimum": 1},
    },
}
_COMMON: dict[str, Any] = {
    "v": {"const": RECORD_VERSION},
    "agent": {**_AGENT, "description": "the identity that wrote the record"},
    "write_id": {
        "type": "string",
        "pattern": "^[0-9a-f]{32}$",
        "description": "fresh per write; a second note with the same write_id is ignored",
    },
    "session": {"type": "string", "minLength": 1, "maxLength": 200},
    "prev": {
        "type": ["string", "null"],
        "pattern": "^[0-9a-f]{64}$",
        "description": "digest of the last record the writer saw on this issue, or null",
    },
    "digest": {
        **_DIGEST,
        "description": "sha256 of the record's canonical content and the note's human text",
    },
}
_OFFER_FIELDS: dict[str, Any] = {
    "to": _AGENT,
    "role": _ROLE,
    "sha": _SHA,
    "mr": _MR_REF,
    "reason": _REASON,
    "supersedes": {"type": ["integer", "null"], "minimum": 1},
}

# kind -> event -> the fields that event adds to the common ones (all required).
EVENT_FIELDS: dict[str, dict[str, dict[str, Any]]] = {
    "ownership": {
        "claim": {"role": _ROLE},
        "handoff": _OFFER_FIELDS,
        "accept": {"offer": _NOTE_ID, "from": _AGENT, "role": _ROLE},
        "decline": {"offer": _NOTE_ID, "from": _AGENT},
        "release": {"role": _ROLE},
        "close": {},
    },
    "approval": {
        "approve": {
            **_OFFER_FIELDS,
            "not_covering": {"type": "array", "items": {"type": "string", "minLength": 1}},
            "self_approval": {"type": "boolean"},
        },
    },
}

# -- Board-wide kinds (the board issue): freeze windows and standing constraints --------------
# A freeze's scope is spelled out in the record, never relative to the issue that holds it:
# "board", "issue:<iid>" or "mr:<project>!<iid>".
_IID = "[1-9][0-9]{0,9}"
# (?!\n): Python's $ also matches before a final newline; a scope is exactly one of these.
FREEZE_SCOPE_PATTERN = rf"^(board|issue:{_IID}|mr:{_PATH_SEGMENT}(/{_PATH_SEGMENT})+!{_IID})$(?!\n)"
FREEZE_MAX_MINUTES = 7 * 24 * 60
EVENT_FIELDS["freeze"] = {
    "freeze": {
        "scope": {"type": "string", "pattern": FREEZE_SCOPE_PATTERN},
        "reason": {"type": "string", "minLength": 1, "maxLength": 50_000},
        "minutes": {"type": "integer", "minimum": 1, "maximum": FREEZE_MAX_MINUTES},
    },
    "thaw": {"freeze": _NOTE_ID},
}
EVENT_FIELDS["constraint"] = {
    "impose": {
        "id": {"type": "string", "pattern": "^c-[0-9a-f]{12}$", "description": "see constraint_id"},
        "text": {"type": "string", "minLength": 1, "maxLength": 50_000},
    },
}
BOARD_KINDS = frozenset({"freeze", "constraint"})


def constraint_id(text: str) -> str:
    """A standing constraint's stable id: the hash of its clause text, whitespace folded, so the
    same clause has the same id wherever and by whomever it is rendered."""
    return "c-" + hashlib.sha256(canonical_text(text).encode("utf-8")).hexdigest()[:12]


# -- end of the board-wide kinds ----------------------------------------------------------------


def _event_schema(event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    properties = {**_COMMON, "event": {"const": event}, **fields}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


RECORD_SCHEMAS: dict[str, dict[str, Any]] = {
    kind: {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"pairgate {kind} record",
        "description": f"The JSON inside <!-- mochi-task:{kind} ... --> in an issue note.",
        "type": "object",
        "required": ["event"],
        "properties": {"event": {"enum": list(events)}},
        "allOf": [
            {
                "if": {"properties": {"event": {"const": event}}, "required": ["event"]},
                "then": _event_schema(event, fields),
            }
            for event, fields in events.items()
        ],
    }
    for kind, events in EVENT_FIELDS.items()
}
# One compiled validator per event: the fold checks thousands of records.
_VALIDATORS = {
    (kind, event): jsonschema.Draft202012Validator(_event_schema(event, fields))
    for kind, events in EVENT_FIELDS.items()
    for event, fields in events.items()
}
KIND_OF_EVENT = {event: kind for kind, events in EVENT_FIELDS.items() for event in events}


class MalformedRecord(Exception):
    """A marker that cannot be read as a record; the message says why."""


def schema_problem(kind: str, record: Any) -> str | None:
    """Why ``record`` is not a valid ``kind`` record, or None when it is."""
    if kind not in EVENT_FIELDS:
        return f"unknown record kind {kind!r}"
    if not isinstance(record, dict):
        return "the marker JSON is not an object"
    event = record.get("event")
    validator = _VALIDATORS.get((kind, event)) if isinstance(event, str) else None
    if validator is None:
        return f"unknown {kind} event {event!r}"
    if validator.is_valid(record):
        return None
    error = min(validator.iter_errors(record), key=lambda e: (len(e.path), e.message))
    where = "/".join(str(p) for p in error.path) or "record"
    return f"schema: {where}: {error.message}"


def canonical_text(text: str) -> str:
    """Whitespace folded, so GitLab's storage (CRLF, trailing blanks) cannot move a digest."""
    return " ".join(text.split())


def record_digest(kind: str, record: Mapping[str, Any], human: str) -> str:
    content = {k: v for k, v in record.items() if k != "digest"}
    canonical = json.dumps(
        {"kind": kind, "record": content, "text": canonical_text(human)},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def marker(kind: str, record: Mapping[str, Any]) -> str:
    """The marker line. ``<`` and ``>`` are escaped in the JSON so no value can close the HTML
    comment (``-->``, ``--!>``) or open another."""
    text = json.dumps(dict(record), separators=(",", ":"), ensure_ascii=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e")
    return f"{MARKER_OPEN}{kind} {text} -->"


_SLASH_LINE = re.compile(r"^([ \t]*)/", re.MULTILINE)


def neutralise_quick_actions(text: str) -> str:
    """GitLab runs a note line that starts with ``/`` as a quick action (``/close``) and strips
    it. A backslash in front keeps the line, renders as the same text, and runs nothing."""
    return _SLASH_LINE.sub(lambda m: f"{m.group(1)}\\/", text.replace("\r\n", "\n"))


def compose_note(kind: str, record: Mapping[str, Any], human: str) -> tuple[str, dict[str, Any]]:
    """The note body for a record: human text, then the marker. Fills in ``v`` and ``digest`` and
    checks the schema (a record that would be skipped on read is never written)."""
    text = neutralise_quick_actions(human).strip()
    # A marker-shaped line in the text would make the note carry two markers (and be skipped).
    text = _MARKER_LINE.sub(lambda m: "&lt;" + m.group(0)[1:], text)
    sealed = {"v": RECORD_VERSION, **{k: v for k, v in record.items() if k != "digest"}}
    sealed["digest"] = record_digest(kind, sealed, text)
    problem = schema_problem(kind, sealed)
    if problem:
        raise PairgateError(f"pairgate: refusing to write an invalid {kind} record: {problem}")
    return f"{text}\n\n{marker(kind, sealed)}\n", sealed


@functools.lru_cache(maxsize=65536)
def _cached_problem(kind: str, raw: str) -> str | None:
    # Schema checks dominate the fold's cost, and every reader folds the same notes again
    # (a verb reads before and after it writes; the board folds many issues): remember the
    # verdict per marker text. The text decides the record, so the verdict cannot go stale.
    return schema_problem(kind, json.loads(raw))


def parse_marker(body: str) -> tuple[str, dict[str, Any], str]:
    """(kind, record, human text) of a note that carries a marker; MalformedRecord otherwise."""
    found = list(_MARKER_LINE.finditer(body.replace("\r\n", "\n")))
    if not found:
        raise MalformedRecord("a mochi-task marker that is not one well-formed line")
    if len(found) > 1:
        raise MalformedRecord(f"{len(found)} markers in one note (a note carries one)")
    kind, raw = found[0].group(1), found[0].group(2)
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise MalformedRecord(f"the marker JSON does not parse: {exc}") from None
    problem = _cached_problem(kind, raw) if isinstance(record, dict) else "not an object"
    if problem:
        raise MalformedRecord(problem)
    text = body.replace("\r\n", "\n")
    return kind, record, text[: found[0].start()] + text[found[0].end() :]


# ---------------------------------------------------------------------------------------------
# 5. The fold: notes to state
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Note:
    """One GitLab note, as read."""

    id: int
    author_id: int
    author_username: str
    body: str
    created_at: str
    updated_at: str
    system: bool = False

    @classmethod
    def from_api(cls, note: Mapping[str, Any]) -> Note:
        author = note.get("author") or {}
        return cls(
            id=int(note["id"]),
            author_id=int(author.get("id", 0)),
            author_username=str(author.get("username", "?")),
            body=str(note.get("body") or ""),
            created_at=str(note.get("created_at", "")),
            updated_at=str(note.get("updated_at", "")),
            system=bool(note.get("system", False)),
        )


@dataclass(frozen=True)
class MrRef:
    project: str  # the full path
    iid: int

    def __str__(self) -> str:
        return f"{self.project}!{self.iid}"


@dataclass(frozen=True)
class Offer:
    """A pending offer: a handoff, or the offer back that an approval carries."""

    note_id: int
    sender: str
    to: str
    role: str
    sha: str
    mr: MrRef | None
    reason: str | None
    event: str = "handoff"  # or "approve"
    supersedes: int | None = None


@dataclass(frozen=True)
class Approval:
    note_id: int
    approver: str
    to: str
    mr: MrRef
    sha: str
    self_approval: bool
    not_covering: tuple[str, ...]
    reason: str | None = None
    self_because: str | None = None  # which self-approval rule, said in words


@dataclass(frozen=True)
class Skipped:
    """A note whose marker is not part of the state, and why."""

    note_id: int
    kind: str  # forged | malformed | tampered | duplicate
    reason: str
    author: str = ""


@dataclass(frozen=True)
class Break:
    """A record whose ``prev`` names no earlier record: something before it was deleted or
    rewritten."""

    note_id: int
    prev: str
    reason: str


@dataclass(frozen=True)
class Event:
    """One authentic, well-formed record on the trail. ``void`` says why the fold gave it no
    effect (a claim while held, an accept of a stale offer, ...); None when it took effect."""

    note_id: int
    kind: str
    event: str
    agent: str
    record: Mapping[str, Any]
    created_at: str
    void: str | None = None


@dataclass(frozen=True)
class Ledger:
    holder: str | None = None
    role: str | None = None
    offer: Offer | None = None
    approvals: tuple[Approval, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    breaks: tuple[Break, ...] = ()
    trail: tuple[Event, ...] = ()
    edited: tuple[int, ...] = ()  # note ids whose updated_at is later than created_at
    concurrent: tuple[tuple[int, ...], ...] = ()  # notes that name the same prev
    head: str | None = None  # the digest of the latest record: the next writer's prev
    holder_since: int | None = None  # the note that made the holder the holder
    accepted_from: str | None = None  # who sent the offer the holder accepted
    freezes: tuple[Freeze, ...] = ()  # every freeze window recorded here (see section 5b)
    constraints: tuple[Constraint, ...] = ()  # every standing constraint recorded here

    @property
    def label(self) -> str | None:
        """The role label the notes call for."""
        return f"agent::{self.role}" if self.role else None

    @property
    def names(self) -> frozenset[str]:
        """Every identity the trail names, as writer or receiver."""
        named = {e.agent for e in self.trail}
        named |= {str(e.record["to"]) for e in self.trail if "to" in e.record}
        return frozenset(named)

    def written(self, write_id: str) -> Event | None:
        """The trail's record carrying this write_id (the first, if a retry posted it twice)."""
        return next((e for e in self.trail if e.record.get("write_id") == write_id), None)


ROLE_LABELS = tuple(f"agent::{role}" for role in ROLES)


def identity_pattern(config: Config) -> re.Pattern[str]:
    """<agent_identity_prefix>-lead|-review|-solo|-finder, optionally with a suffix (-42)."""
    prefix = re.escape(str(config["agent_identity_prefix"]))
    return re.compile(rf"^{prefix}-(lead|review|solo|finder)(-[a-z0-9]+)*$")


def is_finder(agent: str, config: Config) -> bool:
    match = identity_pattern(config).match(agent)
    return bool(match and match.group(1) == "finder")


def _edited(note: Note) -> bool:
    if note.updated_at == note.created_at:
        return False
    try:
        created = datetime.fromisoformat(note.created_at)
        updated = datetime.fromisoformat(note.updated_at)
    except ValueError:
        return note.updated_at != note.created_at
    return updated > created


class _Fold:
    """The fold's working state: mutable here, frozen into a Ledger at the end."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.holder: str | None = None
        self.role: str | None = None
        self.holder_since: int | None = None
        self.accepted_from: str | None = None
        self.offer: Offer | None = None
        self.approvals: list[Approval] = []

    def apply(self, note_id: int, record: Mapping[str, Any]) -> str | None:
        """Apply one record; return why it is void, or None when it took effect."""
        return getattr(self, f"_{record['event']}")(note_id, record)

    def _not_holder(self, agent: str) -> str | None:
        if agent == self.holder:
            return None
        who = f"{self.holder} holds it" if self.holder else "nobody holds it"
        return f"{agent} does not hold the issue ({who})"

    def _offer_blocked(self, record: Mapping[str, Any]) -> str | None:
        supersedes = record["supersedes"]
        if self.offer is not None and supersedes != self.offer.note_id:
            return f"an offer is already pending (note {self.offer.note_id})"
        if self.offer is None and supersedes is not None:
            return f"it supersedes note {supersedes}, which is not a pending offer"
        return None

    def _take(self, note_id: int, agent: str, role: str, sender: str | None) -> None:
        self.holder, self.role, self.holder_since, self.accepted_from = agent, role, note_id, sender

    def _claim(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        if is_finder(r["agent"], self.config):
            return "a finder never claims"
        if self.holder is not None:
            return f"{self.holder} already holds the issue (note {self.holder_since})"
        self._take(note_id, r["agent"], r["role"], None)
        return None

    def _new_offer(self, note_id: int, r: Mapping[str, Any]) -> Offer:
        return Offer(
            note_id=note_id,
            sender=r["agent"],
            to=r["to"],
            role=r["role"],
            sha=r["sha"],
            mr=MrRef(r["mr"]["project"], r["mr"]["iid"]),
            reason=r["reason"],
            event=r["event"],
            supersedes=r["supersedes"],
        )

    def _handoff(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._not_holder(r["agent"]) or self._offer_blocked(r)
        if void is None:
            self.offer = self._new_offer(note_id, r)
        return void

    def _approve(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._not_holder(r["agent"])
        if void is None and self.role != "review":
            void = f"{r['agent']} holds the issue as {self.role}, and only a review approves"
        void = void or self._offer_blocked(r)
        if void is not None:
            return void
        because = self_approval_rule(r["agent"], r["to"], self.accepted_from)
        offer = self._new_offer(note_id, r)
        assert offer.mr is not None
        self.approvals.append(
            Approval(
                note_id=note_id,
                approver=r["agent"],
                to=r["to"],
                mr=offer.mr,
                sha=r["sha"],
                self_approval=because is not None or bool(r["self_approval"]),
                not_covering=tuple(r["not_covering"]),
                reason=r["reason"],
                self_because=because
                or ("recorded so by its writer" if r["self_approval"] else None),
            )
        )
        self.offer = offer
        return None

    def _answerable(self, r: Mapping[str, Any]) -> str | None:
        if self.offer is None or self.offer.note_id != r["offer"]:
            pending = f"note {self.offer.note_id} is" if self.offer else "no offer is"
            return f"note {r['offer']} is not the pending offer ({pending} pending)"
        if self.offer.to != r["agent"]:
            return f"the offer is to {self.offer.to}, not {r['agent']}"
        return None

    def _accept(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._answerable(r)
        if void is None:
            assert self.offer is not None
            self._take(note_id, r["agent"], self.offer.role, self.offer.sender)
            self.offer = None
        return void

    def _decline(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._answerable(r)
        if void is None:
            self.offer = None
        return void

    def _release(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        void = self._not_holder(r["agent"])
        if void is None and self.offer is not None:
            void = f"an offer is pending (note {self.offer.note_id})"
        if void is None:
            self.holder = self.role = self.holder_since = self.accepted_from = None
        return void

    def _close(self, note_id: int, r: Mapping[str, Any]) -> str | None:
        if self.offer is not None:
            return f"an offer is pending (note {self.offer.note_id})"
        self.holder = self.role = self.holder_since = self.accepted_from = None
        return None


def self_approval_rule(approver: str, to: str, accepted_from: str | None) -> str | None:
    """Why an approval is a self-approval, or None. Both rules of DESIGN.md section 5."""
    if approver == to:
        return f"{approver} offers the work back to itself"
    if accepted_from == approver:
        return f"{approver} reviewed an offer it sent itself"
    return None


def fold(notes: Sequence[Note], *, config: Config) -> Ledger:
    """Notes to state. Pure: no I/O, no clock. Every reader calls this; nothing else reads
    markers. Notes are taken in id order (GitLab's creation order)."""
    authors = frozenset(config["ledger_author_user_ids"])
    state = _Fold(config)
    board = _BoardFold()
    skipped: list[Skipped] = []
    breaks: list[Break] = []
    trail: list[Event] = []
    edited: list[int] = []
    digests: dict[str, int] = {}  # digest of every record read so far -> its note
    rejected: dict[str, tuple[int, str]] = {}  # digest a skipped record claims -> (note, why)
    write_ids: dict[str, int] = {}
    by_prev: dict[str | None, list[int]] = {}
    head: str | None = None
    for note in sorted(notes, key=lambda n: n.id):
        if note.system or MARKER_OPEN not in note.body:
            continue
        author = f"{note.author_username} (user {note.author_id})"
        if note.author_id not in authors:
            skipped.append(
                Skipped(note.id, "forged", f"a marker in a note by {author}, not a ledger author")
            )
            continue
        if _edited(note):
            edited.append(note.id)
        try:
            kind, record, human = parse_marker(note.body)
        except MalformedRecord as exc:
            skipped.append(Skipped(note.id, "malformed", str(exc), author))
            continue
        if record_digest(kind, record, human) != record["digest"]:
            rejected[record["digest"]] = (note.id, "tampered")
            reason = "its digest does not match its content: the note was changed after writing"
            skipped.append(Skipped(note.id, "tampered", reason, author))
            continue
        if KIND_OF_EVENT[record["event"]] != kind:
            skipped.append(Skipped(note.id, "malformed", "event of another kind", author))
            continue
        first = write_ids.get(record["write_id"])
        if first is not None:
            reason = f"repeats the write_id of note {first} (a retried write); ignored"
            skipped.append(Skipped(note.id, "duplicate", reason, author))
            continue
        write_ids[record["write_id"]] = note.id
        prev = record["prev"]
        if prev is not None and prev not in digests:
            where = rejected.get(prev)
            reason = (
                f"its prev names note {where[0]}, which was skipped as {where[1]}"
                if where
                else "its prev names no earlier record: an earlier note was deleted or rewritten"
            )
            breaks.append(Break(note.id, prev, reason))
        by_prev.setdefault(prev, []).append(note.id)
        digests[record["digest"]] = note.id
        head = record["digest"]
        void = board.apply(note, record) if kind in BOARD_KINDS else state.apply(note.id, record)
        trail.append(
            Event(note.id, kind, record["event"], record["agent"], record, note.created_at, void)
        )
    return Ledger(
        holder=state.holder,
        role=state.role,
        offer=state.offer,
        approvals=tuple(state.approvals),
        skipped=tuple(skipped),
        breaks=tuple(breaks),
        trail=tuple(trail),
        edited=tuple(edited),
        concurrent=tuple(tuple(ids) for ids in by_prev.values() if len(ids) > 1),
        head=head,
        holder_since=state.holder_since,
        accepted_from=state.accepted_from,
        freezes=tuple(board.freezes.values()),
        constraints=tuple(board.constraints),
    )


def notes_path(config: Config, issue: int) -> str:
    return f"projects/{encode_project(config['tracker_project'])}/issues/{issue}/notes"


def read_notes(client: GitLab, config: Config, issue: int) -> list[Note]:
    """Every note on a tracker issue, oldest first (``sort=asc``: GitLab's default is newest
    first, and ``created_at`` order is id order)."""
    raw = client.get_all(notes_path(config, issue), sort="asc", order_by="created_at")
    return [Note.from_api(n) for n in raw]


def read_ledger(client: GitLab, config: Config, issue: int) -> Ledger:
    """The I/O edge of the fold: read the issue's notes, fold them."""
    return fold(read_notes(client, config, issue), config=config)


# -- 5b. Board-wide records: freeze windows and standing constraints (the board issue) ---------
# The fold hands freeze and constraint records to _BoardFold; they never touch ownership.
# Freeze windows are found board-wide through FROZEN_LABEL: every issue that holds a freeze
# record carries it (freeze adds it; thaw removes it when no window there is still live), so a
# reader lists issues by that one label instead of scanning every issue. The label is an index
# only: the records decide, and an expired window binds nobody whatever the label says.

FROZEN_LABEL = "pairgate::frozen"


def stamp_epoch(stamp: str) -> float | None:
    """A GitLab ISO 8601 timestamp as epoch seconds; None when it does not parse."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class Freeze:
    """One recorded freeze window. ``until`` is the note's server time plus ``minutes``."""

    note_id: int
    agent: str
    scope: str  # "board" | "issue:<iid>" | "mr:<project>!<iid>"
    reason: str
    minutes: int
    created_at: str
    thawed_by: int | None = None  # the note that lifted it early

    @property
    def until(self) -> float | None:
        """Epoch seconds the window ends at; None when GitLab's timestamp does not parse."""
        start = stamp_epoch(self.created_at)
        return None if start is None else start + self.minutes * 60

    def live(self, now: float) -> bool:
        """Does it bind at ``now``? A window whose end cannot be read binds (fail closed)."""
        until = self.until
        return self.thawed_by is None and (until is None or now < until)

    def covers(self, *, issue: int | None = None, mr: MrRef | None = None) -> bool:
        """Is ``issue`` (a write on it) or ``mr`` inside this window's scope?"""
        if self.scope == "board":
            return True
        kind, _, target = self.scope.partition(":")
        if kind == "issue":
            return issue is not None and int(target) == issue
        project, _, iid = target.rpartition("!")
        return mr is not None and mr.iid == int(iid) and mr.project.casefold() == project.casefold()


@dataclass(frozen=True)
class Constraint:
    """A standing constraint recorded on the issue: only ``imposer`` may lift it."""

    note_id: int
    id: str
    text: str
    imposer: str


class _BoardFold:
    """The fold's state for the board-wide kinds; ``apply`` returns why a record is void."""

    def __init__(self) -> None:
        self.freezes: dict[int, Freeze] = {}
        self.constraints: list[Constraint] = []

    def apply(self, note: Note, r: Mapping[str, Any]) -> str | None:
        if r["event"] == "freeze":
            self.freezes[note.id] = Freeze(
                note.id, r["agent"], r["scope"], r["reason"], r["minutes"], note.created_at
            )
            return None
        if r["event"] == "thaw":
            window = self.freezes.get(r["freeze"])
            if window is None:
                return f"note {r['freeze']} is not a freeze recorded on this issue"
            if window.agent != r["agent"]:
                return f"the freeze of note {window.note_id} is {window.agent}'s to thaw"
            if window.thawed_by is not None:
                return f"note {window.thawed_by} already thawed it"
            self.freezes[window.note_id] = replace(window, thawed_by=note.id)
            return None
        if constraint_id(r["text"]) != r["id"]:
            return f"its id {r['id']} is not the hash of its text ({constraint_id(r['text'])})"
        self.constraints.append(Constraint(note.id, r["id"], r["text"], r["agent"]))
        return None


def binding_freeze(
    windows: Iterable[tuple[int, Freeze]],
    *,
    now: float,
    agent: str | None = None,
    issue: int | None = None,
    mr: MrRef | None = None,
) -> tuple[int, Freeze] | None:
    """The first live window that binds ``agent`` writing on ``issue`` (or about ``mr``), as
    (the issue holding it, the window). A window never binds the agent that declared it;
    ``agent=None`` is bound by every window covering what it names. Pure."""
    for holder, window in windows:
        if window.live(now) and agent != window.agent and window.covers(issue=issue, mr=mr):
            return holder, window
    return None


def read_freezes(
    client: GitLab, config: Config, *, known: Mapping[int, Ledger] | None = None
) -> list[tuple[int, Freeze]]:
    """Every freeze window on the issues labelled FROZEN_LABEL and in ``known`` (ledgers already
    folded, not read again), as (issue, window). One issue listing, then one notes listing per
    labelled issue."""
    project = encode_project(config["tracker_project"])
    listed = client.get_all(f"projects/{project}/issues", labels=FROZEN_LABEL, state="all")
    ledgers = dict(known or {})
    for issue in sorted({int(i["iid"]) for i in listed} - set(ledgers)):
        ledgers[issue] = read_ledger(client, config, issue)
    return [(issue, w) for issue, ledger in sorted(ledgers.items()) for w in ledger.freezes]


def freeze_refusal(holder: int, window: Freeze, *, now: float, config: Config) -> str:
    """Who froze what, why and until when; a refusal (a writer's, the gate's) starts with it."""
    until = window.until
    when = (
        "until further notice (its time does not parse)"
        if until is None
        else f"until {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(until))} "
        f"(another {max(1, round((until - now) / 60))} min)"
    )
    scope = "the board" if window.scope == "board" else window.scope
    return (
        f"{window.agent} froze {scope} {when}: {window.reason}\n"
        f"(note {window.note_id} on {config['tracker_project']}#{holder}). Wait for it to "
        f"expire, or ask {window.agent} to run `{config.cli} thaw`."
    )


def mr_freeze(
    client: GitLab, config: Config, mr: MrRef, *, known: Mapping[int, Ledger], now: float
) -> str | None:
    """Why a live window on ``mr`` holds its merge back (the merge gate's freeze rule), or None.
    Only ``mr:`` windows bind the gate: a board or issue window holds back writes, not merges."""
    windows = [w for w in read_freezes(client, config, known=known) if w[1].scope.startswith("mr:")]
    found = binding_freeze(windows, now=now, mr=mr)
    return None if found is None else freeze_refusal(*found, now=now, config=config)


# -- end of 5b -----------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# 6. Verdicts: the merge gate
# ---------------------------------------------------------------------------------------------

# CONTRACT (the merge gate issue builds it; merge-check, both validators and the hook call it):
#   @dataclass(frozen=True) class GateVerdict:  allowed: bool, in_scope: bool, message: str, ...
#   def gate_merge(client: GitLab, config: Config, project: str, iid: int) -> GateVerdict
#       reads the MR, the group listing and the cited issues' ledgers, then decides with pure
#       functions; any read error raises PairgateError (fail closed: never a pass).
#
# The verdict is pure: (MR facts, folded ledgers, configuration, roster) in, a verdict out.
# gate_merge is the one function here that reads GitLab; the doors after it only print.

ROSTER_FILENAME = "automation_mr_families.py"
RENOVATE_LABEL = "renovate"

ROSTER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pairgate automation roster (FAMILIES in automation_mr_families.py)",
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "author_id", "branch_prefix", "cites_issue"],
        "properties": {
            "name": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9._-]*$"},
            "author_id": {"type": "integer", "minimum": 1},
            "branch_prefix": {"type": "string", "minLength": 1, "pattern": r"\S"},
            "cites_issue": {"type": ["integer", "null"], "minimum": 1},
        },
    },
}


@dataclass(frozen=True)
class AutomationFamily:
    """One unattended merge request family: an MR is the family's when all three hold."""

    name: str
    author_id: int
    branch_prefix: str
    cites_issue: int | None  # the one tracker issue its MRs cite, or None: they cite none


def roster_path(config: Config, explicit: Path | None = None) -> Path | None:
    """Where the automation roster is: the path given, else beside ownership.py (a flat
    deployment), else beside the configuration file. None when there is none."""
    if explicit is not None:
        return explicit
    for directory in (Path(__file__).resolve().parent, config.path.parent):
        candidate = directory / ROSTER_FILENAME
        if candidate.is_file():
            return candidate
    return None


def load_automation_families(path: Path | None) -> tuple[AutomationFamily, ...]:
    """Read the roster's FAMILIES without running the file: it is data, parsed as a literal.

    No roster means no families, so every MR stays in scope (a gate that cannot find its
    roster fails toward review, never toward exemption).
    """
    if path is None:
        return ()
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"pairgate: cannot read the automation roster {path}: {exc}") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ConfigError(
            f"pairgate: malformed automation roster {path}: line {exc.lineno}: {exc.msg}"
        ) from None
    value: Any = None
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring, or a bare string
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value and value is None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if [getattr(t, "id", None) for t in targets] == ["FAMILIES"]:
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    raise ConfigError(
                        f"pairgate: malformed automation roster {path}: line {node.lineno}: "
                        f"FAMILIES must be a literal (lists, dicts, strings, numbers, None)"
                    ) from None
                continue
        raise ConfigError(
            f"pairgate: malformed automation roster {path}: line {node.lineno}: the file holds "
            f"one assignment, FAMILIES = [...], and nothing else (it is data, never run)"
        )
    if value is None:
        raise ConfigError(f"pairgate: malformed automation roster {path}: no FAMILIES = [...]")
    errors = sorted(
        jsonschema.Draft202012Validator(ROSTER_SCHEMA).iter_errors(value),
        key=lambda e: list(e.path),
    )
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "FAMILIES"
        raise ConfigError(
            f"pairgate: malformed automation roster {path}: FAMILIES/{where}: {errors[0].message}"
        )
    names = [family["name"] for family in value]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise ConfigError(
            f"pairgate: malformed automation roster {path}: family {duplicate!r} is named twice"
        )
    return tuple(AutomationFamily(**family) for family in value)


@dataclass(frozen=True)
class MergeRequestFacts:
    """What the gate needs to know about one merge request, as GitLab reported it."""

    project: str  # the full path of the project the MR merges into
    iid: int
    title: str
    description: str
    author_id: int | None
    source_branch: str
    labels: tuple[str, ...]
    head_sha: str | None  # None while the MR has no commits

    @classmethod
    def from_api(cls, data: Mapping[str, Any], project: str) -> MergeRequestFacts:
        full = (data.get("references") or {}).get("full") or ""
        canonical = full.rpartition("!")[0] if "!" in full else project
        return cls(
            project=canonical,
            iid=int(data["iid"]),
            title=data.get("title") or "",
            description=data.get("description") or "",
            author_id=(data.get("author") or {}).get("id"),
            source_branch=data.get("source_branch") or "",
            labels=tuple(data.get("labels") or ()),
            head_sha=data.get("sha") or None,
        )

    @property
    def ref(self) -> str:
        return f"{self.project}!{self.iid}"


# A project path may hold letters, digits, '_', '.', '-' and '/'. A reference counts only when
# it does not continue a longer path or word: "bigacme/tracker#3" does not cite acme/tracker#3.
_NOT_AFTER_PATH = r"(?<![\w.\-/#&])"
_NUMBER = r"(\d+)(?![\w])"


def cited_issues(text: str, *, mr_project: str, tracker: str) -> tuple[int, ...]:
    """The tracker issues a merge request's title and description cite, in order, once each.

    Three forms count: ``group/tracker#NN``, the issue's URL (any host, ``/-/issues/NN`` or
    ``/-/work_items/NN``), and a bare ``#NN`` when the merge request lives in the tracker
    project itself (anywhere else a bare ``#NN`` names that project's own issue).
    """
    path = re.escape(tracker)
    patterns = [
        rf"{_NOT_AFTER_PATH}{path}#{_NUMBER}",
        rf"https?://[^\s/]+/{path}/(?:-/)?(?:issues|work_items)/{_NUMBER}",
    ]
    if mr_project.casefold() == tracker.casefold():
        patterns.append(rf"{_NOT_AFTER_PATH}#{_NUMBER}")
    found: dict[int, int] = {}  # issue -> first position, so the order is the text's
    for pattern in patterns:
        for match in re.finditer(pattern, text, flags=re.IGNORECASE):
            number = int(match.group(1))
            if number > 0:
                found[number] = min(found.get(number, match.start()), match.start())
    return tuple(sorted(found, key=found.__getitem__))


def _under(path: str, namespace: str) -> bool:
    return path.casefold().startswith(namespace.casefold().rstrip("/") + "/")


def renovate_exemption_gaps(mr: MergeRequestFacts, config: Config) -> list[str]:
    """Which of the Renovate exemption's four conditions this MR misses ([] means exempt)."""
    gaps = []
    if RENOVATE_LABEL not in mr.labels:
        gaps.append(f"it does not carry the {RENOVATE_LABEL!r} label")
    if mr.author_id != config["renovate_bot_user_id"]:
        gaps.append(
            f"its author is user id {mr.author_id}, not renovate_bot_user_id "
            f"{config['renovate_bot_user_id']}"
        )
    if not mr.source_branch.startswith(config["renovate_branch_prefix"]):
        gaps.append(
            f"its source branch {mr.source_branch!r} does not start with "
            f"renovate_branch_prefix {config['renovate_branch_prefix']!r}"
        )
    namespaces = config["renovate_exempt_namespaces"]
    if not any(_under(mr.project, ns) for ns in namespaces):
        gaps.append(
            f"its project {mr.project} is in none of renovate_exempt_namespaces {namespaces}"
        )
    return gaps


def automation_family_of(
    mr: MergeRequestFacts, cited: Sequence[int], families: Sequence[AutomationFamily]
) -> AutomationFamily | None:
    """The roster family this MR belongs to: its author, its branch prefix, and it cites
    exactly the family's issue (or none, for a family that cites none). ``cited`` leaves out
    the generic tracking issue."""
    for family in families:
        wanted = () if family.cites_issue is None else (family.cites_issue,)
        if (
            mr.author_id == family.author_id
            and mr.source_branch.startswith(family.branch_prefix)
            and tuple(cited) == wanted
        ):
            return family
    return None


@dataclass(frozen=True)
class Scope:
    in_scope: bool
    code: str  # "in-scope", "outside-group", "generic-issue-only", "renovate", "automation"
    detail: str


def decide_scope(
    mr: MergeRequestFacts,
    *,
    cited: Sequence[int],
    in_group: bool,
    config: Config,
    families: Sequence[AutomationFamily],
) -> Scope:
    """Is this merge request gated? The first rule that lets it out says why."""
    if not in_group:
        return Scope(
            False,
            "outside-group",
            f"{mr.project} is not in group {config['group_path']}'s project listing",
        )
    generic = config["generic_tracking_issue"]
    if generic is not None and tuple(cited) == (generic,):
        return Scope(
            False,
            "generic-issue-only",
            f"it cites only the generic tracking issue {config['tracker_project']}#{generic}",
        )
    if RENOVATE_LABEL in mr.labels:
        gaps = renovate_exemption_gaps(mr, config)
        if not gaps:
            return Scope(False, "renovate", "it is a Renovate merge request in an exempt namespace")
        renovate_note = f"; it carries the {RENOVATE_LABEL!r} label, but " + "; ".join(gaps)
    else:
        renovate_note = ""
    specific = [issue for issue in cited if issue != generic]
    family = automation_family_of(mr, specific, families)
    if family is not None:
        return Scope(False, "automation", f"it belongs to the automation family {family.name!r}")
    return Scope(
        True, "in-scope", f"{mr.project} is in group {config['group_path']}{renovate_note}"
    )


@dataclass(frozen=True)
class Check:
    """One validator's answer: the record job's or the approval job's."""

    ok: bool
    code: str
    message: str


@dataclass(frozen=True)
class GateVerdict:
    """The gate's one verdict. merge-check passes on ``allowed``; the record job on
    ``record.ok``; the approval job on ``approval.ok`` (a never-approved MR is ok there)."""

    allowed: bool
    in_scope: bool
    message: str
    code: str
    project: str
    iid: int
    head_sha: str | None
    cited_issues: tuple[int, ...]
    scope: str
    scope_detail: str
    record: Check
    approval: Check
    approved_by: str | None = None
    approval_issue: int | None = None
    approval_note: int | None = None
    warnings: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """merge-check --json: stable keys, documented in docs/agent-handoff-reference.md."""
        return {
            "allowed": self.allowed,
            "in_scope": self.in_scope,
            "verdict": self.code,
            "message": self.message,
            "mr": {"project": self.project, "iid": self.iid},
            "head_sha": self.head_sha,
            "cited_issues": list(self.cited_issues),
            "scope": self.scope,
            "scope_detail": self.scope_detail,
            "record": {"ok": self.record.ok, "code": self.record.code},
            "approval": {"ok": self.approval.ok, "code": self.approval.code},
            "approved_by": self.approved_by,
            "approval_issue": self.approval_issue,
            "approval_note": self.approval_note,
            "warnings": list(self.warnings),
        }


def _same_mr(ref: MrRef, mr: MergeRequestFacts) -> bool:
    return ref.iid == mr.iid and ref.project.casefold() == mr.project.casefold()


def ledger_warnings(tracker: str, ledgers: Mapping[int, Ledger]) -> tuple[str, ...]:
    """What every surface must show about the ledgers it read: skipped records and breaks."""
    lines = []
    for issue, ledger in ledgers.items():
        for skipped in ledger.skipped:
            lines.append(
                f"{tracker}#{issue}: note {skipped.note_id} skipped ({skipped.kind}): "
                f"{skipped.reason}"
            )
        for chain_break in ledger.breaks:
            lines.append(
                f"{tracker}#{issue}: the record chain is broken at note {chain_break.note_id}: "
                f"{chain_break.reason}"
            )
    return tuple(lines)


def decide(
    mr: MergeRequestFacts,
    *,
    scope: Scope,
    cited: Sequence[int],
    ledgers: Mapping[int, Ledger],
    config: Config,
    frozen: str | None = None,
) -> GateVerdict:
    """The verdict, from facts already read. ``ledgers`` holds the fold of every cited issue
    except the generic tracking issue; ``frozen`` says why a live freeze window holds the MR
    back (section 5b), if one does."""
    cli, tracker = config.cli, config["tracker_project"]

    def verdict(**fields: Any) -> GateVerdict:
        return GateVerdict(
            project=mr.project,
            iid=mr.iid,
            head_sha=mr.head_sha,
            cited_issues=tuple(cited),
            scope=scope.code,
            scope_detail=scope.detail,
            **fields,
        )

    if not scope.in_scope:
        passed = Check(True, "out-of-scope", f"not gated: {scope.detail}")
        return verdict(
            allowed=True,
            in_scope=False,
            message=f"{mr.ref} is not gated: {scope.detail}.",
            code="out-of-scope",
            record=passed,
            approval=passed,
        )
    warnings = ledger_warnings(tracker, ledgers)
    record = _record_check(mr, ledgers, tracker, cli)
    approval, found = _approval_check(mr, ledgers, tracker, cli)
    if not ledgers:
        problems = [
            (
                "no-citation",
                f"{mr.ref} cites no issue of {tracker}, so no ledger can carry an approval for "
                f"it. Cite the issue it works on in its description ({tracker}#NN), then have "
                f"its head reviewed: {_approve_command(cli, 'NN', mr, None)}",
            )
        ]
    else:
        problems = [] if record.ok else [(record.code, record.message)]
        if found is None:
            problems.append((approval.code, approval.message))
    if frozen is not None:
        problems.insert(0, ("frozen", f"{mr.ref} is frozen: {frozen}"))
    code = problems[0][0] if problems else "approved"
    message = "\n".join(m for _, m in problems) or approval.message
    return verdict(
        allowed=code == "approved",
        in_scope=True,
        message=message,
        code=code,
        record=record,
        approval=approval,
        approved_by=found[1].approver if found else None,
        approval_issue=found[0] if found else None,
        approval_note=found[1].note_id if found else None,
        warnings=warnings,
    )


def _approve_command(cli: str, issue: object, mr: MergeRequestFacts, lead: str | None) -> str:
    sha = mr.head_sha or "<head>"
    return (
        f"{cli} approve {issue} --mr {mr.iid} --mr-project {mr.project} --sha {sha} "
        f"--to {lead or '<lead>'}"
    )


def _lead_of(ledger: Ledger) -> str | None:
    """The lead an approval would offer the issue back to, when the ledger says who it is."""
    return ledger.holder if ledger.role == "lead" else ledger.accepted_from


def _record_check(
    mr: MergeRequestFacts, ledgers: Mapping[int, Ledger], tracker: str, cli: str
) -> Check:
    if not ledgers:
        return Check(True, "no-citation", f"{mr.ref} cites no issue of {tracker}")
    unclaimed = [issue for issue, ledger in ledgers.items() if ledger.holder is None]
    if unclaimed:
        names = ", ".join(f"{tracker}#{i}" for i in unclaimed)
        return Check(
            False,
            "unclaimed",
            f"{mr.ref} cites {names}, which nobody holds: the work has no ownership record. "
            f"The agent doing it claims the issue: {cli} claim {unclaimed[0]} --role lead",
        )
    holders = ", ".join(f"{tracker}#{i} held by {ledger.holder}" for i, ledger in ledgers.items())
    return Check(True, "claimed", f"{mr.ref} carries an ownership record: {holders}")


def _approval_check(
    mr: MergeRequestFacts, ledgers: Mapping[int, Ledger], tracker: str, cli: str
) -> tuple[Check, tuple[int, Approval] | None]:
    """Approval at head: an independent approval naming this MR and its head, in the ledger
    of a cited issue. Returns the check and the (issue, approval) that passes, if any."""
    naming = [
        (issue, approval)
        for issue, ledger in ledgers.items()
        for approval in ledger.approvals
        if _same_mr(approval.mr, mr)
    ]
    at_head = [(i, a) for i, a in naming if mr.head_sha is not None and a.sha == mr.head_sha]
    independent = [(i, a) for i, a in at_head if not a.self_approval]
    if independent:
        issue, approval = independent[-1]
        covering = (
            f" It does not cover: {', '.join(approval.not_covering)}."
            if approval.not_covering
            else ""
        )
        return Check(
            True,
            "approved",
            f"{mr.ref} may merge: {approval.approver} approved its head {mr.head_sha} in "
            f"{tracker}#{issue} (note {approval.note_id}).{covering} Merge exactly that commit, "
            f"so GitLab refuses a head that moved: glab mr merge {mr.iid} -R {mr.project} "
            f"--sha {mr.head_sha}",
        ), (issue, approval)
    if not naming:
        first = next(iter(ledgers), None)
        lead = _lead_of(ledgers[first]) if first is not None else None
        issues = ", ".join(f"{tracker}#{i}" for i in ledgers) or f"any issue of {tracker}"
        return Check(
            True,
            "never-approved",
            f"no approval in {issues} names {mr.ref}. The reviewer approves its head: "
            f"{_approve_command(cli, first or 'NN', mr, lead)}",
        ), None
    if at_head:
        issue, approval = at_head[-1]
        return Check(
            False,
            "self-approval-only",
            f"the only approval of {mr.ref} at its head is a self-approval by "
            f"{approval.approver} ({tracker}#{issue}, note {approval.note_id}: "
            f"{approval.self_because}); the gate counts "
            f"only an approval by a different agent. Offer it for review: {cli} handoff "
            f"{issue} --to <reviewer> --role review --sha {mr.head_sha} --mr {mr.iid} "
            f"--mr-project {mr.project}",
        ), None
    issue, approval = naming[-1]
    head = mr.head_sha or "nothing (the merge request has no commits)"
    return Check(
        False,
        "not-at-head",
        f"the approval of {mr.ref} by {approval.approver} ({tracker}#{issue}, note "
        f"{approval.note_id}) names {approval.sha}, but the head is now {head}: a push after "
        f"an approval voids it. The reviewer approves the new head: "
        f"{_approve_command(cli, issue, mr, approval.to)}",
    ), None


def project_in_group(client: GitLab, config: Config, project: str) -> bool:
    """Is the project in the group's listing? A project under group_path is, by its path;
    only a project elsewhere costs the read of the listing (shared-in projects included)."""
    if _under(project, config["group_path"]):
        return True
    listing = client.get_all(
        f"groups/{config['group_id']}/projects",
        with_shared="true",
        include_subgroups="true",
        simple="true",
        per_page=100,
    )
    return any(
        str(p.get("path_with_namespace", "")).casefold() == project.casefold() for p in listing
    )


def gate_merge(
    client: GitLab,
    config: Config,
    project: str,
    iid: int,
    *,
    families: Sequence[AutomationFamily] | None = None,
    now: float | None = None,
) -> GateVerdict:
    """The merge gate's one verdict for ``project!iid``: reads, then decides.

    Reads the group listing when the path alone does not settle it, then (in the group) the MR
    and the ledger of every cited tracker issue. Any read error propagates as a PairgateError:
    the gate fails closed, it never passes what it could not read. ``families`` defaults to the roster found
    beside ownership.py or the configuration.
    """
    if families is None:
        families = load_automation_families(roster_path(config))
    mr_path = f"projects/{encode_project(project)}/merge_requests/{int(iid)}"
    data: Mapping[str, Any] | None = None
    path = project
    if project.isdigit():  # a numeric id: the MR says which path it names
        data = client.get(mr_path)
        path = MergeRequestFacts.from_api(data, project).project
    # Outside the group nothing else matters, and the reader may not even see the project.
    if not project_in_group(client, config, path):
        outside = MergeRequestFacts(path, int(iid), "", "", None, "", (), None)
        scope = decide_scope(outside, cited=(), in_group=False, config=config, families=())
        return decide(outside, scope=scope, cited=(), ledgers={}, config=config)
    mr = MergeRequestFacts.from_api(data or client.get(mr_path), project)
    tracker = config["tracker_project"]
    cited = cited_issues(f"{mr.title}\n{mr.description}", mr_project=mr.project, tracker=tracker)
    scope = decide_scope(mr, cited=cited, in_group=True, config=config, families=families)
    ledgers: dict[int, Ledger] = {}
    frozen = None
    if scope.in_scope:
        generic = config["generic_tracking_issue"]
        for issue in cited:
            if issue != generic:
                ledgers[issue] = read_ledger(client, config, issue)
        at = time.time() if now is None else now
        frozen = mr_freeze(client, config, MrRef(mr.project, mr.iid), known=ledgers, now=at)
    return decide(mr, scope=scope, cited=cited, ledgers=ledgers, config=config, frozen=frozen)


# The three doors. merge-check (the package CLI and ``python3 ownership.py merge-check``) and the
# two validators print the same verdict; only what each treats as a failure differs.

VALIDATOR_CHECKS = {
    "validate-mr-carries-ownership-record": "record",
    "validate-mr-approval-at-head": "approval",
}


class _ArgParser(argparse.ArgumentParser):
    """argparse whose usage errors are UsageErrors, so ``report`` prints them (exit 2)."""

    def error(self, message: str) -> Any:
        raise UsageError(f"{self.format_usage().rstrip()}\n{self.prog}: error: {message}")


def print_verdict(
    verdict: GateVerdict,
    ctx: Context,
    *,
    json_out: bool,
    verbose: bool,
    client: GitLab | None = None,
) -> int:
    """merge-check's output and exit code: 0 pass (or not gated), 1 refused."""
    if json_out:
        print(json.dumps(verdict.as_json(), indent=2), file=ctx.stdout)
    else:
        print(verdict.message, file=ctx.stdout if verdict.allowed else ctx.stderr)
        for warning in verdict.warnings:
            print(f"warning: {warning}", file=ctx.stderr)
    if verbose:
        for line in _verbose_lines(verdict, client):
            print(line, file=ctx.stderr)
    return Exit.OK if verdict.allowed else Exit.REFUSED


def _verbose_lines(verdict: GateVerdict, client: GitLab | None) -> list[str]:
    cited = ", ".join(f"#{i}" for i in verdict.cited_issues) or "none"
    lines = [
        f"merge request: {verdict.project}!{verdict.iid}, head {verdict.head_sha}",
        f"scope: {verdict.scope} ({verdict.scope_detail})",
        f"cited tracker issues: {cited}",
        f"ownership record: {verdict.record.code}: {verdict.record.message}",
        f"approval at head: {verdict.approval.code}: {verdict.approval.message}",
    ]
    if client is not None:
        lines.append(client.describe())
    return lines


def run_merge_check(
    ctx: Context, config: Config, *, mr: int, mr_project: str, json_out: bool, verbose: bool
) -> int:
    """``merge-check --mr <iid> --mr-project <p>``: the gate's verdict, as a command."""
    client = gitlab_from_env(config, ctx.env)
    try:
        verdict = gate_merge(client, config, mr_project, mr, now=ctx.now())
    except PairgateError as exc:
        raise PairgateError(f"merge-check: could not decide, so no pass: {exc.message}") from exc
    return print_verdict(verdict, ctx, json_out=json_out, verbose=verbose, client=client)


def validator_main(name: str, argv: Sequence[str] | None = None, ctx: Context | None = None) -> int:
    """A CI validator: the verdict for the merge request of this merge request pipeline.

    The configuration comes from PAIRGATE_CONFIG only; the merge request from
    CI_MERGE_REQUEST_PROJECT_PATH and CI_MERGE_REQUEST_IID; the read token from the CI variable
    ``--read-token-variable`` names. Exit 0 pass, 1 refused, 2 could not decide.
    """
    ctx = ctx or Context()
    check_name = VALIDATOR_CHECKS[name]
    try:
        parser = _ArgParser(prog=f"{name}.py", description=validator_main.__doc__)
        parser.add_argument(
            "--read-token-variable",
            metavar="NAME",
            help="the CI variable holding a token that can read the tracker's issue notes",
        )
        parser.add_argument(
            "--automation-families",
            type=Path,
            metavar="PATH",
            help=f"the automation roster (default: the {ROSTER_FILENAME} beside ownership.py)",
        )
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if not ctx.env.get(CONFIG_ENV, "").strip():
            raise ConfigError(
                f"{name}: {CONFIG_ENV} is not set: the validators read their configuration "
                f"from the file it names, and from nowhere else"
            )
        config = load_config(ctx.env)
        project, iid = _ci_merge_request(ctx.env, name)
        env = dict(ctx.env)
        if args.read_token_variable:
            env[config.env_name("TASK_API_TOKEN")] = _ci_token(ctx.env, args.read_token_variable)
        client = gitlab_from_env(config, env)
        families = load_automation_families(roster_path(config, args.automation_families))
        verdict = gate_merge(client, config, project, iid, families=families)
    except Exception as exc:  # the validators' one translation point: never a pass
        print(f"{name}: could not decide; this job fails closed.", file=ctx.stderr)
        return report(exc, ctx.stderr)
    check: Check = getattr(verdict, check_name)
    head = f" at {verdict.head_sha}" if verdict.head_sha else ""
    print(f"{name}: {verdict.project}!{verdict.iid}{head}", file=ctx.stdout)
    for warning in verdict.warnings:
        print(f"warning: {warning}", file=ctx.stdout)
    if not check.ok:
        print(f"FAILED: {check.message}", file=ctx.stdout)
        print(f"Background: {config['handoff_doc']}.", file=ctx.stdout)
        return Exit.REFUSED
    if check.code == "never-approved":
        print(
            f"passed: {verdict.project}!{verdict.iid} has no approval yet, and this job fails "
            f"only an approval that is a self-approval or names an older head. merge-check "
            f"and the merge hook still require an independent approval at the head.",
            file=ctx.stdout,
        )
    else:
        print(f"passed: {check.message}", file=ctx.stdout)
    return Exit.OK


def _ci_merge_request(env: Mapping[str, str], name: str) -> tuple[str, int]:
    project = env.get("CI_MERGE_REQUEST_PROJECT_PATH", "").strip()
    iid = env.get("CI_MERGE_REQUEST_IID", "").strip()
    if not project or not iid.isdigit():
        raise UsageError(
            f"{name}: CI_MERGE_REQUEST_PROJECT_PATH and CI_MERGE_REQUEST_IID are not both set: "
            f"this validator runs in a merge request pipeline "
            f'(rules: if $CI_PIPELINE_SOURCE == "merge_request_event")'
        )
    return project, int(iid)


def _ci_token(env: Mapping[str, str], variable: str) -> str:
    token = env.get(variable, "").strip()
    if not token:
        raise ConfigError(
            f"the CI variable {variable} (the component's read-token-variable input) is not set "
            f"or is empty in this pipeline: add it as a masked CI/CD variable holding a token "
            f"that can read the tracker's issues (CI_JOB_TOKEN cannot read issue notes)"
        )
    return token


# ---------------------------------------------------------------------------------------------
# 7. The command reader (for the merge hook)
# ---------------------------------------------------------------------------------------------

# (built by the merge hook issue)


# ---------------------------------------------------------------------------------------------
# 8. Standalone entry point
# ---------------------------------------------------------------------------------------------


def standalone_main(argv: list[str], ctx: Context | None = None) -> int:
    """The flat deployment's door, with no package installed:

    ``python3 ownership.py check-config``  load the configuration a flat deployment sees;
    ``python3 ownership.py merge-check --mr <iid> --mr-project <p> [--json] [--verbose]``
    the merge gate's verdict, exactly as ``pairgate merge-check`` gives it.
    """
    ctx = ctx or Context()
    try:
        if argv[:1] == ["merge-check"]:
            parser = _ArgParser(prog="ownership.py merge-check")
            parser.add_argument("--mr", required=True, type=int, metavar="IID")
            parser.add_argument("--mr-project", required=True, metavar="PROJECT")
            parser.add_argument("--json", action="store_true")
            parser.add_argument("--verbose", action="store_true")
            args = parser.parse_args(argv[1:])
            return run_merge_check(
                ctx,
                load_config(ctx.env),
                mr=args.mr,
                mr_project=args.mr_project,
                json_out=args.json,
                verbose=args.verbose,
            )
        if argv[:1] != ["check-config"] or len(argv) != 1:
            raise UsageError(
                "usage: python3 ownership.py check-config\n"
                "       python3 ownership.py merge-check --mr IID --mr-project PROJECT "
                "[--json] [--verbose]"
            )
        config = load_config(ctx.env)
        print(f"configuration OK: {config.path}", file=ctx.stdout)
        return Exit.OK
    except Exception as exc:  # the one translation point for the standalone door
        return report(exc, ctx.stderr)


if __name__ == "__main__":
    sys.exit(standalone_main(sys.argv[1:]))
