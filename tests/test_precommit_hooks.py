"""The findings-vocabulary hooks under real pre-commit, as another repository would use them.

pre-commit comes from PyPI into a venv under /tmp (kept between runs), never into the shared
site-packages. Each throwaway consumer repository names a snapshot of this working tree in its
``.pre-commit-config.yaml`` (repo and rev, as the manifest's comment says), and ``pre-commit run``
runs the hook there. The hook's environment is installed into a pre-commit home kept beside
that venv, one per snapshot: the snapshot's commit is made with a fixed author and date, so its
id names its tree and the same tree is installed once (the install is most of this module's
time), while any change to the tree is a new snapshot, installed afresh. The least recently
used snapshots beyond KEPT are removed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from tests.kit.names import ROOT
from tests.kit.run import Result

pytestmark = pytest.mark.slow

CACHE = Path("/tmp/pairgate-test-pre-commit")
PRE_COMMIT_VENV = CACHE / f"py{sys.version_info[0]}{sys.version_info[1]}"
KEPT = 6  # snapshots with their installed hook environment (some 60 MB each)
# A snapshot's commit: its id is then a function of its tree alone.
FIXED_COMMIT = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}


def run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> Result:
    proc = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="session")
def pre_commit() -> Path:
    exe = PRE_COMMIT_VENV / "bin" / "pre-commit"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PRE_COMMIT_VENV)], check=True)
        subprocess.run(
            [str(PRE_COMMIT_VENV / "bin" / "pip"), "install", "--quiet", "pre-commit"],
            check=True,
        )
    return exe


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    ).stdout.strip()


@pytest.fixture(scope="session")
def snapshot() -> Path:
    """This working tree as it is now (tracked and untracked files), committed in a repository
    of its own, so every try-repo installs exactly what is being tested: ``CACHE/hooks-<id>``,
    with ``home-<id>`` beside it for its pre-commit home."""
    CACHE.mkdir(parents=True, exist_ok=True)
    repo = Path(tempfile.mkdtemp(prefix="making-", dir=CACHE))
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    # The wheel force-includes validators/, hooks/ and agents/; a branch that does not have one
    # of them yet must still build.
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    for source in wheel["targets"]["wheel"]["force-include"]:
        if not (repo / source).exists():
            (repo / source).mkdir()
            (repo / source / ".keep").touch()
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "snapshot", cwd=repo, env=FIXED_COMMIT)
    kept = CACHE / f"hooks-{git('rev-parse', 'HEAD', cwd=repo)}"
    try:
        repo.rename(kept)  # atomic: a session making the same snapshot at once keeps its own
    except OSError:
        shutil.rmtree(repo, ignore_errors=True)
    (CACHE / f"home-{kept.name.removeprefix('hooks-')}").mkdir(exist_ok=True)
    kept.touch()  # the most recently used
    _forget_old_snapshots()
    return kept


def _forget_old_snapshots() -> None:
    snapshots = sorted(CACHE.glob("hooks-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in snapshots[KEPT:]:
        shutil.rmtree(CACHE / f"home-{old.name.removeprefix('hooks-')}", ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


@pytest.fixture(scope="session")
def hooks_repo(snapshot: Path) -> Path:
    return snapshot


@pytest.fixture(scope="session")
def pre_commit_home(snapshot: Path) -> Path:
    return CACHE / f"home-{snapshot.name.removeprefix('hooks-')}"


@pytest.fixture
def consumer(tmp_path: Path, hooks_repo: Path) -> Path:
    git("init", "-q", cwd=tmp_path)
    rev = git("rev-parse", "HEAD", cwd=hooks_repo)
    (tmp_path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks_repo}\n    rev: {rev}\n    hooks:\n"
        "      - id: pairgate-finding-vocabulary\n"
        "      - id: pairgate-finding-vocabulary-commit-msg\n"
    )
    git("add", ".pre-commit-config.yaml", cwd=tmp_path)
    return tmp_path


def run_hook(pre_commit: Path, home: Path, consumer: Path, *args: str) -> Result:
    return run([pre_commit, "run", *args], cwd=consumer, env={"PRE_COMMIT_HOME": str(home)})


def commit_msg_hook(pre_commit: Path, home: Path, consumer: Path) -> Result:
    """The commit-msg hook, on the message in the consumer's file MSG."""
    return run_hook(
        pre_commit,
        home,
        consumer,
        "pairgate-finding-vocabulary-commit-msg",
        "--hook-stage",
        "commit-msg",
        "--commit-msg-filename",
        "MSG",
    )


def test_the_manifest_is_valid(pre_commit: Path) -> None:
    result = run([pre_commit, "validate-manifest", ROOT / ".pre-commit-hooks.yaml"], cwd=ROOT)
    assert result.code == 0, result.out + result.err


def test_commit_msg_hook_passes_a_clean_message(
    pre_commit: Path, pre_commit_home: Path, consumer: Path
) -> None:
    (consumer / "MSG").write_text(
        "Bound the retry budget\n\n"
        "> OBSERVED: the retry loop sleeps 30 s (acme-review, note 812)\n\n"
        "Recorded; this change does not touch it.\n\n"
        "ASKS: rename --force to --yes in cli.py:40\n\n"
        "Related to #7\n"
    )
    result = commit_msg_hook(pre_commit, pre_commit_home, consumer)
    assert result.code == 0, result.out + result.err
    assert "Passed" in result.out


def test_commit_msg_hook_fails_a_promotion_and_a_look_alike_naming_the_lines(
    pre_commit: Path, pre_commit_home: Path, consumer: Path
) -> None:
    (consumer / "MSG").write_text(
        "Bound the retry budget\n\n"
        "> OBSERVED: the retry loop sleeps 30 s (acme-review, note 812)\n"
        "Fix this before merging.\n\n"
        "MUST FIX: the timeout\n"
    )
    result = commit_msg_hook(pre_commit, pre_commit_home, consumer)
    assert result.code == 1, result.out + result.err
    assert "MSG:4: a relay promotes the OBSERVED: quoted on line 3" in result.out
    assert "MSG:6: look-alike marker 'MUST FIX:'" in result.out


def test_file_hook_checks_markdown_and_text_files_only(
    pre_commit: Path, pre_commit_home: Path, consumer: Path
) -> None:
    (consumer / "review.md").write_text("# Review\n\nBlocker: no test for the retry\n")
    (consumer / "reason.txt").write_text("OBSERVED: fine\n")
    (consumer / "code.py").write_text("# Blocker: a comment in code is not checked\n")
    git("add", "-A", cwd=consumer)
    result = run_hook(
        pre_commit, pre_commit_home, consumer, "pairgate-finding-vocabulary", "--all-files"
    )
    assert result.code == 1, result.out + result.err
    assert "review.md:3: look-alike marker 'Blocker:'" in result.out
    assert "code.py" not in result.out
