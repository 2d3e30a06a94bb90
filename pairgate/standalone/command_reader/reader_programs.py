"""The reader's programs that run programs: shells, su, sudo, script, flock, tmux, find, make."""

from __future__ import annotations

import re
import shlex

from pairgate.standalone.command_reader.glab import _cobra_traverse
from pairgate.standalone.command_reader.reader_base import _Layer, _ReaderBase, _short
from pairgate.standalone.command_reader.words import (
    _DYNAMIC_STDIN,
    _OPAQUE,
    _SHELLS,
    _dynamic_word,
    _file_key,
    _literal_word,
    _Stdin,
    _Word,
)
from pairgate.standalone.command_reader.wrappers import (
    _ASSIGNMENT,
    _COPY_OPTS,
    _DOAS_OPTS,
    _FLOCK_OPTS,
    _MAKE_OPTS,
    _RUNUSER_OPTS,
    _SCRIPT_OPTS,
    _SU_OPTS,
    _SUDO_OPTS,
    _TEE_OPTS,
    _TMUX_OPTS,
    _env_split,
    _getopt,
    _makefile_commands,
    _tmux_lookup,
    _unwrap,
)


class _ProgramReading(_ReaderBase):
    """What a program that runs another program (or a shell) would run."""

    # program readers: argv, the command's assignments, its standard input, the layer

    _PROGRAMS: dict[str, str] = {  # noqa: RUF012 (a constant table)
        "script": "_script",
        "su": "_su",
        "runuser": "_su",
        "flock": "_flock",
        "tmux": "_tmux",
        "source": "_source",
        ".": "_source",
        "find": "_find",
        "make": "_make",
        "gmake": "_make",
        "git": "_git",
        "tee": "_tee",
        "cp": "_copy",
        "ln": "_copy",
        "install": "_copy",
        "mv": "_copy",
    }

    def _argv(
        self,
        argv: list[_Word],
        env: dict[str, _Word],
        stdin: _Stdin | None,
        layer: _Layer,
        *,
        open_args: bool,
    ) -> None:
        """Look through wrappers to the program that runs, then read it."""
        while argv:
            if self.aliases:
                self._expand_alias(argv, layer)
            program = argv[0].tail
            if program is None:
                self._dynamic_program(argv)
                return
            if program == "alias":
                self._alias(argv)
                return
            if program in ("sudo", "doas") and self._sudo_shell(argv, stdin, layer):
                return
            unwrapped = _unwrap(program, argv, env)
            if unwrapped is not None:
                argv, more_open = unwrapped
                open_args = open_args or more_open
                continue
            if program == "env" and _env_split(argv) is not None:
                self._reread_words(argv, _env_split(argv) or [], layer, "env -S")
                return
            if program == "busybox" and len(argv) > 1:
                argv = argv[1:]
                continue
            if program in _SHELLS:
                self._shell(argv, stdin, layer, open_args)
                return
            if program == "eval":
                self._reread_words(argv, argv[1:], layer, "eval")
                return
            if program == "trap":
                operands = [w for w in argv[1:] if w.value != "--"]
                if len(operands) >= 2 and (operands[0].value or "x")[:1] != "-":
                    self._reread_words(argv, operands[:1], layer, "trap")
                return
            if program == "watch":
                self._watch(argv, env, stdin, layer)
                return
            if program in self._PROGRAMS:
                getattr(self, self._PROGRAMS[program])(argv, env, stdin, layer)
                return
            if program == "glab" or program in self.glab_names:
                self._glab(argv, env, layer, open_args)
                return
            if self._run_written(argv, stdin, layer):
                return
            self._other(argv, env, stdin, layer)
            return

    def _dynamic_program(self, argv: list[_Word]) -> None:
        """A program whose name bash computes could be glab, with any subcommand split out of
        the same expansion: it is unknown, whatever follows it."""
        self.unknown.append(
            f"{_short(' '.join(w.raw for w in argv))}: bash computes the program's name (a "
            "variable, a substitution, a glob or a brace), so the hook cannot tell whether it is "
            "glab; spell the program out"
        )

    def _reread_words(self, argv: list[_Word], words: list[_Word], layer: _Layer, how: str) -> None:
        values = [w.value for w in words]
        if any(v is None for v in values):
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: {how} runs text built from variables "
                "or substitutions, which the hook cannot read"
            )
            return
        for w in words:
            if w.span:
                layer.consumed.add(w.span)
        self.read(" ".join(v for v in values if v is not None), layer.depth + 1)

    def _read_source(
        self, source: _Stdin | None, argv: list[_Word], layer: _Layer, how: str
    ) -> None:
        """Re-read a script a program runs, when the command line spells it."""
        if source is None:
            return  # a file the command did not write, or the session's own input: not read
        if source.text is not None:
            layer.consumed.update(source.spans)
            self.read(source.text, layer.depth + 1)
        elif source.dynamic:
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: {how} runs commands built from "
                "variables or substitutions, or from a file this command writes with content "
                "the hook cannot read"
            )

    def _script_source(self, word: _Word, stdin: _Stdin | None, layer: _Layer) -> _Stdin | None:
        """The script a shell or ``source`` reads from the file ``word`` names: standard input,
        a process substitution's output, a file the command writes; None for any other file."""
        node = word.node
        if node is not None and node.type == "process_substitution":
            inner = [c for c in node.children if c.type not in ("<(", ">(", ")")]
            if len(inner) == 1:
                return self._output_of(inner[0], layer, None)
            return _DYNAMIC_STDIN
        value = word.value
        if value is None:
            self.script_runs.append((None, layer))
            return None
        if value in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
            return stdin
        key = _file_key(value)
        if key in self.files:
            return self.files[key]
        self.script_runs.append((key, layer))
        return None

    def _run_written(self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer) -> bool:
        """A program named by a path (bash looks a name with a slash up as a file): when the
        command writes that file, what runs is what it wrote."""
        path = argv[0].value
        if path is None or "/" not in path:
            return False
        source = self._script_source(argv[0], stdin, layer)
        if source is None:
            return False
        self._read_source(source, argv, layer, argv[0].raw)
        return True

    def _shell_stdin(self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer) -> None:
        """A shell that reads its commands from standard input."""
        if stdin is None:
            return  # the session's own (empty) input
        if stdin.text is not None:
            layer.consumed.update(stdin.spans)
            self.read(stdin.text, layer.depth + 1)
        elif stdin.dynamic:
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: a shell reads commands built from "
                "variables or substitutions"
            )

    def _shell(
        self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer, open_args: bool
    ) -> None:
        """sh/bash/zsh: re-read what ``-c`` runs, a script fed on standard input (``-s`` or no
        operand), or a script file the command line spells (/dev/stdin, ``<(...)``, a file the
        command writes)."""
        i, command_mode, stdin_mode = 1, False, False
        while i < len(argv):
            value = argv[i].value
            substitution = getattr(argv[i].node, "type", "") == "process_substitution"
            if value is None and (command_mode or substitution):
                break  # the text -c runs, or the script <(...) writes: read below
            if value is None:
                self.unknown.append(
                    f"{_short(' '.join(w.raw for w in argv))}: a shell argument built from "
                    "variables or substitutions (it could be -c)"
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
                self._reread_words(argv, operands[:1], layer, f"{argv[0].raw} -c")
            elif open_args:
                self.unknown.append(f"{_short(' '.join(w.raw for w in argv))}: xargs feeds -c")
            return
        if operands and not stdin_mode:
            source = self._script_source(operands[0], stdin, layer)
            self._read_source(source, argv, layer, argv[0].raw)
            return
        self._shell_stdin(argv, stdin, layer)

    def _watch(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
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
            self._argv(rest, env, stdin, layer, open_args=False)
        elif rest:
            self._reread_words(argv, rest, layer, "watch")

    def _unclear(self, argv: list[_Word], what: str) -> None:
        self.unknown.append(
            f"{_short(' '.join(w.raw for w in argv))}: {argv[0].raw}'s arguments are built "
            f"from variables or substitutions, and one could be {what}"
        )

    def _script(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """util-linux ``script``: ``-c COMMAND`` runs in ``$SHELL -c``; without it, an
        interactive shell reads standard input (term-utils/script.c)."""
        options, _operands, unclear = _getopt(argv[1:], _SCRIPT_OPTS)
        if unclear:
            self._unclear(argv, "-c")
            return
        commands = [v for name, v in options if name in ("c", "command") and v is not None]
        for command in commands:
            self._reread_words(argv, [command], layer, "script -c")
        if not commands:
            self._shell_stdin(argv, stdin, layer)

    def _su(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """``su``/``runuser``: ``-c``/``--command``/``--session-command`` run in the user's
        shell; arguments after the user go to that shell (``su root -- -c CMD``); ``runuser -u
        USER CMD...`` runs a command directly; with none, the shell reads standard input."""
        runuser = argv[0].tail == "runuser"
        options, operands, unclear = _getopt(argv[1:], _RUNUSER_OPTS if runuser else _SU_OPTS)
        if unclear:
            self._unclear(argv, "-c")
            return
        commands = [v for name, v in options if name in ("c", "command", "session-command") and v]
        for command in commands:
            self._reread_words(argv, [command], layer, f"{argv[0].raw} -c")
        if runuser and any(name in ("u", "user") for name, _ in options):
            if operands:
                self._argv(operands, {}, stdin, layer, open_args=False)
            return
        if operands and operands[0].value == "-":
            operands = operands[1:]
        if len(operands) > 1:
            self._shell([_literal_word("sh"), *operands[1:]], stdin, layer, False)
        elif not commands:
            self._shell_stdin(argv, stdin, layer)

    def _sudo_shell(self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer) -> bool:
        """``sudo -s``/``-i`` (and ``doas -s``) run the command in a shell: sudo joins its words
        with spaces and escapes every character but letters, digits, ``_``, ``-`` and ``$``
        (sudo's parse_args.c), and the shell reads that; with no command, the shell reads
        standard input. True when it was such a call."""
        doas = argv[0].tail == "doas"
        options, operands, unclear = _getopt(argv[1:], _DOAS_OPTS if doas else _SUDO_OPTS)
        if not {name for name, _ in options} & {"s", "shell", "i", "login"}:
            return False
        if unclear:
            self._unclear(argv, "the command")
            return True
        while operands and _ASSIGNMENT.match(operands[0].value or ""):
            operands = operands[1:]  # sudo's own VAR=value
        if doas or not operands:
            self._shell_stdin(argv, stdin, layer)
            return True
        values = [w.value for w in operands]
        if any(v is None for v in values):
            self._reread_words(argv, operands, layer, f"{argv[0].raw} -s")
            return True
        self._consume(layer, operands)
        text = " ".join(re.sub(r"([^A-Za-z0-9_$-])", r"\\\1", v or "") for v in values)
        self.read(text, layer.depth + 1)
        return True

    def _flock(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """``flock [options] FILE -c COMMAND`` (a shell string) or ``flock FILE COMMAND...``."""
        options, operands, unclear = _getopt(argv[1:], _FLOCK_OPTS)
        if unclear:
            self._unclear(argv, "-c")
            return
        commands = [v for name, v in options if name in ("c", "command") and v is not None]
        if len(operands) >= 3 and operands[1].value in ("-c", "--command"):
            commands.append(operands[2])
        for command in commands:
            self._reread_words(argv, [command], layer, "flock -c")
        if not commands and len(operands) >= 2:
            self._argv(operands[1:], {}, stdin, layer, open_args=False)

    def _tmux(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """tmux runs shell commands for new-session, new-window, split-window, respawn-*,
        run-shell, display-popup, pipe-pane and if-shell, types keys with send-keys, and runs
        ``-c`` itself; commands chain with ``;`` (tmux(1))."""
        options, operands, unclear = _getopt(argv[1:], _TMUX_OPTS)
        if unclear:
            self._unclear(argv, "a command")
            return
        for name, value in options:
            if name == "c" and value is not None:
                self._reread_words(argv, [value], layer, "tmux -c")
        command: list[_Word] = []
        for word in [*operands, _literal_word(";")]:
            if word.value == ";":
                self._tmux_command(argv, command, layer)
                command = []
            else:
                command.append(word)

    def _tmux_command(self, argv: list[_Word], words: list[_Word], layer: _Layer) -> None:
        if not words:
            return
        name = words[0].value
        if name is None:
            self._unclear(argv, "a command that runs a shell")
            return
        found = _tmux_lookup(name)
        if found is None:
            return
        canonical, spec = found
        options, operands, unclear = _getopt(words[1:], spec)
        if unclear:
            self._unclear(argv, "a shell command")
            return
        if canonical == "send-keys":
            literal = any(option == "l" for option, _ in options)
            keys = [w.value for w in operands]
            if any(k is None for k in keys):
                self._unclear(argv, "a key")
                return
            typed = "".join(
                "\n" if not literal and k in ("Enter", "C-m", "C-j", "KPEnter") else k or ""
                for k in keys
            )
            self._consume(layer, operands)
            self.read(typed, layer.depth + 1)
            return
        if not operands:
            return
        if canonical == "if-shell":
            self._reread_words(argv, operands[:1], layer, "tmux if-shell")
            for text in operands[1:]:  # tmux commands, in tmux's own syntax
                try:
                    inner = shlex.split(text.value or "") if text.value is not None else None
                except ValueError:
                    inner = None
                if inner is None:
                    self._unclear(argv, "a command that runs a shell")
                else:
                    self._consume(layer, [text])
                    self._tmux_command(argv, [_literal_word(w) for w in inner], layer)
        elif canonical in ("run-shell", "pipe-pane") or len(operands) == 1:
            self._reread_words(argv, operands[:1], layer, f"tmux {canonical}")
        else:
            self._argv(operands, {}, None, layer, open_args=False)

    def _source(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """``source FILE`` / ``. FILE``: the file's commands run in this shell."""
        operands = [w for w in argv[1:] if w.value != "--"]
        if operands:
            source = self._script_source(operands[0], stdin, layer)
            self._read_source(source, argv, layer, argv[0].raw)

    def _find(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """``find ... -exec|-execdir|-ok|-okdir COMMAND... ;|+``: COMMAND runs once per file
        found, with each ``{}`` replaced by a path find computes; a ``{}`` as the program runs
        what it finds."""
        i = 1
        while i < len(argv):
            if argv[i].value not in ("-exec", "-execdir", "-ok", "-okdir"):
                i += 1
                continue
            j = i + 1
            while j < len(argv) and argv[j].value not in (";", "+"):
                j += 1
            command = [
                w if w.value is not None and "{}" not in w.value else _dynamic_word(w)
                for w in argv[i + 1 : j]
            ]
            if command and command[0].value is None:
                self.unknown.append(
                    f"{_short(' '.join(w.raw for w in argv))}: find runs the files it finds as "
                    f"the program ({command[0].raw}), and one could be glab"
                )
            elif command:
                self._argv(command, {}, None, layer, open_args=False)
            i = j + 1

    def _make(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """make runs its recipes in a shell: the makefile is read when the command line spells
        it (``-f -`` from a heredoc, ``--eval``, a makefile the command writes)."""
        options, _operands, unclear = _getopt(argv[1:], _MAKE_OPTS)
        if unclear:
            self._unclear(argv, "-f or --eval")
            return
        named = [v for name, v in options if name in ("f", "file", "makefile") and v is not None]
        sources: list[_Stdin | None] = []
        for word in named:
            if word.value == "-":
                sources.append(stdin)
            else:
                sources.append(self._script_source(word, stdin, layer))
        if not named:  # the default makefiles, when this command writes one
            sources += [self.files.get(n) for n in ("GNUmakefile", "makefile", "Makefile")]
        for name, value in options:
            if name in ("E", "eval") and value is not None:
                spans = (value.span,) if value.span else ()
                text = value.value
                sources.append(_Stdin(text, spans=spans) if text is not None else _DYNAMIC_STDIN)
        for source in sources:
            if source is None or (source.text is None and not source.dynamic):
                continue
            if source.text is None:
                self._read_source(source, argv, layer, "make")
                continue
            layer.consumed.update(source.spans)
            commands = _makefile_commands(source.text)
            if commands:
                self.read("\n".join(commands), layer.depth + 1)

    def _tee(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        options, operands, _ = _getopt(argv[1:], _TEE_OPTS)
        append = any(name in ("a", "append") for name, _ in options)
        for word in operands:
            self._write_file(word.value, stdin or _OPAQUE, append=append)

    def _copy(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """cp, ln, install, mv: a copy of glab (or of something bash computes) under another
        name is read as glab under that name; a copy of a file the command writes holds what
        it wrote."""
        _options, operands, _ = _getopt(argv[1:], _COPY_OPTS)
        if len(operands) < 2:
            return
        sources, target = operands[:-1], operands[-1]
        for source in sources:
            into_dir = (target.value or "").endswith("/") or len(sources) > 1
            name = source.tail if into_dir else target.tail
            if (source.tail == "glab" or source.value is None) and name:
                self.glab_names.add(name)
            if len(sources) == 1 and source.value is not None and target.value is not None:
                written = self.files.get(_file_key(source.value))
                if written is not None:
                    self.files[_file_key(target.value)] = written

    def _other(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """Any other program. It may be a renamed copy of glab (read as glab when its command
        word is `mr`, `api` or `alias set`), or run one of its arguments (ssh, parallel):
        read from any argument that names glab, a shell or eval."""
        values = [w.value for w in argv]
        top = _cobra_traverse(values[1:])
        if top is not None and top >= 0:
            word, after = values[1 + top], values[2 + top : 3 + top]
            if word in ("mr", "api") or (word == "alias" and after == ["set"]):
                if word == "alias" and argv[0].tail:
                    self.glab_names.add(argv[0].tail)  # its aliases run as `<name> <alias>`
                self._glab(argv, env, layer, open_args=False)
                return
        for i in range(1, len(argv)):
            tail = argv[i].tail
            if tail in _SHELLS or tail in ("glab", "eval"):
                self._argv(argv[i:], env, None, layer, open_args=False)
