"""Programs that run another program: env, sudo, timeout, xargs and the like."""

from __future__ import annotations

import re

from pairgate.standalone.command_reader.words import _literal_word, _Word

# --- wrappers -----------------------------------------------------------------------------------

# For each wrapper: the options that take a value (the next word, or attached), and how many
# operands come before the command (timeout's duration).
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "--input", "-o", "--output", "-e", "--error"}), 0),
    "setsid": (frozenset(), 0),
    "coproc": (frozenset(), 0),
    "sudo": (
        frozenset(
            {
                "-u",
                "--user",
                "-g",
                "--group",
                "-h",
                "--host",
                "-p",
                "--prompt",
                "-r",
                "--role",
                "-t",
                "--type",
                "-U",
                "--other-user",
                "-C",
                "--close-from",
                "-D",
                "--chdir",
                "-T",
                "--command-timeout",
                "-R",
                "--chroot",
            }
        ),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-P"}), 0),
    "xargs": (
        frozenset(
            {
                "-a",
                "--arg-file",
                "-d",
                "--delimiter",
                "-E",
                "-I",
                "-L",
                "--max-lines",
                "-n",
                "--max-args",
                "-P",
                "--max-procs",
                "-s",
                "--max-chars",
                "--process-slot-var",
            }
        ),
        0,
    ),
}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _unwrap(
    program: str, argv: list[_Word], env: dict[str, _Word]
) -> tuple[list[_Word], bool] | None:
    """(the wrapped command, whether more arguments may be appended) when ``argv`` is a wrapper,
    else None. ``env`` gains the assignments env and sudo make."""
    if program not in _WRAPPERS:
        return None
    if program == "env" and _env_split(argv) is not None:
        return None
    takes_value, operands = _WRAPPERS[program]
    i = 1
    while i < len(argv):
        value = argv[i].value
        if value is None:
            break
        if value == "--":
            i += 1
            break
        if program in ("env", "sudo") and _ASSIGNMENT.match(value):
            name, _, rest = value.partition("=")
            env[name] = _literal_word(rest)
            i += 1
            continue
        if not value.startswith("-") or value == "-":
            if program == "env" and value == "-":
                i += 1
                continue
            break
        if program == "nice" and re.fullmatch(r"-\d+", value):
            i += 1
            continue
        name = value.split("=", 1)[0]
        if name in takes_value and "=" not in value:
            i += 2
            continue
        if not value.startswith("--") and value[:2] in takes_value:
            i += 1  # -n10, -uNAME: the value is attached
            continue
        i += 1
    i += operands
    return argv[i:], program == "xargs"


def _env_split(argv: list[_Word]) -> list[_Word] | None:
    """``env -S STRING``: env splits the string into the command line itself."""
    for i, word in enumerate(argv[1:], start=1):
        value = word.value or ""
        if value in ("-S", "--split-string") and i + 1 < len(argv):
            return argv[i + 1 :]
        if value.startswith("--split-string="):
            return [_literal_word(value.split("=", 1)[1]), *argv[i + 1 :]]
        if value.startswith("-S") and len(value) > 2:
            return [_literal_word(value[2:]), *argv[i + 1 :]]
        if not value.startswith("-") and not _ASSIGNMENT.match(value):
            return None
    return None
