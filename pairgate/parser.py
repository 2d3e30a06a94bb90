"""The command line's parser, built from the command table (``pairgate/commands/table.py``).

--help reads no configuration and imports no handler: building the parser imports the table and
the argument functions it names, nothing else. main.py dispatches what it parses.
"""

from __future__ import annotations

import argparse
import os
import sys

from pairgate.commands.table import COMMANDS, Command

# typing.TYPE_CHECKING without importing typing, which costs every start (mypy and ruff read
# any name TYPE_CHECKING as it): the names below are for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# Each leaf parser's default for this destination is (its row, its flags' destinations): what
# main needs to call the handler. It is no flag, so no handler sees it.
CHOSEN = "_pairgate_command"


def columns() -> int:
    """The terminal's width as shutil.get_terminal_size reads it ($COLUMNS, else standard
    output's terminal, else 80), without importing shutil: argparse imports it to ask at every
    add_argument, which costs each start more than building the parser."""
    try:
        given = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        given = 0
    if given > 0:
        return given
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, at the width argparse would choose (``columns``)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = columns() - 2 if width is None else width  # argparse's margin
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors raised as UsageError (exit 2) instead of printed and exited,
    so the one translation point sees them too, and help formatted by ``_Formatter``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:
        from pairgate.standalone.errors import UsageError

        raise UsageError(f"{self.format_usage().rstrip()}\n{self.prog}: error: {message}")


def build_parser(only: str | None = None, *, bare: bool = False) -> argparse.ArgumentParser:
    """The whole command line's parser; with ``only``, a command's name, one with that command
    alone (what ``parse`` uses: building all thirty costs every run more than the rest of its
    start). ``bare``: every command by its name and help alone, no parser of its own: all that
    the top-level help and an unknown command's error show, and what ``parse`` uses when
    ``argv`` names no command (building thirty parsers cost --help as much as argparse's
    import)."""
    parser = _Parser(
        prog="pairgate",
        description=(
            "Run two coding agents as a pair on one GitLab issue: an ownership ledger kept in "
            "the issue's notes, and a merge gate that refuses a merge unless an independent "
            "approval names the merge request's current head. Configuration: the JSON file "
            "PAIRGATE_CONFIG names, else pairgate-config.json beside ownership.py."
        ),
        epilog=(
            "Exit codes: 0 done or pass; 1 refused by the protocol (or drift, for --check); "
            "2 usage, configuration or environment error. --help and --version read no "
            "configuration, nor do demo, sandbox, init and deploy-hooks --list; inbox reads it "
            "itself (so that as a Claude Code hook it never exits 2); every other command reads "
            "it first."
        ),
    )
    parser.add_argument(
        "--version",
        action="store_true",
        help="print the installed distribution's version and exit",
    )
    parser.add_argument(
        "--verbose",
        dest="version_verbose",
        action="store_true",
        help="with --version: also say which schema checker is active",
    )
    each: type[Any] = _Unbuilt if bare else _Parser
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=each)
    if bare:
        for row in COMMANDS:
            sub.add_parser(row.name, help=row.help)
    else:
        _add_rows(sub, [row for row in COMMANDS if row.name == only] or COMMANDS)
    return parser


class _Unbuilt:
    """A command's parser in a bare build: listed, never parsed. ``parse`` builds a bare
    parser only for an ``argv`` that names no command, so argparse never hands one of these
    the rest of a command line."""

    def __init__(self, **kwargs: Any) -> None:
        self.prog = kwargs["prog"]

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{self.prog}: a bare parser's command was parsed")


def _add_rows(sub: Any, rows: Sequence[Command]) -> None:
    for row in rows:
        p = sub.add_parser(row.name, help=row.help, description=row.description)
        if row.arguments is not None:
            row.arguments(p)
        if row.handler is not None:
            p.set_defaults(**{CHOSEN: (row, destinations(p))})
        if row.subcommands:
            # A family without a handler of its own needs one of its subcommands.
            actions = p.add_subparsers(
                dest=f"{row.name}_action",
                metavar=row.subcommand_metavar,
                required=row.handler is None,
            )
            if row.handler is not None:
                p.usage = _optional(p, row.subcommand_metavar)
            _add_rows(actions, row.subcommands)


def named_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is no flag ("-" and "--" are words
    here, as argparse reads them), when a row has that name.
    The parser's own flags take no value, so that word is where argparse looks for the
    command too. None (parse with every row) for anything else, so an unknown or missing
    command is answered with the whole list of choices."""
    for word in argv:
        # argparse takes "-" and "--" where the command goes, as it takes a word
        if word in ("-", "--") or not word.startswith("-"):
            return word if any(row.name == word for row in COMMANDS) else None
    return None


def _optional(parser: argparse.ArgumentParser, metavar: str) -> str:
    """The usage of a command whose subcommand may be left out, in brackets as a flag's is
    (argparse writes a subcommand as if it were always required)."""
    usage = parser.format_usage().removeprefix("usage: ").rstrip()
    return usage.replace(f"{metavar} ...", f"[{metavar} ...]").replace("%", "%%")


def destinations(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """The destinations of a parser's own flags and positionals: the handler's arguments."""
    return tuple(
        a.dest
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    )


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, Command | None, dict[str, Any]]:
    """``argv`` parsed: the namespace (for --version), the command's row (None when no command
    was named) and the handler's flags, by destination."""
    named = named_command(argv)
    args = build_parser(named, bare=named is None).parse_args(list(argv))
    chosen = getattr(args, CHOSEN, None)
    if chosen is None:
        return args, None, {}
    row, dests = chosen
    return args, row, {dest: getattr(args, dest) for dest in dests}


def command_names() -> list[str]:
    """Every registered command, in the order --help lists them."""
    return [row.name for row in COMMANDS]
