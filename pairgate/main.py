"""The pairgate command line: it parses and dispatches, nothing else.

Every command is a row of the command table (``pairgate/commands/table.py``): its flags, its
handler and what main prepares for it. Each handler lives in a command module
(``pairgate/commands/``), takes explicit keyword arguments and returns an exit code. Expected
failures are ``PairgateError``s; ``ownership.report`` is the one place that turns them into a
message and an exit code, and an unexpected error's traceback into a log.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys

from pairgate.commands.table import Command
from pairgate.parser import build_parser, parse
from pairgate.standalone.errors import Context, Exit, report

# typing.TYPE_CHECKING without importing typing or pathlib, which would cost every start, --help's
# included (mypy and ruff read any name TYPE_CHECKING as typing's).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any

    Handler = Callable[..., int]

# The copy main measures when it is given no origin: the checkout this file is in, unless
# <env_prefix>_CHECKOUT names the deployment's checkout (an installed copy is in none). A
# string, as os.path spells it, for the same reason.
_OWN_FILE = os.path.realpath(__file__)


def handler(row: Command) -> Handler:
    """The row's handler, imported on demand: a run pays for the one module it uses, and --help
    for none."""
    assert row.handler is not None, row  # a family's subcommand is required: argparse says so
    module, name = row.handler.split(":")
    found: Handler = getattr(importlib.import_module(module), name)
    return found


def context_arguments(row: Command) -> frozenset[str]:
    """What main passes a row's handler besides its flags (the command table's columns)."""
    names = {"ctx"}
    if row.reads_config:
        names.add("config")
    if row.reads_gitlab:
        names.add("client")
    if row.dispatches:
        names.add("dispatch")
    return frozenset(names)


def main_flags(row: Command) -> frozenset[str]:
    """The flags main uses itself and does not pass on: --verbose (the client line, the
    currency note) to every handler but the one that keeps it."""
    return frozenset() if row.keeps_verbose else frozenset({"verbose"})


def run(
    argv: Sequence[str],
    ctx: Context,
    *,
    measured: str | Path | None,
    started: Callable[[], None] | None = None,
) -> int:
    """Parse ``argv`` and run its command; the one dispatcher (the demo calls it too).
    ``measured`` is the checkout the currency check measures, None for no check. ``started``
    is called once the command's modules are imported, just before its handler runs."""
    try:
        try:
            # --help prints and exits inside argparse; keep it on the injected stream.
            with contextlib.redirect_stdout(ctx.stdout):
                args, row, kwargs = parse(argv)
        except SystemExit as done:
            return int(done.code or 0)
        if args.version:
            from pairgate.version import installed_version, schema_checker

            print(f"pairgate {installed_version()}", file=ctx.stdout)
            if args.version_verbose:
                print(f"schema checker: {schema_checker()}", file=ctx.stdout)
            return Exit.OK
        if args.version_verbose:
            build_parser(bare=True).error("--verbose before the command goes with --version only")
        if row is None:
            build_parser(bare=True).print_help(ctx.stdout)
            return Exit.ERROR
        verbose = bool(kwargs.get("verbose"))
        given: dict[str, Any] = {"ctx": ctx, "config": None}
        if row.reads_config_with(kwargs):
            from pairgate.standalone.config import load_config

            given["config"] = config = load_config(ctx.env)
            if measured is not None:
                named = ctx.env.get(config.env_name("CHECKOUT"), "").strip()
                if measured == _OWN_FILE and named:  # an explicit origin= always wins
                    measured = _checked_origin(named)
                from pathlib import Path

                from pairgate.currency.check import check_currency

                check_currency(
                    Path(measured),
                    config,
                    command=args.command,
                    writes=row.writes_with(kwargs),
                    env=ctx.env,
                    stderr=ctx.stderr,
                    now=ctx.now(),
                    verbose=verbose,
                )
            if row.reads_gitlab:
                from pairgate.standalone.gitlab_env import gitlab_from_env
                from pairgate.standalone.gitlab_once import first_attempt_per_thread

                given["client"] = client = gitlab_from_env(
                    config, ctx.env, transport=first_attempt_per_thread
                )
                if verbose:
                    print(client.describe(), file=ctx.stderr)
        if row.dispatches:  # it plays command lines through this same dispatcher
            given["dispatch"] = lambda words, inner: run(words, inner, measured=None)
        for flag in main_flags(row):
            kwargs.pop(flag, None)
        context = {name: given[name] for name in context_arguments(row)}
        function = handler(row)
        if started is not None:
            started()
        return int(function(**kwargs, **context))
    except BrokenPipeError:
        # The reader of our output went away (``pairgate board | head``): its choice, not
        # an error, so no message and no traceback.
        return Exit.OK
    except Exception as exc:
        return report(exc, ctx)


def main(
    argv: Sequence[str] | None = None,
    *,
    origin: str | Path | None = None,
    ctx: Context | None = None,
) -> int:
    """Run one command. ``origin`` names the checkout the currency check measures (see the
    README: "Which checkout the currency check measures"); without it, the checkout this file
    is in. The check runs before every command that reads the configuration."""
    ctx = ctx or Context()
    measured = _OWN_FILE if origin is None else _checked_origin(origin)
    return run(sys.argv[1:] if argv is None else argv, ctx, measured=measured)


def _checked_origin(origin: object) -> Path:
    """A given origin is always the one measured; one that cannot name a checkout raises."""
    from pathlib import Path

    if not isinstance(origin, (str, Path)):
        raise TypeError(f"origin must be a str or a Path, not {type(origin).__name__}")
    if not str(origin).strip():
        raise ValueError("origin must not be blank")
    path = Path(origin)
    if not path.is_absolute():
        raise ValueError(f"origin must be an absolute path, not {str(origin)!r}")
    return path.resolve()


def _imported() -> None:
    """The start's objects (modules, classes, functions, compiled patterns) live as long as the
    process: the collector is told so, and collects from here on."""
    gc.freeze()
    gc.enable()


def console_main() -> None:
    # Collecting garbage while a command's two hundred modules are imported finds none, and
    # traversing them again and again cost status a twentieth of its run: the collector waits
    # for the handler (``_imported``), and a run that ends before it just exits.
    gc.disable()
    code = run(sys.argv[1:], Context(), measured=_OWN_FILE, started=_imported)
    # The interpreter's exit collects garbage over every object the run made, and the modules a
    # command imports are most of them (a tenth of status's run): they are garbage only once
    # the process is gone, so the collector is told they are permanent. Nothing is skipped
    # that would matter: atexit handlers, the streams' flush and refcounted clean-ups all run.
    gc.freeze()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # What is left in the buffer has nowhere to go; point stdout at /dev/null so the
        # interpreter's own last flush does not complain about it either.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code)


if __name__ == "__main__":
    console_main()
