"""The merge hook's command reader (pairgate/standalone/command_reader/): a pure function, read in
milliseconds.

Read against the three tables of tests/kit/command_corpus.py: disguised merges the reader
attributes to one project and one merge request (the gate then decides), disguised merges the
reading alone blocks, and harmless commands.
"""

from __future__ import annotations

from typing import Any

import pytest

from pairgate.standalone.command_reader.program_table import PROGRAMS
from pairgate.standalone.command_reader.read import read_command
from pairgate.standalone.command_reader.reading import ProgramReader, Reading
from pairgate.standalone.command_reader.words import (
    CommandReading,
    Word,
    could_name_glab_merge,
)
from tests.kit.command_corpus import ATTRIBUTED, BLOCKED, HARMLESS


def attributed(reading: CommandReading) -> set[tuple[str | None, int | None]]:
    return {(m.project, m.iid) for m in reading.merges if not m.problem}


@pytest.mark.parametrize(("command", "expected"), ATTRIBUTED, ids=[c for c, _ in ATTRIBUTED])
def test_a_disguised_merge_is_found_with_its_project_and_mr(
    command: str, expected: set[tuple[str, int]]
) -> None:
    reading = read_command(command)
    assert reading.problems() == []
    assert attributed(reading) == expected
    assert could_name_glab_merge(command)


@pytest.mark.parametrize(("command", "why"), BLOCKED, ids=[c for c, _ in BLOCKED])
def test_a_merge_the_reader_cannot_attribute_is_blocked_saying_why(command: str, why: str) -> None:
    problems = read_command(command).problems()
    assert problems, "the reading must block this command"
    assert any(why in p for p in problems), problems
    assert could_name_glab_merge(command)


@pytest.mark.parametrize("command", HARMLESS)
def test_a_harmless_command_merges_nothing(command: str) -> None:
    reading = read_command(command)
    assert reading == CommandReading()


def test_every_row_of_the_program_table_reads_cases_of_the_corpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each row of PROGRAMS is the reader of its program in a case of the tables above (whose
    readings the tests above hold), one that merges or blocks among them: a row no case
    reaches, or that only harmless cases reach, is a row nothing checks."""
    cases: dict[str, set[str]] = {name: set() for name in PROGRAMS}
    command = ""

    def spy(name: str, reader: ProgramReader) -> ProgramReader:
        def read(reading: Reading, argv: list[Word], *rest: Any) -> None:
            assert argv[0].tail == name  # the row reads the program it is named for
            cases[name].add(command)
            reader(reading, argv, *rest)

        return read

    for name, reader in list(PROGRAMS.items()):
        monkeypatch.setitem(PROGRAMS, name, spy(name, reader))
    merging = {c for c, _ in ATTRIBUTED} | {c for c, _ in BLOCKED}
    for command in [*merging, *HARMLESS]:
        read_command(command)
    assert [name for name, seen in cases.items() if not seen & merging] == []


def test_the_outside_project_is_read_like_any_other_and_left_to_the_gate() -> None:
    # Scope is the gate's decision (the group's project listing), not the reader's.
    assert attributed(read_command("glab mr merge 3 -R outside/app")) == {("outside/app", 3)}


@pytest.mark.parametrize(
    "command",
    ["ls -la", "git status", "cd src && make test", "pytest -q tests/x.py", "cat a.txt | sort"],
)
def test_the_fast_test_lets_through_only_what_cannot_spell_a_glab_merge(command: str) -> None:
    assert not could_name_glab_merge(command)


@pytest.mark.parametrize(
    "command",
    [
        "GLAB version",
        "x MERGE",
        "accept",
        "a$b",
        "a`b`",
        "a\\b",
        "'a'",
        '"a"',
        "a*",
        "a?",
        "a[b]",
        "a{b}",
    ],
)
def test_the_fast_test_sends_anything_that_could_to_the_reader(command: str) -> None:
    assert could_name_glab_merge(command)


def test_nesting_has_a_limit_and_blocks_beyond_it() -> None:
    command = "eval " * 12 + "glab mr merge 12 -R acme/app"
    assert any("nested too deep" in p for p in read_command(command).problems())


def test_every_merge_of_one_command_is_reported_once() -> None:
    reading = read_command("glab mr merge 12 -R acme/app; glab mr merge 12 -R acme/app")
    assert len(reading.merges) == 1
