"""Where the sandbox's runner makes its directory: memory when there is room, else the disk."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pairgate.sandbox import runner
from pairgate.sandbox.runner import Runner, place


def test_the_first_writable_directory_with_room_is_taken(tmp_path: Path) -> None:
    missing, relative = str(tmp_path / "missing"), "relative/dir"
    assert place((missing, relative, "", str(tmp_path))) == str(tmp_path)
    assert place((missing, relative, "")) is None


def test_a_directory_without_room_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "ROOM", 1 << 62)
    assert place((str(tmp_path),)) is None


def test_the_runner_makes_its_directory_there_and_removes_it_when_it_stops() -> None:
    made = Runner("gitlab-ci-local")
    try:
        expected = Path(place() or tempfile.gettempdir()).resolve()
        assert made.root.resolve().parent == expected
        assert made.root.is_dir()
    finally:
        made.stop()
    assert not made.root.exists()
