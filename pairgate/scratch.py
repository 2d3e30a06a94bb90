"""Where scratch directories go: in memory (``/dev/shm``, else ``$XDG_RUNTIME_DIR``) when the
filesystem there is writable, lets programs run and has the room asked for; else nowhere
special (the caller's temporary directory). Copying and deleting thousands of files costs
seconds on disk and a tenth of that in memory: the evidence's copies and the sandbox runner's
checkouts are made here."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["memory_place", "room"]


def room(path: Path) -> int:
    """Bytes free for an unprivileged writer under ``path`` (0 when it cannot be read)."""
    try:
        found = os.statvfs(path)
    except OSError:
        return 0
    return found.f_bavail * found.f_frsize


def memory_place(
    need: int, *, runtime_dir: str | None, candidates: Sequence[Path] | None = None
) -> Path | None:
    """The first of ``candidates`` (``/dev/shm``, then ``runtime_dir`` when absolute) that is a
    writable directory on a filesystem mounted neither read-only nor noexec (scripts are started
    from what is copied there), with ``need`` bytes free; None when none is."""
    if candidates is None:
        candidates = [Path("/dev/shm")]
        if runtime_dir and Path(runtime_dir).is_absolute():
            candidates.append(Path(runtime_dir))
    for place in candidates:
        if not place.is_absolute() or not place.is_dir():
            continue
        try:
            flags = os.statvfs(place).f_flag
        except OSError:
            continue
        runs = not flags & (os.ST_NOEXEC | os.ST_RDONLY)
        if runs and os.access(place, os.W_OK | os.X_OK) and room(place) >= need:
            return place
    return None
