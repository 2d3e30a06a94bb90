"""The reader's glab: glab itself, read as cobra and glab's main read it."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from pairgate.standalone.command_reader.glab import (
    ALIAS_SET_FLAGS,
    API_FLAGS,
    MERGE_FLAGS,
    NOTE_FLAGS,
    UPDATE_FLAGS,
    GlabCall,
    api_fields,
    api_route,
    attribute,
    attribute_endpoint,
    cobra,
    cobra_traverse,
    host_readings,
    is_merge_word,
    mr_endpoint,
)
from pairgate.standalone.command_reader.graphql import graphql_read
from pairgate.standalone.command_reader.reading import GlabAlias, Layer, Reading
from pairgate.standalone.command_reader.words import (
    GLAB_COMMANDS,
    GLAB_MR_COMMANDS,
    GLAB_NOT_ALIASES,
    GLAB_SOURCE,
    QUICK_MERGE,
    MergeFound,
    Stdin,
    Word,
    literal_word,
    spelled,
)

__all__ = ["graphql", "read_glab"]


def read_glab(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    stdin: Stdin | None,
    open_args: bool,
) -> None:
    """glab, and a copy of glab under another name: read as cobra and glab's main read it."""
    _glab(reading, argv, env, layer, open_args)


def _glab(
    reading: Reading,
    argv: list[Word],
    env: dict[str, Word],
    layer: Layer,
    open_args: bool,
    *,
    expanded: bool = False,
) -> None:
    call = GlabCall(spelled(argv), [argv[0]], None, env, open_args)
    args = argv[1:]
    values = [w.value for w in args]
    top = cobra_traverse(values)
    if top is None:
        reading.unclear(f"{call.words}: a glab command word built from variables or substitutions")
        return
    before = args[:top] if top >= 0 else args
    _root_repo(reading, call, before)
    name = values[top] if top >= 0 else None
    if name is None or name not in GLAB_COMMANDS:
        _glab_root(reading, call, args, name, layer, expanded)
        return
    call.structural.append(args[top])
    rest = args[top + 1 :]
    if name == "api":
        _glab_api(reading, call, rest, layer)
    elif name == "mr":
        _glab_mr(reading, call, rest, layer)
    elif name == "alias":
        _glab_alias(reading, call, rest, layer)
    else:
        layer.consume(call.structural)


def _root_repo(reading: Reading, call: GlabCall, words: list[Word]) -> None:
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
            call.repo = literal_word(value[len("--repo=") :])
            call.structural.append(words[i])
        elif value.startswith("-R") and len(value) > 2:
            call.repo = literal_word(value[2:].removeprefix("="))  # -Racme/app, -R=acme/app
            call.structural.append(words[i])
        i += 1


def _glab_root(
    reading: Reading,
    call: GlabCall,
    args: list[Word],
    word: str | None,
    layer: Layer,
    expanded: bool,
) -> None:
    """No glab command: glab looks its first argument up as an alias (cmd/glab/main.go)."""
    if not args:
        return
    if expanded:
        return  # an alias expands once; what it leaves unknown is glab's usage error
    first = args[0].value or ""
    alias = reading.glab_aliases.get(first)
    if alias is not None:
        _glab_alias_use(reading, call, alias, args[1:], layer)
    elif call.open_args:
        reading.unclear(f"{call.words}: glab's command comes from xargs' input")
    elif first in GLAB_NOT_ALIASES:
        layer.consume(call.structural)
    else:
        reading.unclear(
            f"{call.words}: `glab {word or first}` is not a command of {GLAB_SOURCE}, so "
            "glab looks it up as an alias, and an alias could expand to a merge; spell "
            "the glab command itself"
        )


def _glab_mr(reading: Reading, call: GlabCall, args: list[Word], layer: Layer) -> None:
    i = 0
    while i < len(args):
        value = args[i].value
        if value is None:
            reading.unclear(
                f"{call.words}: a glab command word built from variables or substitutions"
            )
            return
        if value in ("-R", "--repo") and i + 1 < len(args):
            call.repo = args[i + 1]
            call.structural += args[i : i + 2]
            i += 2
            continue
        if value.startswith("--repo="):
            call.repo = literal_word(value[len("--repo=") :])
            call.structural.append(args[i])
        elif value.startswith("-R") and len(value) > 2 and not value.startswith("--"):
            call.repo = literal_word(value[2:].removeprefix("="))
            call.structural.append(args[i])
        elif value in ("-h", "--help"):
            return  # glab prints help
        elif not value.startswith("-"):
            break
        i += 1
    else:
        if call.open_args:
            reading.unclear(f"{call.words}: glab's command comes from xargs' input")
        return
    sub = args[i].value or ""
    call.structural.append(args[i])
    rest = args[i + 1 :]
    command = GLAB_MR_COMMANDS.get(sub)
    if command == "merge" or (command is None and is_merge_word(sub)):
        _glab_merge(reading, call, rest, layer)
    elif command in ("note", "update"):
        _glab_note(reading, call, rest, layer, command)
    else:
        layer.consume(call.structural)


def _glab_merge(reading: Reading, call: GlabCall, args: list[Word], layer: Layer) -> None:
    """``glab mr merge|accept [<id> | <branch> | <url>] [flags]``."""
    flags = cobra(args, MERGE_FLAGS)
    call.structural += flags.spelled.get("--repo", [])
    layer.consume(call.structural)
    if flags.help:
        return  # cobra prints the help and merges nothing
    repo = flags.last("--repo", call.repo)
    project, iid, problem = attribute(
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
    for named in host_readings(project):
        reading.found_merge(MergeFound(call.words, named, iid, problem, shas))


def _glab_note(
    reading: Reading, call: GlabCall, args: list[Word], layer: Layer, command: str
) -> None:
    """``glab mr note -m TEXT`` and ``glab mr update -d TEXT``: GitLab runs the quick
    actions in a note and in a description, and ``/merge`` merges."""
    flags = cobra(args, NOTE_FLAGS if command == "note" else UPDATE_FLAGS)
    call.structural += flags.spelled.get("--repo", [])
    layer.consume(call.structural)
    text = flags.last("--message" if command == "note" else "--description", None)
    if flags.help or text is None or text.value is None:
        return  # no text, or text from a file: see "Not covered" in the reference
    if not QUICK_MERGE.search(text.value):
        return
    repo = flags.last("--repo", call.repo)
    project, iid, problem = attribute(
        flags.positionals, flags.unclear, repo, call.env, call.open_args
    )
    for named in host_readings(project):
        reading.found_merge(MergeFound(call.words, named, iid, problem, (), "/merge"))


def _glab_alias(reading: Reading, call: GlabCall, args: list[Word], layer: Layer) -> None:
    """``glab alias set NAME EXPANSION [--shell]``: remembered, so that a use later in the
    command is read as what it expands to (internal/commands/alias/set/alias_set.go)."""
    layer.consume(call.structural)
    flags = cobra(args, ALIAS_SET_FLAGS)
    words = [w for _, w in flags.positionals]
    if flags.help or len(words) < 3 or words[0].value != "set":
        return
    if len(words) != 3:
        return  # cobra.ExactArgs(2): glab refuses it
    name, expansion = words[1].value, words[2]
    if name is None:
        reading.unclear(f"{call.words}: a glab alias whose name is built from variables")
        return
    if name.startswith("-"):
        reading.unclear(
            f"{call.words}: a glab alias named like a flag ({name}) would run in place of "
            "glab's own flags; the hook refuses it"
        )
        return
    if name in GLAB_COMMANDS or name == "help":
        return  # glab refuses to shadow a command
    shell = "--shell" in flags.spelled or (expansion.value or "").startswith("!")
    reading.glab_aliases[name] = (expansion.value, shell, layer, expansion.span)


def _glab_alias_use(
    reading: Reading,
    call: GlabCall,
    alias: GlabAlias,
    args: list[Word],
    layer: Layer,
) -> None:
    """A glab alias, expanded as internal/commands/alias/expand/alias_expand.go does:
    ``!TEXT`` runs ``sh -c TEXT -- ARGS``; otherwise each ``$N`` is replaced by the Nth
    argument (the rest appended while the text has no ``$``) and the text split like a
    shell would (google/shlex), once: the expansion is not looked up again."""
    text, shell, where, span = alias
    layer.consume(call.structural)
    if span:
        where.consumed.add(span)
    if text is None:
        reading.unclear(f"{call.words}: runs a glab alias built from variables")
        return
    if shell:
        reading.read(text.removeprefix("!"), layer.depth + 1)
        return
    extra: list[Word] = []
    for index, word in enumerate(args, start=1):
        if "$" not in text:
            extra.append(word)
        elif word.value is None:
            reading.unclear(f"{call.words}: an alias argument built from variables")
            return
        else:
            text = text.replace(f"${index}", word.value)
    if re.search(r"\$\d", text):
        return  # glab: not enough arguments for alias
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        return  # glab refuses it
    argv = [call.structural[0], *(literal_word(w) for w in words), *extra]
    _glab(reading, argv, call.env, layer, call.open_args, expanded=True)


def _glab_api(reading: Reading, call: GlabCall, args: list[Word], layer: Layer) -> None:
    """``glab api <endpoint> [flags]``, with the endpoint read as glab builds the URL
    (internal/commands/api/http.go): a merge, a merge train, a /merge note, or a GraphQL
    mergeRequestAccept."""
    flags = cobra(args, API_FLAGS)
    if flags.help:
        return
    endpoint = flags.positionals[0][1] if flags.positionals else None
    if flags.positionals and flags.positionals[0][0] in flags.unclear:
        # The glab this hook reads refuses an unknown flag; a newer one may take the word
        # after it as its value, and the endpoint is then the next word.
        reading.unclear(
            f"{call.words}: a flag this hook does not know ({GLAB_SOURCE}'s glab api has no "
            "such flag) stands before the endpoint, so it cannot tell which word glab takes as "
            "the endpoint; put the endpoint first"
        )
        return
    for name in ("--method", "--repo", "--hostname"):
        call.structural += flags.spelled.get(name, [])
    if endpoint is not None:
        call.structural.append(endpoint)
    fields, opaque = api_fields(flags)
    if endpoint is None:
        if call.open_args:
            reading.unclear(f"{call.words}: the endpoint comes from xargs' input")
        return
    target = endpoint.value
    route = api_route(target) if target is not None else None
    if route is not None and route[0] == "graphql":
        layer.consume(call.structural)
        layer.consume(flags.spelled.get("--raw-field", []))
        layer.consume(flags.spelled.get("--field", []))
        # glab groups the fields other than query and operationName into variables only for
        # the endpoint `graphql` (http.go: isGraphQL); to an absolute URL they go as they are.
        if target == "graphql":
            graphql(reading, call.words, fields, opaque)
        else:
            ungrouped_graphql(reading, call.words, fields, opaque)
        if route[2]:
            # GitLab's GraphqlController reads query, variables and operationName from the
            # URL's query string as well as the body (Rails params): the query string is read
            # as a request of its own.
            ungrouped_graphql(reading, call.words, dict(route[2]), False)
        return
    method = flags.last("--method", None)
    if method is None:
        verb: str | None = "POST" if fields or opaque else "GET"  # glab's default
    else:
        verb = method.value.upper() if method.value is not None else None
    if verb is None:
        reading.unclear(f"{call.words}: the HTTP method is built from variables")
        return
    if verb in ("GET", "HEAD"):
        layer.consume(call.structural)
        return  # a read merges nothing
    if route is None:
        reading.unclear(
            f"{call.words}: a {verb} to an endpoint built from variables or substitutions"
        )
        return
    layer.consume(call.structural)
    found = mr_endpoint(route[1]) if route[0] == "rest" else None
    if found is None:
        return
    kind, project_text, iid_text = found
    query = route[2]
    repo = flags.last("--repo", call.repo)
    project, iid, problem = attribute_endpoint(project_text, iid_text, repo, call.env)
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
        seen = any(t is not None and QUICK_MERGE.search(t) for t in texts)
        unread = opaque or any(t is None for t in texts)
        if not seen and not (unread and (shas or opaque)):
            return  # no /merge it can see, and none GitLab would run (no head SHA given)
    if opaque:
        shas.append(None)
    readings = host_readings(project) if project != project_text else (project,)
    for named in readings:  # only a project -R names may start with a host
        reading.found_merge(MergeFound(call.words, named, iid, problem, tuple(shas), what))


def ungrouped_graphql(
    reading: Reading, words: str, params: Mapping[str, str | None], opaque: bool
) -> None:
    """A GraphQL request from parameters as GitLab's GraphqlController reads them: ``query``,
    ``operationName``, and variables from ``variables`` alone (Gitlab::Graphql::Variables
    parses a JSON string until it is an object). Any other parameter is no variable; a
    ``variables[...]`` one (Rails nests it) or variables that never parse to an object block."""
    if any(k.startswith("variables[") for k in params):
        reading.unclear(f"{words}: GraphQL variables given as variables[...] parameters")
        return
    raw: Any = params.get("variables")
    for _ in range(4):
        if not isinstance(raw, str):
            break
        try:
            raw = json.loads(raw)
        except ValueError:
            break
    if raw not in (None, "") and not isinstance(raw, dict):
        reading.unclear(f"{words}: GraphQL variables the hook cannot read as an object")
        return
    fields = {k: params[k] for k in ("query", "operationName") if k in params}
    graphql(reading, words, {**fields, **(raw or {})}, opaque)


def graphql(reading: Reading, words: str, fields: Mapping[str, Any], opaque: bool) -> None:
    """A GraphQL request: each ``mergeRequestAccept`` it runs, attributed when its
    ``projectPath``, ``iid`` and ``sha`` are literal or given as variables; a ``/merge``
    quick action in any of its strings blocks."""
    if opaque or any(v is None for v in fields.values()):
        reading.unclear(
            f"{words}: a GraphQL request whose body the hook cannot read (a file, "
            "standard input or an expansion)"
        )
        return
    query = str(fields.get("query") or "")
    variables = {k: v for k, v in fields.items() if k not in ("query", "operationName")}
    accepts, strings = graphql_read(query, variables)
    texts = [*strings, *(v for v in variables.values() if isinstance(v, str))]
    if any(QUICK_MERGE.search(t) for t in texts):
        reading.found_merge(
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
        reading.found_merge(MergeFound(words, project, iid, problem, shas))
    if not accepts and "mergerequestaccept" in (query + " ".join(texts)).lower():
        reading.found_merge(
            MergeFound(
                words,
                None,
                None,
                "a GraphQL mergeRequestAccept this hook cannot read as one project, one "
                "merge request and one SHA; merge with glab mr merge <iid> -R <project> "
                "--sha <approved head>",
            )
        )
