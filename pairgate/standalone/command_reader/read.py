"""read_command: the command reader's one entry point."""

from __future__ import annotations

import sys
from dataclasses import replace

from pairgate.standalone.command_reader.reader import _Reader
from pairgate.standalone.command_reader.words import (
    _RECURSION_FOR_BUDGET,
    CommandReading,
    _literal_word,
)


def read_command(command: str) -> CommandReading:
    """Every merge ``command`` would make, with its project and merge request when the text
    says them; what could not be read; and text that names a glab merge without running one.

    Pure and fast: no I/O, no configuration. See docs/agent-handoff-reference.md for exactly
    what it recognises.
    """
    reader = _Reader()
    reader.text = command
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_FOR_BUDGET))  # the tree budget, not Python's
    try:
        reader.read(command)
        _read_late_scripts(reader)
    finally:
        sys.setrecursionlimit(limit)
    return _reading(reader)


def _read_late_scripts(reader: _Reader) -> None:
    """Scripts the command runs by a path it writes later in its text (a loop runs them after
    the write), or by a path bash computes in a command that writes files."""
    done: set[tuple[str | None, int]] = set()
    while reader.script_runs:
        key, layer = reader.script_runs.pop()
        if (key, id(layer)) in done:
            continue
        done.add((key, id(layer)))
        if key is None and (reader.files or reader.unnamed_writes):
            reader.unknown.append(
                "a script run by a path bash computes, in a command that writes files: the "
                "hook cannot tell which file runs; spell its path"
            )
        elif key is not None and key in reader.files:
            argv = [_literal_word(key)]
            reader._read_source(reader.files[key], argv, layer, key)
        elif key is not None and reader.unnamed_writes:
            reader.unknown.append(
                f"{key}: runs a script in a command that writes files whose names bash "
                "computes; the hook cannot tell whether it is one of them"
            )


def _reading(reader: _Reader) -> CommandReading:
    for layer, root in reader.layers:
        reader._check_mentions(layer, root)
    reader.layers = []
    seen: set[tuple[str | None, int | None, str, tuple[str | None, ...], str]] = set()
    merges = []
    for m in reader.merges:
        key = (m.project, m.iid, m.problem, m.shas, m.kind)
        if key not in seen:
            seen.add(key)
            merges.append(m)
    alone = reader.simple_commands == 1
    return CommandReading(
        tuple(merges),
        tuple(dict.fromkeys(reader.unknown)),
        tuple(dict.fromkeys(reader.mentions)),
        tuple(dict.fromkeys(replace(p, alone=alone) for p in reader.pushes)),
    )
