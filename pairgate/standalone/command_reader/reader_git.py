"""The reader's git: aliases, configuration and push options."""

from __future__ import annotations

import shlex
from collections.abc import Callable

from pairgate.standalone.command_reader.git_runs import (
    GIT_RUNNERS,
    OPTION_COMMANDS,
    hooks_written,
    option_commands,
    option_values,
    runs_from_settings,
)
from pairgate.standalone.command_reader.reader_programs import unclear_arguments
from pairgate.standalone.command_reader.reading import GitAlias, Layer, Reading
from pairgate.standalone.command_reader.words import (
    COMMIT_SHA,
    DYNAMIC,
    PushFound,
    Stdin,
    Word,
    literal_word,
    short,
    spelled,
)
from pairgate.standalone.command_reader.wrappers import (
    AUTO_MERGE_TEXT,
    GIT_CONFIG_OPTS,
    GIT_PUSH_OPTS,
    arms_auto_merge,
    getopt,
    git_env_config,
    git_setting,
    push_option,
)

__all__ = ["GIT_SETTINGS", "read_git"]


def read_git(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """git's own options (``-c name=value`` and GIT_CONFIG_COUNT/KEY/VALUE set on the command),
    then its command: an alias defined by them or by ``git config`` earlier in the command,
    ``git config`` itself, or ``git push``."""
    config: list[tuple[str, Word | None]] = []
    i = 1
    while i < len(argv):
        value = argv[i].value
        if value is None:
            first = argv[i].parts[0] if argv[i].parts else DYNAMIC
            if isinstance(first, str) and first.startswith("--") and "=" in first:
                i += 1  # --git-dir="$PWD/.git": an option whose value bash builds
                continue
            # Where git reads its own options, a word bash builds could be any of them, or
            # the command, or nothing at all (an unset variable): the next word could be push.
            unclear_arguments(reading, argv, "the git command, -c alias... or a push")
            return
        if value == "-c" and i + 1 < len(argv):
            config.append(git_setting(argv[i + 1]))
            i += 2
            continue
        if value.startswith("--config-env=") or value == "--config-env":
            # git.c takes both spellings: --config-env=name=VAR and --config-env name=VAR
            spec = argv[i + 1] if value == "--config-env" and i + 1 < len(argv) else None
            given = value[len("--config-env=") :] if spec is None else spec.value
            if given is None:
                config.append(("*", None))
            else:
                key, _, var = given.partition("=")
                config.append((key.lower(), env.get(var)))
            i += 1 if spec is None else 2
            continue
        if value in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                     "--attr-source"):  # fmt: skip
            i += 1
        elif not value.startswith("-"):
            break
        i += 1
    config += git_env_config(env)
    if any(key == "*" for key, _ in config):
        unclear_arguments(reading, argv, "an alias or push.pushOption")
        return
    runs_from_settings(reading, argv, config, env, layer)
    hooks_written(reading, argv, config, layer)
    if i >= len(argv):
        return
    name = argv[i].value
    aliases = {**reading.git_aliases}
    for key, word in config:
        if key.startswith("alias.") and word is not None:
            aliases[key[len("alias.") :]] = (word, layer)
    if name is None:
        if aliases or config:
            unclear_arguments(reading, argv, "a git alias")
        return
    alias = aliases.get(name.lower())
    # git ignores an alias that hides one of its commands (git.c: a builtin runs first)
    builtin = name in ("push", "send-pack", "config", *GIT_RUNNERS, *OPTION_COMMANDS)
    if alias is not None and not builtin and f"git {name.lower()}" not in reading.expanding:
        _git_alias(reading, argv, i, alias, env, stdin, layer)
        return
    if name != "config":
        option_commands(reading, argv, name, argv[i + 1 :], layer)
    if name in ("push", "send-pack"):
        reading.push_read = True
        if name == "push" and _config_from_files(reading, argv, config, env):
            return
        options = [*reading.git_push_options] if name == "push" else []
        for key, word in config:
            if key == "push.pushoption" and name == "push":
                options = [] if word is not None and word.value == "" else [*options, word]
        if name == "push":
            moved = _push_moved(argv[1:i], config, env)
            recurse = next((w for k, w in config if k == "push.recursesubmodules"), None)
            _git_push(reading, argv, argv[i + 1 :], options, layer, moved, recurse)
        else:
            _git_send_pack(reading, argv, argv[i + 1 :])
    elif name == "config":
        _git_config(reading, argv, argv[i + 1 :], layer)
    elif name in GIT_RUNNERS:
        GIT_RUNNERS[name](reading, argv, argv[i + 1 :], env, layer)


# What tells git to read its configuration from another file: a push's options come from it.
_CONFIG_FILE_VARIABLES = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG", "HOME",
                          "XDG_CONFIG_HOME")  # fmt: skip


def _config_from_files(
    reading: Reading, argv: list[Word], config: list[tuple[str, Word | None]], env: dict[str, Word]
) -> bool:
    """A push told to read its configuration from another file (include.path, includeIf, or a
    variable that moves the global or system file) may take push.pushOption from it, which the
    hook does not read: it blocks (True)."""
    named = [k for k, _ in config if k == "include.path" or k.startswith("includeif.")]
    named += [v for v in _CONFIG_FILE_VARIABLES if v in env]
    if not named:
        return False
    reading.unclear(
        f"{spelled(argv)}: git reads its configuration from another file here ({named[0]}), "
        "whose push.pushOption could arm auto-merge, and the hook does not read it; pass the "
        "options to the push itself: git push -o ... <remote> <sha>:<branch>"
    )
    return True


def _push_moved(
    global_options: list[Word], config: list[tuple[str, Word | None]], env: dict[str, Word]
) -> tuple[str, bool]:
    """What makes a push go elsewhere than its words say, and whether it moves only a remote's
    name (the repository the name is looked up in) or any URL too: ("", False) for nothing."""
    for key, _ in config:
        if key.startswith("url.") and key.endswith(("insteadof", "pushinsteadof")):
            return f"the setting {key}, which rewrites the URL it pushes to", True
        if key.startswith("remote.") and key.endswith((".url", ".pushurl")):
            return f"the setting {key}", False
    for word in global_options:
        first = word.parts[0] if word.parts else ""  # --work-tree=$PWD: its literal start
        option = (word.value or (first if isinstance(first, str) else "")).partition("=")[0]
        if option in ("-C", "--git-dir", "--work-tree"):
            return f"{option}, which moves the repository", False
    for name in ("GIT_DIR", "GIT_WORK_TREE"):
        if name in env:
            return f"{name}, which moves the repository", False
    return "", False


def _git_send_pack(reading: Reading, argv: list[Word], args: list[Word]) -> None:
    """``git send-pack --push-option=<option>``: a push like git push's, by the plumbing
    command (builtin/send-pack.c), which the hook does not attribute: blocks when an option
    arms auto-merge or cannot be read."""
    options = [text for _, text in option_values(args, "", ("push-option",))]
    options += [None for w in args if w.value is None]  # could be --push-option=...
    if any(o is None or arms_auto_merge(o) for o in options):
        reading.unclear(
            f"{spelled(argv)}: git send-pack with a push option that arms auto-merge (or one "
            "the hook cannot read); push with git push <remote> <sha>:<branch> -o ... instead"
        )


def _git_alias(
    reading: Reading,
    argv: list[Word],
    at: int,
    alias: GitAlias,
    env: dict[str, Word],
    stdin: Stdin | None,
    layer: Layer,
) -> None:
    """A git alias: ``!TEXT`` runs in a shell with the arguments appended; anything else is the
    git command it names (git's Documentation/config/alias.adoc)."""
    word, where = alias
    name = (argv[at].value or "").lower()
    if word.value is None:
        reading.unclear(f"{spelled(argv)}: runs a git alias built from variables")
        return
    if word.span:
        where.consumed.add(word.span)
    layer.consume(argv[: at + 1])
    text, args = word.value, argv[at + 1 :]
    reading.expanding.add(f"git {name}")
    try:
        if text.startswith("!"):
            quoted = [shlex.quote(w.value) if w.value is not None else '"$@"' for w in args]
            reading.read(" ".join([text[1:], *quoted]), layer.depth + 1)
            return
        try:
            words = shlex.split(text)
        except ValueError:
            return  # git: bad alias
        expanded = [argv[0], *(literal_word(w) for w in words), *args]
        read_git(reading, expanded, env, layer, stdin, False)
    finally:
        reading.expanding.discard(f"git {name}")


def _git_config(reading: Reading, argv: list[Word], args: list[Word], layer: Layer) -> None:
    """``git config [scope] NAME VALUE`` and ``git config set [scope] NAME VALUE``: git stops
    at the first word that is not an option (builtin/config.c, PARSE_OPT_STOP_AT_NON_OPTION),
    so a value may start with ``-``. A setting of GIT_SETTINGS stays in the configuration file
    for every later git command, which the hook reads without this one."""
    options, operands, _ = getopt(args, GIT_CONFIG_OPTS)
    names = {name for name, _ in options}
    if operands and operands[0].value == "set":
        set_options, operands, _ = getopt(operands[1:], GIT_CONFIG_OPTS)
        names |= {name for name, _ in set_options}
    elif operands and operands[0].value in ("get", "list", "unset", "rename-section",
                                             "remove-section", "edit"):  # fmt: skip
        return
    if names & {"unset", "unset-all", "get", "get-all", "get-regexp", "list", "l", "e",
                "edit", "remove-section", "rename-section"}:  # fmt: skip
        return
    if len(operands) < 2:
        return
    key, value = operands[0].value, operands[1]
    if key is None:
        unclear_arguments(reading, argv, "an alias or push.pushOption")
        return
    key = key.lower()
    setting = GIT_SETTINGS.get(key) or GIT_SETTINGS.get(key.partition(".")[0] + ".*")
    if setting is not None:
        setting(reading, argv, key, value, layer)


def _alias_setting(reading: Reading, argv: list[Word], key: str, value: Word, layer: Layer) -> None:
    """``alias.NAME``: remembered for the git commands after it in this command. git keeps it
    for later commands too, where ``git NAME`` is read without this definition, and only bash
    decides what a ``!`` alias runs: so the definition blocks when a later ``git NAME``, read
    now, would merge, arm auto-merge, or could not be read."""
    name = key[len("alias.") :]
    reading.git_aliases[name] = (value, layer)
    words = spelled(argv)
    text = value.value
    if text is not None and AUTO_MERGE_TEXT.search(text):
        reading.unclear(
            f"{words}: defines a git alias that pushes with an auto-merge option, kept for "
            "later commands the hook does not read together with this one"
        )
        return
    if text is None:
        reading.unclear(
            f"{words}: defines the git alias {name} with text built from variables or "
            "substitutions, kept for later commands the hook does not read together with "
            "this one; spell the alias's text"
        )
        return
    if text.startswith("!"):
        runs = text[1:]  # git runs it in a shell (run_command, use_shell)
    else:
        try:
            runs = "git " + shlex.join(shlex.split(text))
        except ValueError:
            return  # git refuses such an alias when it is used
    later = reading.read_alone(runs, layer.depth + 1)
    runs_merge = [m.words for m in later.merges] + [p.words for p in later.pushes]
    if runs_merge:
        reading.unclear(
            f"{words}: defines the git alias {name}, which runs {short(runs_merge[0])} when a "
            f"later command says `git {name}`; git keeps the alias, and the hook reads that "
            "command without this definition. Merge with glab mr merge <iid> -R <project> "
            "--sha <approved head> instead"
        )
    elif later.problems():
        reading.unclear(
            f"{words}: defines the git alias {name}, which a later command runs as "
            f"`git {name}`, where the hook reads it without this definition, and the hook "
            f"cannot tell what it runs: {short(later.problems()[0])}"
        )


def _push_option_setting(
    reading: Reading, argv: list[Word], key: str, value: Word, layer: Layer
) -> None:
    """``push.pushOption``: every later push sends it, and an auto-merge option arms
    auto-merge for pushes the hook does not read together with this command."""
    if value.value is None or AUTO_MERGE_TEXT.search(value.value):
        reading.unclear(
            f"{spelled(argv)}: sets push.pushOption, which arms auto-merge on every later push "
            "the hook does not read together with this command; pass the option to the one "
            "push: git push -o ... <remote> <sha>:<branch>"
        )
    reading.git_push_options.append(value)


# The git settings that change what a later git command runs, by name (``section.*`` for any
# name in the section), each with the reader of a value ``git config`` sets.
def _push_place_setting(
    reading: Reading, argv: list[Word], key: str, value: Word, layer: Layer
) -> None:
    """``url.*.insteadOf``/``pushInsteadOf``, ``remote.*.url``/``pushurl``, ``include.path``
    and ``includeIf.*``: they move where a later push goes, or what it reads its options from,
    where the hook reads that push without them: blocks when the command names an auto-merge
    option."""
    moves = key.startswith(("include", "url.")) or key.endswith((".url", ".pushurl"))
    if moves and AUTO_MERGE_TEXT.search(reading.text):
        reading.unclear(
            f"{spelled(argv)}: sets {key}, which changes where a later push goes or what it "
            "reads, in a command that names an auto-merge option; pass the options and the URL "
            "to the push itself: git push -o ... <url> <sha>:refs/heads/<branch>"
        )


GIT_SETTINGS: dict[str, Callable[[Reading, list[Word], str, Word, Layer], None]] = {
    "alias.*": _alias_setting,
    "push.pushoption": _push_option_setting,
    "url.*": _push_place_setting,
    "remote.*": _push_place_setting,
    "include.*": _push_place_setting,
    "includeif.*": _push_place_setting,
}


def _git_push(
    reading: Reading,
    argv: list[Word],
    args: list[Word],
    config: list[Word | None],
    layer: Layer,
    moved: tuple[str, bool] = ("", False),
    recurse: Word | None = None,
) -> None:
    """``git push`` with push options that arm auto-merge (``merge_request.auto_merge``,
    ``merge_request.merge_when_pipeline_succeeds``, namespace ``mr`` too): GitLab merges the
    pushed commit (lib/gitlab/push_options.rb, push_options_handler_service.rb)."""
    words = spelled(argv)
    options, operands, _ = getopt(args, GIT_PUSH_OPTS)
    given: list[Word | None] = []
    for name, v in options:
        if name == "no-push-option":
            given = []  # it empties the list given so far (git-push(1))
        elif name in ("o", "push-option"):
            given.append(v)
    pushed = given or config  # push.pushOption counts only without -o (git-push(1))
    hidden = any(w.value is None and w.parts[:1] == (DYNAMIC,) for w in args)
    if hidden and AUTO_MERGE_TEXT.search(reading.text):
        reading.unclear(
            f"{words}: a git push word built from variables could be the push option this "
            "command spells elsewhere (it arms auto-merge); spell the push out"
        )
        return
    if any(o is None or o.value is None for o in pushed):
        reading.unclear(f"{words}: a push option built from variables or substitutions")
        return
    values = [o.value or "" for o in pushed if o is not None]
    if not any(arms_auto_merge(v) for v in values):
        return
    reading.armed_push_read = True
    target, creates = None, False
    for text in values:
        namespace, key, value = push_option(text)
        if namespace == "merge_request" and key == "target_project":
            target = value.strip() or None
        creates = creates or (namespace == "merge_request" and key == "create")
    # An operand names the repository even with --repo (builtin/push.c: repo = argv[0])
    remote = operands[0] if operands else next((v for name, v in options if name == "repo"), None)
    refspecs = operands[1:]

    def found(sha: str | None, branch: str | None, problem: str = "") -> PushFound:
        return PushFound(
            words,
            remote.value if remote is not None else None,
            sha,
            branch,
            target,
            creates,
            problem=problem,
        )

    if {name for name, _ in options} & {"all", "mirror", "tags", "branches"}:
        reading.found_push(found(None, None, "pushes several refs at once with auto-merge "
                                 "armed; push one: git push <remote> <sha>:<branch>"))  # fmt: skip
        return
    # --recurse-submodules=on-demand|only pushes each submodule first, with the same options,
    # to the submodule's own project (submodule.c push_submodule): a push the hook cannot see
    recursing = [v for name, v in options if name == "recurse-submodules"] or [recurse]
    last = recursing[-1]
    if last is not None and (last.value is None or last.value.lower() not in ("no", "check")):
        reading.found_push(found(None, None, "pushes submodules too (--recurse-submodules), "
                                 "each with these options to its own project; push the "
                                 "superproject alone"))  # fmt: skip
        return
    why, any_url = moved
    is_url = (
        remote is not None
        and remote.value is not None
        and (
            "://" in remote.value
            or "@" in remote.value.split("/", 1)[0]
            or remote.value[:1] in "/."
        )
    )
    if why and (any_url or not is_url):
        reading.found_push(found(None, None, f"the hook cannot tell where this push goes: {why}"))
        return
    if remote is None or remote.value is None or not refspecs:
        reading.found_push(
            found(
                None,
                None,
                "the hook cannot tell which commit this push makes the head it arms "
                "auto-merge at (git picks the remote and branch when it runs); push the "
                "reviewed commit by its SHA: git push <remote> <sha>:refs/heads/<branch> "
                "-o merge_request.auto_merge",
            )
        )
        return
    for refspec in refspecs:
        spec = refspec.value
        if spec is None:
            reading.found_push(found(None, None, "a refspec built from variables"))
            continue
        source, colon, destination = spec.removeprefix("+").partition(":")
        if colon and not source and not destination:
            reading.found_push(found(None, None, "`:` pushes every matching branch with "
                                     "auto-merge armed; push one: git push <remote> "
                                     "<sha>:<branch>"))  # fmt: skip
            continue
        if not source:
            continue  # `:branch` deletes the branch
        destination = destination if colon else source
        if destination.startswith("refs/") and not destination.startswith("refs/heads/"):
            continue  # a tag or another ref: no merge request follows it
        if destination.startswith("heads/"):
            # git matches an unqualified heads/x against refs/heads/x and refs/heads/heads/x:
            # which branch it is depends on the remote
            reading.found_push(found(None, None, f"pushes to {destination}, which "
                                     "git resolves against the remote's refs when it runs; "
                                     "push to refs/heads/<branch>"))  # fmt: skip
            continue
        branch = destination.removeprefix("refs/heads/")
        sha = source.lower() if COMMIT_SHA.fullmatch(source.lower()) else None
        problem = (
            ""
            if sha
            else (
                f"pushes {source}, which git resolves to a commit only when the command runs; "
                f"push the reviewed commit by its SHA: git push <remote> <sha>:refs/heads/{branch}"
            )
        )
        reading.found_push(found(sha, branch, problem))
