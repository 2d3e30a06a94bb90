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
import urllib.parse  # noqa: E402

# The hook's fast test. A command can run a glab merge only if its text says glab, merge or accept,
# or if it has a character through which bash could build a word the text does not spell
# (quotes, backslashes, expansions, globs, braces). Anything else is allowed without reading it;
# block-unapproved-merge.sh applies the same test in bash before starting Python.
_FAST_WORDS = ("glab", "merge", "accept")
_FAST_CHARS = frozenset("$`\\'\"*?[{")

# Text that names a glab merge: `mr merge` / `mr accept`, the REST merge endpoint, a merge train,
# the GraphQL mutation. It counts only where "glab" is in the same text too.
_MERGE_MENTION = re.compile(
    r"(?<![a-z0-9])mr[\W_]{1,8}(?:merge|accept)(?![a-z0-9])"
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

# glab's top-level commands and their aliases. A word outside this list may be a glab alias
# (`glab alias set`), which could expand to a merge, so it is read as unknown.
_GLAB_COMMANDS = frozenset(
    """alias api attestation auth changelog check-update update ci pipe pipeline cluster
    completion config conf deploy-key duo gpg-key help incident issue issues iteration job
    label mcp milestone mr opentofu tofu release repo project runner schedule sched skd
    securefile snippet snip ssh-key stack token user variable var version workitems
    work-items""".split()  # noqa: SIM905 (a word list reads better as text)
)

_MAX_DEPTH = 8  # nested re-reads (bash -c "eval '...'") before the reader gives up


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
    ``project`` is a full path, or a numeric project id as the command spelled it."""

    words: str
    project: str | None
    iid: int | None
    problem: str = ""


@dataclass(frozen=True)
class CommandReading:
    """What a command would merge, what the reader could not read, and which texts name a glab
    merge without being one. The hook allows the command only when ``unknown`` and
    ``mentions`` are empty and every merge is attributable and passes the gate."""

    merges: tuple[MergeFound, ...] = ()
    unknown: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()

    def problems(self) -> list[str]:
        """Every reason the reading alone blocks the command, before any verdict is asked."""
        found = [f"{m.words}: {m.problem}" for m in self.merges if m.problem]
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
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_SIMPLE:
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
    return "".join(out)


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
    return _Word(tuple(_parts(node, src)), (node.start_byte, node.end_byte), raw)


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
        self.unknown: list[str] = []
        self.mentions: list[str] = []
        self.aliases: dict[str, str] = {}  # every alias the command defines, wherever
        self.expanding: set[str] = set()  # bash never expands an alias inside its own expansion

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
        self._visit(tree.root_node, layer)
        self._check_mentions(layer, tree.root_node)

    def _find_aliases(self, node: Any, layer: _Layer) -> None:
        if node.type == "command":
            name = node.child_by_field_name("name")
            if name is not None and _word(name, layer.src).value == "alias":
                args = [_word(a, layer.src) for a in node.children_by_field_name("argument")]
                self._alias([_word(name, layer.src), *args])
        for child in node.children:
            self._find_aliases(child, layer)

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

    def _free_words(self, node: Any, layer: _Layer) -> Iterator[str]:
        if (node.start_byte, node.end_byte) in layer.consumed:
            return
        if node.type in _WORDISH:
            yield _word(node, layer.src).loose
        elif node.type in ("heredoc_body", "comment"):
            text = bytearray(layer.src[node.start_byte : node.end_byte])
            for child in node.children:  # its substitutions are read below, as commands
                start, end = child.start_byte - node.start_byte, child.end_byte - node.start_byte
                text[start:end] = b" " * (end - start)
            yield text.decode("utf-8", "replace")
        for child in node.children:  # substitutions inside words are words too
            yield from self._free_words(child, layer)

    # the tree

    def _visit(self, node: Any, layer: _Layer, stdin: _Stdin | None = None) -> None:
        kind = node.type
        if kind == "command":
            self._command(node, layer, stdin)
        elif kind == "redirected_statement":
            self._redirected(node, layer, stdin)
        elif kind == "pipeline":
            self._pipeline(node.children, layer, stdin)
        else:
            for child in node.children:
                self._visit(child, layer)

    def _pipeline(self, children: list[Any], layer: _Layer, stdin: _Stdin | None) -> None:
        for child in children:
            if child.type in ("|", "|&"):
                continue
            self._visit(child, layer, stdin)
            stdin = self._output_of(child, layer, stdin)

    def _redirected(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> None:
        body = node.child_by_field_name("body")
        tails: list[Any] = []
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
                if any(c.type in ("<", "<&") for c in child.children):
                    stdin = _OPAQUE
                self._visit(child, layer)
            else:
                self._visit(child, layer)
        if body is not None:
            self._visit(body, layer, stdin)
            out = self._output_of(body, layer, stdin)
        else:
            out = _OPAQUE
        for tail in tails:
            self._pipeline(tail.children, layer, out)

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
            escapes = False
            while args and args[0].value in ("-n", "-e", "-E", "-ne", "-en"):
                escapes = escapes or "e" in (args[0].value or "")
                args = args[1:]
            values = [a.value for a in args]
            if any(v is None for v in values) or (escapes and any("\\" in v for v in values if v)):
                return _DYNAMIC_STDIN
            return _Stdin(" ".join(v for v in values if v is not None) + "\n", spans=spans)
        if program == "printf":
            values = [a.value for a in args]
            if len(values) != 1 or values[0] is None or "%" in values[0]:
                return _DYNAMIC_STDIN
            return _Stdin(_ansi_c(values[0]), spans=spans)
        if program == "cat" and all(a.value == "-" for a in args):
            return stdin or _OPAQUE
        return _OPAQUE

    # one simple command

    def _command(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> None:
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
                self._visit(child, layer)
            elif field_name in ("name", "argument"):
                argv.append(_word(child, layer.src))
                self._visit(child, layer)
            elif child.type == "herestring_redirect":
                stdin = self._herestring(child, layer)
            else:
                self._visit(child, layer)
        if argv:
            self._argv(argv, env, stdin, layer, open_args=False)

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
            if program in ("su", "runuser", "script"):
                self._dash_c(argv, layer)
                return
            if program == "glab":
                self._glab(argv, env, layer, open_args)
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

    def _shell(
        self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer, open_args: bool
    ) -> None:
        """sh/bash/zsh: re-read what ``-c`` runs, or a script fed on standard input."""
        i, command_mode = 1, False
        while i < len(argv):
            value = argv[i].value
            if value is None and command_mode:
                break  # the text -c runs, read below
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
        if operands or stdin is None:
            return  # a script file, or the session's own (empty) input: not read
        if stdin.text is not None:
            layer.consumed.update(stdin.spans)
            self.read(stdin.text, layer.depth + 1)
        elif stdin.dynamic:
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: a shell reads commands built from "
                "variables or substitutions"
            )

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

    def _dash_c(self, argv: list[_Word], layer: _Layer) -> None:
        for i, word in enumerate(argv[1:], start=1):
            if word.value in ("-c", "--command") and i + 1 < len(argv):
                self._reread_words(argv, [argv[i + 1]], layer, f"{argv[0].raw} -c")
            elif (word.value or "").startswith("--command="):
                text = (word.value or "")[len("--command=") :]
                self.read(text, layer.depth + 1)

    def _other(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """Any other program. It may still run one of its arguments (find -exec, flock, ssh,
        parallel, a renamed copy of glab): read from any argument that names glab, a shell or
        eval, and read `<program> mr merge ...` and `<program> api ...` as glab would."""
        values = [w.value for w in argv]
        j = 1  # glab's own -R may come before its subcommand: `g -R group/p mr merge 12`
        while j < len(values) and (values[j] or "").startswith("-"):
            j += 2 if values[j] in ("-R", "--repo") else 1
        if values[j : j + 1] == ["mr"] and j + 1 < len(values) and _is_merge_word(values[j + 1]):
            self._glab(argv, env, layer, open_args=False)
            return
        for i in range(1, len(argv)):
            tail = argv[i].tail
            if tail in _SHELLS or tail in ("glab", "eval"):
                self._argv(argv[i:], env, None, layer, open_args=False)

    # glab itself

    def _glab(
        self, argv: list[_Word], env: dict[str, _Word], layer: _Layer, open_args: bool
    ) -> None:
        call = _GlabCall(_short(" ".join(w.raw for w in argv)), [argv[0]], None, env, open_args)
        args = argv[1:]
        path: list[str] = []
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
                call.repo = _literal_word(value[2:].removeprefix("="))  # -Racme/app, -R=acme/app
                call.structural.append(args[i])
            elif value in ("-h", "--help", "-v", "--version") and not path:
                return  # glab prints help or its version
            elif not value.startswith("-"):
                call.structural.append(args[i])
                path.append(value)
                if len(path) == 2 or path[0] != "mr":
                    break
            i += 1
        rest = args[i + 1 :]
        if not path or (path == ["mr"]):
            if open_args:
                self.unknown.append(f"{call.words}: glab's command comes from xargs' input")
            return
        top = path[0]
        if top == "api":
            self._glab_api(call, rest, layer)
        elif top not in _GLAB_COMMANDS:
            self.unknown.append(
                f"{call.words}: `glab {top}` is not a glab command the hook knows; an alias "
                "could expand to a merge"
            )
        elif top == "mr" and _is_merge_word(path[1]):
            self._glab_merge(call, rest, layer)
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
        for reading in _host_readings(project):
            self.merges.append(MergeFound(call.words, reading, iid, problem))

    def _glab_api(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        """``glab api <endpoint> [flags]``: a merge when it is not a GET or HEAD to a merge
        request's merge endpoint (or a merge train), or a GraphQL mergeRequestAccept."""
        flags = _cobra(args, _API_FLAGS)
        if flags.help:
            return
        endpoint = flags.positionals[0][1] if flags.positionals else None
        for name in ("--method", "--repo"):
            call.structural += flags.spelled.get(name, [])
        if endpoint is not None:
            call.structural.append(endpoint)
        fields = [f or _literal_word("") for f in flags.values.get("--raw-field", [])]
        for f in flags.values.get("--field", []):  # -F key=@file reads a file
            if f is None or (f.value or "").partition("=")[2].startswith("@"):
                f = _Word((DYNAMIC,), None, "-F")
            fields.append(f)
        if "--input" in flags.values:
            fields.append(_Word((DYNAMIC,), None, "--input"))
        if endpoint is None:
            if call.open_args:
                self.unknown.append(f"{call.words}: the endpoint comes from xargs' input")
            return
        target = endpoint.value
        if target is not None and target.strip("/").lower() == "graphql":
            self._consume(layer, call.structural)
            self._graphql(call, [f.value for f in fields])
            return
        method = flags.last("--method", None)
        if method is None:
            verb: str | None = "POST" if fields else "GET"  # glab's default
        else:
            verb = method.value.upper() if method.value is not None else None
        if verb is None:
            self.unknown.append(f"{call.words}: the HTTP method is built from variables")
            return
        if verb in ("GET", "HEAD"):
            self._consume(layer, call.structural)
            return  # a read merges nothing
        if target is None:
            self.unknown.append(
                f"{call.words}: a {verb} to an endpoint built from variables or substitutions"
            )
            return
        self._consume(layer, call.structural)
        found = _merge_endpoint(target)
        if found is not None:
            repo = flags.last("--repo", call.repo)
            project, iid, problem = _attribute_endpoint(*found, repo, call.env)
            readings = _host_readings(project) if project != found[0] else (project,)
            for reading in readings:  # only a project -R names may start with a host
                self.merges.append(MergeFound(call.words, reading, iid, problem))

    def _graphql(self, call: _GlabCall, bodies: list[str | None]) -> None:
        if any(b is None for b in bodies):
            self.unknown.append(
                f"{call.words}: a GraphQL request whose body the hook cannot read (a file, "
                "standard input or an expansion)"
            )
        elif any("mergerequestaccept" in (b or "").lower() for b in bodies):
            self.merges.append(
                MergeFound(
                    call.words,
                    None,
                    None,
                    "a GraphQL mergeRequestAccept cannot be attributed to one project and one "
                    "merge request by this hook; merge with glab mr merge <iid> -R <project>",
                )
            )


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


def _attribute_endpoint(
    project_text: str, iid_text: str, repo: _Word | None, env: dict[str, _Word]
) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) for a REST merge endpoint; a placeholder project is -R's."""
    project: str | None = project_text
    problem = ""
    if re.search(r":(fullpath|id|repo|namespace|group|user|username)\b", project_text):
        project = _repo_project(repo, env)
        if project is None:
            problem = (
                f"{project_text} is the current directory's project, which the hook does not "
                "guess; spell the project in the path, or pass -R <group/project>"
            )
    iid = int(iid_text) if iid_text.isdigit() and int(iid_text) > 0 else None
    if iid is None and not problem:
        problem = f"{iid_text!r} is not a merge request iid"
    return project, iid, problem


def _is_merge_word(value: str | None) -> bool:
    """merge, accept, and what cobra could complete to them if prefix matching were on."""
    if not value:
        return False
    v = value.lower()
    return "merge".startswith(v) or (len(v) >= 2 and "accept".startswith(v))


def _merge_endpoint(endpoint: str) -> tuple[str, str] | None:
    """(project, iid) when a REST endpoint is a merge request's merge or adds it to a train."""
    path = endpoint.split("?", 1)[0].split("#", 1)[0]
    path = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]+", "", path, flags=re.IGNORECASE)
    segments: list[str] = []
    for segment in (urllib.parse.unquote(s) for s in path.split("/")):
        if segment == "..":  # resolved as a URL is, before it reaches the router
            segments = segments[:-1]
        elif segment not in ("", "."):
            segments.append(segment)
    if segments:  # Grape routes answer with a format suffix too: .../merge.json
        segments[-1] = re.sub(r"\.\w+$", "", segments[-1])
    if segments[:2] == ["api", "v4"]:
        segments = segments[2:]
    lowered = [s.lower() for s in segments]
    if not lowered or lowered[0] != "projects":
        return None
    for k in range(2, len(lowered)):
        if lowered[k] != "merge_requests":
            continue
        project = "/".join(segments[1:k])
        if k >= 3 and lowered[k - 1] == "merge_trains":
            project = "/".join(segments[1 : k - 1])
            if len(lowered) == k + 2:
                return project, segments[k + 1]
        if len(lowered) == k + 3 and lowered[k + 2] == "merge":
            return project, segments[k + 1]
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


_MR_URL = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://[^/]+/)?(?P<project>.+?)/-/merge_requests/(?P<iid>\d+)"
)


def _attribute(
    positionals: list[tuple[int, _Word]],
    unclear: set[int],
    repo: _Word | None,
    env: dict[str, _Word],
    open_args: bool,
) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) for ``glab mr merge``'s arguments."""
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
                "no merge request named: glab would merge the current branch's merge request, which "
                "the hook does not guess; name it by its iid"
            ),
        )
    value = positionals[0][1].value
    if value is None:
        return project, None, "the merge request is built from variables or substitutions"
    m = _MR_URL.match(value)
    if m:
        from_url = m.group("project")
        if project is not None and project != from_url:
            return None, None, f"-R names {project} but the URL names {from_url}"
        return from_url, int(m.group("iid")), ""
    digits = value[1:] if value.startswith("!") else value
    if not digits.isdigit() or int(digits) == 0:
        return (
            project,
            None,
            (f"{value!r} names a branch, not a merge request; name the merge request by its iid"),
        )
    if project is None:
        return (
            None,
            int(digits),
            (
                "no project named: glab would use the current directory's repository (or "
                "GITLAB_REPO), which the hook does not guess; pass -R <group/project>"
            ),
        )
    return project, int(digits), ""


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


def read_command(command: str) -> CommandReading:
    """Every merge ``command`` would make, with its project and merge request when the text
    says them; what could not be read; and text that names a glab merge without running one.

    Pure and fast: no I/O, no configuration. See docs/agent-handoff-reference.md for exactly
    what it recognises.
    """
    reader = _Reader()
    reader.read(command)
    seen: set[tuple[str | None, int | None, str]] = set()
    merges = []
    for m in reader.merges:
        key = (m.project, m.iid, m.problem)
        if key not in seen:
            seen.add(key)
            merges.append(m)
    return CommandReading(
        tuple(merges), tuple(dict.fromkeys(reader.unknown)), tuple(dict.fromkeys(reader.mentions))
    )


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
    if payload.get("tool_name", "Bash") != "Bash":
        return Exit.OK  # registered more widely than matcher Bash: other tools merge nothing
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        raise HookDenied("the hook input has no tool_input.command string")
    if not could_name_glab_merge(command):
        return Exit.OK
    reading = read_command(command)
    problems = reading.problems()
    if not problems and not reading.merges:
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
        verdict = gate_merge(client, config, merge.project, merge.iid)
        if not verdict.allowed:
            refused.append(verdict.message)
    if refused:
        raise HookDenied(_hook_message(config, refused, reading.merges))
    return Exit.OK


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
    except BaseException as exc:  # every failure blocks: Claude Code runs it on any other exit
        message = exc.message if isinstance(exc, PairgateError) else f"{type(exc).__name__}: {exc}"
        message = message.removeprefix("pairgate: ")
        if not isinstance(exc, HookDenied):
            message = f"the merge hook could not decide, so it blocks: {message}"
        print(f"pairgate: {message}", file=ctx.stderr)
        return Exit.ERROR


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
