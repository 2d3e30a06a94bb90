#!/usr/bin/env python3
"""Publish built distributions with twine: the jobs publish-build and pypi-release run this.

    publish.py build --repository-url URL [--username U] [--password-from VAR] DIST...
    publish.py release VERSION [--repository-url URL] [--username U] [--password-from VAR] DIST...

``build`` publishes a build between releases (``<release-version>+<content hash>``) to a package
registry (this project's own, in CI). Two commits that change nothing the wheel ships build the
same version, and a registry refuses a second upload of one, so it first reads the registry's
simple index (``URL/simple/<name>/``, the layout GitLab's PyPI registry and pypiserver share) and
skips each file already there. A file there with other bytes stays as it is (a deployment's
``--hash`` pin names those bytes), with a warning.

``release`` publishes a tagged release: every file must be exactly VERSION, with no local label
(PyPI refuses those, and a ``+`` means the build was not the clean tagged release). Without
``--repository-url`` twine's default, PyPI, takes it, and twine skips a file PyPI already holds;
with one, that index's simple index is read first, as for ``build``. Either way a retried job
passes.

The password comes from the environment variable ``--password-from`` names (default
TWINE_PASSWORD), never from the command line. Exit 0 published (or nothing to publish),
1 refused (a file of the wrong version), 2 could not publish.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import requests
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version
from requests.adapters import HTTPAdapter
from urllib3.util import Retry

PROG = "publish.py"


class Failure(Exception):
    """The upload cannot be made (exit 2)."""


class Refused(Exception):
    """A file is not what this upload may publish (exit 1)."""


@dataclass(frozen=True)
class Dist:
    path: Path
    name: str
    version: Version


def dist_of(path: Path) -> Dist:
    """A wheel's or an sdist's name and version, read from its file name."""
    try:
        if path.name.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(path.name)
        else:
            name, version = parse_sdist_filename(path.name)
    except (InvalidWheelFilename, InvalidSdistFilename) as exc:
        raise Failure(f"{PROG}: {path} is not a wheel or an sdist: {exc}") from None
    if not path.is_file():
        raise Failure(f"{PROG}: {path} does not exist")
    return Dist(path, str(name), version)


class _Links(HTMLParser):
    """The file links of a PEP 503 project page: file name -> the sha256 its URL names."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            url = urlsplit(href)
            fragment = dict(p.split("=", 1) for p in url.fragment.split("&") if "=" in p)
            self.files[unquote(url.path.rsplit("/", 1)[-1])] = fragment.get("sha256")


def published_files(index: str, name: str, auth: tuple[str, str]) -> dict[str, str | None]:
    """What the registry's simple index lists for ``name`` (nothing when it knows no such
    project). GitLab forwards a project it lacks to PyPI: that listing counts the same."""
    session = requests.Session()
    retry = Retry(total=3, backoff_factor=0.5, status_forcelist=(429, 500, 502, 503, 504))
    session.mount("http://", HTTPAdapter(max_retries=retry))
    session.mount("https://", HTTPAdapter(max_retries=retry))
    url = f"{index.rstrip('/')}/simple/{canonicalize_name(name)}/"
    try:
        response = session.get(url, auth=auth, timeout=30)
    except requests.RequestException as exc:
        raise Failure(f"{PROG}: cannot read the registry's index {url}: {exc}") from None
    if response.status_code == 404:
        return {}
    if response.status_code != 200:
        raise Failure(f"{PROG}: the registry's index {url} answered {response.status_code}")
    links = _Links()
    links.feed(response.text)
    return links.files


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def not_yet_published(dists: Sequence[Dist], published: Mapping[str, str | None]) -> list[Dist]:
    """The files the registry lacks; says what it skips and why."""
    todo = []
    for dist in dists:
        if dist.path.name not in published:
            todo.append(dist)
            continue
        ours, theirs = sha256(dist.path), published[dist.path.name]
        if theirs in (None, ours):
            print(f"{PROG}: already published: {dist.path.name}")
        else:
            print(
                f"{PROG}: warning: {dist.path.name} is already published with sha256 {theirs}; "
                f"this build's is {ours}. The published file stays: a deployment's --hash pin "
                "names its bytes."
            )
    return todo


def check_release(dists: Sequence[Dist], expected: str) -> None:
    """Every file is exactly the tagged version."""
    want = Version(expected)
    if want.local is not None or str(want) != expected:
        raise Failure(f"{PROG}: release {expected!r} is not a plain X.Y.Z version")
    wrong = [d for d in dists if d.version != want or d.version.local is not None]
    if wrong:
        listed = ", ".join(f"{d.path.name} is {d.version}" for d in wrong)
        raise Refused(
            f"{PROG}: refused: the tag is v{expected}, but {listed}. A release is built from "
            f"the clean tagged commit whose pyproject.toml says release-version = "
            f'"{expected}" (RELEASING.md); nothing was uploaded.'
        )
    if not any(d.path.name.endswith(".whl") for d in dists):
        raise Refused(f"{PROG}: refused: no wheel among {', '.join(str(d.path) for d in dists)}")


def twine_upload(
    dists: Sequence[Dist], *, url: str | None, auth: tuple[str, str], skip_existing: bool
) -> None:
    argv = [sys.executable, "-m", "twine", "upload", "--non-interactive", "--disable-progress-bar"]
    argv += ["--repository-url", url] if url else []
    argv += ["--skip-existing"] if skip_existing else []
    env = {**os.environ, "TWINE_USERNAME": auth[0], "TWINE_PASSWORD": auth[1]}
    env.pop("TWINE_REPOSITORY_URL", None)  # only --repository-url names where it goes
    proc = subprocess.run([*argv, *(str(d.path) for d in dists)], env=env, check=False)
    if proc.returncode != 0:
        raise Failure(f"{PROG}: twine upload failed (exit {proc.returncode}); see above")


def credentials(username: str, password_from: str, env: Mapping[str, str]) -> tuple[str, str]:
    password = env.get(password_from, "")
    if not username or not password:
        missing = "--username" if not username else f"the variable {password_from}"
        raise Failure(f"{PROG}: {missing} is empty or unset: the upload needs credentials")
    return username, password


def publish(dists: Sequence[Dist], *, url: str | None, auth: tuple[str, str]) -> None:
    """Upload what the index lacks. A named index is read first (twine skips an existing file
    on PyPI only); PyPI, the default, is left to twine's --skip-existing."""
    if url is None:
        twine_upload(dists, url=None, auth=auth, skip_existing=True)
        print(f"{PROG}: published {', '.join(d.path.name for d in dists)}")
        return
    published: dict[str, str | None] = {}
    for name in sorted({d.name for d in dists}):
        published.update(published_files(url, name, auth))
    todo = not_yet_published(dists, published)
    if todo:
        twine_upload(todo, url=url, auth=auth, skip_existing=False)
        print(f"{PROG}: published {', '.join(d.path.name for d in todo)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--username", default=os.environ.get("TWINE_USERNAME", ""))
    common.add_argument("--password-from", default="TWINE_PASSWORD", metavar="VARIABLE")
    modes = parser.add_subparsers(dest="mode", required=True)
    build = modes.add_parser("build", parents=[common], help="a build, to the package registry")
    build.add_argument("--repository-url", required=True, metavar="URL")
    build.add_argument("dists", nargs="+", type=Path, metavar="DIST")
    release = modes.add_parser("release", parents=[common], help="a tagged release, to PyPI")
    release.add_argument("version", metavar="VERSION", help="the version the tag names: X.Y.Z")
    release.add_argument("dists", nargs="+", type=Path, metavar="DIST")
    release.add_argument("--repository-url", default="", metavar="URL", help="default: PyPI")
    args = parser.parse_args(argv)
    try:
        dists = [dist_of(path) for path in args.dists]
        auth = credentials(args.username, args.password_from, os.environ)
        if args.mode == "release":
            check_release(dists, args.version)
        publish(dists, url=args.repository_url or None, auth=auth)
        return 0
    except Refused as exc:
        print(exc, file=sys.stderr)
        return 1
    except Failure as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
