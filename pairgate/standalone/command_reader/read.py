"""read_command: the command reader's one entry point."""

from __future__ import annotations

import sys

from pairgate.standalone.command_reader.reader import Reader
from pairgate.standalone.command_reader.words import RECURSION_FOR_BUDGET, CommandReading

__all__ = ["read_command"]


def read_command(command: str) -> CommandReading:
    """Every merge ``command`` would make, with its project and merge request when the text
    says them; what could not be read; and text that names a glab merge without running one.

    Pure and fast: no I/O, no configuration. See docs/agent-handoff-reference.md for exactly
    what it recognises.
    """
    reader = Reader(command)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_FOR_BUDGET))  # the tree budget, not Python's
    try:
        reader.read(command)
        return reader.result()
    finally:
        sys.setrecursionlimit(limit)
