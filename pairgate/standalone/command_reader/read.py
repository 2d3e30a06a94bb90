"""read_command: the command reader's one entry point."""

from __future__ import annotations

from pairgate.standalone.command_reader.reader import _Reader
from pairgate.standalone.command_reader.words import CommandReading


def read_command(command: str) -> CommandReading:
    """Every merge ``command`` would make, with its project and merge request when the text
    says them; what could not be read; and text that names a glab merge without running one.

    Pure and fast: no I/O, no configuration. See docs/agent-handoff-reference.md for exactly
    what it recognises.
    """
    reader = _Reader()
    reader.read(command)
    seen: set[tuple[str | None, int | None, str]] = set()
    merges = []
    for m in reader.merges:
        key = (m.project, m.iid, m.problem)
        if key not in seen:
            seen.add(key)
            merges.append(m)
    return CommandReading(
        tuple(merges), tuple(dict.fromkeys(reader.unknown)), tuple(dict.fromkeys(reader.mentions))
    )
