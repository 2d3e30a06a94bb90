"""The reader's git: aliases, configuration and push options."""

from __future__ import annotations

import shlex

from pairgate.standalone.command_reader.reader_base import _Layer, _ReaderBase, _short
from pairgate.standalone.command_reader.words import (
    _COMMIT_SHA,
    DYNAMIC,
    PushFound,
    _literal_word,
    _Stdin,
    _Word,
)
from pairgate.standalone.command_reader.wrappers import (
    _AUTO_MERGE_TEXT,
    _GIT_CONFIG_OPTS,
    _GIT_PUSH_OPTS,
    _arms_auto_merge,
    _getopt,
    _git_env_config,
    _git_setting,
    _push_option,
)


class _GitReading(_ReaderBase):
    """git's aliases, configuration and pushes that arm auto-merge."""

    # git: aliases, configuration, push options

    def _git(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """git's own options (``-c name=value`` and GIT_CONFIG_COUNT/KEY/VALUE set on the
        command), then its command: an alias defined by them or by ``git config`` earlier in
        the command, ``git config`` itself, or ``git push``."""
        config: list[tuple[str, _Word | None]] = []
        i = 1
        while i < len(argv):
            value = argv[i].value
            if value is None:
                break
            if value == "-c" and i + 1 < len(argv):
                config.append(_git_setting(argv[i + 1]))
                i += 2
                continue
            if value.startswith("--config-env="):
                key, _, var = value[len("--config-env=") :].partition("=")
                config.append((key.lower(), env.get(var)))
            elif value in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"):
                i += 1
            elif not value.startswith("-"):
                break
            i += 1
        config += _git_env_config(env)
        if any(key == "*" for key, _ in config):
            self._unclear(argv, "an alias or push.pushOption")
            return
        if i >= len(argv):
            return
        name = argv[i].value
        aliases = {**self.git_aliases}
        for key, word in config:
            if key.startswith("alias.") and word is not None:
                aliases[key[len("alias.") :]] = (word, layer)
        if name is None:
            if aliases or config:
                self._unclear(argv, "a git alias")
            return
        alias = aliases.get(name.lower())
        if alias is not None and f"git {name.lower()}" not in self.expanding:
            self._git_alias(argv, i, alias, env, stdin, layer)
        elif name == "push":
            options = [*self.git_push_options]
            for key, word in config:
                if key == "push.pushoption":
                    options = [] if word is not None and word.value == "" else [*options, word]
            self._git_push(argv, argv[i + 1 :], options, layer)
        elif name == "config":
            self._git_config(argv, argv[i + 1 :], layer)

    def _git_alias(
        self,
        argv: list[_Word],
        at: int,
        alias: tuple[_Word | None, _Layer],
        env: dict[str, _Word],
        stdin: _Stdin | None,
        layer: _Layer,
    ) -> None:
        """A git alias: ``!TEXT`` runs in a shell with the arguments appended; anything else is
        the git command it names (git's Documentation/config/alias.adoc)."""
        word, where = alias
        name = (argv[at].value or "").lower()
        if word is None or word.value is None:
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: runs a git alias built from variables"
            )
            return
        if word.span:
            where.consumed.add(word.span)
        self._consume(layer, argv[: at + 1])
        text, args = word.value, argv[at + 1 :]
        self.expanding.add(f"git {name}")
        try:
            if text.startswith("!"):
                quoted = [shlex.quote(w.value) if w.value is not None else '"$@"' for w in args]
                self.read(" ".join([text[1:], *quoted]), layer.depth + 1)
                return
            try:
                words = shlex.split(text)
            except ValueError:
                return  # git: bad alias
            expanded = [argv[0], *(_literal_word(w) for w in words), *args]
            self._git(expanded, env, stdin, layer)
        finally:
            self.expanding.discard(f"git {name}")

    def _git_config(self, argv: list[_Word], args: list[_Word], layer: _Layer) -> None:
        """``git config [scope] NAME VALUE`` and ``git config set NAME VALUE``: an alias is
        remembered for the git commands after it; an auto-merge push option, or an alias that
        pushes with one, stays in the repository for every later push, which the hook does not
        see together with this command, so it blocks."""
        options, operands, _ = _getopt(args, _GIT_CONFIG_OPTS)
        names = {name for name, _ in options}
        if operands and operands[0].value == "set":
            operands = operands[1:]
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
            self._unclear(argv, "an alias or push.pushOption")
            return
        key = key.lower()
        words = _short(" ".join(w.raw for w in argv))
        if key.startswith("alias."):
            if value.value is not None and _AUTO_MERGE_TEXT.search(value.value):
                self.unknown.append(
                    f"{words}: defines a git alias that pushes with an auto-merge option, kept "
                    "for later commands the hook does not read together with this one"
                )
            self.git_aliases[key[len("alias.") :]] = (value, layer)
        elif key == "push.pushoption":
            if value.value is None or _AUTO_MERGE_TEXT.search(value.value):
                self.unknown.append(
                    f"{words}: sets push.pushOption, which arms auto-merge on every later push "
                    "the hook does not read together with this command; pass the option to the "
                    "one push: git push -o ... <remote> <sha>:<branch>"
                )
            self.git_push_options.append(value)

    def _git_push(
        self, argv: list[_Word], args: list[_Word], config: list[_Word | None], layer: _Layer
    ) -> None:
        """``git push`` with push options that arm auto-merge (``merge_request.auto_merge``,
        ``merge_request.merge_when_pipeline_succeeds``, namespace ``mr`` too): GitLab merges
        the pushed commit (lib/gitlab/push_options.rb, push_options_handler_service.rb)."""
        words = _short(" ".join(w.raw for w in argv))
        options, operands, _ = _getopt(args, _GIT_PUSH_OPTS)
        given: list[_Word | None] = [v for name, v in options if name in ("o", "push-option")]
        pushed = given or config  # push.pushOption counts only without -o (git-push(1))
        hidden = any(w.value is None and w.parts[:1] == (DYNAMIC,) for w in args)
        if hidden and _AUTO_MERGE_TEXT.search(self.text):
            self.unknown.append(
                f"{words}: a git push word built from variables could be the push option this "
                "command spells elsewhere (it arms auto-merge); spell the push out"
            )
            return
        if any(o is None or o.value is None for o in pushed):
            self.unknown.append(f"{words}: a push option built from variables or substitutions")
            return
        values = [o.value or "" for o in pushed if o is not None]
        if not any(_arms_auto_merge(v) for v in values):
            return
        target, creates = None, False
        for text in values:
            namespace, key, value = _push_option(text)
            if namespace == "merge_request" and key == "target_project":
                target = value.strip() or None
            creates = creates or (namespace == "merge_request" and key == "create")
        remote = next((v for name, v in options if name == "repo"), None) or (
            operands[0] if operands else None
        )
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
            self.pushes.append(found(None, None, "pushes several refs at once with auto-merge "
                                     "armed; push one: git push <remote> <sha>:<branch>"))  # fmt: skip
            return
        if remote is None or remote.value is None or not refspecs:
            self.pushes.append(
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
                self.pushes.append(found(None, None, "a refspec built from variables"))
                continue
            source, colon, destination = spec.removeprefix("+").partition(":")
            if not source:
                continue  # `:branch` deletes the branch
            destination = destination if colon else source
            if destination.startswith("refs/") and not destination.startswith("refs/heads/"):
                continue  # a tag or another ref: no merge request follows it
            branch = destination.removeprefix("refs/heads/")
            sha = source.lower() if _COMMIT_SHA.fullmatch(source.lower()) else None
            problem = (
                ""
                if sha
                else (
                    f"pushes {source}, which git resolves to a commit only when the command runs; "
                    f"push the reviewed commit by its SHA: git push <remote> <sha>:refs/heads/{branch}"
                )
            )
            self.pushes.append(found(sha, branch, problem))
