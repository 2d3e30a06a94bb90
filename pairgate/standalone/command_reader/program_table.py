"""PROGRAMS: the one table from a program's name to the function that reads its arguments."""

from __future__ import annotations

from pairgate.standalone.command_reader.reader_git import read_git
from pairgate.standalone.command_reader.reader_glab import read_glab
from pairgate.standalone.command_reader.reader_programs import (
    read_alias,
    read_busybox,
    read_copy,
    read_env,
    read_tee,
    read_wrapped,
)
from pairgate.standalone.command_reader.reader_shells import (
    read_eval,
    read_find,
    read_flock,
    read_make,
    read_script,
    read_shell,
    read_source,
    read_su,
    read_sudo,
    read_tmux,
    read_trap,
    read_watch,
)
from pairgate.standalone.command_reader.reading import ProgramReader
from pairgate.standalone.command_reader.words import SHELLS

__all__ = ["PROGRAMS"]

# A program not named here is read by reader_programs.read_other: a copy of glab under another
# name, or a program that runs one of its arguments (ssh, parallel). tests/test_command_reader.py
# holds every row to a case of its corpus.
PROGRAMS: dict[str, ProgramReader] = {
    "glab": read_glab,
    "git": read_git,
    # bash's own
    "alias": read_alias,
    "eval": read_eval,
    "trap": read_trap,
    "source": read_source,
    ".": read_source,
    # shells
    **dict.fromkeys(sorted(SHELLS), read_shell),
    # wrappers: the program they run, with its options read (wrappers.WRAPPERS)
    "command": read_wrapped,
    "builtin": read_wrapped,
    "exec": read_wrapped,
    "nohup": read_wrapped,
    "time": read_wrapped,
    "nice": read_wrapped,
    "ionice": read_wrapped,
    "timeout": read_wrapped,
    "stdbuf": read_wrapped,
    "setsid": read_wrapped,
    "coproc": read_wrapped,
    "xargs": read_wrapped,
    "env": read_env,
    "sudo": read_sudo,
    "doas": read_sudo,
    "busybox": read_busybox,
    # programs that run a shell on their arguments, or on a file
    "watch": read_watch,
    "script": read_script,
    "su": read_su,
    "runuser": read_su,
    "flock": read_flock,
    "tmux": read_tmux,
    "find": read_find,
    "make": read_make,
    "gmake": read_make,
    # programs that write or copy files the command may run
    "tee": read_tee,
    "cp": read_copy,
    "ln": read_copy,
    "install": read_copy,
    "mv": read_copy,
}
