"""Where a collection's copies are made: on tmpfs where there is room, on disk otherwise.

Each run gets a fresh copy of the checkout, and copying and deleting a few thousand files costs
seconds on disk and a tenth of that in memory. So the copies go to ``/dev/shm``, else
``$XDG_RUNTIME_DIR``, when the filesystem there has room for every copy that can exist at once
(the pristine checkout and one per run in flight, twice over); else to the temporary directory.
The evidence says which (``workspace``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from pairgate.scratch import memory_place

MARGIN = 64 * 1024 * 1024


def filesystem_kind(path: Path) -> str:
    """ "tmpfs" when ``path`` lies on a memory filesystem, else "disk" (from the mount table:
    the longest mount point above it)."""
    best, kind = -1, "disk"
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return kind
    target = str(path.resolve())
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or not tail:
            continue
        point = fields[4].replace("\\040", " ")
        if (target == point or target.startswith(point.rstrip("/") + "/")) and len(point) > best:
            best, kind = len(point), ("tmpfs" if tail[0] in ("tmpfs", "ramfs") else "disk")
    return kind


def choose(need: int, *, runtime_dir: str | None, candidates: Sequence[Path] | None = None) -> Path:
    """The directory a collection's work directory is made in, for copies of ``need`` bytes
    in all."""
    found = memory_place(need + MARGIN, runtime_dir=runtime_dir, candidates=candidates)
    return found if found is not None else Path(tempfile.gettempdir())


def need_for(checkout_bytes: int, *, jobs: int) -> int:
    """Room for the pristine checkout and one copy per run in flight, twice over (the git
    objects beside the files, and what the runs write)."""
    return 2 * checkout_bytes * (jobs + 2)
