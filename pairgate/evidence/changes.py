"""What a run changed in its clone: the files it added, modified or deleted, and which of them
it was not allowed to (``--may-change``).

No git runs in the clone after the run (the run could have configured one to start a program).
Instead the clone is walked (``.git`` left out), and a file counts as changed when it is new,
gone, or its inode changed during the run (``st_ctime``, which a program cannot set back, read
with a margin for the kernel's coarse clock) and its content or mode differs from what the run
was given: the pristine checkout, or for the files the mutant touched, what they held once it
was applied.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from pairgate.evidence.sensitive import matching_pattern

# What a test run may leave behind in its clone without it being an unexpected change.
DEFAULT_MAY_CHANGE: tuple[str, ...] = (
    ".pytest_cache/",
    "__pycache__/",
    "*.pyc",
    ".coverage",
    ".coverage.*",
    ".hypothesis/",
    ".mypy_cache/",
    ".ruff_cache/",
    "*.egg-info/",
)
_SLACK_NS = 50_000_000


def _walk(root: Path, rel: str = "") -> Iterator[tuple[str, os.stat_result]]:
    try:
        entries = list(os.scandir(root / rel if rel else root))
    except OSError:
        return
    for entry in entries:
        path = f"{rel}{entry.name}"
        try:
            if entry.is_dir(follow_symlinks=False):
                if path != ".git":
                    yield from _walk(root, f"{path}/")
                continue
            yield path, entry.stat(follow_symlinks=False)
        except OSError:
            continue


def snapshot(clone: Path, paths: Iterable[str]) -> dict[str, tuple[int, bytes] | None]:
    """What these files of the clone hold now (before the run): (mode, bytes or link target),
    or None for a file that is not there."""
    held: dict[str, tuple[int, bytes] | None] = {}
    for path in paths:
        held[path] = _content(clone / path)
    return held


def _content(path: Path) -> tuple[int, bytes] | None:
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            return stat.S_IFLNK, os.readlink(path).encode("utf-8", "surrogateescape")
        if not stat.S_ISREG(st.st_mode):
            return stat.S_IFMT(st.st_mode), b""
        return stat.S_IFREG | (st.st_mode & 0o111), path.read_bytes()
    except OSError:
        return None


def changed(
    clone: Path,
    pristine: Path,
    *,
    expected: frozenset[str],
    given: Mapping[str, tuple[int, bytes] | None],
    since_ns: int,
) -> list[str]:
    """The paths the run added, modified or deleted. ``expected`` is what the run was given
    (the tracked files, as the mutant left them); ``given`` what the mutant's files held."""
    found: list[str] = []
    seen: set[str] = set()
    for path, st in _walk(clone):
        seen.add(path)
        if path not in expected:
            found.append(path)
            continue
        if st.st_ctime_ns < since_ns - _SLACK_NS:
            continue
        before = given[path] if path in given else _content(pristine / path)
        if _content(clone / path) != before:
            found.append(path)
    found += [p for p in expected if p not in seen]
    return sorted(found)


def unexpected(paths: Iterable[str], may_change: Iterable[str]) -> list[str]:
    """The changed paths no ``--may-change`` pattern (nor a default one) allows."""
    patterns = tuple(may_change)
    return [p for p in paths if matching_pattern(p, patterns) is None]
