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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote, urlencode, urlsplit

# requests (the HTTPS transport) and jsonschema (every schema check) are imported where they are
# used: together they are most of the merge hook's start-up, and a command the hook reads without
# deciding a merge needs neither. Every path that validates still validates with jsonschema.
if TYPE_CHECKING:
    import requests
    from urllib3.util.retry import Retry


def _draft_validator(schema: Mapping[str, Any]) -> Any:
    """A jsonschema validator for one of this file's schemas (all draft 2020-12). Formats are
    not asserted (jsonschema's default): no schema here uses ``format``."""
    import jsonschema

    return jsonschema.Draft202012Validator(schema)


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
    errors = sorted(
        _draft_validator(CONFIG_SCHEMA).iter_errors(values), key=lambda e: (list(e.path), e.message)
    )
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


@functools.cache
def _retry_class() -> type[Retry]:
    from urllib3.util.retry import Retry

    class _Retry(Retry):
        """urllib3's Retry with Retry-After capped, so one answer cannot park a reader for
        hours."""

        MAX_RETRY_AFTER = 60.0

        def get_retry_after(self, response: Any) -> float | None:
            seconds = super().get_retry_after(response)
            return None if seconds is None else min(seconds, self.MAX_RETRY_AFTER)

    return _Retry


def read_retry(*, attempts: int = 4, backoff_factor: float = 0.5) -> Retry:
    """The retry policy: GET is retried on connection errors, 429 and 5xx (Retry-After honoured
    on 429 and 503, exponential backoff otherwise). Other methods are retried only when the
    connection was never made, because then nothing was sent."""
    return _retry_class()(
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
        import requests
        from requests.adapters import HTTPAdapter

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
        import requests

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

    def pages(self, path: str, params: Mapping[str, Any]) -> Iterator[list[Any]]:
        url: str | None = f"{self.api_url}/{path}"
        query: dict[str, str] | None = _query({**params, "per_page": PER_PAGE})
        seen: set[str] = set()
        while url:
            response = self._call("GET", url, params=query)
            page = _decoded(response)
            if not isinstance(page, list):
                raise GitLabError(f"pairgate: GitLab GET {path}: expected a list, got {page!r:.80}")
            yield page
            # Follow rel="next" until it is absent: a page may be short, even empty, while more
            # exist. The link carries every parameter, and must stay on this instance (it is
            # sent our token).
            url = response.links.get("next", {}).get("url")
            if url and (urlsplit(url)[:2] != self._origin or url in seen):
                raise GitLabError(f"pairgate: GitLab GET {path}: refusing next-page link {url}")
            seen.add(url or "")
            query = None

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

    def pages(self, path: str, params: Mapping[str, Any]) -> Iterator[list[Any]]:
        # glab prints every page before it exits: they arrive as one.
        endpoint = _with_query(path, {**params, "per_page": PER_PAGE})
        yield decode_pages(self._run("GET", self.argv(endpoint, "--paginate")))

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
        return [item for page in self._reader.pages(path, params) for item in page]

    def pages(self, path: str, **params: Any) -> Iterator[list[Any]]:
        """The pages of a list as they arrive, so a reader can start on the first while the
        next is read."""
        return self._reader.pages(path, params)

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

    def https(token: str) -> _Https:
        assert api_url is not None
        return _Https(api_url, token, retry=retry or read_retry(), timeout=timeout)

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
KIND_OF_EVENT = {event: kind for kind, events in EVENT_FIELDS.items() for event in events}


@functools.cache
def _event_validator(kind: str, event: str) -> Any:
    # One validator per event, built once and reused: the fold checks thousands of records.
    # RECORD_SCHEMAS[kind] is this schema under an if/then on ``event``, so checking the
    # event's own schema directly gives the same verdict without re-testing every branch.
    return _draft_validator(_event_schema(event, EVENT_FIELDS[kind][event]))


class MalformedRecord(Exception):
    """A marker that cannot be read as a record; the message says why."""


def schema_problem(kind: str, record: Any) -> str | None:
    """Why ``record`` is not a valid ``kind`` record, or None when it is."""
    if kind not in EVENT_FIELDS:
        return f"unknown record kind {kind!r}"
    if not isinstance(record, dict):
        return "the marker JSON is not an object"
    event = record.get("event")
    if not isinstance(event, str) or event not in EVENT_FIELDS[kind]:
        return f"unknown {kind} event {event!r}"
    validator = _event_validator(kind, event)
    if validator.is_valid(record):
        return None
    error = min(validator.iter_errors(record), key=lambda e: (len(e.path), e.message))
    where = "/".join(str(p) for p in error.path) or "record"
    return f"schema: {where}: {error.message}"


def canonical_text(text: str) -> str:
    """Whitespace folded, so GitLab's storage (CRLF, trailing blanks) cannot move a digest."""
    return " ".join(text.split())


# json.dumps with these options builds a new encoder per call; the digest is computed for every
# record read, so one encoder serves them all (its output is json.dumps's, byte for byte).
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def record_digest(kind: str, record: Mapping[str, Any], human: str) -> str:
    content = dict(record)
    content.pop("digest", None)
    canonical = _CANONICAL_JSON.encode(
        {"kind": kind, "record": content, "text": canonical_text(human)}
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


# Schema checks dominate the fold's cost, and readers fold the same notes again (a verb reads
# before and after it writes): remember the verdict per marker text. The text decides the
# record, so a verdict cannot go stale; the memory is bounded by starting afresh when full.
_PROBLEMS: dict[tuple[str, str], str | None] = {}
_PROBLEMS_MAX = 65536


def _cached_problem(kind: str, raw: str, record: dict[str, Any]) -> str | None:
    """schema_problem of ``record``, the parse of the marker JSON ``raw``, remembered."""
    key = (kind, raw)
    try:
        return _PROBLEMS[key]
    except KeyError:
        problem = schema_problem(kind, record)
    if len(_PROBLEMS) >= _PROBLEMS_MAX:
        _PROBLEMS.clear()
    _PROBLEMS[key] = problem
    return problem


def parse_marker(body: str) -> tuple[str, dict[str, Any], str]:
    """(kind, record, human text) of a note that carries a marker; MalformedRecord otherwise."""
    text = body.replace("\r\n", "\n")
    found = _MARKER_LINE.finditer(text)
    first = next(found, None)
    if first is None:
        raise MalformedRecord("a mochi-task marker that is not one well-formed line")
    more = sum(1 for _ in found)
    if more:
        raise MalformedRecord(f"{1 + more} markers in one note (a note carries one)")
    kind, raw = first.group(1), first.group(2)
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise MalformedRecord(f"the marker JSON does not parse: {exc}") from None
    problem = _cached_problem(kind, raw, record) if isinstance(record, dict) else "not an object"
    if problem:
        raise MalformedRecord(problem)
    return kind, record, text[: first.start()] + text[first.end() :]


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
        # (digest, note id) of the last record before the one being applied
        self.seen: tuple[str | None, int | None] = (None, None)

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
        # A close ends the issue for whoever holds it, so it counts only over the state its
        # writer saw: otherwise a claim racing a close of an unheld issue would be wiped out.
        if r["prev"] != self.seen[0]:
            return (
                f"its writer had not seen note {self.seen[1]}: a close acts only on the state "
                f"it saw"
            )
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
    head_note: int | None = None
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
        state.seen = (head, head_note)
        head, head_note = record["digest"], note.id
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
        _draft_validator(ROSTER_SCHEMA).iter_errors(value),
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


def _review_steps(
    cli: str, issue: object, mr: MergeRequestFacts, reviewer: str | None, lead: str | None
) -> str:
    """The way to a review of the current head. Only the holder in the review role may approve,
    and after a round the lead holds the issue, so the head is offered for review first."""
    sha = mr.head_sha or "<head>"
    return (
        f"The lead offers the head for review: {cli} handoff {issue} --to "
        f"{reviewer or '<reviewer>'} --role review --sha {sha} --mr {mr.iid} --mr-project "
        f"{mr.project}; the reviewer accepts ({cli} accept {issue}) and approves it: "
        f"{_approve_command(cli, issue, mr, lead)}"
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
            f"no approval in {issues} names {mr.ref}. "
            f"{_review_steps(cli, first or 'NN', mr, None, lead)}",
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
        f"an approval voids it, and the new head needs its own review. "
        f"{_review_steps(cli, issue, mr, approval.approver, approval.to)}",
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
    elif not _under(project, config["group_path"]):
        # GitLab answers a moved project's old path too: the MR says which project it is in.
        # One the reader cannot see is judged by the path it was named by.
        try:
            data = client.get(mr_path)
            path = MergeRequestFacts.from_api(data, project).project
        except GitLabError as exc:
            if exc.status != 404:
                raise
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

# A merge hook decides on every Bash command the agent runs, so this section reads the command the
# way bash would and says which merges it would make. It is pure: text in, a CommandReading out;
# the verdicts are asked for by the hook's entry point (section 8). tree-sitter is imported lazily
# so that nothing else pays for it. Its imports sit here, not at the top, to keep the sections
# independent of each other.
import shlex  # noqa: E402
import urllib.parse  # noqa: E402

# The hook's fast test. A command can run a glab merge only if its text says glab, merge or accept,
# or if it has a character through which bash could build a word the text does not spell
# (quotes, backslashes, expansions, globs, braces). Anything else is allowed without reading it;
# block-unapproved-merge.sh applies the same test in bash before starting Python.
_FAST_WORDS = ("glab", "merge", "accept")
_FAST_CHARS = frozenset("$`\\'\"*?[{")

# Text that names a glab merge: `mr merge` / `mr accept` (any separators between them, and a -R
# with its value), the REST merge endpoint, a merge train, the GraphQL mutation. It counts only
# where "glab" is in the same text too.
_MERGE_MENTION = re.compile(
    r"(?<![a-z0-9])mr[\W_]+(?:-R[\W_]*\S+[\W_]+|--repo[\W_]*\S+[\W_]+)?(?:merge|accept)(?![a-z0-9])"
    r"|merge_requests\S*?merge(?![a-z0-9])|merge_trains|mergerequestaccept",
    re.IGNORECASE,
)
_WORDISH = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "concatenation",
        "number",
        "translated_string",
    }
)

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"})

# glab is read as the version whose source was read: v1.79.0-43-g45aa37be (gitlab-org/cli, GitLab's
# mirror gitlabhq/cli@45aa37be0045). Its top-level commands and their aliases, from
# internal/commands/root.go and each command's constructor (`Aliases:`), e.g. version/version.go
# ("v"), opentofu/opentofu.go ("terraform", "tf"), stack/stack.go ("stacks"). A first word outside
# this list is looked up as a user alias (cmd/glab/main.go: `rootCmd.Traverse`, then
# `expand.ExpandAlias`), which could expand to a merge, so it is read as unknown.
_GLAB_SOURCE = "glab v1.79.0-43-g45aa37be"
_GLAB_COMMANDS = frozenset(
    """alias api auth changelog check-update update ci pipe pipeline cluster completion config
    conf deploy-key duo gpg-key incident issue iteration job label mcp milestone mr opentofu
    terraform tf release repo project schedule sched skd securefile snippet ssh-key stack
    stacks token user variable var version v""".split()  # noqa: SIM905 (a word list reads better as text)
)
# First words glab's alias lookup meets that are never an alias: cobra adds `help` only after the
# lookup, and `glab alias set` refuses it as a command; the root's flags could only name an alias
# set with `glab alias set -- -name`, which the hook refuses (see _glab_alias).
_GLAB_NOT_ALIASES = frozenset({"help", "-h", "--help", "-v", "--version"})
# `glab mr` subcommands and aliases (internal/commands/mr/*/*.go, `Use:` and `Aliases:`).
_GLAB_MR_COMMANDS = {
    alias: name
    for name, aliases in {
        "approve": (), "approvers": (), "checkout": (), "close": (), "create": ("new",),
        "delete": ("del",), "diff": (), "for": ("new-for", "create-for", "for-issue"),
        "issues": ("issue",), "list": ("ls",), "merge": ("accept",), "note": ("comment",),
        "rebase": (), "reopen": ("open",), "revoke": ("unapprove",), "subscribe": ("sub",),
        "todo": ("add-todo",), "unsubscribe": ("unsub",), "update": (), "view": ("show",),
    }.items()
    for alias in (name, *aliases)
}  # fmt: skip

_MAX_DEPTH = 8  # nested re-reads (bash -c "eval '...'") before the reader gives up
# The reader walks the syntax tree recursively; this is its budget of nested levels (a level is a
# command, a substitution, a subshell...), far above any real command and far below what Python
# can recurse. Only a command deeper than this blocks, and says so.
_TREE_BUDGET = 3000
_RECURSION_FOR_BUDGET = 8 * _TREE_BUDGET  # Python frames the reader may need within the budget

# A GitLab quick action that merges, on a line of its own in a note or a description.
_QUICK_MERGE = re.compile(r"^[ \t]*/merge(?![\w-])", re.IGNORECASE | re.MULTILINE)
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def could_name_glab_merge(command: str) -> bool:
    """False only when no reading of ``command`` can run a glab merge (the hook's fast path)."""
    lowered = command.lower()
    return any(w in lowered for w in _FAST_WORDS) or not _FAST_CHARS.isdisjoint(command)


def _mentions_merge(text: str) -> bool:
    return "glab" in text.lower() and _MERGE_MENTION.search(text) is not None


@dataclass(frozen=True)
class MergeFound:
    """One merge the command would make. ``problem`` says why it cannot be attributed to one
    project and one merge request; it is empty when ``project`` and ``iid`` are both known.
    ``project`` is a full path, or a numeric project id as the command spelled it.

    ``shas`` are the SHAs GitLab would be given to bind the merge to a head (``--sha``, the
    ``sha`` field, a ``/merge`` note's ``merge_request_diff_head_sha``), one per place the request
    can carry one; ``None`` stands for one the hook cannot read. Empty: the merge names no head.
    ``kind`` is "merge" or "/merge" (a quick action in a note or a description)."""

    words: str
    project: str | None
    iid: int | None
    problem: str = ""
    shas: tuple[str | None, ...] = ()
    kind: str = "merge"


@dataclass(frozen=True)
class PushFound:
    """A ``git push`` that arms auto-merge with push options (GitLab then merges the merge request
    of ``branch`` at the pushed commit). ``remote`` is the remote as spelled (a URL or a remote's
    name), ``sha`` the pushed commit when the refspec spells it, ``target_project`` the
    ``merge_request.target_project`` option; ``alone`` says the push is the command's only
    command, so the remote's URL can be read from the repository before it runs."""

    words: str
    remote: str | None
    sha: str | None
    branch: str | None
    target_project: str | None = None
    creates: bool = False
    alone: bool = False
    problem: str = ""


@dataclass(frozen=True)
class CommandReading:
    """What a command would merge, what the reader could not read, and which texts name a glab
    merge without being one. The hook allows the command only when ``unknown`` and
    ``mentions`` are empty and every merge and push is attributable and passes the gate."""

    merges: tuple[MergeFound, ...] = ()
    unknown: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()
    pushes: tuple[PushFound, ...] = ()

    def problems(self) -> list[str]:
        """Every reason the reading alone blocks the command, before any verdict is asked."""
        found = [f"{m.words}: {m.problem}" for m in self.merges if m.problem]
        found += [f"{p.words}: {p.problem}" for p in self.pushes if p.problem]
        found += list(self.unknown)
        found += [
            f"{text}: this names a glab merge that the command does not run; if it is a "
            "message, pass it from a file (--reason-file) instead"
            for text in self.mentions
        ]
        return found


class _Dyn:
    """A part of a word that bash computes when it runs: an expansion, a glob, a brace."""

    def __repr__(self) -> str:
        return "<dynamic>"


DYNAMIC = _Dyn()
_Part = str | _Dyn


@dataclass(frozen=True)
class _Word:
    """One shell word after quote removal: literal parts and dynamic ones."""

    parts: tuple[_Part, ...]
    span: tuple[int, int] | None  # byte range in its layer, None for words the reader made up
    raw: str
    node: Any = field(default=None, compare=False, repr=False)  # its syntax node, if parsed

    @property
    def value(self) -> str | None:
        if any(isinstance(p, _Dyn) for p in self.parts):
            return None
        return "".join(p for p in self.parts if isinstance(p, str))

    @property
    def tail(self) -> str | None:
        """The literal text after the last '/': a program's name even under ``$HOME/bin/``."""
        text = ""
        for part in reversed(self.parts):
            if isinstance(part, _Dyn):
                return None
            if "/" in part:
                return part.rsplit("/", 1)[1] + text
            text = part + text
        return text

    @property
    def loose(self) -> str:
        """The literal parts only, for the mention test (an expansion reads as nothing)."""
        return "".join(p for p in self.parts if isinstance(p, str))


def _literal_word(text: str) -> _Word:
    return _Word((text,), None, text)


# --- unquoting ---------------------------------------------------------------------------------

_ANSI_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


def _ansi_c(body: str) -> str:
    """The value of ``$'...'`` (bash's ANSI-C quoting)."""
    return _escapes(body, echo=False)[0]


def _echo_escapes(text: str) -> tuple[str, bool]:
    """What ``echo -e`` (or printf's ``%b``) prints for ``text``, and whether a ``\\c`` ended it:
    as ``$'...'``, except that an octal escape is ``\\0NNN`` and ``\\c`` stops the output."""
    return _escapes(text, echo=True)


def _escapes(body: str, *, echo: bool) -> tuple[str, bool]:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if echo and nxt == "c":
            return "".join(out), True
        if echo and nxt in "01234567":
            m = re.match(r"[0-7]{0,3}", body[i + 2 :]) if nxt == "0" else None
            if m is None:
                out.append("\\" + nxt)  # echo's octal escapes start with 0
                i += 2
            else:
                out.append(chr(int(m.group() or "0", 8) & 0xFF))
                i += 2 + len(m.group())
        elif nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            m = re.match(rf"[0-9A-Fa-f]{{1,{width}}}", body[i + 2 :])
            if m:
                out.append(chr(int(m.group(), 16)))
                i += 2 + len(m.group())
            else:
                out.append("\\" + nxt)
                i += 2
        elif nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert m is not None
            out.append(chr(int(m.group(), 8) & 0xFF))
            i += 1 + len(m.group())
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out), False


_PRINTF_SPEC = re.compile(r"%([-+ #0]*)([0-9]*)(?:\.([0-9]+))?([a-zA-Z%])")


def _printf(values: Sequence[str | None]) -> str | None:
    """What ``printf FORMAT [ARG...]`` prints, for the conversions a script is written with
    (%s %b %c %d %i %u %%, with flags, width and precision); None when the reader cannot tell
    (an expansion, another conversion). The format is reused while arguments remain."""
    if not values or any(v is None for v in values):
        return None
    fmt, args = str(values[0]), [str(v) for v in values[1:]]
    pieces: list[str] = []
    while True:
        used, last = 0, 0
        for m in _PRINTF_SPEC.finditer(fmt):
            pieces.append(_ansi_c(fmt[last : m.start()]))
            last = m.end()
            flags, width, precision, conversion = m.groups()
            if conversion == "%":
                pieces.append("%")
                continue
            if conversion not in "sbcdiu":
                return None
            arg = args[used] if used < len(args) else ""
            used += 1
            stopped = False
            if conversion == "b":
                arg, stopped = _echo_escapes(arg)
            elif conversion in "diu":
                if not re.fullmatch(r"[+-]?[0-9]+", arg or "0"):
                    return None
                arg = str(int(arg or "0"))
            elif conversion == "c":
                arg = arg[:1]
            if precision and conversion in "sb":
                arg = arg[: int(precision)]
            if width:
                arg = arg.ljust(int(width)) if "-" in flags else arg.rjust(int(width))
            pieces.append(arg)
            if stopped:
                return "".join(pieces)
        pieces.append(_ansi_c(fmt[last:]))
        args = args[used:]
        if not args or not used:
            return "".join(pieces)


def _file_key(path: str) -> str:
    """One spelling per file the command names: ``./run.sh`` and ``run.sh`` are one file."""
    return os.path.normpath(path)


# Brace expansion needs a comma or a sequence inside braces; a lone {} (find -exec) is literal.
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


def _unquoted_word_parts(text: str) -> list[_Part]:
    """An unquoted word: backslashes escape one character; an unescaped glob or brace character
    makes the word something bash computes; so does a leading tilde."""
    parts: list[_Part] = []
    literal: list[str] = []
    i = 0
    if text.startswith("~"):
        parts.append(DYNAMIC)
        i = 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 < len(text) and text[i + 1] != "\n":
                literal.append(text[i + 1])
            i += 2
            continue
        if ch in "*?[]" or (ch in "{}" and _BRACES.search(text)):
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(DYNAMIC)
        else:
            literal.append(ch)
        i += 1
    if literal:
        parts.append("".join(literal))
    return parts


def _double_quoted(text: str) -> str:
    """Inside "...", a backslash escapes only $ ` " \\ and a newline."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _parts(node: Any, src: bytes) -> list[_Part]:
    kind = node.type
    text = src[node.start_byte : node.end_byte].decode("utf-8", "replace")
    if kind == "word":
        return _unquoted_word_parts(text)
    if kind == "number":
        return [text]
    if kind == "raw_string":
        return [text[1:-1]]
    if kind == "ansi_c_string":
        return [_ansi_c(text[2:-1])]
    if kind == "string":
        parts: list[_Part] = []
        pos = node.start_byte + 1  # after the opening quote
        for child in node.children:
            if child.type == '"':
                continue
            if child.start_byte > pos:
                parts.append(_double_quoted(src[pos : child.start_byte].decode("utf-8", "replace")))
            if child.type == "string_content":
                parts.append(_double_quoted(child.text.decode("utf-8", "replace")))
            else:
                parts.append(DYNAMIC)
            pos = child.end_byte
        end = node.end_byte - 1
        if end > pos:
            parts.append(_double_quoted(src[pos:end].decode("utf-8", "replace")))
        return parts
    if kind == "command_name":
        return [p for child in node.children for p in _parts(child, src)]
    if kind == "concatenation":
        unquoted = "".join(
            c.text.decode("utf-8", "replace") if c.type == "word" else "Q" for c in node.children
        )
        if _BRACES.search(unquoted):
            return [DYNAMIC]
        return [p for child in node.children for p in _parts(child, src)]
    return [DYNAMIC]  # expansions, substitutions, arithmetic, anything not yet seen


def _word(node: Any, src: bytes) -> _Word:
    raw = src[node.start_byte : node.end_byte].decode("utf-8", "replace")
    return _Word(tuple(_parts(node, src)), (node.start_byte, node.end_byte), raw, node)


def _dynamic_word(word: _Word) -> _Word:
    """``word`` as something bash (or the program reading it) fills in when it runs."""
    return _Word((DYNAMIC,), word.span, word.raw)


# --- what a command's standard input is ------------------------------------------------------------


@dataclass(frozen=True)
class _Stdin:
    """A command's standard input as far as the reader can tell: ``text`` when the command line
    spells it (a heredoc, a here-string, echo piped in), else ``None``; ``dynamic`` when it
    is built from expansions. ``spans`` are the words that carry the text."""

    text: str | None
    dynamic: bool = False
    spans: tuple[tuple[int, int], ...] = ()


_OPAQUE = _Stdin(None)  # a file or another program's output: not read (the docs say so)
_DYNAMIC_STDIN = _Stdin(None, dynamic=True)


# --- the reader -------------------------------------------------------------------------------


@dataclass
class _Layer:
    """One text the reader parses: the command itself, or a string a shell would run."""

    src: bytes
    depth: int
    consumed: set[tuple[int, int]] = field(default_factory=set)
    dashes: set[int] = field(default_factory=set)  # where the parser dropped a `-` word


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_PARSER: Any = None


# Where a backslash-newline is text, not a line continuation: single quotes, $'...', comments and
# heredoc bodies (a shell that reads a body joins its lines itself, and is read as one).
_LITERAL_NODES = frozenset({"raw_string", "ansi_c_string", "comment", "heredoc_body"})


def _join_continued_lines(src: bytes, root: Any) -> bytes:
    """``src`` without its line continuations. tree-sitter-bash reads ``gl\\<newline>ab`` as
    two words; bash removes the backslash-newline first and reads one word, ``glab``."""
    literal: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in _LITERAL_NODES:
            literal.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    literal.sort()
    out, i, k = bytearray(), 0, 0
    while i < len(src):
        while k < len(literal) and literal[k][1] <= i:
            k += 1
        if k < len(literal) and literal[k][0] <= i:
            out += src[i : literal[k][1]]
            i = literal[k][1]
            continue
        if src[i : i + 2] == b"\\\n":
            i += 2
        elif src[i : i + 1] == b"\\":
            out += src[i : i + 2]  # an escaped character, a backslash included
            i += 2
        else:
            out += src[i : i + 1]
            i += 1
    return bytes(out)


def _uncovered(src: bytes, root: Any) -> list[tuple[int, bytes]]:
    """Text no node of the tree covers, other than blanks: bash reads it, so the reader must
    too. tree-sitter-bash 0.25 drops a lone ``-`` word before a heredoc (``make -f - <<EOF``)."""
    spans = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count == 0 or node.type in _LITERAL_NODES:
            spans.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    spans.sort()
    gaps, pos = [], 0
    for start, end in [*spans, (len(src), len(src))]:
        if start > pos and src[pos:start].strip():
            gaps.append((pos, src[pos:start]))
        pos = max(pos, end)
    return gaps


def _parse(src: bytes) -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER.parse(src)


class _Reader:
    def __init__(self) -> None:
        self.merges: list[MergeFound] = []
        self.pushes: list[PushFound] = []
        self.unknown: list[str] = []
        self.mentions: list[str] = []
        self.aliases: dict[str, str] = {}  # every alias the command defines, wherever
        self.expanding: set[str] = set()  # bash never expands an alias inside its own expansion
        # glab aliases `glab alias set` defines earlier in the command: name -> (expansion or
        # None when built from expansions, whether it runs in a shell, where it is written)
        self.glab_aliases: dict[str, tuple[str | None, bool, _Layer, tuple[int, int] | None]] = {}
        self.glab_names: set[str] = set()  # names the command gives copies of glab (cp, ln)
        # git aliases and push options `git config` sets earlier in the command
        self.git_aliases: dict[str, tuple[_Word, _Layer]] = {}
        self.git_push_options: list[_Word | None] = []
        # files the command writes (path -> what it writes), and scripts it runs by a path the
        # reader has not seen written yet (read again at the end, in case a loop writes them later)
        self.files: dict[str, _Stdin] = {}
        self.unnamed_writes = False  # a write to a path bash computes
        self.script_runs: list[tuple[str | None, _Layer]] = []
        self.level = 0  # nesting of the syntax tree being walked, against _TREE_BUDGET
        self.over_budget = False
        self.simple_commands = 0
        self.text = ""  # the command as the hook received it
        self.layers: list[tuple[_Layer, Any]] = []  # every text read, for the mention check

    # layers

    def read(self, text: str, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            self.unknown.append(f"{_short(text)}: shells nested too deep to read")
            return
        src = text.encode("utf-8", "surrogatepass")
        tree = _parse(src)
        if b"\\\n" in src:  # bash joins continued lines before it splits words; so does the reader
            joined = _join_continued_lines(src, tree.root_node)
            if joined != src:
                src, tree = joined, _parse(joined)
        layer = _Layer(src, depth)
        if b"alias" in src:  # a loop can run a use before the definition: register them first
            self._find_aliases(tree.root_node, layer)
        if tree.root_node.has_error:
            self.unknown.append(f"{_short(text)}: bash would not parse this cleanly")
        for start, gap in _uncovered(src, tree.root_node):
            if gap.strip() == b"-":  # tree-sitter-bash drops a lone `-` before a heredoc
                layer.dashes.add(start)
            else:
                self.unknown.append(f"{_short(text)}: bash would not parse this cleanly")
        self._visit(tree.root_node, layer)
        self.layers.append((layer, tree.root_node))  # its mentions are checked at the end

    def _find_aliases(self, root: Any, layer: _Layer) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "command":
                name = node.child_by_field_name("name")
                if name is not None and _word(name, layer.src).value == "alias":
                    args = [_word(a, layer.src) for a in node.children_by_field_name("argument")]
                    self._alias([_word(name, layer.src), *args])
            stack.extend(reversed(node.children))

    def _alias(self, argv: list[_Word]) -> None:
        """``alias name=text``: remember it; one built from expansions cannot be read."""
        for word in argv[1:]:
            if word.value is None:
                self.unknown.append(
                    f"{_short(' '.join(w.raw for w in argv))}: an alias built from variables "
                    "or substitutions, which the hook cannot read"
                )
            elif "=" in word.value and not word.value.startswith("-"):
                name, _, text = word.value.partition("=")
                self.aliases[name] = text

    def _expand_alias(self, argv: list[_Word], layer: _Layer) -> None:
        """A command word that names an alias is read as its expansion too (bash expands the
        first word, and the next one after an alias ending in a blank; reading both the word
        and its expansion, wherever it stands, is the safe side of that rule)."""
        name = argv[0].raw
        text = self.aliases.get(name)
        if text is None or name in self.expanding or argv[0].value != name:
            return  # not an alias, or quoted (a quoted word is never expanded)
        self.expanding.add(name)
        try:
            self.read(" ".join([text, *(w.raw for w in argv[1:])]), layer.depth + 1)
        finally:
            self.expanding.discard(name)

    def _check_mentions(self, layer: _Layer, root: Any) -> None:
        """Text that names a glab merge, once the words read as glab's own and the text re-read
        as a script are taken out: the raw text (quotes and all), and the same words unquoted."""
        masked = bytearray(layer.src)
        for start, end in layer.consumed:
            masked[start:end] = b" " * (end - start)
        raw = masked.decode("utf-8", "replace")
        unquoted = " ".join(self._free_words(root, layer))
        for text in (raw, unquoted):
            if _mentions_merge(text):
                self.mentions.append(_short(text))
                return

    def _free_words(self, root: Any, layer: _Layer) -> Iterator[str]:
        stack = [root]  # depth first, in order, without recursion (a command may nest deeply)
        while stack:
            node = stack.pop()
            if (node.start_byte, node.end_byte) in layer.consumed:
                continue
            if node.type in _WORDISH:
                yield _word(node, layer.src).loose
            elif node.type in ("heredoc_body", "comment"):
                text = bytearray(layer.src[node.start_byte : node.end_byte])
                for child in node.children:  # its substitutions are read below, as commands
                    start = child.start_byte - node.start_byte
                    end = child.end_byte - node.start_byte
                    text[start:end] = b" " * (end - start)
                yield text.decode("utf-8", "replace")
            stack.extend(reversed(node.children))  # substitutions inside words are words too

    # the tree

    def _visit(self, node: Any, layer: _Layer, stdin: _Stdin | None = None) -> None:
        if self.level >= _TREE_BUDGET:
            if not self.over_budget:
                self.over_budget = True
                self.unknown.append(
                    f"{_short(layer.src.decode('utf-8', 'replace'))}: nested more than "
                    f"{_TREE_BUDGET} levels deep, the reader's budget; it reads no deeper"
                )
            return
        self.level += 1
        try:
            kind = node.type
            if kind == "command":
                self._command(node, layer, stdin)
            elif kind == "redirected_statement":
                self._redirected(node, layer, stdin)
            elif kind == "pipeline":
                self._pipeline(node.children, layer, stdin)
            else:
                if kind == "variable_assignment":
                    self._assignment(node, layer)
                for child in node.children:
                    self._visit(child, layer)
        finally:
            self.level -= 1

    def _pipeline(self, children: list[Any], layer: _Layer, stdin: _Stdin | None) -> None:
        for child in children:
            if child.type in ("|", "|&"):
                continue
            self._visit(child, layer, stdin)
            stdin = self._output_of(child, layer, stdin)

    def _redirected(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> None:
        body = node.child_by_field_name("body")
        tails: list[Any] = []
        writes: list[tuple[str | None, bool, bool]] = []  # (path, appends, whole output)
        for child in node.children:
            if body is not None and child.id == body.id:
                continue
            if child.type == "heredoc_redirect":
                stdin = self._heredoc(child, layer)
                for sub in child.children:
                    if sub.type == "pipeline":
                        tails.append(sub)
                    elif sub.type == "heredoc_body":
                        for expansion in sub.children:
                            self._visit(expansion, layer)
                    elif sub.type not in ("<<", "<<-", "heredoc_start", "heredoc_end"):
                        self._visit(sub, layer)
            elif child.type == "herestring_redirect":
                stdin = self._herestring(child, layer)
            elif child.type == "file_redirect":
                operator = next((c.type for c in child.children if c.type[:1] in "<>&"), "")
                target = child.child_by_field_name("destination")
                path = _word(target, layer.src).value if target is not None else None
                if operator in ("<", "<&"):
                    stdin = self.files.get(_file_key(path), _OPAQUE) if path else _OPAQUE
                elif operator in (">", ">>", ">|", "&>", "&>>") or (
                    operator == ">&" and path is not None and not path.isdigit()
                ):
                    whole = child.child_by_field_name("descriptor") is None or operator[0] == "&"
                    writes.append((path, operator.endswith(">>"), whole))
                self._visit(child, layer)
            else:
                self._visit(child, layer)
        if body is not None:
            self._visit(body, layer, stdin)
            out = self._output_of(body, layer, stdin)
        else:
            out = _OPAQUE
        for path, append, whole in writes:  # what the body writes is what the file holds
            self._write_file(path, out if whole else _OPAQUE, append=append)
        for tail in tails:
            self._pipeline(tail.children, layer, out)

    def _write_file(self, path: str | None, text: _Stdin, *, append: bool = False) -> None:
        if path is None:
            self.unnamed_writes = True
            return
        key = _file_key(path)
        before = self.files.get(key)
        if append and before is not None:
            joined = None if before.text is None or text.text is None else before.text + text.text
            text = _Stdin(joined, dynamic=before.dynamic or text.dynamic)
        elif append and text.text is not None:  # appended to what the file held before
            text = _DYNAMIC_STDIN
        if text.text is None:
            text = _DYNAMIC_STDIN  # written, with content the reader cannot tell
        self.files[key] = text

    def _heredoc(self, node: Any, layer: _Layer) -> _Stdin:
        """A heredoc's text as the shell it feeds would read it. An unquoted body's expansions
        stay in the text: re-read, they are the expansions they are (its substitutions run in
        the outer shell and are read there too)."""
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return _Stdin("")
        text = layer.src[body.start_byte : body.end_byte].decode("utf-8", "replace")
        if any(c.type == "<<-" for c in node.children):
            text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
        return _Stdin(text, spans=((body.start_byte, body.end_byte),))

    def _herestring(self, node: Any, layer: _Layer) -> _Stdin:
        target = next((c for c in node.children if c.type != "<<<"), None)
        if target is None:
            return _Stdin("")
        self._visit(target, layer)
        word = _word(target, layer.src)
        if word.value is None:
            return _Stdin(None, dynamic=True)
        return _Stdin(word.value + "\n", spans=(word.span,) if word.span else ())

    def _output_of(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> _Stdin:
        """What a pipeline stage writes, when the command line spells it: echo, printf, cat."""
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            return self._output_of(body, layer, stdin) if body is not None else _OPAQUE
        if node.type != "command":
            return _OPAQUE
        name = node.child_by_field_name("name")
        if name is None:
            return _OPAQUE
        args = [_word(a, layer.src) for a in node.children_by_field_name("argument")]
        program = _word(name, layer.src).tail
        spans = tuple(a.span for a in args if a.span)
        if program == "echo":
            escapes, newline = False, True
            while args and re.fullmatch(r"-[neE]+", args[0].value or ""):
                flags = args[0].value or ""
                escapes = "e" in flags if "e" in flags or "E" in flags else escapes
                newline = newline and "n" not in flags
                args = args[1:]
            values = [a.value for a in args]
            if any(v is None for v in values):
                return _DYNAMIC_STDIN
            text = " ".join(v for v in values if v is not None)
            if escapes:
                text, stopped = _echo_escapes(text)
                newline = newline and not stopped
            return _Stdin(text + ("\n" if newline else ""), spans=spans)
        if program == "printf":
            values = [a.value for a in args]
            if values[:1] == ["--"]:
                values = values[1:]
            printed = _printf(values) if values and values[0] != "-v" else None
            if printed is None:
                return _DYNAMIC_STDIN
            return _Stdin(printed, spans=spans)
        if program == "cat" and all(a.value == "-" for a in args):
            return stdin or _OPAQUE
        if program == "cat" and all(a.value and not a.value.startswith("-") for a in args):
            parts = [self.files.get(_file_key(a.value or "")) for a in args]
            if all(p is not None and p.text is not None for p in parts):
                return _Stdin("".join(p.text or "" for p in parts if p is not None))
            return _DYNAMIC_STDIN if any(p is not None for p in parts) else _OPAQUE
        if program == "tee":
            return stdin or _OPAQUE
        return _OPAQUE

    # one simple command

    def _command(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> None:
        self.simple_commands += 1
        env: dict[str, _Word] = {}
        argv: list[_Word] = []
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if child.type == "variable_assignment":
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                if name is not None:
                    env[name.text.decode()] = (
                        _word(value, layer.src) if value is not None else _literal_word("")
                    )
                for part in child.children:  # the command's own: read with the command (git)
                    self._visit(part, layer)
            elif field_name in ("name", "argument"):
                argv.append(_word(child, layer.src))
                self._visit(child, layer)
            elif child.type == "herestring_redirect":
                stdin = self._herestring(child, layer)
            else:
                self._visit(child, layer)
        if argv and any(
            d >= node.end_byte and not layer.src[node.end_byte : d].strip() for d in layer.dashes
        ):
            argv.append(_literal_word("-"))  # the `-` the parser dropped (see _uncovered)
        if argv:
            self._argv(argv, env, stdin, layer, open_args=False)

    def _assignment(self, node: Any, layer: _Layer) -> None:
        """``NAME=value`` on its own or exported: git reads GIT_CONFIG_* from the environment,
        so one that sets auto-merge push options (or that the hook cannot read) blocks."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or not re.fullmatch(r"GIT_CONFIG\w*", name.text.decode("utf-8", "replace")):
            return
        text = _word(value, layer.src).value if value is not None else ""
        if text is None or _AUTO_MERGE_TEXT.search(text):
            self.unknown.append(
                f"{_short(layer.src[node.start_byte : node.end_byte].decode('utf-8', 'replace'))}"
                ": git configuration set through the environment for the commands after it, "
                "which may arm auto-merge on a push; pass it to the one git command instead "
                "(git -c push.pushOption=...)"
            )

    # program readers: argv, the command's assignments, its standard input, the layer

    _PROGRAMS: dict[str, str] = {  # noqa: RUF012 (a constant table)
        "script": "_script",
        "su": "_su",
        "runuser": "_su",
        "flock": "_flock",
        "tmux": "_tmux",
        "source": "_source",
        ".": "_source",
        "find": "_find",
        "make": "_make",
        "gmake": "_make",
        "git": "_git",
        "tee": "_tee",
        "cp": "_copy",
        "ln": "_copy",
        "install": "_copy",
        "mv": "_copy",
    }

    def _argv(
        self,
        argv: list[_Word],
        env: dict[str, _Word],
        stdin: _Stdin | None,
        layer: _Layer,
        *,
        open_args: bool,
    ) -> None:
        """Look through wrappers to the program that runs, then read it."""
        while argv:
            if self.aliases:
                self._expand_alias(argv, layer)
            program = argv[0].tail
            if program is None:
                self._dynamic_program(argv)
                return
            if program == "alias":
                self._alias(argv)
                return
            if program in ("sudo", "doas") and self._sudo_shell(argv, stdin, layer):
                return
            unwrapped = _unwrap(program, argv, env)
            if unwrapped is not None:
                argv, more_open = unwrapped
                open_args = open_args or more_open
                continue
            if program == "env" and _env_split(argv) is not None:
                self._reread_words(argv, _env_split(argv) or [], layer, "env -S")
                return
            if program == "busybox" and len(argv) > 1:
                argv = argv[1:]
                continue
            if program in _SHELLS:
                self._shell(argv, stdin, layer, open_args)
                return
            if program == "eval":
                self._reread_words(argv, argv[1:], layer, "eval")
                return
            if program == "trap":
                operands = [w for w in argv[1:] if w.value != "--"]
                if len(operands) >= 2 and (operands[0].value or "x")[:1] != "-":
                    self._reread_words(argv, operands[:1], layer, "trap")
                return
            if program == "watch":
                self._watch(argv, env, stdin, layer)
                return
            if program in self._PROGRAMS:
                getattr(self, self._PROGRAMS[program])(argv, env, stdin, layer)
                return
            if program == "glab" or program in self.glab_names:
                self._glab(argv, env, layer, open_args)
                return
            if self._run_written(argv, stdin, layer):
                return
            self._other(argv, env, stdin, layer)
            return

    def _dynamic_program(self, argv: list[_Word]) -> None:
        """A program whose name bash computes could be glab, with any subcommand split out of
        the same expansion: it is unknown, whatever follows it."""
        self.unknown.append(
            f"{_short(' '.join(w.raw for w in argv))}: bash computes the program's name (a "
            "variable, a substitution, a glob or a brace), so the hook cannot tell whether it is "
            "glab; spell the program out"
        )

    def _reread_words(self, argv: list[_Word], words: list[_Word], layer: _Layer, how: str) -> None:
        values = [w.value for w in words]
        if any(v is None for v in values):
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: {how} runs text built from variables "
                "or substitutions, which the hook cannot read"
            )
            return
        for w in words:
            if w.span:
                layer.consumed.add(w.span)
        self.read(" ".join(v for v in values if v is not None), layer.depth + 1)

    def _read_source(
        self, source: _Stdin | None, argv: list[_Word], layer: _Layer, how: str
    ) -> None:
        """Re-read a script a program runs, when the command line spells it."""
        if source is None:
            return  # a file the command did not write, or the session's own input: not read
        if source.text is not None:
            layer.consumed.update(source.spans)
            self.read(source.text, layer.depth + 1)
        elif source.dynamic:
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: {how} runs commands built from "
                "variables or substitutions, or from a file this command writes with content "
                "the hook cannot read"
            )

    def _script_source(self, word: _Word, stdin: _Stdin | None, layer: _Layer) -> _Stdin | None:
        """The script a shell or ``source`` reads from the file ``word`` names: standard input,
        a process substitution's output, a file the command writes; None for any other file."""
        node = word.node
        if node is not None and node.type == "process_substitution":
            inner = [c for c in node.children if c.type not in ("<(", ">(", ")")]
            if len(inner) == 1:
                return self._output_of(inner[0], layer, None)
            return _DYNAMIC_STDIN
        value = word.value
        if value is None:
            self.script_runs.append((None, layer))
            return None
        if value in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
            return stdin
        key = _file_key(value)
        if key in self.files:
            return self.files[key]
        self.script_runs.append((key, layer))
        return None

    def _run_written(self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer) -> bool:
        """A program named by a path (bash looks a name with a slash up as a file): when the
        command writes that file, what runs is what it wrote."""
        path = argv[0].value
        if path is None or "/" not in path:
            return False
        source = self._script_source(argv[0], stdin, layer)
        if source is None:
            return False
        self._read_source(source, argv, layer, argv[0].raw)
        return True

    def _shell_stdin(self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer) -> None:
        """A shell that reads its commands from standard input."""
        if stdin is None:
            return  # the session's own (empty) input
        if stdin.text is not None:
            layer.consumed.update(stdin.spans)
            self.read(stdin.text, layer.depth + 1)
        elif stdin.dynamic:
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: a shell reads commands built from "
                "variables or substitutions"
            )

    def _shell(
        self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer, open_args: bool
    ) -> None:
        """sh/bash/zsh: re-read what ``-c`` runs, a script fed on standard input (``-s`` or no
        operand), or a script file the command line spells (/dev/stdin, ``<(...)``, a file the
        command writes)."""
        i, command_mode, stdin_mode = 1, False, False
        while i < len(argv):
            value = argv[i].value
            substitution = getattr(argv[i].node, "type", "") == "process_substitution"
            if value is None and (command_mode or substitution):
                break  # the text -c runs, or the script <(...) writes: read below
            if value is None:
                self.unknown.append(
                    f"{_short(' '.join(w.raw for w in argv))}: a shell argument built from "
                    "variables or substitutions (it could be -c)"
                )
                return
            if value in ("-", "--"):
                i += 1
                break
            if value.startswith("--"):
                i += 2 if value in ("--rcfile", "--init-file") else 1
                continue
            if len(value) > 1 and value[0] in "-+":
                letters = value[1:]
                command_mode = command_mode or "c" in letters
                stdin_mode = stdin_mode or "s" in letters
                i += 1 + sum(1 for ch in letters if ch in "oO")
                continue
            break
        operands = argv[i:]
        if command_mode:
            if operands:
                self._reread_words(argv, operands[:1], layer, f"{argv[0].raw} -c")
            elif open_args:
                self.unknown.append(f"{_short(' '.join(w.raw for w in argv))}: xargs feeds -c")
            return
        if operands and not stdin_mode:
            source = self._script_source(operands[0], stdin, layer)
            self._read_source(source, argv, layer, argv[0].raw)
            return
        self._shell_stdin(argv, stdin, layer)

    def _watch(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        i, direct = 1, False
        while i < len(argv) and (argv[i].value or "").startswith("-"):
            value = argv[i].value or ""
            if value == "--":
                i += 1
                break
            direct = direct or value in ("-x", "--exec")
            takes = value in ("-n", "--interval", "-q", "--equexit") or re.fullmatch(
                r"-[a-z]*[nq]", value
            )
            i += 2 if takes else 1
        rest = argv[i:]
        if direct:
            self._argv(rest, env, stdin, layer, open_args=False)
        elif rest:
            self._reread_words(argv, rest, layer, "watch")

    def _unclear(self, argv: list[_Word], what: str) -> None:
        self.unknown.append(
            f"{_short(' '.join(w.raw for w in argv))}: {argv[0].raw}'s arguments are built "
            f"from variables or substitutions, and one could be {what}"
        )

    def _script(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """util-linux ``script``: ``-c COMMAND`` runs in ``$SHELL -c``; without it, an
        interactive shell reads standard input (term-utils/script.c)."""
        options, _operands, unclear = _getopt(argv[1:], _SCRIPT_OPTS)
        if unclear:
            self._unclear(argv, "-c")
            return
        commands = [v for name, v in options if name in ("c", "command") and v is not None]
        for command in commands:
            self._reread_words(argv, [command], layer, "script -c")
        if not commands:
            self._shell_stdin(argv, stdin, layer)

    def _su(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """``su``/``runuser``: ``-c``/``--command``/``--session-command`` run in the user's
        shell; arguments after the user go to that shell (``su root -- -c CMD``); ``runuser -u
        USER CMD...`` runs a command directly; with none, the shell reads standard input."""
        runuser = argv[0].tail == "runuser"
        options, operands, unclear = _getopt(argv[1:], _RUNUSER_OPTS if runuser else _SU_OPTS)
        if unclear:
            self._unclear(argv, "-c")
            return
        commands = [v for name, v in options if name in ("c", "command", "session-command") and v]
        for command in commands:
            self._reread_words(argv, [command], layer, f"{argv[0].raw} -c")
        if runuser and any(name in ("u", "user") for name, _ in options):
            if operands:
                self._argv(operands, {}, stdin, layer, open_args=False)
            return
        if operands and operands[0].value == "-":
            operands = operands[1:]
        if len(operands) > 1:
            self._shell([_literal_word("sh"), *operands[1:]], stdin, layer, False)
        elif not commands:
            self._shell_stdin(argv, stdin, layer)

    def _sudo_shell(self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer) -> bool:
        """``sudo -s``/``-i`` (and ``doas -s``) run the command in a shell: sudo joins its words
        with spaces and escapes every character but letters, digits, ``_``, ``-`` and ``$``
        (sudo's parse_args.c), and the shell reads that; with no command, the shell reads
        standard input. True when it was such a call."""
        doas = argv[0].tail == "doas"
        options, operands, unclear = _getopt(argv[1:], _DOAS_OPTS if doas else _SUDO_OPTS)
        if not {name for name, _ in options} & {"s", "shell", "i", "login"}:
            return False
        if unclear:
            self._unclear(argv, "the command")
            return True
        while operands and _ASSIGNMENT.match(operands[0].value or ""):
            operands = operands[1:]  # sudo's own VAR=value
        if doas or not operands:
            self._shell_stdin(argv, stdin, layer)
            return True
        values = [w.value for w in operands]
        if any(v is None for v in values):
            self._reread_words(argv, operands, layer, f"{argv[0].raw} -s")
            return True
        self._consume(layer, operands)
        text = " ".join(re.sub(r"([^A-Za-z0-9_$-])", r"\\\1", v or "") for v in values)
        self.read(text, layer.depth + 1)
        return True

    def _flock(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """``flock [options] FILE -c COMMAND`` (a shell string) or ``flock FILE COMMAND...``."""
        options, operands, unclear = _getopt(argv[1:], _FLOCK_OPTS)
        if unclear:
            self._unclear(argv, "-c")
            return
        commands = [v for name, v in options if name in ("c", "command") and v is not None]
        if len(operands) >= 3 and operands[1].value in ("-c", "--command"):
            commands.append(operands[2])
        for command in commands:
            self._reread_words(argv, [command], layer, "flock -c")
        if not commands and len(operands) >= 2:
            self._argv(operands[1:], {}, stdin, layer, open_args=False)

    def _tmux(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """tmux runs shell commands for new-session, new-window, split-window, respawn-*,
        run-shell, display-popup, pipe-pane and if-shell, types keys with send-keys, and runs
        ``-c`` itself; commands chain with ``;`` (tmux(1))."""
        options, operands, unclear = _getopt(argv[1:], _TMUX_OPTS)
        if unclear:
            self._unclear(argv, "a command")
            return
        for name, value in options:
            if name == "c" and value is not None:
                self._reread_words(argv, [value], layer, "tmux -c")
        command: list[_Word] = []
        for word in [*operands, _literal_word(";")]:
            if word.value == ";":
                self._tmux_command(argv, command, layer)
                command = []
            else:
                command.append(word)

    def _tmux_command(self, argv: list[_Word], words: list[_Word], layer: _Layer) -> None:
        if not words:
            return
        name = words[0].value
        if name is None:
            self._unclear(argv, "a command that runs a shell")
            return
        found = _tmux_lookup(name)
        if found is None:
            return
        canonical, spec = found
        options, operands, unclear = _getopt(words[1:], spec)
        if unclear:
            self._unclear(argv, "a shell command")
            return
        if canonical == "send-keys":
            literal = any(option == "l" for option, _ in options)
            keys = [w.value for w in operands]
            if any(k is None for k in keys):
                self._unclear(argv, "a key")
                return
            typed = "".join(
                "\n" if not literal and k in ("Enter", "C-m", "C-j", "KPEnter") else k or ""
                for k in keys
            )
            self._consume(layer, operands)
            self.read(typed, layer.depth + 1)
            return
        if not operands:
            return
        if canonical == "if-shell":
            self._reread_words(argv, operands[:1], layer, "tmux if-shell")
            for text in operands[1:]:  # tmux commands, in tmux's own syntax
                try:
                    inner = shlex.split(text.value or "") if text.value is not None else None
                except ValueError:
                    inner = None
                if inner is None:
                    self._unclear(argv, "a command that runs a shell")
                else:
                    self._consume(layer, [text])
                    self._tmux_command(argv, [_literal_word(w) for w in inner], layer)
        elif canonical in ("run-shell", "pipe-pane") or len(operands) == 1:
            self._reread_words(argv, operands[:1], layer, f"tmux {canonical}")
        else:
            self._argv(operands, {}, None, layer, open_args=False)

    def _source(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """``source FILE`` / ``. FILE``: the file's commands run in this shell."""
        operands = [w for w in argv[1:] if w.value != "--"]
        if operands:
            source = self._script_source(operands[0], stdin, layer)
            self._read_source(source, argv, layer, argv[0].raw)

    def _find(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """``find ... -exec|-execdir|-ok|-okdir COMMAND... ;|+``: COMMAND runs once per file
        found, with each ``{}`` replaced by a path find computes; a ``{}`` as the program runs
        what it finds."""
        i = 1
        while i < len(argv):
            if argv[i].value not in ("-exec", "-execdir", "-ok", "-okdir"):
                i += 1
                continue
            j = i + 1
            while j < len(argv) and argv[j].value not in (";", "+"):
                j += 1
            command = [
                w if w.value is not None and "{}" not in w.value else _dynamic_word(w)
                for w in argv[i + 1 : j]
            ]
            if command and command[0].value is None:
                self.unknown.append(
                    f"{_short(' '.join(w.raw for w in argv))}: find runs the files it finds as "
                    f"the program ({command[0].raw}), and one could be glab"
                )
            elif command:
                self._argv(command, {}, None, layer, open_args=False)
            i = j + 1

    def _make(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """make runs its recipes in a shell: the makefile is read when the command line spells
        it (``-f -`` from a heredoc, ``--eval``, a makefile the command writes)."""
        options, _operands, unclear = _getopt(argv[1:], _MAKE_OPTS)
        if unclear:
            self._unclear(argv, "-f or --eval")
            return
        named = [v for name, v in options if name in ("f", "file", "makefile") and v is not None]
        sources: list[_Stdin | None] = []
        for word in named:
            if word.value == "-":
                sources.append(stdin)
            else:
                sources.append(self._script_source(word, stdin, layer))
        if not named:  # the default makefiles, when this command writes one
            sources += [self.files.get(n) for n in ("GNUmakefile", "makefile", "Makefile")]
        for name, value in options:
            if name in ("E", "eval") and value is not None:
                spans = (value.span,) if value.span else ()
                text = value.value
                sources.append(_Stdin(text, spans=spans) if text is not None else _DYNAMIC_STDIN)
        for source in sources:
            if source is None or (source.text is None and not source.dynamic):
                continue
            if source.text is None:
                self._read_source(source, argv, layer, "make")
                continue
            layer.consumed.update(source.spans)
            commands = _makefile_commands(source.text)
            if commands:
                self.read("\n".join(commands), layer.depth + 1)

    def _tee(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        options, operands, _ = _getopt(argv[1:], _TEE_OPTS)
        append = any(name in ("a", "append") for name, _ in options)
        for word in operands:
            self._write_file(word.value, stdin or _OPAQUE, append=append)

    def _copy(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """cp, ln, install, mv: a copy of glab (or of something bash computes) under another
        name is read as glab under that name; a copy of a file the command writes holds what
        it wrote."""
        _options, operands, _ = _getopt(argv[1:], _COPY_OPTS)
        if len(operands) < 2:
            return
        sources, target = operands[:-1], operands[-1]
        for source in sources:
            into_dir = (target.value or "").endswith("/") or len(sources) > 1
            name = source.tail if into_dir else target.tail
            if (source.tail == "glab" or source.value is None) and name:
                self.glab_names.add(name)
            if len(sources) == 1 and source.value is not None and target.value is not None:
                written = self.files.get(_file_key(source.value))
                if written is not None:
                    self.files[_file_key(target.value)] = written

    def _other(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """Any other program. It may be a renamed copy of glab (read as glab when its command
        word is `mr`, `api` or `alias set`), or run one of its arguments (ssh, parallel):
        read from any argument that names glab, a shell or eval."""
        values = [w.value for w in argv]
        top = _cobra_traverse(values[1:])
        if top is not None and top >= 0:
            word, after = values[1 + top], values[2 + top : 3 + top]
            if word in ("mr", "api") or (word == "alias" and after == ["set"]):
                if word == "alias" and argv[0].tail:
                    self.glab_names.add(argv[0].tail)  # its aliases run as `<name> <alias>`
                self._glab(argv, env, layer, open_args=False)
                return
        for i in range(1, len(argv)):
            tail = argv[i].tail
            if tail in _SHELLS or tail in ("glab", "eval"):
                self._argv(argv[i:], env, None, layer, open_args=False)

    # glab itself, read as cobra and glab's main read it

    def _glab(
        self,
        argv: list[_Word],
        env: dict[str, _Word],
        layer: _Layer,
        open_args: bool,
        *,
        expanded: bool = False,
    ) -> None:
        call = _GlabCall(_short(" ".join(w.raw for w in argv)), [argv[0]], None, env, open_args)
        args = argv[1:]
        values = [w.value for w in args]
        top = _cobra_traverse(values)
        if top is None:
            self.unknown.append(
                f"{call.words}: a glab command word built from variables or substitutions"
            )
            return
        before = args[:top] if top >= 0 else args
        self._root_repo(call, before)
        name = values[top] if top >= 0 else None
        if name is None or name not in _GLAB_COMMANDS:
            self._glab_root(call, args, name, layer, expanded)
            return
        call.structural.append(args[top])
        rest = args[top + 1 :]
        if name == "api":
            self._glab_api(call, rest, layer)
        elif name == "mr":
            self._glab_mr(call, rest, layer)
        elif name == "alias":
            self._glab_alias(call, rest, layer)
        else:
            self._consume(layer, call.structural)

    def _root_repo(self, call: _GlabCall, words: list[_Word]) -> None:
        """glab's hidden global -R before the command word (internal/cmdutils/repo_override.go)."""
        i = 0
        while i < len(words):
            value = words[i].value or ""
            if value in ("-R", "--repo") and i + 1 < len(words):
                call.repo = words[i + 1]
                call.structural += words[i : i + 2]
                i += 2
                continue
            if value.startswith("--repo="):
                call.repo = _literal_word(value[len("--repo=") :])
                call.structural.append(words[i])
            elif value.startswith("-R") and len(value) > 2:
                call.repo = _literal_word(value[2:].removeprefix("="))  # -Racme/app, -R=acme/app
                call.structural.append(words[i])
            i += 1

    def _glab_root(
        self, call: _GlabCall, args: list[_Word], word: str | None, layer: _Layer, expanded: bool
    ) -> None:
        """No glab command: glab looks its first argument up as an alias (cmd/glab/main.go)."""
        if not args:
            return
        if expanded:
            return  # an alias expands once; what it leaves unknown is glab's usage error
        first = args[0].value or ""
        alias = self.glab_aliases.get(first)
        if alias is not None:
            self._glab_alias_use(call, alias, args[1:], layer)
        elif call.open_args:
            self.unknown.append(f"{call.words}: glab's command comes from xargs' input")
        elif first in _GLAB_NOT_ALIASES:
            self._consume(layer, call.structural)
        else:
            self.unknown.append(
                f"{call.words}: `glab {word or first}` is not a command of {_GLAB_SOURCE}, so "
                "glab looks it up as an alias, and an alias could expand to a merge; spell "
                "the glab command itself"
            )

    def _glab_mr(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        i = 0
        while i < len(args):
            value = args[i].value
            if value is None:
                self.unknown.append(
                    f"{call.words}: a glab command word built from variables or substitutions"
                )
                return
            if value in ("-R", "--repo") and i + 1 < len(args):
                call.repo = args[i + 1]
                call.structural += args[i : i + 2]
                i += 2
                continue
            if value.startswith("--repo="):
                call.repo = _literal_word(value[len("--repo=") :])
                call.structural.append(args[i])
            elif value.startswith("-R") and len(value) > 2 and not value.startswith("--"):
                call.repo = _literal_word(value[2:].removeprefix("="))
                call.structural.append(args[i])
            elif value in ("-h", "--help"):
                return  # glab prints help
            elif not value.startswith("-"):
                break
            i += 1
        else:
            if call.open_args:
                self.unknown.append(f"{call.words}: glab's command comes from xargs' input")
            return
        sub = args[i].value or ""
        call.structural.append(args[i])
        rest = args[i + 1 :]
        command = _GLAB_MR_COMMANDS.get(sub)
        if command == "merge" or (command is None and _is_merge_word(sub)):
            self._glab_merge(call, rest, layer)
        elif command in ("note", "update"):
            self._glab_note(call, rest, layer, command)
        else:
            self._consume(layer, call.structural)

    def _consume(self, layer: _Layer, words: list[_Word]) -> None:
        layer.consumed.update(w.span for w in words if w.span)

    def _glab_merge(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        """``glab mr merge|accept [<id> | <branch> | <url>] [flags]``."""
        flags = _cobra(args, _MERGE_FLAGS)
        call.structural += flags.spelled.get("--repo", [])
        self._consume(layer, call.structural)
        if flags.help:
            return  # cobra prints the help and merges nothing
        repo = flags.last("--repo", call.repo)
        project, iid, problem = _attribute(
            flags.positionals, flags.unclear, repo, call.env, call.open_args
        )
        # pflag keeps the last --sha; glab sends it only when it is not empty (mr_merge.go)
        shas: tuple[str | None, ...] = ()
        if "--sha" in flags.values:
            sha = flags.values["--sha"][-1]
            if sha is None or sha.value is None:
                shas = (None,)
            elif sha.value:
                shas = (sha.value,)
        for reading in _host_readings(project):
            self.merges.append(MergeFound(call.words, reading, iid, problem, shas))

    def _glab_note(self, call: _GlabCall, args: list[_Word], layer: _Layer, command: str) -> None:
        """``glab mr note -m TEXT`` and ``glab mr update -d TEXT``: GitLab runs the quick
        actions in a note and in a description, and ``/merge`` merges."""
        flags = _cobra(args, _NOTE_FLAGS if command == "note" else _UPDATE_FLAGS)
        call.structural += flags.spelled.get("--repo", [])
        self._consume(layer, call.structural)
        text = flags.last("--message" if command == "note" else "--description", None)
        if flags.help or text is None or text.value is None:
            return  # no text, or text from a file: see "Not covered" in the reference
        if not _QUICK_MERGE.search(text.value):
            return
        repo = flags.last("--repo", call.repo)
        project, iid, problem = _attribute(
            flags.positionals, flags.unclear, repo, call.env, call.open_args
        )
        for reading in _host_readings(project):
            self.merges.append(MergeFound(call.words, reading, iid, problem, (), "/merge"))

    def _glab_alias(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        """``glab alias set NAME EXPANSION [--shell]``: remembered, so that a use later in the
        command is read as what it expands to (internal/commands/alias/set/alias_set.go)."""
        self._consume(layer, call.structural)
        flags = _cobra(args, _ALIAS_SET_FLAGS)
        words = [w for _, w in flags.positionals]
        if flags.help or len(words) < 3 or words[0].value != "set":
            return
        if len(words) != 3:
            return  # cobra.ExactArgs(2): glab refuses it
        name, expansion = words[1].value, words[2]
        if name is None:
            self.unknown.append(f"{call.words}: a glab alias whose name is built from variables")
            return
        if name.startswith("-"):
            self.unknown.append(
                f"{call.words}: a glab alias named like a flag ({name}) would run in place of "
                "glab's own flags; the hook refuses it"
            )
            return
        if name in _GLAB_COMMANDS or name == "help":
            return  # glab refuses to shadow a command
        shell = "--shell" in flags.spelled or (expansion.value or "").startswith("!")
        self.glab_aliases[name] = (expansion.value, shell, layer, expansion.span)

    def _glab_alias_use(
        self,
        call: _GlabCall,
        alias: tuple[str | None, bool, _Layer, tuple[int, int] | None],
        args: list[_Word],
        layer: _Layer,
    ) -> None:
        """A glab alias, expanded as internal/commands/alias/expand/alias_expand.go does:
        ``!TEXT`` runs ``sh -c TEXT -- ARGS``; otherwise each ``$N`` is replaced by the Nth
        argument (the rest appended while the text has no ``$``) and the text split like a
        shell would (google/shlex), once: the expansion is not looked up again."""
        text, shell, where, span = alias
        self._consume(layer, call.structural)
        if span:
            where.consumed.add(span)
        if text is None:
            self.unknown.append(f"{call.words}: runs a glab alias built from variables")
            return
        if shell:
            self.read(text.removeprefix("!"), layer.depth + 1)
            return
        extra: list[_Word] = []
        for index, word in enumerate(args, start=1):
            if "$" not in text:
                extra.append(word)
            elif word.value is None:
                self.unknown.append(f"{call.words}: an alias argument built from variables")
                return
            else:
                text = text.replace(f"${index}", word.value)
        if re.search(r"\$\d", text):
            return  # glab: not enough arguments for alias
        try:
            words = shlex.split(text, comments=True)
        except ValueError:
            return  # glab refuses it
        argv = [call.structural[0], *(_literal_word(w) for w in words), *extra]
        self._glab(argv, call.env, layer, call.open_args, expanded=True)

    def _glab_api(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        """``glab api <endpoint> [flags]``, with the endpoint read as glab builds the URL
        (internal/commands/api/http.go): a merge, a merge train, a /merge note, or a GraphQL
        mergeRequestAccept."""
        flags = _cobra(args, _API_FLAGS)
        if flags.help:
            return
        endpoint = flags.positionals[0][1] if flags.positionals else None
        for name in ("--method", "--repo", "--hostname"):
            call.structural += flags.spelled.get(name, [])
        if endpoint is not None:
            call.structural.append(endpoint)
        fields, opaque = _api_fields(flags)
        if endpoint is None:
            if call.open_args:
                self.unknown.append(f"{call.words}: the endpoint comes from xargs' input")
            return
        target = endpoint.value
        route = _api_route(target) if target is not None else None
        if route is not None and route[0] == "graphql":
            self._consume(layer, call.structural)
            self._consume(layer, flags.spelled.get("--raw-field", []))
            self._consume(layer, flags.spelled.get("--field", []))
            self._graphql(call.words, fields, opaque)
            return
        method = flags.last("--method", None)
        if method is None:
            verb: str | None = "POST" if fields or opaque else "GET"  # glab's default
        else:
            verb = method.value.upper() if method.value is not None else None
        if verb is None:
            self.unknown.append(f"{call.words}: the HTTP method is built from variables")
            return
        if verb in ("GET", "HEAD"):
            self._consume(layer, call.structural)
            return  # a read merges nothing
        if route is None:
            self.unknown.append(
                f"{call.words}: a {verb} to an endpoint built from variables or substitutions"
            )
            return
        self._consume(layer, call.structural)
        found = _mr_endpoint(route[1]) if route[0] == "rest" else None
        if found is None:
            return
        kind, project_text, iid_text = found
        query = route[2]
        repo = flags.last("--repo", call.repo)
        project, iid, problem = _attribute_endpoint(project_text, iid_text, repo, call.env)
        shas: list[str | None] = []
        if kind in ("merge", "train"):
            what = "merge"
            shas += [fields["sha"]] if "sha" in fields else []
            shas += [v for k, v in query if k == "sha"]
        else:  # a note, a discussion, a draft note, the merge request's description
            what = "/merge"
            key = {"mr": "description", "draft_notes": "note"}.get(kind, "body")
            texts = [fields.get(key, ""), *(v for k, v in query if k == key)]
            if kind != "mr":
                sha_key = "merge_request_diff_head_sha"
                shas += [fields[sha_key]] if sha_key in fields else []
                shas += [v for k, v in query if k == sha_key]
            seen = any(t is not None and _QUICK_MERGE.search(t) for t in texts)
            unread = opaque or any(t is None for t in texts)
            if not seen and not (unread and (shas or opaque)):
                return  # no /merge it can see, and none GitLab would run (no head SHA given)
        if opaque:
            shas.append(None)
        readings = _host_readings(project) if project != project_text else (project,)
        for reading in readings:  # only a project -R names may start with a host
            self.merges.append(MergeFound(call.words, reading, iid, problem, tuple(shas), what))

    def _graphql(self, words: str, fields: Mapping[str, Any], opaque: bool) -> None:
        """A GraphQL request: each ``mergeRequestAccept`` it runs, attributed when its
        ``projectPath``, ``iid`` and ``sha`` are literal or given as variables; a ``/merge``
        quick action in any of its strings blocks."""
        if opaque or any(v is None for v in fields.values()):
            self.unknown.append(
                f"{words}: a GraphQL request whose body the hook cannot read (a file, "
                "standard input or an expansion)"
            )
            return
        query = str(fields.get("query") or "")
        variables = {k: v for k, v in fields.items() if k not in ("query", "operationName")}
        accepts, strings = _graphql_read(query, variables)
        texts = [*strings, *(v for v in variables.values() if isinstance(v, str))]
        if any(_QUICK_MERGE.search(t) for t in texts):
            self.merges.append(
                MergeFound(
                    words,
                    None,
                    None,
                    "a GraphQL request that carries a /merge quick action cannot be bound to "
                    "an approved head by this hook; merge with glab mr merge <iid> -R "
                    "<project> --sha <approved head>",
                    kind="/merge",
                )
            )
        for project, iid, sha, problem in accepts:
            shas = () if sha == "" else (sha,)
            self.merges.append(MergeFound(words, project, iid, problem, shas))
        if not accepts and "mergerequestaccept" in (query + " ".join(texts)).lower():
            self.merges.append(
                MergeFound(
                    words,
                    None,
                    None,
                    "a GraphQL mergeRequestAccept this hook cannot read as one project, one "
                    "merge request and one SHA; merge with glab mr merge <iid> -R <project> "
                    "--sha <approved head>",
                )
            )

    # git: aliases, configuration, push options

    def _git(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """git's own options (``-c name=value`` and GIT_CONFIG_COUNT/KEY/VALUE set on the
        command), then its command: an alias defined by them or by ``git config`` earlier in
        the command, ``git config`` itself, or ``git push``."""
        config: list[tuple[str, _Word | None]] = []
        i = 1
        while i < len(argv):
            value = argv[i].value
            if value is None:
                break
            if value == "-c" and i + 1 < len(argv):
                config.append(_git_setting(argv[i + 1]))
                i += 2
                continue
            if value.startswith("--config-env="):
                key, _, var = value[len("--config-env=") :].partition("=")
                config.append((key.lower(), env.get(var)))
            elif value in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"):
                i += 1
            elif not value.startswith("-"):
                break
            i += 1
        config += _git_env_config(env)
        if any(key == "*" for key, _ in config):
            self._unclear(argv, "an alias or push.pushOption")
            return
        if i >= len(argv):
            return
        name = argv[i].value
        aliases = {**self.git_aliases}
        for key, word in config:
            if key.startswith("alias.") and word is not None:
                aliases[key[len("alias.") :]] = (word, layer)
        if name is None:
            if aliases or config:
                self._unclear(argv, "a git alias")
            return
        alias = aliases.get(name.lower())
        if alias is not None and f"git {name.lower()}" not in self.expanding:
            self._git_alias(argv, i, alias, env, stdin, layer)
        elif name == "push":
            options = [*self.git_push_options]
            for key, word in config:
                if key == "push.pushoption":
                    options = [] if word is not None and word.value == "" else [*options, word]
            self._git_push(argv, argv[i + 1 :], options, layer)
        elif name == "config":
            self._git_config(argv, argv[i + 1 :], layer)

    def _git_alias(
        self,
        argv: list[_Word],
        at: int,
        alias: tuple[_Word | None, _Layer],
        env: dict[str, _Word],
        stdin: _Stdin | None,
        layer: _Layer,
    ) -> None:
        """A git alias: ``!TEXT`` runs in a shell with the arguments appended; anything else is
        the git command it names (git's Documentation/config/alias.adoc)."""
        word, where = alias
        name = (argv[at].value or "").lower()
        if word is None or word.value is None:
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: runs a git alias built from variables"
            )
            return
        if word.span:
            where.consumed.add(word.span)
        self._consume(layer, argv[: at + 1])
        text, args = word.value, argv[at + 1 :]
        self.expanding.add(f"git {name}")
        try:
            if text.startswith("!"):
                quoted = [shlex.quote(w.value) if w.value is not None else '"$@"' for w in args]
                self.read(" ".join([text[1:], *quoted]), layer.depth + 1)
                return
            try:
                words = shlex.split(text)
            except ValueError:
                return  # git: bad alias
            expanded = [argv[0], *(_literal_word(w) for w in words), *args]
            self._git(expanded, env, stdin, layer)
        finally:
            self.expanding.discard(f"git {name}")

    def _git_config(self, argv: list[_Word], args: list[_Word], layer: _Layer) -> None:
        """``git config [scope] NAME VALUE`` and ``git config set NAME VALUE``: an alias is
        remembered for the git commands after it; an auto-merge push option, or an alias that
        pushes with one, stays in the repository for every later push, which the hook does not
        see together with this command, so it blocks."""
        options, operands, _ = _getopt(args, _GIT_CONFIG_OPTS)
        names = {name for name, _ in options}
        if operands and operands[0].value == "set":
            operands = operands[1:]
        elif operands and operands[0].value in ("get", "list", "unset", "rename-section",
                                                 "remove-section", "edit"):  # fmt: skip
            return
        if names & {"unset", "unset-all", "get", "get-all", "get-regexp", "list", "l", "e",
                    "edit", "remove-section", "rename-section"}:  # fmt: skip
            return
        if len(operands) < 2:
            return
        key, value = operands[0].value, operands[1]
        if key is None:
            self._unclear(argv, "an alias or push.pushOption")
            return
        key = key.lower()
        words = _short(" ".join(w.raw for w in argv))
        if key.startswith("alias."):
            if value.value is not None and _AUTO_MERGE_TEXT.search(value.value):
                self.unknown.append(
                    f"{words}: defines a git alias that pushes with an auto-merge option, kept "
                    "for later commands the hook does not read together with this one"
                )
            self.git_aliases[key[len("alias.") :]] = (value, layer)
        elif key == "push.pushoption":
            if value.value is None or _AUTO_MERGE_TEXT.search(value.value):
                self.unknown.append(
                    f"{words}: sets push.pushOption, which arms auto-merge on every later push "
                    "the hook does not read together with this command; pass the option to the "
                    "one push: git push -o ... <remote> <sha>:<branch>"
                )
            self.git_push_options.append(value)

    def _git_push(
        self, argv: list[_Word], args: list[_Word], config: list[_Word | None], layer: _Layer
    ) -> None:
        """``git push`` with push options that arm auto-merge (``merge_request.auto_merge``,
        ``merge_request.merge_when_pipeline_succeeds``, namespace ``mr`` too): GitLab merges
        the pushed commit (lib/gitlab/push_options.rb, push_options_handler_service.rb)."""
        words = _short(" ".join(w.raw for w in argv))
        options, operands, _ = _getopt(args, _GIT_PUSH_OPTS)
        given: list[_Word | None] = [v for name, v in options if name in ("o", "push-option")]
        pushed = given or config  # push.pushOption counts only without -o (git-push(1))
        hidden = any(w.value is None and w.parts[:1] == (DYNAMIC,) for w in args)
        if hidden and _AUTO_MERGE_TEXT.search(self.text):
            self.unknown.append(
                f"{words}: a git push word built from variables could be the push option this "
                "command spells elsewhere (it arms auto-merge); spell the push out"
            )
            return
        if any(o is None or o.value is None for o in pushed):
            self.unknown.append(f"{words}: a push option built from variables or substitutions")
            return
        values = [o.value or "" for o in pushed if o is not None]
        if not any(_arms_auto_merge(v) for v in values):
            return
        target, creates = None, False
        for text in values:
            namespace, key, value = _push_option(text)
            if namespace == "merge_request" and key == "target_project":
                target = value.strip() or None
            creates = creates or (namespace == "merge_request" and key == "create")
        remote = next((v for name, v in options if name == "repo"), None) or (
            operands[0] if operands else None
        )
        refspecs = operands[1:]

        def found(sha: str | None, branch: str | None, problem: str = "") -> PushFound:
            return PushFound(
                words,
                remote.value if remote is not None else None,
                sha,
                branch,
                target,
                creates,
                problem=problem,
            )

        if {name for name, _ in options} & {"all", "mirror", "tags", "branches"}:
            self.pushes.append(found(None, None, "pushes several refs at once with auto-merge "
                                     "armed; push one: git push <remote> <sha>:<branch>"))  # fmt: skip
            return
        if remote is None or remote.value is None or not refspecs:
            self.pushes.append(
                found(
                    None,
                    None,
                    "the hook cannot tell which commit this push makes the head it arms "
                    "auto-merge at (git picks the remote and branch when it runs); push the "
                    "reviewed commit by its SHA: git push <remote> <sha>:refs/heads/<branch> "
                    "-o merge_request.auto_merge",
                )
            )
            return
        for refspec in refspecs:
            spec = refspec.value
            if spec is None:
                self.pushes.append(found(None, None, "a refspec built from variables"))
                continue
            source, colon, destination = spec.removeprefix("+").partition(":")
            if not source:
                continue  # `:branch` deletes the branch
            destination = destination if colon else source
            if destination.startswith("refs/") and not destination.startswith("refs/heads/"):
                continue  # a tag or another ref: no merge request follows it
            branch = destination.removeprefix("refs/heads/")
            sha = source.lower() if _COMMIT_SHA.fullmatch(source.lower()) else None
            problem = (
                ""
                if sha
                else (
                    f"pushes {source}, which git resolves to a commit only when the command runs; "
                    f"push the reviewed commit by its SHA: git push <remote> <sha>:refs/heads/{branch}"
                )
            )
            self.pushes.append(found(sha, branch, problem))


@dataclass
class _GlabCall:
    """One glab invocation as it is read: its text, the words read as glab's own, the project
    -R named before the subcommand, the command's assignments, and whether xargs adds more."""

    words: str
    structural: list[_Word]
    repo: _Word | None
    env: dict[str, _Word]
    open_args: bool


# Every spelling of the flags glab accepts, as (long name, takes a value).
_MERGE_FLAGS: dict[str, tuple[str, bool]] = {
    "--sha": ("--sha", True),
    "-m": ("--message", True),
    "--message": ("--message", True),
    "--squash-message": ("--squash-message", True),
    "-R": ("--repo", True),
    "--repo": ("--repo", True),
    "-d": ("--remove-source-branch", False),
    "--remove-source-branch": ("--remove-source-branch", False),
    "--auto-merge": ("--auto-merge", False),
    "--when-pipeline-succeeds": ("--when-pipeline-succeeds", False),
    "-s": ("--squash", False),
    "--squash": ("--squash", False),
    "-r": ("--rebase", False),
    "--rebase": ("--rebase", False),
    "-y": ("--yes", False),
    "--yes": ("--yes", False),
    "-h": ("--help", False),
    "--help": ("--help", False),
}
_API_FLAGS: dict[str, tuple[str, bool]] = {
    "-X": ("--method", True),
    "--method": ("--method", True),
    "-F": ("--field", True),
    "--field": ("--field", True),
    "-f": ("--raw-field", True),
    "--raw-field": ("--raw-field", True),
    "-H": ("--header", True),
    "--header": ("--header", True),
    "--input": ("--input", True),
    "--hostname": ("--hostname", True),
    "-R": ("--repo", True),
    "--repo": ("--repo", True),
    "-i": ("--include", False),
    "--include": ("--include", False),
    "--paginate": ("--paginate", False),
    "--silent": ("--silent", False),
    "-h": ("--help", False),
    "--help": ("--help", False),
}


_PFLAG_TRUE = frozenset({None, "1", "t", "T", "true", "TRUE", "True"})


@dataclass
class _Flags:
    """Arguments read with cobra's rules. ``values`` and ``spelled`` are keyed by long name;
    ``unclear`` holds the indexes of words an unknown flag might take as its value."""

    values: dict[str, list[_Word | None]] = field(default_factory=dict)
    spelled: dict[str, list[_Word]] = field(default_factory=dict)
    positionals: list[tuple[int, _Word]] = field(default_factory=list)
    unclear: set[int] = field(default_factory=set)
    help: bool = False

    def last(self, name: str, default: _Word | None) -> _Word | None:
        """The flag's value (the last one given wins, as in pflag), else ``default``."""
        given = self.values.get(name)
        return given[-1] if given else default


def _cobra(args: list[_Word], spec: Mapping[str, tuple[str, bool]]) -> _Flags:
    """Flags anywhere among the arguments, ``--`` ending them, ``--name=value``, ``-Xvalue``
    and clusters of short flags (``-dsy``, ``-ym msg``)."""
    flags = _Flags()
    i, done = 0, False
    while i < len(args):
        word, value = args[i], args[i].value
        if done or value is None or not value.startswith("-") or value == "-":
            flags.positionals.append((i, word))
            i += 1
            continue
        if value == "--":
            done, i = True, i + 1
            continue
        items: list[tuple[str, str | None]] = []
        if value.startswith("--"):
            name, eq, rest = value.partition("=")
            items.append((name, rest if eq else None))
        else:
            letters = value[1:]
            for k, ch in enumerate(letters):
                if letters[k + 1 : k + 2] == "=":  # pflag: -R=acme/app, -h=false
                    items.append(("-" + ch, letters[k + 2 :]))
                    break
                takes = spec.get("-" + ch, ("", False))[1]
                if takes and k + 1 < len(letters):
                    items.append(("-" + ch, letters[k + 1 :]))
                    break
                items.append(("-" + ch, None))
        step = 1
        for spelled, attached in items:
            long, takes = spec.get(spelled, ("", False))
            if not long:
                if attached is None:
                    flags.unclear.add(i + 1)  # an unknown flag: it might take the next word
                continue
            # --help=false runs the command: pflag reads a bool's value with strconv.ParseBool
            flags.help = flags.help or (long == "--help" and attached in _PFLAG_TRUE)
            if not takes:
                flags.spelled.setdefault(long, []).append(word)
                continue
            if attached is not None:
                taken: _Word | None = _literal_word(attached)
                flags.spelled.setdefault(long, []).append(word)
            else:
                taken = args[i + 1] if i + 1 < len(args) else None
                flags.spelled.setdefault(long, []).extend(args[i : i + 2])
                step = 2
            flags.values.setdefault(long, []).append(taken)
        i += step
    return flags


_NOTE_FLAGS: dict[str, tuple[str, bool]] = {
    "-m": ("--message", True),
    "--message": ("--message", True),
    "--unique": ("--unique", False),
    "-R": ("--repo", True),
    "--repo": ("--repo", True),
    "-h": ("--help", False),
    "--help": ("--help", False),
}
_UPDATE_FLAGS: dict[str, tuple[str, bool]] = {
    **{f: (f, False) for f in ("--draft", "--wip", "--lock-discussion", "--unlock-discussion",
                               "--unassign", "--remove-source-branch", "--squash-before-merge",
                               "--fill-commit-body")},
    **{f: (f, True) for f in ("--title", "--description", "--label", "--unlabel", "--assignee",
                              "--reviewer", "--milestone", "--target-branch", "--repo")},
    "-r": ("--ready", False), "--ready": ("--ready", False), "-t": ("--title", True),
    "-d": ("--description", True), "-l": ("--label", True), "-u": ("--unlabel", True),
    "-a": ("--assignee", True), "-m": ("--milestone", True), "-f": ("--fill", False),
    "--fill": ("--fill", False), "-y": ("--yes", False), "--yes": ("--yes", False),
    "-R": ("--repo", True), "-h": ("--help", False), "--help": ("--help", False),
}  # fmt: skip
_ALIAS_SET_FLAGS: dict[str, tuple[str, bool]] = {
    "-s": ("--shell", False),
    "--shell": ("--shell", False),
    "-h": ("--help", False),
    "--help": ("--help", False),
}


def _attribute_endpoint(
    project_text: str, iid_text: str, repo: _Word | None, env: dict[str, _Word]
) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) for a REST merge request endpoint; a placeholder project is
    -R's. The iid must be spelled as GitLab's router takes it, in ASCII digits."""
    project: str | None = project_text
    problem = ""
    if re.search(r":(fullpath|id|repo|namespace|group|user|username)\b", project_text):
        project = _repo_project(repo, env)
        if project is None:
            problem = (
                f"{project_text} is the current directory's project, which the hook does not "
                "guess; spell the project in the path, or pass -R <group/project>"
            )
    iid = int(iid_text) if re.fullmatch(r"[1-9][0-9]*", iid_text) else None
    if iid is None and not problem:
        problem = f"{iid_text!r} is not a merge request iid"
    return project, iid, problem


def _is_merge_word(value: str | None) -> bool:
    """merge, accept, and what cobra could complete to them if prefix matching were on."""
    if not value:
        return False
    v = value.lower()
    return "merge".startswith(v) or (len(v) >= 2 and "accept".startswith(v))


def _is_flag_arg(arg: str) -> bool:
    """cobra's isFlagArg: a flag with no value of its own to look for in the next word."""
    return (len(arg) >= 3 and arg[:2] == "--") or (
        len(arg) >= 2 and arg[0] == "-" and arg[1] != "-"
    )


def _cobra_traverse(values: Sequence[str | None]) -> int | None:
    """The index of glab's command word among its arguments, as cobra's Command.Traverse finds it
    at the root (spf13/cobra v1.10.2 command.go), which cmd/glab/main.go uses to decide whether
    the first argument is an alias: -1 when there is none, None when a word bash computes stands
    where a flag or the command word could. At the root only -v/--version is a flag of its own
    without a value (internal/commands/root.go): Traverse takes the word after any other flag as
    that flag's value."""
    in_flag = False
    for i, value in enumerate(values):
        if value is None:
            if not in_flag:
                return None
            in_flag = False
        elif value.startswith("--") and "=" not in value:
            in_flag = value != "--version"
        elif value.startswith("-") and "=" not in value and len(value) == 2:
            in_flag = value != "-v"
        elif in_flag:
            in_flag = False
        elif not _is_flag_arg(value):
            return i
    return -1


_GLAB_PLACEHOLDER = re.compile(
    r":(group/:namespace/:repo|namespace/:repo|fullpath|id|user|username|group|namespace|repo"
    r"|branch)\b"
)


def _api_fields(flags: _Flags) -> tuple[dict[str, str | None], bool]:
    """``glab api``'s parameters as glab builds them (api.go parseFields): each -f/--raw-field,
    then each -F/--field, later ones replacing earlier ones. A value the hook cannot read
    (``@file``, a placeholder, an expansion) is None; the second value says some parameter or
    the body cannot be read at all (a field built from expansions, ``--input``)."""
    fields: dict[str, str | None] = {}
    opaque = "--input" in flags.values
    for name in ("--raw-field", "--field"):
        for word in flags.values.get(name, []):
            first = word.parts[0] if word is not None and word.parts else DYNAMIC
            if word is not None and word.value is not None:
                key, eq, value = word.value.partition("=")
                if eq:
                    magic = name == "--field" and (
                        value.startswith("@") or _GLAB_PLACEHOLDER.search(value)
                    )
                    fields[key] = None if magic else value
            elif isinstance(first, str) and "=" in first:
                fields[first.partition("=")[0]] = None
            else:
                opaque = True
    return fields, opaque


def _api_route(endpoint: str) -> tuple[str, list[str], list[tuple[str, str]]]:
    """(kind, path segments after /api/v4, query parameters) for a ``glab api`` endpoint, read as
    glab builds the URL (internal/commands/api/http.go): exactly ``graphql`` is
    <host>/api/graphql; an endpoint with ``://`` is the whole URL (any scheme spelling, any host,
    GitLab under a relative root); anything else follows the API's base URL, /api/v4/. Segments
    are percent-decoded, and ``.`` and ``..`` resolved as the web server resolves them. kind is
    "graphql", "rest", or "other" (not GitLab's API)."""
    if endpoint == "graphql":
        return "graphql", [], []
    absolute = "://" in endpoint
    text = endpoint.split("#", 1)[0]
    if absolute:
        after = text.split("://", 1)[1]
        text = "/" + after.split("/", 1)[1] if "/" in after else "/"
    path, _, query_text = text.partition("?")
    segments: list[str] = [] if absolute else ["api", "v4"]
    for segment in (urllib.parse.unquote(s) for s in path.split("/")):
        if segment == "..":
            segments = segments[:-1]
        elif segment not in ("", "."):
            segments.append(segment)
    if segments:  # Grape routes answer with a format suffix too: .../merge.json
        segments[-1] = re.sub(r"\.\w+$", "", segments[-1])
    query = urllib.parse.parse_qsl(query_text, keep_blank_values=True)
    lowered = [s.lower() for s in segments]
    for k in range(len(lowered) - 1):
        if lowered[k] != "api":
            continue
        if lowered[k + 1] == "graphql" and k + 2 == len(lowered):
            return "graphql", [], query
        if lowered[k + 1] == "v4":
            return "rest", segments[k + 2 :], query
    return "other", segments, query


def _mr_endpoint(segments: list[str]) -> tuple[str, str, str] | None:
    """(kind, project, iid) when API segments name a merge request's merge ("merge"), its entry
    on a merge train ("train"), its notes ("notes", "discussions", "draft_notes": a note may
    carry a /merge quick action) or the merge request itself ("mr": its description may)."""
    lowered = [s.lower() for s in segments]
    if not lowered or lowered[0] != "projects":
        return None
    for k in range(2, len(lowered) - 1):
        if lowered[k] != "merge_requests":
            continue
        iid, tail = segments[k + 1], lowered[k + 2 :]
        if k >= 3 and lowered[k - 1] == "merge_trains":
            if not tail:
                return "train", "/".join(segments[1 : k - 1]), iid
            continue
        project = "/".join(segments[1:k])
        if tail == ["merge"]:
            return "merge", project, iid
        if not tail:
            return "mr", project, iid
        if tail[0] in ("notes", "draft_notes") and len(tail) <= 2:
            return tail[0], project, iid
        if tail[0] == "discussions" and (len(tail) <= 2 or (tail[2] == "notes" and len(tail) <= 4)):
            return "discussions", project, iid
    return None


def _normalise_repo(text: str) -> str | None:
    """-R takes OWNER/REPO, GROUP/NAMESPACE/REPO, a URL or a Git URL; the project's full path."""
    text = text.strip()
    m = re.match(r"^[\w.+-]+@[^:/]+:(.+)$", text)  # git@host:group/proj.git
    if m:
        text = m.group(1)
    else:
        text = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]+/", "", text, flags=re.IGNORECASE)
    text = text.strip("/")
    text = text[:-4] if text.endswith(".git") else text
    text = text.split("/-/", 1)[0]
    if re.fullmatch(r"[\w.-]+(/[\w.-]+)+", text):
        return text
    return None


def _repo_project(repo: _Word | None, env: dict[str, _Word]) -> str | None:
    """The project -R names, else GITLAB_REPO set on the command itself (glab reads both)."""
    source = repo if repo is not None else env.get("GITLAB_REPO")
    if source is None or source.value is None:
        return None
    return _normalise_repo(source.value)


def _host_readings(project: str | None) -> tuple[str | None, ...]:
    """The projects glab may take ``a/b/c`` for: the group path a/b/c, or project b/c on host a
    (glab's choice depends on the hosts it is logged in to, which the hook cannot see), so a
    merge named so is gated as both."""
    if project is not None and project.count("/") >= 2:
        return (project, project.split("/", 1)[1])
    return (project,)


# internal/cmdutils/url_parser.go (mergeRequestURLPathRE), on the path Go's url.Parse gives.
_GLAB_MR_PATH = re.compile(r"^(/(?:[^-][^/]+/){2,})+(?:-/)?merge_requests/([0-9]+)(?:/.*)?$", re.S)
_GO_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def _glab_mr_url(text: str) -> tuple[str, int] | None:
    """(project, iid) when glab reads ``text`` as a merge request's URL
    (cmdutils.ParseMergeRequestFromURL, glrepo.FromURL): Go's url.Parse (the scheme is read in
    any case; none, http or https is accepted; ``//host/path`` has a host too), the path pattern
    above, and a host glab can name."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return None  # net/url refuses control characters
    rest = text.split("#", 1)[0]
    scheme = ""
    m = _GO_SCHEME.match(rest)
    if m:
        scheme, rest = m.group(1).lower(), rest[m.end() :]
    if scheme not in ("", "http", "https"):
        return None
    rest = rest.split("?", 1)[0]
    if not rest.startswith("//") or (not scheme and rest.startswith("///")):
        return None  # no host: glrepo.FromURL refuses it
    authority, slash, path = rest[2:].partition("/")
    host = authority.rpartition("@")[2]
    hostname = host[1 : host.find("]")] if host.startswith("[") else host.split(":", 1)[0]
    if not hostname or re.search(r"[\s\"<>\\^`{|}]|%(?![0-9A-Fa-f]{2})", host):
        return None
    if re.search(r"%(?![0-9A-Fa-f]{2})", path):
        return None  # net/url refuses a bad escape
    found = _GLAB_MR_PATH.match(urllib.parse.unquote(slash + path, errors="surrogateescape"))
    if found is None or not 0 < int(found.group(2)) < 2**63:
        return None
    return found.group(1).strip("/"), int(found.group(2))


def _go_atoi(text: str) -> int | None:
    """Go's strconv.Atoi: an optional sign and ASCII digits, within int64 (a full-width digit
    is not a digit to Go, whatever Python's int() says)."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _attribute(
    positionals: list[tuple[int, _Word]],
    unclear: set[int],
    repo: _Word | None,
    env: dict[str, _Word],
    open_args: bool,
) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) for ``glab mr merge``'s (or ``note``'s) arguments, read as
    mrutils.MRFromArgsWithOpts reads them: a merge request URL, else ``strconv.Atoi`` of the
    argument without one leading ``!``, else a branch name."""
    if repo is not None and repo.value is None:
        return None, None, "the project (-R) is built from variables or substitutions"
    project = _repo_project(repo, env)
    if repo is not None and project is None:
        return None, None, f"-R {repo.raw} is not a project path the hook can read"
    if open_args:
        return project, None, "xargs appends arguments the hook cannot see"
    if any(index in unclear for index, _ in positionals):
        return project, None, "an unknown flag makes it unclear which word is the merge request"
    if len(positionals) > 1:
        return project, None, "more than one merge request argument"
    if not positionals:
        return (
            project,
            None,
            (
                "no merge request named: glab would take the current branch's merge request, "
                "which the hook does not guess; name it by its iid"
            ),
        )
    value = positionals[0][1].value
    if value is None:
        return project, None, "the merge request is built from variables or substitutions"
    url = _glab_mr_url(value)
    if url is not None:
        from_url, iid = url
        if project is not None and project != from_url:
            return None, None, f"-R names {project} but the URL names {from_url}"
        return from_url, iid, ""
    number = _go_atoi(value.removeprefix("!"))
    if number is None:
        return (
            project,
            None,
            (
                f"{value!r} names a branch, not a merge request (glab reads a number as Go "
                "does: ASCII digits only); name the merge request by its iid"
            ),
        )
    if number <= 0:
        return project, None, f"{value!r} is not a merge request glab can take"
    if project is None:
        return (
            None,
            number,
            (
                "no project named: glab would use the current directory's repository (or "
                "GITLAB_REPO), which the hook does not guess; pass -R <group/project>"
            ),
        )
    return project, number, ""


# --- GraphQL --------------------------------------------------------------------------------------

_GQL_TOKEN = re.compile(
    r"(?P<skip>[\t\n\r ,\ufeff]+|#[^\n\r]*)"
    r'|(?P<block>"""(?:\\"""|[^"]|"(?!""))*""")'
    r'|(?P<string>"(?:\\.|[^"\\\n\r])*")'
    r"|(?P<name>[_A-Za-z][_0-9A-Za-z]*)"
    r"|(?P<number>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<punct>\.\.\.|[!$&():=@\[\]{|}])"
)
_GQL_MISSING = object()  # a variable the request does not give


def _gql_tokens(text: str) -> list[tuple[str, str]] | None:
    tokens, pos = [], 0
    while pos < len(text):
        m = _GQL_TOKEN.match(text, pos)
        if m is None:
            return None
        pos = m.end()
        if m.lastgroup != "skip":
            tokens.append((m.lastgroup or "", m.group()))
    return tokens


def _gql_string(kind: str, text: str) -> str | None:
    if kind == "block":  # a block string: common indentation and blank edges dropped
        lines = re.split(r"\r\n|\n|\r", text[3:-3].replace('\\"""', '"""'))
        indents = [len(x) - len(x.lstrip(" \t")) for x in lines[1:] if x.strip(" \t")]
        cut = min(indents, default=0)
        lines = [lines[0], *(x[cut:] for x in lines[1:])]
        while lines and not lines[0].strip(" \t"):
            lines.pop(0)
        while lines and not lines[-1].strip(" \t"):
            lines.pop()
        return "\n".join(lines)
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _gql_value(
    tokens: list[tuple[str, str]], i: int, variables: Mapping[str, Any], depth: int = 0
) -> tuple[Any, int]:
    """One GraphQL value from token ``i``: (the value, the index after it); ValueError when the
    reader cannot read it."""
    if depth > 32 or i >= len(tokens):
        raise ValueError("too deep")
    kind, text = tokens[i]
    if text == "$" and i + 1 < len(tokens) and tokens[i + 1][0] == "name":
        return variables.get(tokens[i + 1][1], _GQL_MISSING), i + 2
    if kind in ("string", "block"):
        value = _gql_string(kind, text)
        if value is None:
            raise ValueError("string")
        return value, i + 1
    if kind in ("name", "number"):
        return text, i + 1
    if text in ("[", "{"):
        close = "]" if text == "[" else "}"
        items: list[Any] = []
        fields: dict[str, Any] = {}
        i += 1
        while i < len(tokens) and tokens[i][1] != close:
            if text == "{":
                if tokens[i][0] != "name" or i + 1 >= len(tokens) or tokens[i + 1][1] != ":":
                    raise ValueError("object")
                fields[tokens[i][1]], i = _gql_value(tokens, i + 2, variables, depth + 1)
            else:
                item, i = _gql_value(tokens, i, variables, depth + 1)
                items.append(item)
        if i >= len(tokens):
            raise ValueError("unclosed")
        return (items if text == "[" else fields), i + 1
    raise ValueError(text)


def _graphql_read(
    query: str, variables: Mapping[str, Any]
) -> tuple[list[tuple[str | None, int | None, str | None, str]], list[str]]:
    """Each ``mergeRequestAccept`` field of a GraphQL document as (project, iid, sha, problem),
    its ``input`` read from literals, the request's variables and the variables' defaults (sha
    "" when none is given, None when it cannot be read), and every string literal in it."""
    tokens = _gql_tokens(query)
    if tokens is None:
        return [], []
    strings = [
        s for kind, text in tokens if kind in ("string", "block")
        if (s := _gql_string(kind, text)) is not None
    ]  # fmt: skip
    defaults: dict[str, Any] = {}
    for i in range(len(tokens) - 2):  # $name: Type = default
        if tokens[i][1] == "$" and tokens[i + 1][0] == "name" and tokens[i + 2][1] == ":":
            j = i + 3
            while j < len(tokens) and (tokens[j][0] == "name" or tokens[j][1] in "![]"):
                j += 1
            if j < len(tokens) and tokens[j][1] == "=":
                try:
                    defaults[tokens[i + 1][1]] = _gql_value(tokens, j + 1, {})[0]
                except ValueError:
                    defaults[tokens[i + 1][1]] = None
    known = {**defaults, **variables}
    problem = "a GraphQL mergeRequestAccept whose projectPath, iid or sha the hook cannot read"
    found: list[tuple[str | None, int | None, str | None, str]] = []
    for i, (kind, text) in enumerate(tokens):
        if kind != "name" or text != "mergeRequestAccept":
            continue
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if after == ":" or before in ("$", "...", "fragment", "on", "query", "mutation"):
            continue  # an alias, a variable, a fragment or an operation named so
        try:
            if after != "(":
                raise ValueError("no arguments")
            arguments: dict[str, Any] = {}
            j = i + 2
            while j < len(tokens) and tokens[j][1] != ")":
                if tokens[j][0] != "name" or j + 1 >= len(tokens) or tokens[j + 1][1] != ":":
                    raise ValueError("argument")
                arguments[tokens[j][1]], j = _gql_value(tokens, j + 2, known)
            data = arguments.get("input")
            if not isinstance(data, dict):
                raise ValueError("input")
        except ValueError:
            found.append((None, None, None, problem))
            continue
        project, iid, sha = data.get("projectPath"), data.get("iid"), data.get("sha", "")
        if not isinstance(project, str) or not isinstance(iid, str):
            found.append((project if isinstance(project, str) else None, None, None, problem))
            continue
        if not re.fullmatch(r"[1-9][0-9]*", iid):
            found.append((project, None, None, f"{iid!r} is not a merge request iid"))
            continue
        if sha is _GQL_MISSING:
            sha = ""
        found.append((project, int(iid), sha if isinstance(sha, str) else None, ""))
    return found, strings


# --- wrappers -----------------------------------------------------------------------------------

# For each wrapper: the options that take a value (the next word, or attached), and how many
# operands come before the command (timeout's duration).
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "--input", "-o", "--output", "-e", "--error"}), 0),
    "setsid": (frozenset(), 0),
    "coproc": (frozenset(), 0),
    "sudo": (
        frozenset(
            {
                "-u",
                "--user",
                "-g",
                "--group",
                "-h",
                "--host",
                "-p",
                "--prompt",
                "-r",
                "--role",
                "-t",
                "--type",
                "-U",
                "--other-user",
                "-C",
                "--close-from",
                "-D",
                "--chdir",
                "-T",
                "--command-timeout",
                "-R",
                "--chroot",
            }
        ),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-P"}), 0),
    "xargs": (
        frozenset(
            {
                "-a",
                "--arg-file",
                "-d",
                "--delimiter",
                "-E",
                "-I",
                "-L",
                "--max-lines",
                "-n",
                "--max-args",
                "-P",
                "--max-procs",
                "-s",
                "--max-chars",
                "--process-slot-var",
            }
        ),
        0,
    ),
}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _unwrap(
    program: str, argv: list[_Word], env: dict[str, _Word]
) -> tuple[list[_Word], bool] | None:
    """(the wrapped command, whether more arguments may be appended) when ``argv`` is a wrapper,
    else None. ``env`` gains the assignments env and sudo make."""
    if program not in _WRAPPERS:
        return None
    if program == "env" and _env_split(argv) is not None:
        return None
    takes_value, operands = _WRAPPERS[program]
    i = 1
    while i < len(argv):
        value = argv[i].value
        if value is None:
            break
        if value == "--":
            i += 1
            break
        if program in ("env", "sudo") and _ASSIGNMENT.match(value):
            name, _, rest = value.partition("=")
            env[name] = _literal_word(rest)
            i += 1
            continue
        if not value.startswith("-") or value == "-":
            if program == "env" and value == "-":
                i += 1
                continue
            break
        if program == "nice" and re.fullmatch(r"-\d+", value):
            i += 1
            continue
        name = value.split("=", 1)[0]
        if name in takes_value and "=" not in value:
            i += 2
            continue
        if not value.startswith("--") and value[:2] in takes_value:
            i += 1  # -n10, -uNAME: the value is attached
            continue
        i += 1
    i += operands
    return argv[i:], program == "xargs"


def _env_split(argv: list[_Word]) -> list[_Word] | None:
    """``env -S STRING``: env splits the string into the command line itself."""
    for i, word in enumerate(argv[1:], start=1):
        value = word.value or ""
        if value in ("-S", "--split-string") and i + 1 < len(argv):
            return argv[i + 1 :]
        if value.startswith("--split-string="):
            return [_literal_word(value.split("=", 1)[1]), *argv[i + 1 :]]
        if value.startswith("-S") and len(value) > 2:
            return [_literal_word(value[2:]), *argv[i + 1 :]]
        if not value.startswith("-") and not _ASSIGNMENT.match(value):
            return None
    return None


@dataclass(frozen=True)
class _Opts:
    """A program's options as getopt_long reads them: ``short`` in getopt's notation ("c:" takes
    a value, "t::" an attached one only); ``long`` maps each long name to 0 (no value), 1 (a
    value, after = or in the next word) or 2 (a value after = only), and a unique prefix of a
    long name counts, as getopt_long allows; ``permute``: options may follow operands (GNU's
    default), False stops at the first operand (getopt's "+")."""

    short: str
    long: Mapping[str, int]
    permute: bool = True


def _getopt(
    words: list[_Word], spec: _Opts
) -> tuple[list[tuple[str, _Word | None]], list[_Word], bool]:
    """(options, operands, unclear): each option as (its letter or long name, its value), and
    whether a word bash computes stands where an option could."""
    takes: dict[str, int] = {}
    k = 0
    while k < len(spec.short):
        colons = len(spec.short[k + 1 :]) - len(spec.short[k + 1 :].lstrip(":"))
        takes[spec.short[k]] = colons
        k += 1 + colons
    options: list[tuple[str, _Word | None]] = []
    operands: list[_Word] = []
    unclear = False
    i = 0
    while i < len(words):
        word, value = words[i], words[i].value
        if value is None or value == "-" or not value.startswith("-"):
            unclear = unclear or (value is None and word.parts[:1] == (DYNAMIC,))
            operands.append(word)
            i += 1
            if not spec.permute:
                operands += words[i:]
                break
            continue
        if value == "--":
            operands += words[i + 1 :]
            break
        if value.startswith("--"):
            name, eq, attached = value[2:].partition("=")
            matches = [n for n in spec.long if n == name] or [
                n for n in spec.long if n.startswith(name)
            ]
            full = matches[0] if len(matches) == 1 else name
            kind = spec.long.get(full, 0)
            if eq:
                options.append((full, _Word((attached,), word.span, word.raw)))
            elif kind == 1:
                options.append((full, words[i + 1] if i + 1 < len(words) else None))
                i += 1
            else:
                options.append((full, None))
            i += 1
            continue
        for j in range(1, len(value)):
            letter = value[j]
            count = takes.get(letter, 0)
            if count and j + 1 < len(value):
                options.append((letter, _Word((value[j + 1 :],), word.span, word.raw)))
                break
            if count == 1:
                options.append((letter, words[i + 1] if i + 1 < len(words) else None))
                i += 1
                break
            options.append((letter, None))
        i += 1
    return options, operands, unclear


# Options of the programs that run a shell on one of their arguments, from their manuals and
# sources: util-linux script(1) (term-utils/script.c), su(1)/runuser(1) (login-utils), flock(1)
# (sys-utils/flock.c); sudo(8) (src/parse_args.c); doas(1); tmux(1); GNU make(1); git-push(1),
# git-config(1); coreutils tee(1), cp(1), ln(1), install(1), mv(1).
_SCRIPT_OPTS = _Opts(
    "aB:c:eE:fI:O:o:qm:T:t::Vh",
    {"append": 0, "command": 1, "echo": 1, "return": 0, "flush": 0, "force": 0, "log-in": 1,
     "log-out": 1, "log-io": 1, "log-timing": 1, "logging-format": 1, "output-limit": 1,
     "quiet": 0, "timing": 2, "version": 0, "help": 0},
)  # fmt: skip
_SU_LONG = {
    "command": 1, "session-command": 1, "fast": 0, "group": 1, "supp-group": 1, "login": 0,
    "preserve-environment": 0, "pty": 0, "shell": 1, "whitelist-environment": 1, "help": 0,
    "version": 0,
}  # fmt: skip
_SU_OPTS = _Opts("c:fg:G:lmpPs:w:hV", _SU_LONG)
_RUNUSER_OPTS = _Opts("c:fg:G:lmpPs:u:w:hV", {**_SU_LONG, "user": 1})
_SUDO_OPTS = _Opts(
    "AbBEeg:h::HiKklnPp:r:sSt:T:u:U:vVC:D:R:",
    {"askpass": 0, "background": 0, "bell": 0, "close-from": 1, "chdir": 1, "preserve-env": 2,
     "edit": 0, "group": 1, "set-home": 0, "help": 0, "host": 1, "login": 0,
     "remove-timestamp": 0, "reset-timestamp": 0, "list": 0, "non-interactive": 0,
     "preserve-groups": 0, "prompt": 1, "chroot": 1, "role": 1, "stdin": 0, "shell": 0,
     "type": 1, "command-timeout": 1, "other-user": 1, "user": 1, "version": 0, "validate": 0},
    permute=False,
)  # fmt: skip
_DOAS_OPTS = _Opts("a:C:Lnsu:", {}, permute=False)
_FLOCK_OPTS = _Opts(
    "sexnoFuw:E:hVc:",
    {"shared": 0, "exclusive": 0, "unlock": 0, "nonblock": 0, "nb": 0, "close": 0,
     "no-fork": 0, "timeout": 1, "wait": 1, "conflict-exit-code": 1, "command": 1,
     "verbose": 0, "help": 0, "version": 0},
    permute=False,
)  # fmt: skip
_TMUX_OPTS = _Opts("2CDlNuvVc:f:L:S:T:", {}, permute=False)
# tmux commands that run a shell command (or type keys into one), with their aliases.
_TMUX_SHELL_COMMANDS = (
    ("new-session", "new", _Opts("AdDEPXc:e:f:F:n:s:t:x:y:", {}, permute=False)),
    ("new-window", "neww", _Opts("abdkPSc:e:F:n:t:", {}, permute=False)),
    ("split-window", "splitw", _Opts("bdefhIPvZc:e:F:l:p:t:", {}, permute=False)),
    ("respawn-window", "respawnw", _Opts("kc:e:t:", {}, permute=False)),
    ("respawn-pane", "respawnp", _Opts("kc:e:t:", {}, permute=False)),
    ("run-shell", "run", _Opts("bCc:d:t:", {}, permute=False)),
    ("display-popup", "popup", _Opts("BCEkNb:c:d:e:h:s:S:t:T:w:x:y:", {}, permute=False)),
    ("pipe-pane", "pipep", _Opts("IOot:", {}, permute=False)),
    ("if-shell", "if", _Opts("bFt:", {}, permute=False)),
    ("send-keys", "send", _Opts("FHKlMRXc:N:t:", {}, permute=False)),
)
_MAKE_OPTS = _Opts(
    "bmBC:deE:f:hiI:j::kl::L::nO::o:pqrRsStvwW:",
    {"always-make": 0, "directory": 1, "debug": 2, "environment-overrides": 0, "eval": 1,
     "file": 1, "makefile": 1, "help": 0, "ignore-errors": 0, "include-dir": 1, "jobs": 2,
     "jobserver-style": 1, "keep-going": 0, "load-average": 2, "check-symlink-times": 0,
     "just-print": 0, "dry-run": 0, "recon": 0, "old-file": 1, "assume-old": 1,
     "output-sync": 2, "print-data-base": 0, "question": 0, "no-builtin-rules": 0,
     "no-builtin-variables": 0, "shuffle": 2, "silent": 0, "quiet": 0, "no-silent": 0,
     "no-keep-going": 0, "stop": 0, "touch": 0, "trace": 0, "version": 0,
     "print-directory": 0, "no-print-directory": 0, "what-if": 1, "new-file": 1,
     "assume-new": 1, "warn-undefined-variables": 0},
)  # fmt: skip
_TEE_OPTS = _Opts("aip", {"append": 0, "ignore-interrupts": 0, "output-error": 2})
_COPY_OPTS = _Opts("g:m:o:S:t:", {"target-directory": 1, "suffix": 1, "mode": 1, "owner": 1,
                                   "group": 1, "backup": 2})  # fmt: skip
_GIT_CONFIG_OPTS = _Opts(
    "f:elz",
    {"global": 0, "system": 0, "local": 0, "worktree": 0, "file": 1, "blob": 1, "add": 0,
     "replace-all": 0, "append": 0, "unset": 0, "unset-all": 0, "get": 0, "get-all": 0,
     "get-regexp": 0, "get-urlmatch": 0, "list": 0, "edit": 0, "remove-section": 0,
     "rename-section": 0, "type": 1, "bool": 0, "int": 0, "bool-or-int": 0, "path": 0,
     "expiry-date": 0, "null": 0, "name-only": 0, "includes": 0, "no-includes": 0,
     "show-origin": 0, "show-scope": 0, "default": 1, "comment": 1, "value": 1,
     "fixed-value": 0, "all": 0, "regexp": 0, "url": 1},
)  # fmt: skip
_GIT_PUSH_OPTS = _Opts(
    "46dfnquvo:",
    {"all": 0, "branches": 0, "mirror": 0, "tags": 0, "follow-tags": 0, "delete": 0,
     "prune": 0, "dry-run": 0, "porcelain": 0, "force": 0, "force-with-lease": 2,
     "force-if-includes": 0, "repo": 1, "set-upstream": 0, "thin": 0, "no-thin": 0,
     "quiet": 0, "verbose": 0, "progress": 0, "no-progress": 0, "push-option": 1,
     "no-push-option": 0, "receive-pack": 1, "exec": 1, "recurse-submodules": 1,
     "no-recurse-submodules": 0, "verify": 0, "no-verify": 0, "atomic": 0, "no-atomic": 0,
     "signed": 2, "no-signed": 0, "ipv4": 0, "ipv6": 0},
)  # fmt: skip


def _tmux_lookup(name: str) -> tuple[str, _Opts] | None:
    """A tmux command that runs a shell, by name, alias or prefix (tmux takes a unique prefix)."""
    for canonical, alias, spec in _TMUX_SHELL_COMMANDS:
        if name in (canonical, alias):
            return canonical, spec
    for canonical, _alias, spec in _TMUX_SHELL_COMMANDS:
        if len(name) >= 2 and canonical.startswith(name):
            return canonical, spec
    return None


def _makefile_commands(text: str) -> list[str]:
    """The shell commands a makefile runs, as far as the text says: each recipe line (a line
    that starts with a tab; its @, - and + prefixes dropped), each ``$(shell ...)`` and the right
    side of each ``!=`` assignment. make's own references ($(VAR), ${VAR}, $@) become expansions
    the reader cannot read; ``$$`` is a dollar sign."""
    joined = re.sub(r"\\\r?\n", " ", text)
    commands = []
    for line in joined.split("\n"):
        if line.startswith("\t"):
            commands.append(_make_to_shell(line.lstrip("\t").lstrip("@+- \t")))
        elif "!=" in line:
            commands.append(_make_to_shell(line.split("!=", 1)[1]))
    for m in re.finditer(r"\$([({])shell\s", joined):
        opener, closer, depth, j = m.group(1), ")" if m.group(1) == "(" else "}", 1, m.end()
        while j < len(joined) and depth:
            depth += {opener: 1, closer: -1}.get(joined[j], 0)
            j += 1
        commands.append(_make_to_shell(joined[m.end() : j - 1]))
    return commands


def _make_to_shell(line: str) -> str:
    text, previous = line.replace("$$", "\x00"), None
    while previous != text:  # innermost references first
        previous = text
        text = re.sub(r"\$\([^()$]*\)|\$\{[^{}$]*\}", "\x01", text)
    text = re.sub(r"\$[^\x00\x01]", "\x01", text)
    return text.replace("\x00", "$").replace("\x01", "${MAKE_REFERENCE}")


_AUTO_MERGE_TEXT = re.compile(r"merge_when_pipeline_succeeds|auto_merge", re.IGNORECASE)


def _push_option(text: str) -> tuple[str, str, str]:
    """(namespace, key, value) of a push option as GitLab reads it (lib/gitlab/push_options.rb:
    ``namespace.key[=value]``, stripped, namespace ``mr`` for ``merge_request``)."""
    m = re.search(r"(?P<namespace>[^.]+)\.(?P<key>[^=]+)=?(?P<value>.*)", text, re.DOTALL)
    if m is None:
        return "", "", ""
    namespace = m.group("namespace").strip().lower()
    namespace = "merge_request" if namespace == "mr" else namespace
    return namespace, m.group("key").strip().lower(), m.group("value")


def _arms_auto_merge(text: str) -> bool:
    namespace, key, _ = _push_option(text)
    return namespace == "merge_request" and key in ("merge_when_pipeline_succeeds", "auto_merge")


def _git_setting(word: _Word) -> tuple[str, _Word | None]:
    """``git -c name=value``: (the name, lower-cased as git compares it, and the value); "*"
    when bash computes the name."""
    if word.value is not None:
        key, eq, value = word.value.partition("=")
        return key.lower(), _Word((value if eq else "true",), word.span, word.raw)
    first = word.parts[0] if word.parts else DYNAMIC
    if isinstance(first, str) and "=" in first:
        return first.partition("=")[0].lower(), None
    return "*", None


def _git_env_config(env: Mapping[str, _Word]) -> list[tuple[str, _Word | None]]:
    """git configuration set on the command through the environment: GIT_CONFIG_COUNT with
    GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n>, and GIT_CONFIG_PARAMETERS (git-config(1))."""
    found: list[tuple[str, _Word | None]] = []
    if "GIT_CONFIG_PARAMETERS" in env:
        text = env["GIT_CONFIG_PARAMETERS"].value
        try:
            pairs = shlex.split(text) if text is not None else None
        except ValueError:
            pairs = None
        if pairs is None:
            return [("*", None)]
        found += [(p.partition("=")[0].lower(), _literal_word(p.partition("=")[2])) for p in pairs]
    count = env.get("GIT_CONFIG_COUNT")
    if count is None:
        return found
    if count.value is None or not re.fullmatch(r"[0-9]+", count.value):
        return [*found, ("*", None)]
    for n in range(min(int(count.value), 100)):
        key = env.get(f"GIT_CONFIG_KEY_{n}")
        if key is None or key.value is None:
            found.append(("*", None))
        else:
            found.append((key.value.lower(), env.get(f"GIT_CONFIG_VALUE_{n}")))
    return found


def read_command(command: str) -> CommandReading:
    """Every merge ``command`` would make, with its project and merge request when the text
    says them; what could not be read; and text that names a glab merge without running one.

    Pure and fast: no I/O, no configuration. See docs/agent-handoff-reference.md for exactly
    what it recognises.
    """
    reader = _Reader()
    reader.text = command
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_FOR_BUDGET))  # the tree budget, not Python's
    try:
        reader.read(command)
        _read_late_scripts(reader)
    finally:
        sys.setrecursionlimit(limit)
    return _reading(reader)


def _read_late_scripts(reader: _Reader) -> None:
    """Scripts the command runs by a path it writes later in its text (a loop runs them after
    the write), or by a path bash computes in a command that writes files."""
    done: set[tuple[str | None, int]] = set()
    while reader.script_runs:
        key, layer = reader.script_runs.pop()
        if (key, id(layer)) in done:
            continue
        done.add((key, id(layer)))
        if key is None and (reader.files or reader.unnamed_writes):
            reader.unknown.append(
                "a script run by a path bash computes, in a command that writes files: the "
                "hook cannot tell which file runs; spell its path"
            )
        elif key is not None and key in reader.files:
            argv = [_literal_word(key)]
            reader._read_source(reader.files[key], argv, layer, key)
        elif key is not None and reader.unnamed_writes:
            reader.unknown.append(
                f"{key}: runs a script in a command that writes files whose names bash "
                "computes; the hook cannot tell whether it is one of them"
            )


def _reading(reader: _Reader) -> CommandReading:
    for layer, root in reader.layers:
        reader._check_mentions(layer, root)
    reader.layers = []
    seen: set[tuple[str | None, int | None, str, tuple[str | None, ...], str]] = set()
    merges = []
    for m in reader.merges:
        key = (m.project, m.iid, m.problem, m.shas, m.kind)
        if key not in seen:
            seen.add(key)
            merges.append(m)
    alone = reader.simple_commands == 1
    return CommandReading(
        tuple(merges),
        tuple(dict.fromkeys(reader.unknown)),
        tuple(dict.fromkeys(reader.mentions)),
        tuple(dict.fromkeys(replace(p, alone=alone) for p in reader.pushes)),
    )


# --- MCP tool calls ---------------------------------------------------------------------------------

# glab mcp serve (internal/commands/mcp/serve/server.go) names a tool "glab_" + the command's path
# and runs `glab <path> <flags> <args>` with only the flags the command itself defines (an
# inherited flag such as --repo is dropped). The local flags of the commands that can merge:
_GLAB_TOOL_FLAGS: dict[tuple[str, ...], frozenset[str]] = {
    ("mr", "merge"): frozenset(
        {"sha", "remove-source-branch", "auto-merge", "message", "squash-message", "squash",
         "rebase", "yes", "when-pipeline-succeeds"}
    ),
    ("mr", "note"): frozenset({"message", "unique"}),
    ("mr", "update"): frozenset(
        {"draft", "ready", "wip", "title", "lock-discussion", "unlock-discussion", "description",
         "label", "unlabel", "assignee", "reviewer", "unassign", "squash-before-merge",
         "remove-source-branch", "milestone", "target-branch", "fill", "fill-commit-body", "yes"}
    ),
    ("api",): frozenset(
        {"hostname", "method", "field", "raw-field", "header", "include", "paginate", "input",
         "silent"}
    ),
    ("alias", "set"): frozenset({"shell"}),
}  # fmt: skip
# Tools of GitLab's MCP server and of the community servers that merge a merge request
# (GitLab: accept_merge_request; zereight/gitlab-mcp: merge_merge_request; jmrplens/gitlab-mcp-server:
# gitlab_mr_merge; ZephyrDeng/mcp-server-gitlab: GitlabAcceptMRTool), that run GraphQL
# (zereight: execute_graphql) or any API request (ZephyrDeng: GitlabRawApiTool). GitLab's server
# may prefix every tool name (X-Gitlab-Mcp-Server-Tool-Name-Prefix), so a name is matched by
# its end. Approving (approve_merge_request, gitlab_mr_approve, glab_mr_approve) merges nothing,
# as `glab mr approve` in Bash does not.
_MCP_MERGE_TOOLS = ("accept_merge_request", "merge_merge_request", "gitlab_mr_merge",
                    "gitlabacceptmrtool")  # fmt: skip
_MCP_GRAPHQL_TOOLS = ("execute_graphql",)
_MCP_API_TOOLS = ("gitlabrawapitool",)
_MCP_PROJECT_KEYS = ("project_id", "projectPath", "project_path", "project", "fullPath", "id")
_MCP_IID_KEYS = ("merge_request_iid", "mergeRequestIid", "iid", "mr_iid", "merge_request_id")


def read_tool_call(tool_name: str, tool_input: Mapping[str, Any]) -> CommandReading:
    """What an MCP tool call (``tool_name`` is ``mcp__<server>__<tool>``) would merge, read as
    the Bash forms are: a glab tool as the glab command it runs, a merge tool by its project,
    merge request and ``sha``, a GraphQL or raw API tool as that request, and a ``/merge``
    quick action in any text a tool posts."""
    tool = tool_name.rsplit("__", 1)[-1]
    lowered = tool.lower()
    words = f"MCP tool {tool_name}"
    if lowered.startswith("glab_"):
        return _read_glab_tool(lowered[len("glab_") :].split("_"), tool_input)
    reader = _Reader()
    if lowered.endswith(_MCP_MERGE_TOOLS):
        project, iid, problem = _mcp_target(tool_input)
        sha = tool_input.get("sha")
        shas = () if sha in (None, "") else ((sha if isinstance(sha, str) else None),)
        reader.merges.append(MergeFound(words, project, iid, problem, shas))
        return _reading(reader)
    if lowered.endswith(_MCP_GRAPHQL_TOOLS):
        variables = tool_input.get("variables") or {}
        if isinstance(variables, str):
            try:
                variables = json.loads(variables)
            except ValueError:
                variables = None
        query = tool_input.get("query")
        if not isinstance(query, str) or not isinstance(variables, dict):
            reader.unknown.append(f"{words}: a GraphQL request the hook cannot read")
        else:
            reader._graphql(words, {"query": query, **variables}, False)
        return _reading(reader)
    if lowered.endswith(_MCP_API_TOOLS):
        return _read_api_tool(words, tool_input)
    texts = [t for t in _strings(tool_input) if _QUICK_MERGE.search(t)]
    if texts:
        project, iid, problem = _mcp_target(tool_input)
        sha = tool_input.get("merge_request_diff_head_sha")
        shas = () if sha in (None, "") else ((sha if isinstance(sha, str) else None),)
        reader.merges.append(MergeFound(words, project, iid, problem, shas, "/merge"))
    elif re.match(r"merge|.*(merge|accept)$|.*accept", lowered) and not re.match(
        r"(get|list|search|read|view|show|create|approve|unapprove)_|.*cancel", lowered
    ):
        reader.unknown.append(
            f"{words}: an MCP tool named like a merge that the hook does not know; merge "
            "through the Bash tool with glab mr merge <iid> -R <project> --sha <approved head>"
        )
    return _reading(reader)


def _read_glab_tool(path: list[str], tool_input: Mapping[str, Any]) -> CommandReading:
    """A ``glab mcp serve`` tool: the glab command it runs (server.go convertParamsToArgs:
    each known flag as --flag value, true booleans as --flag, then the positional args)."""
    known = _GLAB_TOOL_FLAGS.get(tuple(path))
    if known is None:
        return CommandReading()  # a glab command that cannot merge
    argv = ["glab", *path]
    flags = tool_input.get("flags")
    for key, value in flags.items() if isinstance(flags, Mapping) else ():
        name = key.replace("_", "-")
        if value is None or (name not in known and key not in known):
            continue
        if isinstance(value, bool):
            argv += [f"--{name}"] if value else []
        elif isinstance(value, list):
            argv += [
                x for item in value if isinstance(item, str) and item for x in (f"--{name}", item)
            ]
        elif isinstance(value, int | float):
            if value:
                number = str(int(value)) if float(value).is_integer() else repr(value)
                argv += [f"--{name}", number]
        elif str(value) not in ("", "0", "false"):
            argv += [f"--{name}", str(value)]
    args = tool_input.get("args")
    argv += [a for a in (args if isinstance(args, list) else ()) if isinstance(a, str) and a]
    reader = _Reader()
    reader._argv([_literal_word(w) for w in argv], {}, None, _Layer(b"", 0), open_args=False)
    return _reading(reader)


def _read_api_tool(words: str, tool_input: Mapping[str, Any]) -> CommandReading:
    """A raw API tool: its method, endpoint and parameters, read as ``glab api`` would be."""
    reader = _Reader()
    endpoint = next((tool_input[k] for k in ("path", "endpoint", "url") if k in tool_input), None)
    method = str(tool_input.get("method") or "GET").upper()
    data: Any = next((tool_input[k] for k in ("data", "body", "params") if k in tool_input), {})
    if not isinstance(endpoint, str) or not isinstance(data, Mapping):
        if method not in ("GET", "HEAD"):
            reader.unknown.append(f"{words}: an API request the hook cannot read")
        return _reading(reader)
    argv = ["glab", "api", "-X", method, endpoint]
    argv += [x for k, v in data.items() for x in ("-f", f"{k}={v}")]
    reader._argv([_literal_word(w) for w in argv], {}, None, _Layer(b"", 0), open_args=False)
    return _reading(reader)


def _mcp_target(tool_input: Mapping[str, Any]) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) from an MCP tool's arguments."""
    project = next((tool_input[k] for k in _MCP_PROJECT_KEYS if k in tool_input), None)
    iid = next((tool_input[k] for k in _MCP_IID_KEYS if k in tool_input), None)
    if isinstance(project, int) and not isinstance(project, bool):
        project = str(project)
    if isinstance(project, str):
        project = urllib.parse.unquote(project).strip("/") or None
    if isinstance(iid, str) and re.fullmatch(r"[1-9][0-9]*", iid):
        iid = int(iid)
    if not isinstance(project, str) or not isinstance(iid, int) or isinstance(iid, bool) or iid < 1:
        return (
            project if isinstance(project, str) else None,
            None,
            "the tool's arguments do not name one project and one merge request the hook can read",
        )
    return project, iid, ""


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


# ---------------------------------------------------------------------------------------------
# 8. Standalone entry point
# ---------------------------------------------------------------------------------------------


# The merge hook's Python half. block-unapproved-merge.sh allows what cannot name a glab merge
# without starting Python, and runs ``python3 ownership.py hook`` for the rest, with the hook
# JSON on stdin. Exit 0 lets the command through (no decision: Claude Code's own permission
# flow goes on); exit 2 blocks it, and Claude Code shows stderr to the agent. Every failure
# blocks, because Claude Code lets a command through on any other exit.

HOOK_SCRIPT = "block-unapproved-merge.sh"
# The seven files of the specification: the four deploy-hooks copies, the three the deployment
# supplies. All but deployed_currency.py must be there for the hook to allow a merge.
HOOK_REQUIRED = (
    HOOK_SCRIPT,
    "ownership.py",
    "validate-mr-carries-ownership-record.py",
    CONFIG_FILENAME,
    "_hooklib.sh",
    ROSTER_FILENAME,
)
HOOK_CURRENCY = "deployed_currency.py"
# The hook's own GitLab budget: one attempt, short timeouts (a merge is decided in well under a
# second on a reachable GitLab; an unreachable one blocks quickly rather than hanging the agent).
HOOK_TIMEOUT: tuple[float, float] = (3.0, 10.0)


class HookDenied(PairgateError):
    """The hook blocks the command: its message says why and what to run."""


def run_hook(ctx: Context, raw: str, *, here: Path | None = None) -> int:
    """Decide one PreToolUse call. Returns 0 (allow) or raises HookDenied / PairgateError."""
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise HookDenied(f"the hook input is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise HookDenied("the hook input is not a JSON object")
    reading = _hook_reading(payload.get("tool_name", "Bash"), payload.get("tool_input"))
    if reading is None:
        return Exit.OK  # a tool that runs no command and merges nothing
    problems = reading.problems()
    if not problems and not reading.merges and not reading.pushes:
        return Exit.OK  # it merges nothing: the gate has nothing to say
    here = here or Path(__file__).resolve().parent
    env = {**ctx.env, CONFIG_ENV: str(here / CONFIG_FILENAME)}  # never the session's
    _hook_files_present(here, env)
    config = load_config(env)
    if problems:
        raise HookDenied(_hook_message(config, problems, reading.merges))
    _hook_currency_note(ctx, here, config)
    client = gitlab_from_env(config, ctx.env, retry=read_retry(attempts=0), timeout=HOOK_TIMEOUT)
    refused = []
    for merge in reading.merges:
        assert merge.project is not None and merge.iid is not None
        refusal = _hook_binding(merge, gate_merge(client, config, merge.project, merge.iid))
        if refusal:
            refused.append(refusal)
    cwd = payload.get("cwd")
    for push in reading.pushes:
        refused += _hook_push(ctx, client, config, push, cwd if isinstance(cwd, str) else None)
    if refused:
        raise HookDenied(_hook_message(config, refused, reading.merges))
    return Exit.OK


# The tools the hook reads (register it for them: docs/agent-handoff.md, "The merge hook"):
# Bash and Monitor run a shell command; PowerShell runs one bash cannot read; MCP tools
# (mcp__<server>__<tool>) are read by read_tool_call.
HOOK_COMMAND_TOOLS = ("Bash", "Monitor")


def _hook_reading(tool: Any, tool_input: Any) -> CommandReading | None:
    """What one tool call would merge; None when the tool runs nothing the hook reads."""
    if not isinstance(tool, str):
        raise HookDenied("the hook input's tool_name is not a string")
    if tool in HOOK_COMMAND_TOOLS:
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        if tool == "Monitor" and isinstance(tool_input, dict) and "command" not in tool_input:
            return None  # a WebSocket monitor runs no command
        if not isinstance(command, str):
            raise HookDenied("the hook input has no tool_input.command string")
        return read_command(command) if could_name_glab_merge(command) else None
    if tool == "PowerShell":
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        if not isinstance(command, str):
            raise HookDenied("the hook input has no tool_input.command string")
        text = command.lower()
        if "glab" in text or "merge_request" in text or _MERGE_MENTION.search(command):
            return CommandReading(
                unknown=(
                    f"{_short(command)}: a PowerShell command that names glab or a merge "
                    "request; the merge hook reads bash only, so run it through the Bash tool",
                )
            )
        return None
    if tool.startswith("mcp__"):
        if not isinstance(tool_input, dict):
            raise HookDenied("the hook input has no tool_input object for an MCP tool")
        return read_tool_call(tool, tool_input)
    return None


def _hook_binding(merge: MergeFound, verdict: GateVerdict) -> str | None:
    """Why the gate's verdict does not let this merge through, or None. An approved merge
    request passes only when the merge carries the approved head itself (--sha, the sha field):
    GitLab then refuses (409) a head that moved between this check and the merge."""
    if not verdict.allowed:
        return verdict.message
    if not verdict.in_scope:
        return None  # not gated: there is no approval to bind it to
    head = verdict.head_sha  # the approved head: "approved" means an approval at the head
    ref = f"{verdict.project}!{verdict.iid}"
    right = f"glab mr merge {verdict.iid} -R {verdict.project} --sha {head}"
    what = "this /merge quick action" if merge.kind == "/merge" else "this merge"
    if not merge.shas:
        return (
            f"{ref} is approved at its head {head}, but {what} does not name that head, so a "
            f"push between this check and the merge would merge a commit nobody reviewed. "
            f"Bind the merge to the approved head: {right}"
        )
    if any(sha is None for sha in merge.shas):
        return (
            f"{ref} is approved at its head {head}, but {what} names its SHA through "
            f"variables, substitutions or a file the hook cannot read. Spell the approved "
            f"head: {right}"
        )
    wrong = next((sha for sha in merge.shas if sha != head), None)
    if wrong is not None:
        return (
            f"{ref}: {what} names {wrong}, but the approved head is {head}; GitLab would merge "
            f"only {wrong}, which no approval names. Merge the approved head: {right}"
        )
    return None


def _hook_push(
    ctx: Context, client: GitLab, config: Config, push: PushFound, cwd: str | None
) -> list[str]:
    """Refusals for a push that arms auto-merge: GitLab merges the merge request of the pushed
    branch at the pushed commit (no other SHA binds it), so the push passes only when that
    commit is the head the gate approved, or when the merge request is not gated."""
    project = push.target_project
    if project is None:
        project, why = _hook_remote_project(ctx, push, cwd)
        if project is None:
            return [f"{push.words}: {why}"]
    if not project_in_group(client, config, project):
        return []
    path = f"projects/{encode_project(project)}/merge_requests"
    found = client.get_all(path, source_branch=push.branch, state="opened")
    if not found:
        if not push.creates:
            return []  # GitLab arms nothing without a merge request to arm
        return [
            f"{push.words}: creates a merge request of {project} from {push.branch} with "
            f"auto-merge armed, and no approval can name its head yet. Push without the "
            f"auto-merge option, have the head reviewed, then merge with glab mr merge <iid> "
            f"-R {project} --sha <approved head>"
        ]
    refusals = []
    for mr in found:
        verdict = gate_merge(client, config, project, int(mr["iid"]))
        if not verdict.allowed:
            refusals.append(verdict.message)
        elif verdict.in_scope and verdict.head_sha != push.sha:
            refusals.append(
                f"{push.words}: arms auto-merge of {verdict.project}!{verdict.iid} at "
                f"{push.sha}, but its approved head is {verdict.head_sha}: GitLab would merge "
                f"the pushed commit, which no approval names. Push without the auto-merge "
                f"option, and merge the reviewed head with glab mr merge {verdict.iid} -R "
                f"{verdict.project} --sha <approved head>"
            )
    return refusals


def _hook_remote_project(ctx: Context, push: PushFound, cwd: str | None) -> tuple[str | None, str]:
    """The project a push goes to: the remote's URL as spelled, or the URL git has for the
    remote's name in the session's directory, read only when the push is the command's only
    command (anything before it could change the remote)."""
    remote = push.remote or ""
    if "://" in remote or re.match(r"^[\w.+-]+@[^:/]+:", remote):
        project = _normalise_repo(remote)
        return project, "" if project else f"{remote} is not a project URL the hook can read"
    if not push.alone:
        return None, (
            f"pushes to the remote named {remote} in a command that does more than push, so "
            f"the hook cannot read that remote's URL before the command runs; push alone, or "
            f"name the remote by its URL"
        )
    if not cwd or not Path(cwd).is_dir():
        return None, f"the hook has no working directory to read the URL of remote {remote}"
    try:
        found = subprocess.run(
            ["git", "-C", cwd, "remote", "get-url", "--push", "--", remote],
            env=dict(ctx.env),
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"git could not read the URL of remote {remote}: {exc}"
    url = found.stdout.strip()
    project = _normalise_repo(url) if found.returncode == 0 else None
    if project is None:
        detail = found.stderr.strip() or url or "no URL"
        return None, f"git has no project URL for remote {remote} in {cwd} ({detail})"
    return project, ""


def _hook_files_present(here: Path, env: Mapping[str, str]) -> None:
    missing = [name for name in HOOK_REQUIRED if not (here / name).is_file()]
    if not missing:
        return
    names = ", ".join(missing)
    if CONFIG_FILENAME in missing:
        remedy = (
            f"{CONFIG_FILENAME} is the deployment's own configuration, so the hook cannot read "
            f"which command reinstalls it: put the deployment's {CONFIG_FILENAME} back in "
            f"{here}, then reinstall the hooks with the deployment's hooks install command "
            f"(the hooks_install_command key of that file; for pairgate itself, "
            f"pairgate deploy-hooks --target {here})"
        )
    else:
        try:
            remedy = f"reinstall them: {load_config(env)['hooks_install_command']}"
        except PairgateError as exc:
            remedy = f"reinstall them; the configuration cannot say how: {exc.message}"
    raise HookDenied(
        f"the merge hook runs beside files that are missing from {here}: {names}. Until they "
        f"are there it cannot check a merge, so it blocks every command that could make one; "
        f"{remedy}"
    )


def _hook_currency_note(ctx: Context, here: Path, config: Config) -> None:
    """The hook's currency check is never fatal: it only ever prints a note."""
    if not (here / HOOK_CURRENCY).is_file():
        print(
            f"pairgate merge hook: note: {HOOK_CURRENCY} is missing beside the hook, so its own "
            f"currency was not established",
            file=ctx.stderr,
        )
        return
    try:
        import deployed_currency  # type: ignore[import-not-found,unused-ignore]

        currency = deployed_currency.measure(here, config["deployed_paths"], env=ctx.env)
        if currency.state != deployed_currency.CURRENT:
            print(
                f"pairgate merge hook: note: {deployed_currency.describe(currency)}",
                file=ctx.stderr,
            )
    except Exception as exc:  # never fatal, by the specification
        print(f"pairgate merge hook: note: currency not established: {exc}", file=ctx.stderr)


def _hook_message(config: Config, problems: Sequence[str], merges: Sequence[MergeFound]) -> str:
    lines = ["the merge hook blocked this command:"]
    lines += [f"- {p}" for p in problems]
    cli = config.cli
    checks = [
        f"{cli} merge-check --mr {m.iid} --mr-project {m.project}" for m in merges if not m.problem
    ]
    if checks:
        lines.append("Check before merging: " + "; ".join(checks))
    lines.append(
        "Merge one reviewed merge request per command, spelled so the hook can read it: "
        "glab mr merge <iid> -R <group/project> --sha <approved head>"
    )
    lines.append(f"Background: {config['handoff_doc']}.")
    return "\n".join(lines)


def hook_main(ctx: Context, stdin: TextIO) -> int:
    """``python3 ownership.py hook``: 0 allows the command, 2 blocks it; nothing else, ever."""
    try:
        return run_hook(ctx, stdin.read())
    except ModuleNotFoundError as exc:  # the interpreter the hook runs lacks a dependency
        print(f"pairgate: {_hook_missing_module(exc)}", file=ctx.stderr)
        return Exit.ERROR
    except BaseException as exc:  # every failure blocks: Claude Code runs it on any other exit
        message = exc.message if isinstance(exc, PairgateError) else f"{type(exc).__name__}: {exc}"
        message = message.removeprefix("pairgate: ")
        if not isinstance(exc, HookDenied):
            message = f"the merge hook could not decide, so it blocks: {message}"
        print(f"pairgate: {message}", file=ctx.stderr)
        return Exit.ERROR


def _hook_missing_module(exc: ModuleNotFoundError) -> str:
    """What to run when the Python the hook starts cannot import a dependency: install them for
    that interpreter, or name the interpreter that has them in the deployment's _hooklib.sh."""
    here = Path(__file__).resolve().parent
    cli, install = "pairgate", f"pairgate deploy-hooks --target {here}"
    try:  # the configuration's own spelling, read without the dependencies that may be missing
        values = json.loads((here / CONFIG_FILENAME).read_text(encoding="utf-8"))
        cli = str(values.get("cli_command") or cli)
        install = str(values.get("hooks_install_command") or f"{cli} deploy-hooks --target {here}")
    except (OSError, ValueError, AttributeError):
        pass
    return (
        f"the merge hook could not decide, so it blocks: the Python it runs ({sys.executable}) "
        f"cannot import {exc.name or exc} (ModuleNotFoundError: {exc}). Either install "
        f"pairgate's runtime dependencies for that interpreter: {sys.executable} -m pip install "
        f"requests jsonschema pyyaml tree-sitter tree-sitter-bash; or name the interpreter "
        f"that has them (the one pairgate is installed in) in {here / '_hooklib.sh'}, with "
        f"the line hooklib_python=/path/to/that/python3 ({install} prints the line for the "
        f"interpreter {cli} runs under)"
    )


def standalone_main(argv: list[str], ctx: Context | None = None) -> int:
    """The flat deployment's door, with no package installed:

    ``python3 ownership.py check-config``  load the configuration a flat deployment sees;
    ``python3 ownership.py merge-check --mr <iid> --mr-project <p> [--json] [--verbose]``
    the merge gate's verdict, exactly as ``pairgate merge-check`` gives it;
    ``python3 ownership.py hook``  the merge hook's decision on the hook JSON on stdin.
    """
    ctx = ctx or Context()
    if argv == ["hook"]:
        return hook_main(ctx, sys.stdin)
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
                "[--json] [--verbose]\n"
                "       python3 ownership.py hook   (the merge hook: hook JSON on stdin)"
            )
        config = load_config(ctx.env)
        print(f"configuration OK: {config.path}", file=ctx.stdout)
        return Exit.OK
    except Exception as exc:  # the one translation point for the standalone door
        return report(exc, ctx.stderr)


if __name__ == "__main__":
    sys.exit(standalone_main(sys.argv[1:]))
