"""Real repositories for the evidence tests: a small Python package with a real pytest suite,
and real mutants of it made with git diff."""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.kit.gitrepos import GIT_ENV, commit, git

CALC = """\
def add(a, b):
    return a + b


def clamp(x, lo, hi):
    return max(lo, min(x, hi))
"""

TESTS = """\
from calc import add, clamp


def test_add():
    assert add(2, 3) == 5


def test_clamp():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
"""

# The package's test command, with pytest's plugin auto-loading off: the package's tests use no
# plugin, and the ones an environment has installed cost each run up to a second of start-up
# (hypothesis's alone half of it), where a round runs the suite once per mutant and per baseline.
# What the runner reads to decide (the exit code, and the junit report of pytest's own junitxml
# plugin) is the same either way. PLAIN_PYTEST is the command as a user writes it, for the
# test that runs it end to end.
PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python3 -m pytest -q"
PLAIN_PYTEST = "python3 -m pytest -q"


@dataclass(frozen=True)
class Package:
    repo: Path
    patches: Path  # where the mutants' patch files are written

    def sha(self, rev: str = "HEAD") -> str:
        return git(self.repo, "rev-parse", rev)

    def mutant(self, name: str, files: dict[str, str]) -> Path:
        """A patch against HEAD that writes these files (git diff of the edit, then undone)."""
        for path, text in files.items():
            (self.repo / path).write_text(text)
        # Not gitrepos.git: it strips the output, and with it a last blank context line.
        diff = subprocess.run(
            ["git", "-C", str(self.repo), "diff", "--no-color"],
            env=GIT_ENV,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        git(self.repo, "checkout", "-q", "--", ".")
        target = self.patches / name
        target.write_text(diff)
        return target

    def calc(self, name: str, old: str, new: str) -> Path:
        """A mutant of calc/__init__.py that replaces ``old`` with ``new``."""
        assert old in CALC
        return self.mutant(name, {"calc/__init__.py": CALC.replace(old, new)})


def make_package(tmp: Path) -> Package:
    repo, patches = tmp / "repo", tmp / "patches"
    patches.mkdir(parents=True)
    git(tmp, "init", "-q", "-b", "main", str(repo))
    commit(repo, {"calc/__init__.py": CALC, "tests/test_calc.py": TESTS}, "calc")
    return Package(repo, patches)


def marker() -> str:
    """A token to find a process by, in every process's command line."""
    return f"pairgate-evidence-test-{uuid.uuid4().hex}"


def processes_with(token: str) -> list[int]:
    """The pids whose command line holds ``token`` (zombies have none, so are not listed)."""
    found = []
    needle = token.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if needle in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def sleeper_code(token: str, *, pid_file: str = "", new_session: bool = False) -> str:
    """Python that starts a grandchild sleeping for ten minutes (its argv holds ``token``; with
    ``new_session`` it leaves the process group, as a daemon does), writes the grandchild's pid
    to ``pid_file`` when given, and then sleeps too."""
    record = f"open({pid_file!r}, 'w').write(str(child.pid)); " if pid_file else ""
    return (
        "import subprocess, sys, time; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', "
        f"{token!r}], start_new_session={new_session}); {record}time.sleep(600)"
    )
