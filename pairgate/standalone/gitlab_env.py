"""Which GitLab client a run gets: the API URL and tokens from the environment (or glab's own
configuration), checked, and the transports for reads and writes built from them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pairgate.standalone.config import Config, env_variable
from pairgate.standalone.errors import PairgateError
from pairgate.standalone.gitlab import GLAB_HOST, TIMEOUT, GitLab, Glab, Https

if TYPE_CHECKING:
    from urllib3.util.retry import Retry

# Hosts a token may travel to over plain http: this machine only.
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

__all__ = [
    "api_url_from_env",
    "checked_url",
    "gitlab_client",
    "gitlab_from_env",
    "gitlab_from_prefix",
    "gitlab_with_token",
]


def api_url_from_env(config: Config, env: Mapping[str, str]) -> tuple[str | None, str]:
    """The API root and where it came from: <env_prefix>_GITLAB_URL (the instance URL), else
    CI_API_V4_URL, else None (glab's configured host)."""
    return _api_url(env, config.env_name("GITLAB_URL"))


def _api_url(env: Mapping[str, str], name: str) -> tuple[str | None, str]:
    if env.get(name, "").strip():
        url = env[name].strip().rstrip("/")
        return (url if url.endswith("/api/v4") else f"{url}/api/v4"), name
    if env.get("CI_API_V4_URL", "").strip():
        return env["CI_API_V4_URL"].strip().rstrip("/"), "CI_API_V4_URL"
    return None, GLAB_HOST


def _glab_host(env: Mapping[str, str], url_variable: str) -> str:
    import subprocess  # only here: every import of the reader would pay for it

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


def checked_url(url: str, origin: str) -> str:
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
    transport: Callable[..., Any] = Https,
) -> GitLab:
    """The client a run uses: HTTPS with <env_prefix>_TASK_API_TOKEN for reads and
    <env_prefix>_TASK_WRITE_TOKEN for writes, ``glab api`` for whichever is not set.
    ``transport`` builds each HTTPS transport (Https's arguments; the merge hook's is
    gitlab_once.one_attempt_transport)."""
    return gitlab_from_prefix(
        config.env_prefix, env, retry=retry, timeout=timeout, transport=transport
    )


def gitlab_from_prefix(
    env_prefix: str,
    env: Mapping[str, str],
    *,
    retry: Retry | None = None,
    timeout: Any = TIMEOUT,
    transport: Callable[..., Any] = Https,
) -> GitLab:
    """gitlab_from_env for a run that has an env_prefix but no configuration yet (``pairgate
    init``): the same variables, named with that prefix."""
    read_name = env_variable(env_prefix, "TASK_API_TOKEN")
    write_name = env_variable(env_prefix, "TASK_WRITE_TOKEN")
    url_name = env_variable(env_prefix, "GITLAB_URL")
    read_token = env.get(read_name, "").strip()
    write_token = env.get(write_name, "").strip()
    api_url, origin = _api_url(env, url_name)
    if api_url is None and (read_token or write_token):
        api_url = f"https://{_glab_host(env, url_name)}/api/v4"
    missing = [
        f"{name} ({scope} token)"
        for name, scope, given in (
            (read_name, "a read_api", read_token),
            (write_name, "an api", write_token),
        )
        if not given
    ]
    return gitlab_client(
        api_url,
        origin,
        read_token=read_token,
        read_token_source=read_name,
        write_token=write_token,
        write_token_source=write_name,
        glab_env=env,
        glab_instead=" and ".join(missing),
        retry=retry,
        timeout=timeout,
        transport=transport,
    )


def gitlab_client(
    api_url: str | None,
    url_source: str,
    *,
    read_token: str = "",
    read_token_source: str = "the read token",
    write_token: str = "",
    write_token_source: str = "the write token",
    glab_env: Mapping[str, str] | None = None,
    glab_instead: str = "",
    retry: Retry | None = None,
    timeout: Any = TIMEOUT,
    transport: Callable[..., Any] = Https,
) -> GitLab:
    """The client from values its caller has in hand: HTTPS to ``api_url`` (the API root,
    ``.../api/v4``) with each token given, ``glab api`` for a side given none. ``url_source``
    and the token sources name, in errors, where each value came from (GLAB_HOST for a URL
    from glab's own configuration, whose host glab then picks itself). glab runs with
    ``glab_env``, and ``glab_instead`` names what would replace it, for its errors."""
    if api_url is not None:
        api_url = checked_url(api_url, url_source)
    hostname = urlsplit(api_url).netloc if api_url and url_source != GLAB_HOST else None
    glab = Glab(hostname, glab_env or {}, instead=glab_instead)

    def https(token: str, source: str, scope: str) -> Any:
        if api_url is None:
            raise PairgateError(f"pairgate: no GitLab URL to send {source} to")
        return transport(
            api_url,
            token,
            retry=retry,
            timeout=timeout,
            token_source=source,
            url_source=url_source,
            scope=scope,
        )

    return GitLab(
        reader=https(read_token, read_token_source, "read_api") if read_token else glab,
        writer=https(write_token, write_token_source, "api") if write_token else glab,
        api_url=api_url,
        origin=url_source,
    )


def gitlab_with_token(
    client: GitLab, token: str, *, retry: Retry | None = None, source: str = "the token"
) -> GitLab:
    """The same instance as another account (the review bot), over HTTPS with its token;
    ``source`` says where the token came from, for errors."""
    if client.api_url is None:
        raise PairgateError("pairgate: the GitLab URL is unknown; set <env_prefix>_GITLAB_URL")
    transport = Https(
        client.api_url,
        token,
        retry=retry,
        timeout=TIMEOUT,
        token_source=source,
        url_source=client.origin,
        scope="api",
    )
    return GitLab(reader=transport, writer=transport, api_url=client.api_url, origin=client.origin)
