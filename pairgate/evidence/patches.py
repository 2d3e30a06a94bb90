"""A mutant's patch: its hash, and the files and hunks it touches. Pure.

The file names follow ``git apply``'s default (``-p1``: the first path component, ``a/`` or
``b/``, is dropped). Lines inside a hunk are counted off against its header, so a removed line
that reads ``-- x`` is never taken for a ``---`` file header.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    file: str
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int


@dataclass(frozen=True)
class Patch:
    name: str  # what the evidence calls it (the file's name)
    text: str

    @property
    def sha256(self) -> str:
        return patch_sha256(self.text)


def patch_sha256(text: str) -> str:
    """The hash of the patch's exact bytes (UTF-8), the one a re-run checks."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _unquote(path: str) -> str:
    """git's C-style quoting (``"sp\\303\\251cial"``) undone."""
    if len(path) >= 2 and path[0] == path[-1] == '"':
        raw = path[1:-1].encode("utf-8").decode("unicode_escape")
        return raw.encode("latin-1").decode("utf-8", errors="replace")
    return path


def _strip(path: str) -> str | None:
    """A ``---``/``+++`` path as git apply reads it: date suffix off, unquoted, -p1."""
    name = _unquote(path.split("\t", 1)[0].strip())
    if name == "/dev/null":
        return None
    return name.split("/", 1)[1] if "/" in name else name


def _git_header(rest: str) -> str | None:
    """The path of ``diff --git a/X b/X`` (only when both sides agree, as for a mode change or a
    binary file; renames name their paths on their own lines)."""
    half = (len(rest) - 1) // 2
    left, right = rest[:half], rest[half + 1 :]
    if len(rest) % 2 == 1 and left[2:] == right[2:] and "/" in left:
        return _strip(left)
    return None


def touched(text: str) -> tuple[list[str], list[Hunk]]:
    """The files a patch touches, in order, and its hunks."""
    files: list[str] = []
    hunks: list[Hunk] = []
    old_path: str | None = None
    current: str | None = None
    old_left = new_left = 0

    def add(name: str | None) -> None:
        if name and name not in files:
            files.append(name)

    for line in text.splitlines():
        if old_left > 0 or new_left > 0:
            tag = line[:1]
            if tag in (" ", ""):
                old_left, new_left = old_left - 1, new_left - 1
                continue
            if tag == "-":
                old_left -= 1
                continue
            if tag == "+":
                new_left -= 1
                continue
            if tag == "\\":
                continue
            old_left = new_left = 0  # a hunk shorter than its header: read this line afresh
        if line.startswith("diff --git "):
            current = _git_header(line[len("diff --git ") :])
            add(current)
        elif line.startswith("--- "):
            old_path = _strip(line[4:])
        elif line.startswith("+++ "):
            new_path = _strip(line[4:])
            current = new_path or old_path
            add(old_path)
            add(new_path)
        elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            add(_unquote(line.split(" ", 2)[2]))
        elif (match := _HUNK.match(line)) and current:
            a, b, c, d = match.groups()
            old_left = 1 if b is None else int(b)
            new_left = 1 if d is None else int(d)
            hunks.append(Hunk(current, int(a), old_left, int(c), new_left))
    return files, hunks
