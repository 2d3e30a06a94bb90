"""The readers of programs that run a shell on their arguments, or on a file: shells, eval,
trap, watch, script, su, sudo, flock, tmux, source, find, make."""

from __future__ import annotations

import re
import shlex

from pairgate.standalone.command_reader.reader_programs import (
    read_wrapped,
    reread_script,
    reread_words,
    script_source,
    shell_stdin,
    unclear_arguments,
)
from pairgate.standalone.command_reader.reading import Layer, Reading
from pairgate.standalone.command_reader.words import (
    DYNAMIC_STDIN,
    Stdin,
    Word,
    dynamic_word,
    literal_word,
    spelled,
)
from pairgate.standalone.command_reader.wrappers import (
    ASSIGNMENT,
    DOAS_OPTS,
    FLOCK_OPTS,
    MAKE_OPTS,
    RUNUSER_OPTS,
    SCRIPT_OPTS,
    SU_OPTS,
    SUDO_OPTS,
    TMUX_OPTS,
    getopt,
    makefile_commands,
    tmux_lookup,
)

__all__ = [
    "read_eval",
    "read_find",
    "read_flock",
    "read_make",
    "read_script",
    "read_shell",
    "read_source",
    "read_su",
    "read_sudo",
    "read_tmux",
    "read_trap",
    "read_watch",
]


def read_shell(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """sh/bash/zsh...: re-read what ``-c`` runs, a script fed on standard input (``-s`` or no
    operand), or a script file the command line spells (/dev/stdin, ``<(...)``, a file the
    command writes)."""
    i, command_mode, stdin_mode = 1, False, False
    while i < len(argv):
        value = argv[i].value
        substitution = getattr(argv[i].node, "type", "") == "process_substitution"
        if value is None and (command_mode or substitution):
            break  # the text -c runs, or the script <(...) writes: read below
        if value is None:
            reading.unclear(
                f"{spelled(argv)}: a shell argument built from variables or substitutions (it "
                "could be -c)"
            )
            return
        if value in ("-", "--"):
            i += 1
            break
        if value.startswith("--"):
            i += 2 if value in ("--rcfile", "--init-file") else 1
            continue
        if len(value) > 1 and value[0] in "-+":
            letters = value[1:]
            command_mode = command_mode or "c" in letters
            stdin_mode = stdin_mode or "s" in letters
            i += 1 + sum(1 for ch in letters if ch in "oO")
            continue
        break
    operands = argv[i:]
    if command_mode:
        if operands:
            reread_words(reading, argv, operands[:1], layer, f"{argv[0].raw} -c")
        elif open_args:
            reading.unclear(f"{spelled(argv)}: xargs feeds -c")
        return
    if operands and not stdin_mode:
        source = script_source(reading, operands[0], stdin, layer)
        reread_script(reading, source, argv, layer, argv[0].raw)
        return
    shell_stdin(reading, argv, stdin, layer)


def read_eval(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    reread_words(reading, argv, argv[1:], layer, "eval")


def read_trap(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """``trap 'ACTION' SIGNAL...``: bash runs the action later, in this shell."""
    operands = [w for w in argv[1:] if w.value != "--"]
    if len(operands) >= 2 and (operands[0].value or "x")[:1] != "-":
        reread_words(reading, argv, operands[:1], layer, "trap")


def read_watch(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """``watch COMMAND`` runs the command in ``sh -c``; ``watch -x`` runs it directly."""
    i, direct = 1, False
    while i < len(argv) and (argv[i].value or "").startswith("-"):
        value = argv[i].value or ""
        if value == "--":
            i += 1
            break
        direct = direct or value in ("-x", "--exec")
        takes = value in ("-n", "--interval", "-q", "--equexit") or re.fullmatch(
            r"-[a-z]*[nq]", value
        )
        i += 2 if takes else 1
    rest = argv[i:]
    if direct:
        reading.run(rest, env, layer, stdin)
    elif rest:
        reread_words(reading, argv, rest, layer, "watch")


def read_script(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """util-linux ``script``: ``-c COMMAND`` runs in ``$SHELL -c``; without it, an interactive
    shell reads standard input (term-utils/script.c)."""
    options, _operands, unclear = getopt(argv[1:], SCRIPT_OPTS)
    if unclear:
        unclear_arguments(reading, argv, "-c")
        return
    commands = [v for name, v in options if name in ("c", "command") and v is not None]
    for command in commands:
        reread_words(reading, argv, [command], layer, "script -c")
    if not commands:
        shell_stdin(reading, argv, stdin, layer)


def read_su(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """``su``/``runuser``: ``-c``/``--command``/``--session-command`` run in the user's shell;
    arguments after the user go to that shell (``su root -- -c CMD``); ``runuser -u USER
    CMD...`` runs a command directly; with none, the shell reads standard input."""
    runuser = argv[0].tail == "runuser"
    options, operands, unclear = getopt(argv[1:], RUNUSER_OPTS if runuser else SU_OPTS)
    if unclear:
        unclear_arguments(reading, argv, "-c")
        return
    commands = [v for name, v in options if name in ("c", "command", "session-command") and v]
    for command in commands:
        reread_words(reading, argv, [command], layer, f"{argv[0].raw} -c")
    if runuser and any(name in ("u", "user") for name, _ in options):
        if operands:
            reading.run(operands, {}, layer, stdin)
        return
    if operands and operands[0].value == "-":
        operands = operands[1:]
    if len(operands) > 1:
        read_shell(reading, [literal_word("sh"), *operands[1:]], {}, layer, stdin, False)
    elif not commands:
        shell_stdin(reading, argv, stdin, layer)


def read_sudo(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """sudo and doas wrap the program they run, unless they run a shell (-s, -i)."""
    if not _sudo_shell(reading, argv, env, layer, stdin):
        read_wrapped(reading, argv, env, layer, stdin, open_args)


# Where a command sets SHELL for the commands after it (sudo -s runs $SHELL).
_SETS_SHELL = re.compile(r"(?<![\w$])SHELL=")


def _sudo_shell(
    reading: Reading, argv: list[Word], env: dict[str, Word], layer: Layer, stdin: Stdin | None
) -> bool:
    """``sudo -s``/``-i`` (and ``doas -s``) run a shell, ``SHELL -c TEXT``: for ``-s`` the
    program $SHELL names (sudo(8)), for ``-i`` the target user's login shell. TEXT is the
    command's words joined with spaces, every character but letters, digits, ``_``, ``-`` and
    ``$`` escaped with a backslash (sudo's src/parse_args.c; sudo-rs escapes the same,
    src/common/command.rs). So one quoted word stays one word to that shell, the name of a
    program, never a script: ``sudo -s 'glab mr merge 1'`` runs a program named ``glab mr
    merge 1``. With no command, the shell reads standard input. True when it was such a call."""
    doas = argv[0].tail == "doas"
    options, operands, unclear = getopt(argv[1:], DOAS_OPTS if doas else SUDO_OPTS)
    names = {name for name, _ in options}
    if not names & {"s", "shell", "i", "login"}:
        return False
    if unclear:
        unclear_arguments(reading, argv, "the command")
        return True
    shell = None if names & {"i", "login"} else env.get("SHELL")
    if shell is None and not names & {"i", "login"} and _SETS_SHELL.search(reading.text):
        reading.unclear(
            f"{spelled(argv)}: {argv[0].raw} -s runs the program $SHELL names, which this command "
            "sets elsewhere; the hook cannot tell which program that is: set SHELL on the sudo "
            "command itself, or run the shell by name (sudo bash -c '...')"
        )
        return True
    while operands and ASSIGNMENT.match(operands[0].value or ""):
        operands = operands[1:]  # sudo's own VAR=value
    if doas or not operands:
        if shell is not None:
            reading.run([shell], {}, layer, stdin)
        else:
            shell_stdin(reading, argv, stdin, layer)
        return True
    values = [w.value for w in operands]
    if any(v is None for v in values):
        reread_words(reading, argv, operands, layer, f"{argv[0].raw} -s")
        return True
    layer.consume(operands)
    text = " ".join(re.sub(r"([^A-Za-z0-9_$-])", r"\\\1", v or "") for v in values)
    if shell is not None:
        reading.run([shell, literal_word("-c"), literal_word(text)], {}, layer, stdin)
    else:
        reading.read(text, layer.depth + 1)
    return True


def read_flock(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """``flock [options] FILE -c COMMAND`` (a shell string) or ``flock FILE COMMAND...``."""
    options, operands, unclear = getopt(argv[1:], FLOCK_OPTS)
    if unclear:
        unclear_arguments(reading, argv, "-c")
        return
    commands = [v for name, v in options if name in ("c", "command") and v is not None]
    if len(operands) >= 3 and operands[1].value in ("-c", "--command"):
        commands.append(operands[2])
    for command in commands:
        reread_words(reading, argv, [command], layer, "flock -c")
    if not commands and len(operands) >= 2:
        reading.run(operands[1:], {}, layer, stdin)


def read_tmux(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """tmux runs shell commands for new-session, new-window, split-window, respawn-*,
    run-shell, display-popup, pipe-pane and if-shell, types keys with send-keys, and runs
    ``-c`` itself; commands chain with ``;`` (tmux(1))."""
    options, operands, unclear = getopt(argv[1:], TMUX_OPTS)
    if unclear:
        unclear_arguments(reading, argv, "a command")
        return
    for name, value in options:
        if name == "c" and value is not None:
            reread_words(reading, argv, [value], layer, "tmux -c")
    command: list[Word] = []
    for word in [*operands, literal_word(";")]:
        if word.value == ";":
            _tmux_command(reading, argv, command, layer)
            command = []
        else:
            command.append(word)


def _tmux_command(reading: Reading, argv: list[Word], words: list[Word], layer: Layer) -> None:
    if not words:
        return
    name = words[0].value
    if name is None:
        unclear_arguments(reading, argv, "a command that runs a shell")
        return
    found = tmux_lookup(name)
    if found is None:
        return
    canonical, spec = found
    options, operands, unclear = getopt(words[1:], spec)
    if unclear:
        unclear_arguments(reading, argv, "a shell command")
        return
    if canonical == "send-keys":
        literal = any(option == "l" for option, _ in options)
        keys = [w.value for w in operands]
        if any(k is None for k in keys):
            unclear_arguments(reading, argv, "a key")
            return
        typed = "".join(
            "\n" if not literal and k in ("Enter", "C-m", "C-j", "KPEnter") else k or ""
            for k in keys
        )
        layer.consume(operands)
        reading.read(typed, layer.depth + 1)
        return
    if not operands:
        return
    if canonical == "if-shell":
        reread_words(reading, argv, operands[:1], layer, "tmux if-shell")
        for text in operands[1:]:  # tmux commands, in tmux's own syntax
            try:
                inner = shlex.split(text.value or "") if text.value is not None else None
            except ValueError:
                inner = None
            if inner is None:
                unclear_arguments(reading, argv, "a command that runs a shell")
            else:
                layer.consume([text])
                _tmux_command(reading, argv, [literal_word(w) for w in inner], layer)
    elif canonical in ("run-shell", "pipe-pane") or len(operands) == 1:
        reread_words(reading, argv, operands[:1], layer, f"tmux {canonical}")
    else:
        reading.run(operands, {}, layer)


def read_source(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """``source FILE`` / ``. FILE``: the file's commands run in this shell."""
    operands = [w for w in argv[1:] if w.value != "--"]
    if operands:
        source = script_source(reading, operands[0], stdin, layer)
        reread_script(reading, source, argv, layer, argv[0].raw)


def read_find(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """``find ... -exec|-execdir|-ok|-okdir COMMAND... ;|+``: COMMAND runs once per file found,
    with each ``{}`` replaced by a path find computes; a ``{}`` as the program runs what it
    finds."""
    i = 1
    while i < len(argv):
        if argv[i].value not in ("-exec", "-execdir", "-ok", "-okdir"):
            i += 1
            continue
        j = i + 1
        while j < len(argv) and argv[j].value not in (";", "+"):
            j += 1
        command = [
            w if w.value is not None and "{}" not in w.value else dynamic_word(w)
            for w in argv[i + 1 : j]
        ]
        if command and command[0].value is None:
            reading.unclear(
                f"{spelled(argv)}: find runs the files it finds as the program "
                f"({command[0].raw}), and one could be glab"
            )
        elif command:
            reading.run(command, {}, layer)
        i = j + 1


def read_make(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """make runs its recipes in a shell: the makefile is read when the command line spells it
    (``-f -`` from a heredoc, ``--eval``, a makefile the command writes)."""
    options, _operands, unclear = getopt(argv[1:], MAKE_OPTS)
    if unclear:
        unclear_arguments(reading, argv, "-f or --eval")
        return
    named = [v for name, v in options if name in ("f", "file", "makefile") and v is not None]
    sources: list[Stdin | None] = []
    for word in named:
        if word.value == "-":
            sources.append(stdin)
        else:
            sources.append(script_source(reading, word, stdin, layer))
    if not named:  # the default makefiles, when this command writes one
        sources += [reading.files.get(n) for n in ("GNUmakefile", "makefile", "Makefile")]
    for name, value in options:
        if name in ("E", "eval") and value is not None:
            spans = (value.span,) if value.span else ()
            text = value.value
            sources.append(Stdin(text, spans=spans) if text is not None else DYNAMIC_STDIN)
    for source in sources:
        if source is None or (source.text is None and not source.dynamic):
            continue
        if source.text is None:
            reread_script(reading, source, argv, layer, "make")
            continue
        layer.consumed.update(source.spans)
        commands = makefile_commands(source.text)
        if commands:
            reading.read("\n".join(commands), layer.depth + 1)
