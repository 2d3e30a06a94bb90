"""The command table: each handler takes exactly what main gives it, and the parser is built
from the table alone."""

from __future__ import annotations

import argparse
import inspect
import subprocess
import sys

import pytest

from pairgate.commands.table import COMMANDS, Command, command_rows
from pairgate.main import context_arguments, handler, main_flags
from pairgate.parser import CHOSEN, build_parser, columns, destinations, named_command, parse
from tests.kit.names import ROOT

ROWS = command_rows()
RUNNABLE = [(name, row) for name, row in ROWS if row.handler is not None]


def leaf(name: str) -> argparse.ArgumentParser:
    """The parser of a command, by its full name (``inbox ack``)."""
    parser = build_parser()
    for word in name.split():
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def own_flags(parser: argparse.ArgumentParser) -> set[str]:
    """The destinations of a parser's flags and positionals, read off argparse itself."""
    return {
        a.dest
        for a in parser._actions
        if a.dest != "help" and not isinstance(a, argparse._SubParsersAction)
    }


@pytest.mark.parametrize(("name", "row"), RUNNABLE, ids=[name for name, _ in RUNNABLE])
def test_the_handler_takes_exactly_its_flags_and_the_context(name: str, row: Command) -> None:
    parser = leaf(name)
    flags = own_flags(parser)
    assert parser._defaults[CHOSEN] == (row, destinations(parser))
    assert set(destinations(parser)) == flags
    params = inspect.signature(handler(row)).parameters.values()
    assert [p.name for p in params if p.kind is not p.KEYWORD_ONLY] == [], (
        f"{row.handler}: a handler takes keyword arguments only (no positional, no **flags)"
    )
    expected = (flags - main_flags(row)) | context_arguments(row)
    assert {p.name for p in params} == expected, row.handler


def test_every_command_is_a_row_and_every_family_needs_a_subcommand() -> None:
    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(top.choices) == [row.name for row in COMMANDS]
    families = [name for name, row in ROWS if row.handler is None]
    assert families == ["evidence"]
    assert all(row.subcommands for name, row in ROWS if row.handler is None)
    assert parse(["evidence", "run", "--test", "t", "--mutant", "m"])[1] is not None
    with pytest.raises(Exception, match="required: <subcommand>"):
        parse(["evidence"])


def help_texts(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Every parser's help below ``parser``, by its full command name."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found[child.prog] = child.format_help()
                found.update(help_texts(child))
    return found


@pytest.mark.parametrize("row", COMMANDS, ids=[row.name for row in COMMANDS])
def test_the_parser_parse_builds_for_one_command_is_the_whole_parser_s_part(row: Command) -> None:
    whole = help_texts(build_parser())
    alone = help_texts(build_parser(row.name))
    assert alone and alone == {prog: whole[prog] for prog in alone}
    assert named_command(["--verbose", row.name, "--json", "x"]) == row.name


@pytest.mark.parametrize(
    "argv", [[], ["--version"], ["stauts"], ["-h"], ["--verbose", "evidence-run"]]
)
def test_a_command_no_row_names_is_parsed_against_every_row(argv: list[str]) -> None:
    assert named_command(argv) is None


def test_an_unknown_command_is_answered_with_every_choice() -> None:
    with pytest.raises(Exception, match="invalid choice: 'stauts' \\(choose from 'demo'"):
        parse(["stauts"])


def test_the_bare_parser_shows_what_the_whole_parser_shows() -> None:
    # parse builds it for an argv that names no command: the top-level help, usage and every
    # error about the command word must be the whole parser's, character for character.
    bare, whole = build_parser(bare=True), build_parser()
    assert bare.format_help() == whole.format_help()
    assert bare.format_usage() == whole.format_usage()
    for argv in (["stauts"], ["-x"], ["--version", "x"], ["--verbose", "-", "status"], ["-"]):
        with pytest.raises(Exception) as from_bare:
            bare.parse_args(argv)
        with pytest.raises(Exception) as from_whole:
            whole.parse_args(argv)
        assert str(from_bare.value) == str(from_whole.value), argv
    assert vars(bare.parse_args(["--version"])) == vars(whole.parse_args(["--version"]))


@pytest.mark.parametrize(
    "argv",
    [["--", "status"], ["--version", "status"], ["-", "status"], ["status", "--", "x"], ["-x"]],
)
def test_an_odd_command_line_is_refused_as_the_whole_parser_refuses_it(argv: list[str]) -> None:
    # parse builds the named command's parser alone, or the bare one: its answer to a command
    # line it refuses must be the whole parser's, the choices it lists included.
    with pytest.raises(Exception) as from_parse:
        parse(argv)
    with pytest.raises(Exception) as from_whole:
        build_parser().parse_args(argv)
    assert str(from_parse.value) == str(from_whole.value), argv


@pytest.mark.parametrize("given", [None, "132", "0", "-5", "wide", ""])
def test_help_is_as_wide_as_argparse_would_make_it(
    given: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    if given is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", given)
    assert columns() == shutil.get_terminal_size().columns
    assert build_parser()._get_formatter()._width == columns() - 2


def test_starting_the_cli_imports_neither_typing_nor_shutil() -> None:
    # What the interpreter imported before (an installation's .pth files may import typing)
    # is not the start's: only what importing and parsing add counts.
    code = (
        "import sys; before = set(sys.modules); "
        "from pairgate.main import run; from pairgate.parser import parse; "
        "parse(['status', '1']); "
        "added = set(sys.modules) - before; "
        "print(sorted({'typing', 'shutil', 'dataclasses', 'requests'} & added))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stderr


def test_the_console_script_s_handler_runs_with_the_collector_on() -> None:
    # console_main keeps the collector off while a command's modules are imported; a handler
    # (watch runs for hours) must find it on, with the start's objects frozen out of its way.
    code = (
        "import gc, sys; import pairgate.main as m; "
        "m.handler = lambda row: lambda **given: print(gc.isenabled(), gc.get_freeze_count() > 0)"
        " or 0; "
        "sys.argv = ['pairgate', 'demo']; m.console_main()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert (done.returncode, done.stdout) == (0, "True True\n"), done.stderr


def test_a_row_that_reads_gitlab_reads_the_configuration() -> None:
    assert [name for name, row in RUNNABLE if row.reads_gitlab and not row.reads_config] == []
    with pytest.raises(ValueError, match="from the configuration"):
        Command("x", "x", "m:f", reads_config=False, reads_gitlab=True)


@pytest.mark.parametrize(
    ("argv", "name", "flags"),
    [
        (["inbox"], "inbox", {"agent", "json", "claude_hook", "store", "remind_after"}),
        (["inbox", "--json", "ack", "b1"], "ack", {"batch", "note", "as_agent", "store"}),
        (["thaw"], "thaw", {"as_agent", "verbose"}),
        (["demo"], "demo", {"ci"}),
    ],
)
def test_a_handler_is_given_its_own_command_s_flags_only(
    argv: list[str], name: str, flags: set[str]
) -> None:
    """A subcommand's handler is not given its family's flags (``inbox --json ack``)."""
    _, row, given = parse(argv)
    assert row is not None and row.name == name
    assert set(given) == flags


@pytest.mark.parametrize(
    ("argv", "writes"),
    [
        (["claim", "1", "--role", "lead"], True),
        (["status", "1"], False),
        (["audit"], False),
        (["audit", "--file-issues"], True),
        (["deploy-agents", "--target", "d"], True),
        (["deploy-agents", "--target", "d", "--check"], False),
        (["deploy-hooks", "--list"], False),
        (["deploy-hooks", "--target", "d"], True),
        (["sync"], True),
    ],
)
def test_whether_a_run_writes_is_read_off_its_row_and_flags(argv: list[str], writes: bool) -> None:
    _, row, flags = parse(argv)
    assert row is not None and row.writes_with(flags) is writes


def test_help_imports_no_handler_and_no_domain_module() -> None:
    """Building the parser imports the table and the argument functions, nothing else of a
    command: --help stays cheap."""
    code = (
        "import sys\n"
        "from pairgate.main import main\n"
        "main(['--help'])\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('pairgate'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    loaded = set(done.stdout.split("\n")[-2].split())
    assert loaded == {
        "pairgate",
        "pairgate.commands",
        "pairgate.commands.arguments",
        "pairgate.commands.evidence",
        "pairgate.commands.table",
        "pairgate.commands.watch",
        "pairgate.evidence",  # the package's __init__: the default --timeout
        "pairgate.main",
        "pairgate.parser",
        "pairgate.standalone",
        "pairgate.standalone.audit_flags",
        "pairgate.standalone.errors",
        "pairgate.watch",  # the package's __init__: --remind-after's default, the hook events
    }
