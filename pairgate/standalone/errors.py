"""Exit codes, the error family and the run context every door is given."""

from __future__ import annotations

import contextlib
import enum
import os
import sys
import time
from collections.abc import Callable, Mapping

# typing.TYPE_CHECKING without importing typing or pathlib, which would cost every start of the
# CLI, --help's included (mypy and ruff read any name TYPE_CHECKING as typing's).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TextIO

__all__ = [
    "CRASH_LOG",
    "ConfigError",
    "Context",
    "Exit",
    "PairgateError",
    "Refusal",
    "UsageError",
    "first_today",
    "fresh_id",
    "log_crash",
    "reader_dir",
    "report",
    "state_dir",
    "state_home",
]


class Exit(enum.IntEnum):
    """Every pairgate program exits with one of these: 0 done or pass, 1 refused, 2 could not."""

    OK = 0  # done, pass, in line
    REFUSED = 1  # refused by the protocol, or drift for --check
    ERROR = 2  # usage, configuration or environment error; could not decide


class PairgateError(Exception):
    """An expected failure: its message is for the user, its exit code says what kind it was.

    Anything else that escapes is a bug; the one translation point (``report``) still turns it
    into exit 2 rather than letting a traceback pass for a verdict.
    """

    exit_code: Exit = Exit.ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(PairgateError):
    """The configuration is missing, unreadable or malformed."""


class UsageError(PairgateError):
    """The command line asks for something that cannot be done as asked."""


class Refusal(PairgateError):
    """The protocol says no. The message names what is wrong and the command that fixes it."""

    exit_code = Exit.REFUSED


def fresh_id() -> str:
    """A fresh random id (a record's write_id)."""
    import uuid  # here, not at the top: the merge hook writes nothing and starts faster

    return uuid.uuid4().hex


class Context:
    """What a run reads from outside: environment, clock and streams, injected so tests never
    read the real environment by accident and never sleep. A plain class, not a value type:
    every run builds one, and the dataclass machinery would cost each start of the CLI and of
    the merge hook more than the rest of its set-up."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        now: Callable[[], float] = time.time,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        new_id: Callable[[], str] = fresh_id,  # write ids: the example trail makes them fixed
    ) -> None:
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        self.now = now
        # Read at construction, as before: a test that swaps sys.stdout later keeps its own.
        self.stdout: TextIO = sys.stdout if stdout is None else stdout
        self.stderr: TextIO = sys.stderr if stderr is None else stderr
        self.new_id = new_id


def report(error: BaseException, ctx: Context, *, program: str = "pairgate") -> Exit:
    """The one place that turns an exception into a message and an exit code. An unexpected
    one (a bug) also leaves its traceback in the crash log (``log_crash``)."""
    if isinstance(error, PairgateError):
        print(error.message, file=ctx.stderr)
        return error.exit_code
    print(f"pairgate: internal error: {_described(error)}", file=ctx.stderr)
    log_crash(error, ctx, program=program)
    return Exit.ERROR


def _described(error: BaseException) -> str:
    try:
        return f"{type(error).__name__}: {error}"
    except Exception:  # its own __str__ failed: the name still says something
        return type(error).__name__


def state_home(env: Mapping[str, str]) -> Path | None:
    """Where pairgate keeps state (in its ``pairgate`` directory): $XDG_STATE_HOME, else
    ~/.local/state, by the XDG base directory rule (a relative XDG_STATE_HOME is ignored); None
    with neither."""
    from pathlib import Path

    state = env.get("XDG_STATE_HOME", "")
    if state and Path(state).is_absolute():
        return Path(state)
    home = env.get("HOME", "")
    return Path(home) / ".local" / "state" if home else None


def state_dir(env: Mapping[str, str]) -> Path | None:
    """pairgate's own directory under the state home, for what is never worth failing a command
    over (the crash log, the currency note's daily stamp): None where there is no state home,
    or where making it would make a home directory that is not there."""
    base = state_home(env)
    home = env.get("HOME", "")
    if base is None or (home and base.is_relative_to(home) and not os.path.isdir(home)):
        return None
    return base / "pairgate"


def first_today(env: Mapping[str, str], copy: str, now: float) -> bool:
    """True once per UTC day per copy: a stamp under the user's state directory says when the
    copy's currency note was last given. With no state directory to keep it in, every time."""
    import hashlib  # here, not at the top: the command line's start needs no digest

    base = state_dir(env)
    if base is None:
        return True
    stamp = base / "currency-notes" / hashlib.sha256(copy.encode()).hexdigest()
    today = time.strftime("%Y-%m-%d", time.gmtime(now))
    try:
        if stamp.read_text(encoding="utf-8").strip() == today:
            return False
    except OSError:
        pass
    with contextlib.suppress(OSError):  # a note is never worth failing a command over
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(today + "\n", encoding="utf-8")
    return True


CRASH_LOG = "pairgate.log"


def log_crash(error: BaseException, ctx: Context, *, program: str) -> None:
    """Write an unexpected error's traceback to the crash log, and print the log's path (as
    pre-commit does with pre-commit.log); each crash replaces the last one's log. Never raises,
    and never loses the traceback: with no log to write, it goes to stderr instead. The caller
    has printed the error itself first, so nothing here can hide it."""
    import traceback  # here: only a crash pays for it

    try:
        trace = "".join(traceback.format_exception(error))
    except Exception as exc:
        print(
            f"pairgate: the traceback could not be formatted ({_described(exc)})", file=ctx.stderr
        )
        return
    path = None
    try:
        where = state_dir(ctx.env)
        if where is None:
            raise OSError("no state directory: set XDG_STATE_HOME, or HOME to a directory")
        path = where / CRASH_LOG
        _write_log(path, _crash_report(program, trace, now=ctx.now()))
    except Exception as exc:
        print(
            f"pairgate: could not write the traceback to {path or 'a crash log'} "
            f"({_described(exc)}), so here it is:\n{trace}",
            end="",
            file=ctx.stderr,
        )
        return
    print(f"pairgate: the traceback is in {path}", file=ctx.stderr)


def _crash_report(program: str, trace: str, *, now: float) -> str:
    import platform

    return (
        f"pairgate crash log: the last unexpected error (each replaces the one before)\n"
        f"when: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now))}\n"
        f"program: {program}\n"
        f"argv: {sys.argv!r}\n"
        f"code: {os.path.realpath(__file__)} (pairgate installed: {_installed_version()})\n"
        f"python: {sys.version.split()[0]} ({sys.executable}) on {platform.platform()}\n\n"
        f"{trace}"
    )


def _installed_version() -> str:
    try:
        from importlib.metadata import version

        return version("pairgate")
    except Exception:  # a flat copy runs with no distribution installed
        return "none"


def _write_log(path: Path, text: str) -> None:
    """Whole or not at all (a second crash at the same moment replaces it, never mixes with
    it), readable by its owner only."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def reader_dir() -> Path:
    """The directory of the deployed reader, ``ownership.py``: what "beside ownership.py" means
    for the configuration, the roster and the hook's files. In the package these modules sit in
    ``pairgate/standalone/``, one level below ``pairgate/ownership.py``; assembled, they are
    ownership.py itself."""
    from pathlib import Path

    here = Path(__file__).resolve().parent
    return here.parent if __name__.startswith("pairgate.standalone.") else here
