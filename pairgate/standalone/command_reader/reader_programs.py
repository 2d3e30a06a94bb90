"""The readers of programs that wrap a program, copy files or are any other program, and the
steps every program reader shares (re-reading text as a script, the script a file holds)."""

from __future__ import annotations

from pairgate.standalone.command_reader.glab import cobra_traverse
from pairgate.standalone.command_reader.reader_glab import read_glab
from pairgate.standalone.command_reader.reading import Layer, Reading
from pairgate.standalone.command_reader.words import (
    DYNAMIC_STDIN,
    OPAQUE,
    SHELLS,
    Stdin,
    Word,
    file_key,
    spelled,
)
from pairgate.standalone.command_reader.wrappers import (
    COPY_OPTS,
    TEE_OPTS,
    env_split,
    getopt,
    unwrap,
)

__all__ = [
    "dynamic_program",
    "read_alias",
    "read_busybox",
    "read_copy",
    "read_env",
    "read_other",
    "read_tee",
    "read_wrapped",
    "reread_script",
    "reread_words",
    "run_written",
    "script_source",
    "shell_stdin",
    "unclear_arguments",
]


# -- steps the readers share ------------------------------------------------------------------


def dynamic_program(reading: Reading, argv: list[Word]) -> None:
    """A program whose name bash computes could be glab, with any subcommand split out of the
    same expansion: it is unknown, whatever follows it."""
    reading.unclear(
        f"{spelled(argv)}: bash computes the program's name (a variable, a substitution, a glob "
        "or a brace), so the hook cannot tell whether it is glab; spell the program out"
    )


def unclear_arguments(reading: Reading, argv: list[Word], what: str) -> None:
    """A word bash computes stands where the program reads an option: it could be ``what``."""
    reading.unclear(
        f"{spelled(argv)}: {argv[0].raw}'s arguments are built from variables or "
        f"substitutions, and one could be {what}"
    )


def reread_words(
    reading: Reading, argv: list[Word], words: list[Word], layer: Layer, how: str
) -> None:
    """Re-read ``words``, joined with spaces, as the script ``how`` runs (``bash -c``, eval)."""
    values = [w.value for w in words]
    if any(v is None for v in values):
        reading.unclear(
            f"{spelled(argv)}: {how} runs text built from variables or substitutions, which "
            "the hook cannot read"
        )
        return
    layer.consume(words)
    reading.read(" ".join(v for v in values if v is not None), layer.depth + 1)


def reread_script(
    reading: Reading, source: Stdin | None, argv: list[Word], layer: Layer, how: str
) -> None:
    """Re-read a script a program runs, when the command line spells it."""
    if source is None:
        return  # a file the command did not write, or the session's own input: not read
    if source.text is not None:
        layer.consumed.update(source.spans)
        reading.read(source.text, layer.depth + 1)
    elif source.dynamic:
        reading.unclear(
            f"{spelled(argv)}: {how} runs commands built from variables or substitutions, or "
            "from a file this command writes with content the hook cannot read"
        )


def script_source(reading: Reading, word: Word, stdin: Stdin | None, layer: Layer) -> Stdin | None:
    """The script a shell or ``source`` reads from the file ``word`` names: standard input, a
    process substitution's output, a file the command writes; None for any other file."""
    node = word.node
    if node is not None and node.type == "process_substitution":
        inner = [c for c in node.children if c.type not in ("<(", ">(", ")")]
        if len(inner) == 1:
            return reading.output_of(inner[0], layer, None)
        return DYNAMIC_STDIN
    value = word.value
    if value is None:
        reading.script_runs.append((None, layer))
        return None
    if value in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
        return stdin
    key = file_key(value)
    if key in reading.files:
        return reading.files[key]
    reading.script_runs.append((key, layer))
    return None


def run_written(reading: Reading, argv: list[Word], stdin: Stdin | None, layer: Layer) -> bool:
    """A program named by a path (bash looks a name with a slash up as a file): when the
    command writes that file, what runs is what it wrote. True when it was such a program."""
    path = argv[0].value
    if path is None or "/" not in path:
        return False
    source = script_source(reading, argv[0], stdin, layer)
    if source is None:
        return False
    reread_script(reading, source, argv, layer, argv[0].raw)
    return True


def shell_stdin(reading: Reading, argv: list[Word], stdin: Stdin | None, layer: Layer) -> None:
    """A shell that reads its commands from standard input."""
    if stdin is None:
        return  # the session's own (empty) input
    if stdin.text is not None:
        layer.consumed.update(stdin.spans)
        reading.read(stdin.text, layer.depth + 1)
    elif stdin.dynamic:
        reading.unclear(
            f"{spelled(argv)}: a shell reads commands built from variables or substitutions"
        )


# -- the rows of PROGRAMS: (reading, argv, env, layer, stdin, open_args) -----------------------


def read_alias(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """bash's ``alias name=text``."""
    reading.alias(argv)


def read_wrapped(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """A wrapper of wrappers.WRAPPERS (nohup, timeout, xargs...): the program it runs, with
    the assignments env and sudo make, and more arguments when xargs appends them."""
    unwrapped = unwrap(argv[0].tail or "", argv, env)
    if unwrapped is not None:
        command, more_open = unwrapped
        reading.run(command, env, layer, stdin, open_args or more_open)


def read_env(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """``env -S STRING`` splits the string into the command line; any other env wraps."""
    split = env_split(argv)
    if split is not None:
        reread_words(reading, argv, split, layer, "env -S")
    else:
        read_wrapped(reading, argv, env, layer, stdin, open_args)


def read_busybox(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """``busybox APPLET ARGS``: the applet is the program."""
    if len(argv) > 1:
        reading.run(argv[1:], env, layer, stdin, open_args)
    else:
        read_other(reading, argv, env, layer, stdin, open_args)


def read_tee(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """``tee FILE...`` writes its standard input to each file."""
    options, operands, _ = getopt(argv[1:], TEE_OPTS)
    append = any(name in ("a", "append") for name, _ in options)
    for word in operands:
        reading.write_file(word.value, stdin or OPAQUE, append=append)


def read_copy(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """cp, ln, install, mv: a copy of glab (or of something bash computes) under another name
    is read as glab under that name; a copy of a file the command writes holds what it
    wrote."""
    _options, operands, _ = getopt(argv[1:], COPY_OPTS)
    if len(operands) < 2:
        return
    sources, target = operands[:-1], operands[-1]
    for source in sources:
        into_dir = (target.value or "").endswith("/") or len(sources) > 1
        name = source.tail if into_dir else target.tail
        if (source.tail == "glab" or source.value is None) and name:
            reading.glab_names.add(name)
        if len(sources) == 1 and source.value is not None and target.value is not None:
            written = reading.files.get(file_key(source.value))
            if written is not None:
                reading.files[file_key(target.value)] = written


def read_other(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """Any other program. It may be a renamed copy of glab (read as glab when its command word
    is `mr`, `api` or `alias set`), or run one of its arguments (ssh, parallel): read from any
    argument that names glab, a shell or eval."""
    values = [w.value for w in argv]
    top = cobra_traverse(values[1:])
    if top is not None and top >= 0:
        word, after = values[1 + top], values[2 + top : 3 + top]
        if word in ("mr", "api") or (word == "alias" and after == ["set"]):
            if word == "alias" and argv[0].tail:
                reading.glab_names.add(argv[0].tail)  # its aliases run as `<name> <alias>`
            read_glab(reading, argv, env, layer, None, False)
            return
    for i in range(1, len(argv)):
        tail = argv[i].tail
        if tail in SHELLS or tail in ("glab", "eval"):
            reading.run(argv[i:], env, layer)
