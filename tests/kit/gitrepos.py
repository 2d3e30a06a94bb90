"""Real git repositories for the currency tests: a bare origin, and clones of it."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

# git must not read the machine's configuration, and commits need an author.
GIT_ENV = {
    "PATH": os.environ["PATH"],
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(where), *args],
        env=GIT_ENV,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def commit(repo: Path, files: dict[str, str], subject: str) -> str:
    """Write the files, commit them with this subject, and return the abbreviated sha."""
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "log", "-1", "--format=%h")


@dataclass(frozen=True)
class World:
    origin: Path  # the bare repository
    upstream: Path  # a clone that pushes to origin (where "the project" works)
    deployed: Path  # the deployment's clone, the one measured

    def push(self, files: dict[str, str], subject: str) -> str:
        sha = commit(self.upstream, files, subject)
        git(self.upstream, "push", "-q", "origin", "main")
        return sha

    def fetch(self) -> None:
        git(self.deployed, "fetch", "-q", "origin")


def make_world(tmp: Path) -> World:
    """origin holds tool/, hooks/ and notes.txt; the deployment is a fresh clone of it."""
    origin, upstream, deployed = tmp / "origin.git", tmp / "upstream", tmp / "deployed"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(origin))
    git(tmp, "clone", "-q", str(origin), str(upstream))
    git(upstream, "checkout", "-q", "-b", "main")
    commit(
        upstream,
        {"tool/main.py": "v1\n", "hooks/hook.sh": "v1\n", "notes.txt": "v1\n"},
        "First",
    )
    git(upstream, "push", "-q", "origin", "main")
    git(tmp, "clone", "-q", str(origin), str(deployed))
    return World(origin, upstream, deployed)
