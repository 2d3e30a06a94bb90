"""Files that judge a change: tests, CI files, the pairgate configuration, hooks, agent
definitions. A change (or a mutant) that edits one of them is named in the evidence, so "the
tests pass" cannot quietly be made true by editing the tests. Pure.

Pattern forms (matched with fnmatch, case-sensitive):
- ``name`` (no ``/``): the file's own name, in any directory (``conftest.py``, ``test_*.py``);
- ``dir/`` (one trailing ``/``): any file under a directory of that name, at any depth;
- anything else: the whole path from the repository's root, where ``*`` also matches ``/``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

# Test files: where a failing frame must be for a test to have killed a mutant.
TEST_PATTERNS: tuple[str, ...] = (
    "tests/",
    "test/",
    "testing/",
    "test_*.py",
    "*_test.py",
    "conftest.py",
    "*.test.*",
    "*.spec.*",
)

DEFAULT_PATTERNS: tuple[str, ...] = (
    *TEST_PATTERNS,
    # what decides how the tests run
    "pyproject.toml",
    "setup.cfg",
    "pytest.ini",
    "tox.ini",
    "noxfile.py",
    "package.json",
    "Makefile",
    # CI
    ".gitlab-ci.yml",
    ".gitlab/",
    ".github/",
    ".ci/",
    ".circleci/",
    "Jenkinsfile",
    ".pre-commit-config.yaml",
    "templates/mr-ownership-gate/*",
    # the pairgate configuration and the gate it runs
    "pairgate-config.json",
    "automation_mr_families.py",
    "validators/",
    # hooks
    "hooks/",
    ".githooks/",
    ".husky/",
    # agent definitions
    "agents/",
    ".claude/",
    "CLAUDE.md",
    "AGENTS.md",
)


def matching_pattern(path: str, patterns: Iterable[str] = DEFAULT_PATTERNS) -> str | None:
    """The first pattern that ``path`` matches, or None."""
    parts = path.split("/")
    for pattern in patterns:
        if pattern.endswith("/") and "/" not in pattern[:-1]:
            if any(fnmatchcase(part, pattern[:-1]) for part in parts[:-1]):
                return pattern
        elif "/" not in pattern:
            if fnmatchcase(parts[-1], pattern):
                return pattern
        elif fnmatchcase(path, pattern):
            return pattern
    return None


def is_test_file(path: str) -> bool:
    return matching_pattern(path, TEST_PATTERNS) is not None


def sensitive(
    paths: Iterable[str], patterns: Sequence[str] = DEFAULT_PATTERNS
) -> list[dict[str, str]]:
    """``{path, pattern}`` for each path that matches, in the given order."""
    found = []
    for path in paths:
        pattern = matching_pattern(path, patterns)
        if pattern is not None:
            found.append({"path": path, "pattern": pattern})
    return found
