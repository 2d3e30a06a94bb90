"""The reader's glab: glab itself, read as cobra and glab's main read it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from pairgate.standalone.command_reader.glab import (
    _ALIAS_SET_FLAGS,
    _API_FLAGS,
    _MERGE_FLAGS,
    _NOTE_FLAGS,
    _UPDATE_FLAGS,
    _api_fields,
    _api_route,
    _attribute,
    _attribute_endpoint,
    _cobra,
    _cobra_traverse,
    _GlabCall,
    _host_readings,
    _is_merge_word,
    _mr_endpoint,
)
from pairgate.standalone.command_reader.graphql import _graphql_read
from pairgate.standalone.command_reader.reader_base import _Layer, _ReaderBase, _short
from pairgate.standalone.command_reader.words import (
    _GLAB_COMMANDS,
    _GLAB_MR_COMMANDS,
    _GLAB_NOT_ALIASES,
    _GLAB_SOURCE,
    _QUICK_MERGE,
    MergeFound,
    _literal_word,
    _Word,
)


class _GlabReading(_ReaderBase):
    """glab's commands, aliases, merges, notes and api calls."""

    # glab itself, read as cobra and glab's main read it

    def _glab(
        self,
        argv: list[_Word],
        env: dict[str, _Word],
        layer: _Layer,
        open_args: bool,
        *,
        expanded: bool = False,
    ) -> None:
        call = _GlabCall(_short(" ".join(w.raw for w in argv)), [argv[0]], None, env, open_args)
        args = argv[1:]
        values = [w.value for w in args]
        top = _cobra_traverse(values)
        if top is None:
            self.unknown.append(
                f"{call.words}: a glab command word built from variables or substitutions"
            )
            return
        before = args[:top] if top >= 0 else args
        self._root_repo(call, before)
        name = values[top] if top >= 0 else None
        if name is None or name not in _GLAB_COMMANDS:
            self._glab_root(call, args, name, layer, expanded)
            return
        call.structural.append(args[top])
        rest = args[top + 1 :]
        if name == "api":
            self._glab_api(call, rest, layer)
        elif name == "mr":
            self._glab_mr(call, rest, layer)
        elif name == "alias":
            self._glab_alias(call, rest, layer)
        else:
            self._consume(layer, call.structural)

    def _root_repo(self, call: _GlabCall, words: list[_Word]) -> None:
        """glab's hidden global -R before the command word (internal/cmdutils/repo_override.go)."""
        i = 0
        while i < len(words):
            value = words[i].value or ""
            if value in ("-R", "--repo") and i + 1 < len(words):
                call.repo = words[i + 1]
                call.structural += words[i : i + 2]
                i += 2
                continue
            if value.startswith("--repo="):
                call.repo = _literal_word(value[len("--repo=") :])
                call.structural.append(words[i])
            elif value.startswith("-R") and len(value) > 2:
                call.repo = _literal_word(value[2:].removeprefix("="))  # -Racme/app, -R=acme/app
                call.structural.append(words[i])
            i += 1

    def _glab_root(
        self, call: _GlabCall, args: list[_Word], word: str | None, layer: _Layer, expanded: bool
    ) -> None:
        """No glab command: glab looks its first argument up as an alias (cmd/glab/main.go)."""
        if not args:
            return
        if expanded:
            return  # an alias expands once; what it leaves unknown is glab's usage error
        first = args[0].value or ""
        alias = self.glab_aliases.get(first)
        if alias is not None:
            self._glab_alias_use(call, alias, args[1:], layer)
        elif call.open_args:
            self.unknown.append(f"{call.words}: glab's command comes from xargs' input")
        elif first in _GLAB_NOT_ALIASES:
            self._consume(layer, call.structural)
        else:
            self.unknown.append(
                f"{call.words}: `glab {word or first}` is not a command of {_GLAB_SOURCE}, so "
                "glab looks it up as an alias, and an alias could expand to a merge; spell "
                "the glab command itself"
            )

    def _glab_mr(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        i = 0
        while i < len(args):
            value = args[i].value
            if value is None:
                self.unknown.append(
                    f"{call.words}: a glab command word built from variables or substitutions"
                )
                return
            if value in ("-R", "--repo") and i + 1 < len(args):
                call.repo = args[i + 1]
                call.structural += args[i : i + 2]
                i += 2
                continue
            if value.startswith("--repo="):
                call.repo = _literal_word(value[len("--repo=") :])
                call.structural.append(args[i])
            elif value.startswith("-R") and len(value) > 2 and not value.startswith("--"):
                call.repo = _literal_word(value[2:].removeprefix("="))
                call.structural.append(args[i])
            elif value in ("-h", "--help"):
                return  # glab prints help
            elif not value.startswith("-"):
                break
            i += 1
        else:
            if call.open_args:
                self.unknown.append(f"{call.words}: glab's command comes from xargs' input")
            return
        sub = args[i].value or ""
        call.structural.append(args[i])
        rest = args[i + 1 :]
        command = _GLAB_MR_COMMANDS.get(sub)
        if command == "merge" or (command is None and _is_merge_word(sub)):
            self._glab_merge(call, rest, layer)
        elif command in ("note", "update"):
            self._glab_note(call, rest, layer, command)
        else:
            self._consume(layer, call.structural)

    def _consume(self, layer: _Layer, words: list[_Word]) -> None:
        layer.consumed.update(w.span for w in words if w.span)

    def _glab_merge(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        """``glab mr merge|accept [<id> | <branch> | <url>] [flags]``."""
        flags = _cobra(args, _MERGE_FLAGS)
        call.structural += flags.spelled.get("--repo", [])
        self._consume(layer, call.structural)
        if flags.help:
            return  # cobra prints the help and merges nothing
        repo = flags.last("--repo", call.repo)
        project, iid, problem = _attribute(
            flags.positionals, flags.unclear, repo, call.env, call.open_args
        )
        # pflag keeps the last --sha; glab sends it only when it is not empty (mr_merge.go)
        shas: tuple[str | None, ...] = ()
        if "--sha" in flags.values:
            sha = flags.values["--sha"][-1]
            if sha is None or sha.value is None:
                shas = (None,)
            elif sha.value:
                shas = (sha.value,)
        for reading in _host_readings(project):
            self.merges.append(MergeFound(call.words, reading, iid, problem, shas))

    def _glab_note(self, call: _GlabCall, args: list[_Word], layer: _Layer, command: str) -> None:
        """``glab mr note -m TEXT`` and ``glab mr update -d TEXT``: GitLab runs the quick
        actions in a note and in a description, and ``/merge`` merges."""
        flags = _cobra(args, _NOTE_FLAGS if command == "note" else _UPDATE_FLAGS)
        call.structural += flags.spelled.get("--repo", [])
        self._consume(layer, call.structural)
        text = flags.last("--message" if command == "note" else "--description", None)
        if flags.help or text is None or text.value is None:
            return  # no text, or text from a file: see "Not covered" in the reference
        if not _QUICK_MERGE.search(text.value):
            return
        repo = flags.last("--repo", call.repo)
        project, iid, problem = _attribute(
            flags.positionals, flags.unclear, repo, call.env, call.open_args
        )
        for reading in _host_readings(project):
            self.merges.append(MergeFound(call.words, reading, iid, problem, (), "/merge"))

    def _glab_alias(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        """``glab alias set NAME EXPANSION [--shell]``: remembered, so that a use later in the
        command is read as what it expands to (internal/commands/alias/set/alias_set.go)."""
        self._consume(layer, call.structural)
        flags = _cobra(args, _ALIAS_SET_FLAGS)
        words = [w for _, w in flags.positionals]
        if flags.help or len(words) < 3 or words[0].value != "set":
            return
        if len(words) != 3:
            return  # cobra.ExactArgs(2): glab refuses it
        name, expansion = words[1].value, words[2]
        if name is None:
            self.unknown.append(f"{call.words}: a glab alias whose name is built from variables")
            return
        if name.startswith("-"):
            self.unknown.append(
                f"{call.words}: a glab alias named like a flag ({name}) would run in place of "
                "glab's own flags; the hook refuses it"
            )
            return
        if name in _GLAB_COMMANDS or name == "help":
            return  # glab refuses to shadow a command
        shell = "--shell" in flags.spelled or (expansion.value or "").startswith("!")
        self.glab_aliases[name] = (expansion.value, shell, layer, expansion.span)

    def _glab_alias_use(
        self,
        call: _GlabCall,
        alias: tuple[str | None, bool, _Layer, tuple[int, int] | None],
        args: list[_Word],
        layer: _Layer,
    ) -> None:
        """A glab alias, expanded as internal/commands/alias/expand/alias_expand.go does:
        ``!TEXT`` runs ``sh -c TEXT -- ARGS``; otherwise each ``$N`` is replaced by the Nth
        argument (the rest appended while the text has no ``$``) and the text split like a
        shell would (google/shlex), once: the expansion is not looked up again."""
        text, shell, where, span = alias
        self._consume(layer, call.structural)
        if span:
            where.consumed.add(span)
        if text is None:
            self.unknown.append(f"{call.words}: runs a glab alias built from variables")
            return
        if shell:
            self.read(text.removeprefix("!"), layer.depth + 1)
            return
        extra: list[_Word] = []
        for index, word in enumerate(args, start=1):
            if "$" not in text:
                extra.append(word)
            elif word.value is None:
                self.unknown.append(f"{call.words}: an alias argument built from variables")
                return
            else:
                text = text.replace(f"${index}", word.value)
        if re.search(r"\$\d", text):
            return  # glab: not enough arguments for alias
        try:
            words = shlex.split(text, comments=True)
        except ValueError:
            return  # glab refuses it
        argv = [call.structural[0], *(_literal_word(w) for w in words), *extra]
        self._glab(argv, call.env, layer, call.open_args, expanded=True)

    def _glab_api(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        """``glab api <endpoint> [flags]``, with the endpoint read as glab builds the URL
        (internal/commands/api/http.go): a merge, a merge train, a /merge note, or a GraphQL
        mergeRequestAccept."""
        flags = _cobra(args, _API_FLAGS)
        if flags.help:
            return
        endpoint = flags.positionals[0][1] if flags.positionals else None
        for name in ("--method", "--repo", "--hostname"):
            call.structural += flags.spelled.get(name, [])
        if endpoint is not None:
            call.structural.append(endpoint)
        fields, opaque = _api_fields(flags)
        if endpoint is None:
            if call.open_args:
                self.unknown.append(f"{call.words}: the endpoint comes from xargs' input")
            return
        target = endpoint.value
        route = _api_route(target) if target is not None else None
        if route is not None and route[0] == "graphql":
            self._consume(layer, call.structural)
            self._consume(layer, flags.spelled.get("--raw-field", []))
            self._consume(layer, flags.spelled.get("--field", []))
            self._graphql(call.words, fields, opaque)
            return
        method = flags.last("--method", None)
        if method is None:
            verb: str | None = "POST" if fields or opaque else "GET"  # glab's default
        else:
            verb = method.value.upper() if method.value is not None else None
        if verb is None:
            self.unknown.append(f"{call.words}: the HTTP method is built from variables")
            return
        if verb in ("GET", "HEAD"):
            self._consume(layer, call.structural)
            return  # a read merges nothing
        if route is None:
            self.unknown.append(
                f"{call.words}: a {verb} to an endpoint built from variables or substitutions"
            )
            return
        self._consume(layer, call.structural)
        found = _mr_endpoint(route[1]) if route[0] == "rest" else None
        if found is None:
            return
        kind, project_text, iid_text = found
        query = route[2]
        repo = flags.last("--repo", call.repo)
        project, iid, problem = _attribute_endpoint(project_text, iid_text, repo, call.env)
        shas: list[str | None] = []
        if kind in ("merge", "train"):
            what = "merge"
            shas += [fields["sha"]] if "sha" in fields else []
            shas += [v for k, v in query if k == "sha"]
        else:  # a note, a discussion, a draft note, the merge request's description
            what = "/merge"
            key = {"mr": "description", "draft_notes": "note"}.get(kind, "body")
            texts = [fields.get(key, ""), *(v for k, v in query if k == key)]
            if kind != "mr":
                sha_key = "merge_request_diff_head_sha"
                shas += [fields[sha_key]] if sha_key in fields else []
                shas += [v for k, v in query if k == sha_key]
            seen = any(t is not None and _QUICK_MERGE.search(t) for t in texts)
            unread = opaque or any(t is None for t in texts)
            if not seen and not (unread and (shas or opaque)):
                return  # no /merge it can see, and none GitLab would run (no head SHA given)
        if opaque:
            shas.append(None)
        readings = _host_readings(project) if project != project_text else (project,)
        for reading in readings:  # only a project -R names may start with a host
            self.merges.append(MergeFound(call.words, reading, iid, problem, tuple(shas), what))

    def _graphql(self, words: str, fields: Mapping[str, Any], opaque: bool) -> None:
        """A GraphQL request: each ``mergeRequestAccept`` it runs, attributed when its
        ``projectPath``, ``iid`` and ``sha`` are literal or given as variables; a ``/merge``
        quick action in any of its strings blocks."""
        if opaque or any(v is None for v in fields.values()):
            self.unknown.append(
                f"{words}: a GraphQL request whose body the hook cannot read (a file, "
                "standard input or an expansion)"
            )
            return
        query = str(fields.get("query") or "")
        variables = {k: v for k, v in fields.items() if k not in ("query", "operationName")}
        accepts, strings = _graphql_read(query, variables)
        texts = [*strings, *(v for v in variables.values() if isinstance(v, str))]
        if any(_QUICK_MERGE.search(t) for t in texts):
            self.merges.append(
                MergeFound(
                    words,
                    None,
                    None,
                    "a GraphQL request that carries a /merge quick action cannot be bound to "
                    "an approved head by this hook; merge with glab mr merge <iid> -R "
                    "<project> --sha <approved head>",
                    kind="/merge",
                )
            )
        for project, iid, sha, problem in accepts:
            shas = () if sha == "" else (sha,)
            self.merges.append(MergeFound(words, project, iid, problem, shas))
        if not accepts and "mergerequestaccept" in (query + " ".join(texts)).lower():
            self.merges.append(
                MergeFound(
                    words,
                    None,
                    None,
                    "a GraphQL mergeRequestAccept this hook cannot read as one project, one "
                    "merge request and one SHA; merge with glab mr merge <iid> -R <project> "
                    "--sha <approved head>",
                )
            )
