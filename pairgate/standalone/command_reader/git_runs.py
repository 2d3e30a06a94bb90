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

__all__ = ["GIT_RUNNERS", "TRANSPORT_OPTIONS", "git_transports", "hooks_written", "option_values",
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
    {("pager", ""), ("credential", "helper"), ("diff", "command"), ("diff", "textconv"),
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
    last = rest.rpartition(".")[2] if "." in rest else ""
    return (section, last) in _RUN_SETTING_PARTS or (section == "pager" and bool(rest))


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


# Options whose value git runs as a command to reach the other repository (a local path's, or
# any with ext::): push's and send-pack's --receive-pack/--exec, the fetching side's
# --upload-pack (-u for clone).
TRANSPORT_OPTIONS = {
    "push": ("", ("receive-pack", "exec")),
    "send-pack": ("", ("receive-pack", "exec")),
    "fetch": ("", ("upload-pack",)),
    "pull": ("", ("upload-pack",)),
    "ls-remote": ("", ("upload-pack",)),
    "clone": ("u", ("upload-pack",)),
    "archive": ("", ("exec",)),
}


def git_transports(
    reading: Reading, argv: list[Word], name: str | None, args: list[Word], layer: Layer
) -> None:
    """What git runs to reach a repository: an ``ext::<command>`` URL (git-remote-ext, with
    protocol.ext.allow), and the options of TRANSPORT_OPTIONS: read as scripts."""
    for word in args:
        if word.value is not None and word.value.startswith("ext::"):
            _run_text(reading, argv, word, word.value[len("ext::") :], layer, "an ext:: URL")
    short, long = TRANSPORT_OPTIONS.get(name or "", ("", ()))
    for word, text in option_values(args, short, long) if long else ():
        _run_text(reading, argv, word, text, layer, f"{name}'s {long[0]} program")


def _git_rebase(reading: Reading, argv: list[Word], args: list[Word], env: dict[str, Word],
                layer: Layer) -> None:  # fmt: skip
    """``git rebase -x|--exec <cmd>``: git runs each in a shell after a commit is picked."""
    for word, text in option_values(args, "x", ("exec",)):
        _run_text(reading, argv, word, text, layer, "rebase --exec's command")


def _git_difftool(reading: Reading, argv: list[Word], args: list[Word], env: dict[str, Word],
                  layer: Layer) -> None:  # fmt: skip
    """``git difftool -x|--extcmd <cmd>``: run in a shell on each file's two versions."""
    for word, text in option_values(args, "x", ("extcmd",)):
        _run_text(reading, argv, word, text, layer, "difftool --extcmd's command")


_FILTERS = ("env-filter", "tree-filter", "index-filter", "parent-filter", "msg-filter",
            "commit-filter", "tag-name-filter")  # fmt: skip


def _git_filter_branch(reading: Reading, argv: list[Word], args: list[Word],
                       env: dict[str, Word], layer: Layer) -> None:  # fmt: skip
    """``git filter-branch --<kind>-filter <command>``: each is eval'ed by its shell script."""
    for word, text in option_values(args, "", _FILTERS):
        _run_text(reading, argv, word, text, layer, "filter-branch's filter")


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


def _git_grep(reading: Reading, argv: list[Word], args: list[Word], env: dict[str, Word],
              layer: Layer) -> None:  # fmt: skip
    """``git grep -O<pager>|--open-files-in-pager=<pager>``: run on the matching files."""
    for word, text in option_values(args, "O", ("open-files-in-pager",)):
        _run_text(reading, argv, word, text, layer, "grep's pager")


def _git_send_email(reading: Reading, argv: list[Word], args: list[Word],
                    env: dict[str, Word], layer: Layer) -> None:  # fmt: skip
    """``git send-email --to-cmd|--cc-cmd|--header-cmd|--sendmail-cmd <command>``."""
    for word, text in option_values(args, "", ("to-cmd", "cc-cmd", "header-cmd", "sendmail-cmd")):
        _run_text(reading, argv, word, text, layer, "send-email's command")


GIT_RUNNERS: dict[
    str, Callable[[Reading, list[Word], list[Word], dict[str, Word], Layer], None]
] = {
    "rebase": _git_rebase,
    "difftool": _git_difftool,
    "filter-branch": _git_filter_branch,
    "bisect": _git_bisect,
    "submodule": _git_submodule,
    "grep": _git_grep,
    "send-email": _git_send_email,
}
