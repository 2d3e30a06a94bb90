"""Exit codes, the error family and the run context every door is given."""

from __future__ import annotations

import enum
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO, TypeVar, dataclass_transform

__all__ = [
    "ConfigError",
    "Context",
    "Exit",
    "PairgateError",
    "Refusal",
    "UsageError",
    "fresh_id",
    "reader_dir",
    "report",
    "value_type",
]

_Class = TypeVar("_Class")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def value_type(cls: type[_Class]) -> type[_Class]:
    """A dataclass of values: compared and hashed by its fields, and never assigned to once
    built. mypy holds the last (``frozen_default``: an assignment to a field is a type error,
    and ``bash scripts/check`` runs mypy). At run time it is a plain dataclass with the frozen
    one's hash, because ``dataclass(frozen=True)`` generates two more methods per class when
    the module is imported (the 31 value types cost each merge-hook decision about 4 ms) and
    sets every field through ``object.__setattr__``, which the fold pays for each record."""
    return dataclass(cls, unsafe_hash=True)


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


@value_type
class Context:
    """What a run reads from outside: environment, clock and streams, injected so tests never
    read the real environment by accident and never sleep."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    now: Callable[[], float] = time.time
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    new_id: Callable[[], str] = fresh_id  # write ids: the example trail makes them deterministic


def report(error: BaseException, stderr: TextIO) -> Exit:
    """The one place that turns an exception into a message and an exit code."""
    if isinstance(error, PairgateError):
        print(error.message, file=stderr)
        return error.exit_code
    print(f"pairgate: internal error: {type(error).__name__}: {error}", file=stderr)
    return Exit.ERROR


def reader_dir() -> Path:
    """The directory of the deployed reader, ``ownership.py``: what "beside ownership.py" means
    for the configuration, the roster and the hook's files. In the package these modules sit in
    ``pairgate/standalone/``, one level below ``pairgate/ownership.py``; assembled, they are
    ownership.py itself."""
    here = Path(__file__).resolve().parent
    return here.parent if __name__.startswith("pairgate.standalone.") else here
