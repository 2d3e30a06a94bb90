"""Where scratch copies go (pairgate/scratch.py): a writable directory in memory with room, on a
filesystem that lets programs run, else none. The mount flags come from statvfs, so a
filesystem mounted noexec or read-only is shown here by its flags."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pairgate import scratch


class Flags:
    """What os.statvfs answers, with these mount flags and a lot of room."""

    def __init__(self, flags: int) -> None:
        self.f_flag, self.f_bavail, self.f_frsize = flags, 1 << 40, 1


@pytest.mark.parametrize("flag", [os.ST_NOEXEC, os.ST_RDONLY], ids=["noexec", "read-only"])
def test_a_filesystem_programs_cannot_run_from_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: int
) -> None:
    other = tmp_path / "other"
    other.mkdir()

    def statvfs(path: Any) -> Flags:
        return Flags(flag if Path(path) == tmp_path else 0)

    monkeypatch.setattr(scratch.os, "statvfs", statvfs)
    assert scratch.memory_place(1, runtime_dir=None, candidates=[tmp_path]) is None
    assert scratch.memory_place(1, runtime_dir=None, candidates=[tmp_path, other]) == other


def test_room_and_place(tmp_path: Path) -> None:
    assert scratch.room(tmp_path) > 0 and scratch.room(tmp_path / "missing") == 0
    assert scratch.memory_place(1, runtime_dir=None, candidates=[tmp_path]) == tmp_path
    assert scratch.memory_place(1 << 62, runtime_dir=None, candidates=[tmp_path]) is None
    relative = Path("relative")
    assert scratch.memory_place(1, runtime_dir=None, candidates=[relative]) is None
