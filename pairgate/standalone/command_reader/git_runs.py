"""What git runs as a command, read as the script it is: settings given on the command
(``-c``, ``--config-env``, GIT_CONFIG_*), variables set on it, the options of the commands that
run one (rebase -x, difftool -x, filter-branch, bisect run, submodule foreach, grep -O,
send-email), what git runs to reach a repository (ext:: URLs, --receive-pack, --upload-pack),
and the hooks the command writes. One built from variables or substitutions blocks, as
``bash -c "$X"`` does."""

from __future__ import annotations

from collections.abc import Callable

from pairgate.standalone.command_reader.reader_programs import reread_script
from pairgate.standalone.command_reader.reading import Layer, Reading
from pairgate.standalone.command_reader.words import Word, file_key, spelled

__all__ = ["GIT_RUNNERS", "OPTION_COMMANDS", "hooks_written", "option_commands", "option_values",
           "runs_from_settings"]  # fmt: skip

# Settings whose value git runs as a command (git-config(1)), by name, or by section and last
# part for the ones named per driver, tool or command (``diff.<driver>.textconv``). A value is
# read as the shell text git gives it to, so a merge or an auto-merge push inside is read as one.
_RUN_SETTINGS = frozenset(
    """core.editor sequence.editor core.pager core.sshcommand core.askpass core.fsmonitor
    diff.external gpg.program interactive.difffilter credential.helper core.gitproxy
    uploadpack.packobjectshook gpg.ssh.defaultkeycommand sendemail.tocmd sendemail.cccmd
    sendemail.sendmailcmd sendemail.headercmd imap.tunnel core.alternaterefscommand""".split()  # noqa: SIM905 (a word list reads better as text)
)
_RUN_SETTING_PARTS = frozenset(
    {("credential", "helper"), ("diff", "command"), ("diff", "textconv"),
     ("filter", "clean"), ("filter", "smudge"), ("filter", "process"), ("merge", "driver"),
     ("mergetool", "cmd"), ("difftool", "cmd"), ("gpg", "program"), ("remote", "receivepack"),
     ("remote", "uploadpack"), ("trailer", "cmd"), ("trailer", "command"), ("man", "cmd"),
     ("browser", "cmd"), ("guitool", "cmd"), ("submodule", "update")}
)  # fmt: skip
# The environment variables git runs as a command (git(1), "Environment Variables").
_RUN_VARIABLES = ("GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_SSH_COMMAND",
                  "GIT_SSH", "GIT_ASKPASS", "GIT_EXTERNAL_DIFF", "EDITOR", "VISUAL", "PAGER")  # fmt: skip


def _runs_setting(key: str) -> bool:
    if key in _RUN_SETTINGS:
        return True
    section, _, rest = key.partition(".")
    if section == "pager":  # pager.<command>
        return bool(rest)
    return "." in rest and (section, rest.rpartition(".")[2]) in _RUN_SETTING_PARTS


def _run_text(reading: Reading, argv: list[Word], word: Word | None, text: str | None,
              layer: Layer, how: str) -> None:  # fmt: skip
    """``text``, which git runs in a shell (``how`` says where it comes from), read as a
    script; blocks when bash computes it."""
    if text is None:
        reading.unclear(
            f"{spelled(argv)}: git runs {how} as a command, and bash builds it from variables or "
            "substitutions, which the hook cannot read"
        )
        return
    if word is not None:
        layer.consume([word])
    reading.read(text, layer.depth + 1)


def runs_from_settings(
    reading: Reading,
    argv: list[Word],
    config: list[tuple[str, Word | None]],
    env: dict[str, Word],
    layer: Layer,
) -> None:
    """The settings given to this git command (``-c``, ``--config-env``, GIT_CONFIG_*) and the
    variables set on it that git runs as a command: read as the scripts they are."""
    for key, word in config:
        if _runs_setting(key):
            text = word.value if word is not None else None
            if key.startswith("submodule.") and text is not None:
                if not text.startswith("!"):
                    continue  # an update mode (checkout, rebase, merge, none)
                text = text[1:]
            elif key.startswith("credential.") and text is not None:
                # credential.c runs every helper in a shell: !TEXT as it is, a path with its
                # arguments, anything else as git credential-<name>
                text = (
                    text[1:]
                    if text.startswith("!")
                    else (text if text.startswith("/") else f"git credential-{text}")
                )
            _run_text(reading, argv, word, text, layer, f"the setting {key}")
    for name in _RUN_VARIABLES:
        if name in env:
            _run_text(reading, argv, env[name], env[name].value, layer, name)


def hooks_written(
    reading: Reading, argv: list[Word], config: list[tuple[str, Word | None]], layer: Layer
) -> None:
    """A git hook this command writes (under core.hooksPath given here, or .git/hooks) runs
    when git reaches it: read as the script it is, as ``bash FILE`` would be."""
    given = [w for k, w in config if k == "core.hookspath"]
    if any(w is None or w.value is None for w in given) and reading.files:
        reading.unclear(
            f"{spelled(argv)}: git runs its hooks from core.hooksPath, which bash builds here, "
            "and this command writes files there could be hooks among"
        )
        return
    places = [file_key(w.value) for w in given if w is not None and w.value] + [".git/hooks"]
    for path, source in list(reading.files.items()):
        # (read once: the git commands a hook runs would reach the same hooks again)
        if any(path.startswith(place + "/") for place in places) and (
            f"hook {path}" not in reading.expanding
        ):
            reading.expanding.add(f"hook {path}")
            try:
                reread_script(reading, source, argv, layer, f"the git hook {path}")
            finally:
                reading.expanding.discard(f"hook {path}")


def option_values(
    args: list[Word], short: str, long: tuple[str, ...]
) -> list[tuple[Word, str | None]]:
    """(the word, the text) of each value of ``-<short> V``, ``-<short>V``, ``--<long> V`` and
    ``--<long>=V`` among ``args`` (a cluster such as ``-ix V`` counts too)."""
    found: list[tuple[Word, str | None]] = []
    for k, word in enumerate(args):
        value = word.value
        if value is None:
            continue
        after = args[k + 1] if k + 1 < len(args) else None
        if value.startswith("--"):
            name, eq, attached = value[2:].partition("=")
            # parse-options takes a long option's unique prefix (--exe for --exec)
            named = len(name) >= 2 and any(n.startswith(name) for n in long)
            if named and eq:
                found.append((word, attached))
            elif named and after is not None:
                found.append((after, after.value))
        elif value.startswith("-") and short and short in value[1:]:
            rest = value[1:].split(short, 1)[1]
            if rest:
                found.append((word, rest))
            elif after is not None:
                found.append((after, after.value))
    return found


_FILTERS = ("env-filter", "tree-filter", "index-filter", "parent-filter", "msg-filter",
            "commit-filter", "tag-name-filter")  # fmt: skip
# Options whose value git runs as a command, by git command: (the short option, the long ones,
# what a refusal calls it). rebase runs each -x after a commit is picked, difftool -x on each
# file's two versions, filter-branch evals each filter, grep -O opens the matching files;
# push's and send-pack's --receive-pack/--exec and the fetching side's --upload-pack reach
# the other repository (a local path's, or any with ext::).
OPTION_COMMANDS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "rebase": ("x", ("exec",), "rebase --exec's command"),
    "difftool": ("x", ("extcmd",), "difftool --extcmd's command"),
    "filter-branch": ("", _FILTERS, "filter-branch's filter"),
    "grep": ("O", ("open-files-in-pager",), "grep's pager"),
    "send-email": ("", ("to-cmd", "cc-cmd", "header-cmd", "sendmail-cmd"),
                   "send-email's command"),
    "push": ("", ("receive-pack", "exec"), "push's receive-pack program"),
    "send-pack": ("", ("receive-pack", "exec"), "send-pack's receive-pack program"),
    "fetch": ("", ("upload-pack",), "fetch's upload-pack program"),
    "pull": ("", ("upload-pack",), "pull's upload-pack program"),
    "ls-remote": ("", ("upload-pack",), "ls-remote's upload-pack program"),
    "clone": ("u", ("upload-pack",), "clone's upload-pack program"),
    "archive": ("", ("exec",), "archive's exec program"),
}  # fmt: skip


def option_commands(
    reading: Reading, argv: list[Word], name: str | None, args: list[Word], layer: Layer
) -> None:
    """What git runs as a command from its arguments: an ``ext::<command>`` URL
    (git-remote-ext, with protocol.ext.allow), and the options of OPTION_COMMANDS."""
    for word in args:
        if word.value is not None and word.value.startswith("ext::"):
            _run_text(reading, argv, word, word.value[len("ext::") :], layer, "an ext:: URL")
    short, long, how = OPTION_COMMANDS.get(name or "", ("", (), ""))
    for word, text in option_values(args, short, long) if long else ():
        _run_text(reading, argv, word, text, layer, how)


def _git_bisect(reading: Reading, argv: list[Word], args: list[Word], env: dict[str, Word],
                layer: Layer) -> None:  # fmt: skip
    """``git bisect run <cmd> [<arg>...]``: the command and its arguments, run at each step."""
    if args and args[0].value == "run" and len(args) > 1:
        reading.run(args[1:], env, layer)


def _git_submodule(reading: Reading, argv: list[Word], args: list[Word],
                   env: dict[str, Word], layer: Layer) -> None:  # fmt: skip
    """``git submodule [--quiet] foreach [--recursive] <command>``: run in a shell in each
    submodule."""
    values = [w.value for w in args]
    if "foreach" not in values:
        return
    rest = args[values.index("foreach") + 1 :]
    while rest and rest[0].value in ("--recursive", "--quiet", "-q"):
        rest = rest[1:]
    if rest:
        texts = [w.value for w in rest]
        text = None if any(t is None for t in texts) else " ".join(t or "" for t in texts)
        layer.consume(rest)
        _run_text(reading, argv, None, text, layer, "submodule foreach's command")


GIT_RUNNERS: dict[
    str, Callable[[Reading, list[Word], list[Word], dict[str, Word], Layer], None]
] = {
    "bisect": _git_bisect,
    "submodule": _git_submodule,
}
