"""Publishing: .gitlab-ci.yml's publish-build, pypi-release and catalog-release jobs.

gitlab-ci-local runs each job as tests/test_component.py runs the component (shell executor, this
machine's python standing for the job image). The uploads go to a pypiserver the test starts on
loopback, so what a job published is read back from a real package index. The GitLab release
itself is made by the runner from the job's ``release:`` keyword, which gitlab-ci-local does not
carry out and the sandbox does not serve (no Releases API): the tests run catalog-release's
script, check the keyword it hands the runner, and check, with a recording server standing for
GitLab's API, that the script itself calls no API (the CI/CD Catalog takes only a release made
by the keyword).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import Parser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Protocol

import pytest
import yaml

from tests.kit.gcl import gitlab_ci_local
from tests.kit.gitrepos import git
from tests.kit.names import ROOT
from tests.test_release import RELEASE, content_hash, copy_project

pytestmark = pytest.mark.slow

PUBLISH = ROOT / "scripts" / "publish.py"
NOTES = ROOT / "scripts" / "release-notes.sh"
# What the jobs read beside the build payload that copy_project copies.
PIPELINE_FILES = (
    ".gitlab-ci.yml",
    "CHANGELOG.md",
    "scripts/publish.py",
    "scripts/release-notes.sh",
    "scripts/check-wheel.py",
)


def needed(what: str, present: bool) -> None:
    """A tool these tests need: absent under CI it is a failure, not a skip."""
    if present:
        return
    why = f"the publishing tests need {what}; bash scripts/test installs it (pip install -e '.[test]')"
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


# --- a package index on loopback ----------------------------------------------------------------


@dataclass(frozen=True)
class Index:
    url: str
    packages: Path

    def files(self) -> list[str]:
        return sorted(p.name for p in self.packages.iterdir())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    """A pypiserver on loopback that takes any upload (no authentication) and never forwards
    a request to PyPI."""
    needed("pypiserver", shutil.which("pypi-server") is not None or _importable("pypiserver"))
    packages = tmp_path / "index"
    packages.mkdir()
    port = free_port()
    argv = [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(port)]
    argv += ["-a", ".", "-P", ".", "--disable-fallback", str(packages)]
    server = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        for line in server.stderr:  # it says so when it listens; EOF means it died
            if line.startswith("Listening on "):
                break
        else:
            pytest.fail(f"pypiserver did not start (exit {server.wait()})")
        threading.Thread(target=server.stderr.read, daemon=True).start()  # keep its pipe drained
        yield Index(f"http://127.0.0.1:{port}", packages)
    finally:
        server.terminate()
        server.wait(timeout=10)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


class _Recorder(BaseHTTPRequestHandler):
    seen: list[str]

    def _any(self) -> None:
        self.seen.append(f"{self.command} {self.path}")
        self.send_response(599)
        self.end_headers()

    do_GET = do_POST = do_PUT = _any

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def gitlab_api() -> Iterator[tuple[str, list[str]]]:
    """A server standing for GitLab's API that records every request and answers none."""
    seen: list[str] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


# --- the project, built, and its pipeline under gitlab-ci-local ------------------------------


class Project(Protocol):
    def __call__(
        self, tmp_path: Path, *, tag: str | None = None, changelog: str | None = None
    ) -> Path: ...


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """``project(tmp_path, tag=..., changelog=...)``: a checkout of this project with what the
    publishing jobs read, committed (and tagged), and built as the wheel job builds it (dist/
    holds the sdist and the wheel), at ``tmp_path/pairgate``. Each checkout is built once per
    session (a build is seconds of hatchling); every test gets a copy of its own, git
    repository and dist/ included, to change as it likes."""
    needed("twine", _importable("twine"))
    built: dict[tuple[str | None, str | None], Path] = {}

    def fresh(tmp_path: Path, *, tag: str | None = None, changelog: str | None = None) -> Path:
        key = (tag, changelog)
        if key not in built:
            built[key] = build(tmp_path_factory.mktemp("built"), tag=tag, changelog=changelog)
        return Path(shutil.copytree(built[key], tmp_path / "pairgate", symlinks=True))

    return fresh


def build(where: Path, *, tag: str | None, changelog: str | None) -> Path:
    root = copy_project(where / "pairgate")
    for name in PIPELINE_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    shutil.copytree(ROOT / "templates", root / "templates", dirs_exist_ok=True)
    if changelog is not None:
        (root / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "pairgate")
    if tag:
        git(root, "tag", tag)
    argv = [sys.executable, "-m", "build", "--no-isolation", "--outdir", "dist", "."]
    built = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    return root


@dataclass(frozen=True)
class Pipeline:
    code: int
    output: str

    def job(self, name: str) -> str | None:
        found = re.search(rf"^ (PASS|FAIL)\s.*?{re.escape(name)}\s*$", self.output, re.MULTILINE)
        return found.group(1) if found else None

    def lines(self, name: str) -> str:
        return "\n".join(re.findall(rf"^{re.escape(name)}\s+> (.*)$", self.output, re.MULTILINE))


def run_jobs(root: Path, jobs: list[str], variables: dict[str, str]) -> Pipeline:
    """Run these jobs of the project's .gitlab-ci.yml; the jobs' python is this interpreter.
    Not against GitLab's CI schema (a quarter of a second a run): the list test below checks the
    same file against it."""
    argv = [gitlab_ci_local(), "--force-shell-executor", "--shell-executor-no-image", *jobs]
    argv.append("--no-json-schema-validation")
    argv += ["--ignore-predefined-vars", ",".join(n for n in variables if n.startswith("CI_"))]
    for name, value in variables.items():
        argv += ["--variable", f"{name}={value}"]
    bin_dir = root.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("python", "python3"):
        if not (bin_dir / name).exists():
            (bin_dir / name).symlink_to(sys.executable)
    home = root.parent / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(home)}
    proc = subprocess.run(
        argv, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return Pipeline(proc.returncode, proc.stdout + proc.stderr)


def wheel_version(path: Path) -> str:
    """The Version field of a wheel's METADATA: what pip installs it as."""
    with zipfile.ZipFile(path) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return str(Parser().parsestr(archive.read(name).decode())["Version"])


BRANCH = {"CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main", "CI_COMMIT_TAG": ""}


def registry(index: Index) -> dict[str, str]:
    return {
        **BRANCH,
        "PAIRGATE_REGISTRY_URL": index.url,
        "PAIRGATE_REGISTRY_USER": "ci-bot",
        "PAIRGATE_REGISTRY_PASSWORD_VARIABLE": "TEST_REGISTRY_TOKEN",
        "TEST_REGISTRY_TOKEN": "registry-secret",
    }


# --- publish-build ------------------------------------------------------------------------------


def test_a_default_branch_commit_publishes_its_wheel_as_version_plus_content_hash(
    tmp_path: Path, index: Index, project: Project
) -> None:
    root = project(tmp_path)
    expected = f"{RELEASE}+{content_hash(root)}"
    result = run_jobs(root, ["publish-build"], registry(index))
    assert (result.code, result.job("publish-build")) == (0, "PASS"), result.output
    assert index.files() == [f"pairgate-{expected}-py3-none-any.whl"]
    assert wheel_version(index.packages / index.files()[0]) == expected
    assert f"publish.py: published pairgate-{expected}-py3-none-any.whl" in result.output

    # A commit that changes nothing the wheel ships builds the same version: nothing new.
    (root / "docs.md").write_text("a change to the docs\n", encoding="utf-8")
    git(root, "add", "docs.md")
    git(root, "commit", "-q", "-m", "docs")
    again = run_jobs(root, ["publish-build"], registry(index))
    assert (again.code, again.job("publish-build")) == (0, "PASS"), again.output
    assert f"already published: pairgate-{expected}-py3-none-any.whl" in again.output
    assert index.files() == [f"pairgate-{expected}-py3-none-any.whl"]


def test_publish_build_with_no_registry_password_fails_naming_the_variable(
    tmp_path: Path, index: Index, project: Project
) -> None:
    root = project(tmp_path)
    variables = {**registry(index), "TEST_REGISTRY_TOKEN": ""}
    result = run_jobs(root, ["publish-build"], variables)
    assert (result.code, result.job("publish-build")) == (1, "FAIL")
    assert "the variable TEST_REGISTRY_TOKEN is empty or unset" in result.output
    assert index.files() == []


# --- pypi-release and catalog-release -----------------------------------------------------------

CHANGELOG = f"""# Changelog

## Unreleased

## {RELEASE} (2026-02-01)

### Added
- Publishing from CI.

## 0.0.1 (2025-12-01)

- The first.
"""


def release_variables(index: Index, api: str, tag: str) -> dict[str, str]:
    return {
        "CI_COMMIT_TAG": tag,
        "CI_COMMIT_BRANCH": "",
        "CI_API_V4_URL": f"{api}/api/v4",
        "CI_SERVER_URL": api,
        "PAIRGATE_PYPI_URL": index.url,
        "PAIRGATE_PYPI_TOKEN": "pypi-secret",
    }


def test_a_release_tag_publishes_the_release_and_hands_the_runner_its_gitlab_release(
    tmp_path: Path, index: Index, gitlab_api: tuple[str, list[str]], project: Project
) -> None:
    api, seen = gitlab_api
    root = project(tmp_path, tag=f"v{RELEASE}", changelog=CHANGELOG)
    result = run_jobs(
        root, ["pypi-release", "catalog-release"], release_variables(index, api, f"v{RELEASE}")
    )
    assert (result.code, result.job("pypi-release"), result.job("catalog-release")) == (
        0,
        "PASS",
        "PASS",
    ), result.output
    wheel, sdist = f"pairgate-{RELEASE}-py3-none-any.whl", f"pairgate-{RELEASE}.tar.gz"
    assert index.files() == sorted([wheel, sdist])
    assert wheel_version(index.packages / wheel) == RELEASE

    notes = (root / "release-notes.md").read_text(encoding="utf-8")
    assert "### Added\n- Publishing from CI." in notes
    assert "The first." not in notes  # only this version's section
    for name in (wheel, sdist):
        digest = subprocess.run(
            ["sha256sum", str(index.packages / name)], capture_output=True, text=True, check=True
        ).stdout.split()[0]
        assert f"- `{name}`: sha256 `{digest}`" in notes  # the bytes PyPI now holds
    assert seen == []  # the script calls no API: the runner makes the release from release:

    preview = subprocess.run(
        [gitlab_ci_local(), "--preview"], cwd=root, capture_output=True, text=True, check=True
    )
    job = yaml.safe_load(preview.stdout.split("\n---\n", 1)[-1])["catalog-release"]
    assert job["release"] == {
        "tag_name": "$CI_COMMIT_TAG",
        "name": "pairgate $CI_COMMIT_TAG",
        "description": "./release-notes.md",
    }
    assert job["image"] == {"name": "registry.gitlab.com/gitlab-org/cli:latest"}
    assert [n["job"] for n in job["needs"]] == ["wheel", "pypi-release"]


def test_a_tag_that_is_not_the_release_version_publishes_nothing(
    tmp_path: Path, index: Index, gitlab_api: tuple[str, list[str]], project: Project
) -> None:
    api, seen = gitlab_api
    root = project(tmp_path, tag="v9.9.9", changelog=CHANGELOG)  # release-version says RELEASE
    result = run_jobs(
        root, ["pypi-release", "catalog-release"], release_variables(index, api, "v9.9.9")
    )
    assert (result.code, result.job("pypi-release")) == (1, "FAIL"), result.output
    assert result.job("catalog-release") in (None, "FAIL")
    assert "refused: the tag is v9.9.9, but pairgate-" in result.output
    assert not (root / "release-notes.md").exists()
    assert index.files() == []
    assert seen == []


def test_the_publishing_jobs_run_where_they_should_and_nowhere_else(tmp_path: Path) -> None:
    repo = tmp_path / "pairgate"
    shutil.copytree(ROOT / "templates", repo / "templates", dirs_exist_ok=True)
    shutil.copy(ROOT / ".gitlab-ci.yml", repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pairgate")

    def publishing(*, schema: bool = False, **variables: str) -> set[str]:
        """The publishing jobs that would run; ``schema`` checks the file against GitLab's CI
        schema too (once is enough: every listing reads the same file)."""
        argv = [gitlab_ci_local(), "--list-json"]
        if not schema:
            argv.append("--no-json-schema-validation")
        argv += ["--ignore-predefined-vars", ",".join(variables)]
        for name, value in variables.items():
            argv += ["--variable", f"{name}={value}"]
        listed = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=True)
        jobs = {j["name"] for j in json.loads(listed.stdout) if j["when"] != "never"}
        return jobs & {"publish-build", "pypi-release", "catalog-release"}

    default = {"CI_DEFAULT_BRANCH": "main"}
    mr = {"CI_PIPELINE_SOURCE": "merge_request_event", "CI_COMMIT_BRANCH": "", **default}
    assert publishing(schema=True, **mr) == set()
    assert publishing(CI_COMMIT_BRANCH="main", **default) == {"publish-build"}
    assert publishing(CI_COMMIT_BRANCH="topic", **default) == set()
    tag = {"CI_COMMIT_BRANCH": "", **default}
    assert publishing(CI_COMMIT_TAG="v1.2.3", **tag) == {"pypi-release", "catalog-release"}
    for not_semver in ("v1.2", "1.2.3", "v1.2.3-rc1", "release-1.2.3"):
        assert publishing(CI_COMMIT_TAG=not_semver, **tag) == set(), not_semver


# --- the two scripts on their own ------------------------------------------------------------


def run(args: list[str], cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **env}
    return subprocess.run(args, cwd=cwd, env=full, capture_output=True, text=True, timeout=60)


def fake_dist(where: Path, name: str, content: bytes = b"wheel") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_bytes(content)
    return path


def test_a_file_published_with_other_bytes_stays_and_is_reported(
    tmp_path: Path, index: Index
) -> None:
    name = f"pairgate-{RELEASE}+0123456789ab-py3-none-any.whl"
    shutil.copy(fake_dist(tmp_path / "first", name, b"the published bytes"), index.packages)
    other = fake_dist(tmp_path / "second", name, b"other bytes")
    result = run(
        [sys.executable, str(PUBLISH), "build", "--repository-url", index.url, str(other)],
        TWINE_USERNAME="u",
        TWINE_PASSWORD="p",
    )
    assert result.returncode == 0, result.stderr
    assert f"warning: {name} is already published with sha256 " in result.stdout
    assert "The published file stays" in result.stdout
    assert (index.packages / name).read_bytes() == b"the published bytes"


def test_a_registry_whose_index_cannot_be_read_is_exit_2(
    tmp_path: Path, gitlab_api: tuple[str, list[str]]
) -> None:
    url, seen = gitlab_api  # it answers every request with a 599
    wheel = fake_dist(tmp_path, f"pairgate-{RELEASE}+0123456789ab-py3-none-any.whl")
    result = run(
        [sys.executable, str(PUBLISH), "build", "--repository-url", url, str(wheel)],
        TWINE_USERNAME="u",
        TWINE_PASSWORD="p",
    )
    assert result.returncode == 2
    assert (
        result.stderr == f"publish.py: the registry's index {url}/simple/pairgate/ answered 599\n"
    )
    assert seen == ["GET /simple/pairgate/"]  # and no upload


@pytest.mark.parametrize(
    ("files", "says"),
    [
        ([f"pairgate-{RELEASE}+0123456789ab-py3-none-any.whl"], f"is {RELEASE}+0123456789ab"),
        (["pairgate-9.9.8-py3-none-any.whl"], "is 9.9.8"),
        ([f"pairgate-{RELEASE}.tar.gz"], "no wheel among"),
    ],
)
def test_a_release_of_files_other_than_the_tagged_version_is_refused(
    tmp_path: Path, files: list[str], says: str
) -> None:
    paths = [str(fake_dist(tmp_path, name)) for name in files]
    result = run(
        [sys.executable, str(PUBLISH), "release", RELEASE, *paths],
        TWINE_USERNAME="__token__",
        TWINE_PASSWORD="p",
    )
    assert result.returncode == 1
    assert "publish.py: refused: " in result.stderr and says in result.stderr


def notes_project(tmp_path: Path, *, changelog: str = CHANGELOG) -> Path:
    root = tmp_path / "p"
    (root / "templates" / "gate").mkdir(parents=True)
    (root / "templates" / "gate" / "template.yml").write_text("spec: {}\n")
    (root / "README.md").write_text("# p\n")
    (root / "CHANGELOG.md").write_text(changelog)
    return root


@pytest.mark.parametrize(
    ("tag", "damage", "says"),
    [
        ("v1.2", None, "the tag v1.2 is not vX.Y.Z"),
        ("1.2.3", None, "the tag 1.2.3 is not vX.Y.Z"),
        ("v1.2.3-rc1", None, "the tag v1.2.3-rc1 is not vX.Y.Z"),
        (f"v{RELEASE}", "README.md", "there is no README.md at the tagged commit"),
        (f"v{RELEASE}", "templates", "there is no component under templates/"),
        ("v7.7.7", None, 'CHANGELOG.md has no "## 7.7.7" section'),
    ],
)
def test_release_notes_refuse_what_the_catalog_would_not_publish(
    tmp_path: Path, tag: str, damage: str | None, says: str
) -> None:
    root = notes_project(tmp_path)
    if damage == "README.md":
        (root / "README.md").unlink()
    elif damage == "templates":
        shutil.rmtree(root / "templates")
    result = run(["sh", str(NOTES), tag], cwd=root)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"release-notes.sh: refused: {says}" + result.stderr.split(says, 1)[1]


def test_release_notes_are_the_versions_changelog_section_and_the_files_hashes(
    tmp_path: Path,
) -> None:
    root = notes_project(tmp_path)
    wheel = fake_dist(root / "dist", f"pairgate-{RELEASE}-py3-none-any.whl", b"abc")
    result = run(["sh", str(NOTES), f"v{RELEASE}", "dist/" + wheel.name], cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "\n### Added\n- Publishing from CI.\n"
        f"\n### Files\n\n- `{wheel.name}`: sha256 "
        "`ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad`\n"
    )
