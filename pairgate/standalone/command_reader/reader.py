"""The command reader: bash parsed with tree-sitter-bash, read the way bash would run it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pairgate.standalone.command_reader.glab import (
    _API_FLAGS,
    _MERGE_FLAGS,
    _attribute,
    _attribute_endpoint,
    _cobra,
    _GlabCall,
    _host_readings,
    _is_merge_word,
    _merge_endpoint,
)
from pairgate.standalone.command_reader.words import (
    _DYNAMIC_STDIN,
    _GLAB_COMMANDS,
    _MAX_DEPTH,
    _OPAQUE,
    _SHELLS,
    _WORDISH,
    DYNAMIC,
    MergeFound,
    _ansi_c,
    _literal_word,
    _mentions_merge,
    _Stdin,
    _Word,
    _word,
)
from pairgate.standalone.command_reader.wrappers import _env_split, _unwrap

# --- the reader -------------------------------------------------------------------------------


@dataclass
class _Layer:
    """One text the reader parses: the command itself, or a string a shell would run."""

    src: bytes
    depth: int
    consumed: set[tuple[int, int]] = field(default_factory=set)


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_PARSER: Any = None


# Where a backslash-newline is text, not a line continuation: single quotes, $'...', comments and
# heredoc bodies (a shell that reads a body joins its lines itself, and is read as one).
_LITERAL_NODES = frozenset({"raw_string", "ansi_c_string", "comment", "heredoc_body"})


def _join_continued_lines(src: bytes, root: Any) -> bytes:
    """``src`` without its line continuations. tree-sitter-bash reads ``gl\\<newline>ab`` as
    two words; bash removes the backslash-newline first and reads one word, ``glab``."""
    literal: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in _LITERAL_NODES:
            literal.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    literal.sort()
    out, i, k = bytearray(), 0, 0
    while i < len(src):
        while k < len(literal) and literal[k][1] <= i:
            k += 1
        if k < len(literal) and literal[k][0] <= i:
            out += src[i : literal[k][1]]
            i = literal[k][1]
            continue
        if src[i : i + 2] == b"\\\n":
            i += 2
        elif src[i : i + 1] == b"\\":
            out += src[i : i + 2]  # an escaped character, a backslash included
            i += 2
        else:
            out += src[i : i + 1]
            i += 1
    return bytes(out)


def _parse(src: bytes) -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER.parse(src)


class _Reader:
    def __init__(self) -> None:
        self.merges: list[MergeFound] = []
        self.unknown: list[str] = []
        self.mentions: list[str] = []
        self.aliases: dict[str, str] = {}  # every alias the command defines, wherever
        self.expanding: set[str] = set()  # bash never expands an alias inside its own expansion

    # layers

    def read(self, text: str, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            self.unknown.append(f"{_short(text)}: shells nested too deep to read")
            return
        src = text.encode("utf-8", "surrogatepass")
        tree = _parse(src)
        if b"\\\n" in src:  # bash joins continued lines before it splits words; so does the reader
            joined = _join_continued_lines(src, tree.root_node)
            if joined != src:
                src, tree = joined, _parse(joined)
        layer = _Layer(src, depth)
        if b"alias" in src:  # a loop can run a use before the definition: register them first
            self._find_aliases(tree.root_node, layer)
        if tree.root_node.has_error:
            self.unknown.append(f"{_short(text)}: bash would not parse this cleanly")
        self._visit(tree.root_node, layer)
        self._check_mentions(layer, tree.root_node)

    def _find_aliases(self, node: Any, layer: _Layer) -> None:
        if node.type == "command":
            name = node.child_by_field_name("name")
            if name is not None and _word(name, layer.src).value == "alias":
                args = [_word(a, layer.src) for a in node.children_by_field_name("argument")]
                self._alias([_word(name, layer.src), *args])
        for child in node.children:
            self._find_aliases(child, layer)

    def _alias(self, argv: list[_Word]) -> None:
        """``alias name=text``: remember it; one built from expansions cannot be read."""
        for word in argv[1:]:
            if word.value is None:
                self.unknown.append(
                    f"{_short(' '.join(w.raw for w in argv))}: an alias built from variables "
                    "or substitutions, which the hook cannot read"
                )
            elif "=" in word.value and not word.value.startswith("-"):
                name, _, text = word.value.partition("=")
                self.aliases[name] = text

    def _expand_alias(self, argv: list[_Word], layer: _Layer) -> None:
        """A command word that names an alias is read as its expansion too (bash expands the
        first word, and the next one after an alias ending in a blank; reading both the word
        and its expansion, wherever it stands, is the safe side of that rule)."""
        name = argv[0].raw
        text = self.aliases.get(name)
        if text is None or name in self.expanding or argv[0].value != name:
            return  # not an alias, or quoted (a quoted word is never expanded)
        self.expanding.add(name)
        try:
            self.read(" ".join([text, *(w.raw for w in argv[1:])]), layer.depth + 1)
        finally:
            self.expanding.discard(name)

    def _check_mentions(self, layer: _Layer, root: Any) -> None:
        """Text that names a glab merge, once the words read as glab's own and the text re-read
        as a script are taken out: the raw text (quotes and all), and the same words unquoted."""
        masked = bytearray(layer.src)
        for start, end in layer.consumed:
            masked[start:end] = b" " * (end - start)
        raw = masked.decode("utf-8", "replace")
        unquoted = " ".join(self._free_words(root, layer))
        for text in (raw, unquoted):
            if _mentions_merge(text):
                self.mentions.append(_short(text))
                return

    def _free_words(self, node: Any, layer: _Layer) -> Iterator[str]:
        if (node.start_byte, node.end_byte) in layer.consumed:
            return
        if node.type in _WORDISH:
            yield _word(node, layer.src).loose
        elif node.type in ("heredoc_body", "comment"):
            text = bytearray(layer.src[node.start_byte : node.end_byte])
            for child in node.children:  # its substitutions are read below, as commands
                start, end = child.start_byte - node.start_byte, child.end_byte - node.start_byte
                text[start:end] = b" " * (end - start)
            yield text.decode("utf-8", "replace")
        for child in node.children:  # substitutions inside words are words too
            yield from self._free_words(child, layer)

    # the tree

    def _visit(self, node: Any, layer: _Layer, stdin: _Stdin | None = None) -> None:
        kind = node.type
        if kind == "command":
            self._command(node, layer, stdin)
        elif kind == "redirected_statement":
            self._redirected(node, layer, stdin)
        elif kind == "pipeline":
            self._pipeline(node.children, layer, stdin)
        else:
            for child in node.children:
                self._visit(child, layer)

    def _pipeline(self, children: list[Any], layer: _Layer, stdin: _Stdin | None) -> None:
        for child in children:
            if child.type in ("|", "|&"):
                continue
            self._visit(child, layer, stdin)
            stdin = self._output_of(child, layer, stdin)

    def _redirected(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> None:
        body = node.child_by_field_name("body")
        tails: list[Any] = []
        for child in node.children:
            if body is not None and child.id == body.id:
                continue
            if child.type == "heredoc_redirect":
                stdin = self._heredoc(child, layer)
                for sub in child.children:
                    if sub.type == "pipeline":
                        tails.append(sub)
                    elif sub.type == "heredoc_body":
                        for expansion in sub.children:
                            self._visit(expansion, layer)
                    elif sub.type not in ("<<", "<<-", "heredoc_start", "heredoc_end"):
                        self._visit(sub, layer)
            elif child.type == "herestring_redirect":
                stdin = self._herestring(child, layer)
            elif child.type == "file_redirect":
                if any(c.type in ("<", "<&") for c in child.children):
                    stdin = _OPAQUE
                self._visit(child, layer)
            else:
                self._visit(child, layer)
        if body is not None:
            self._visit(body, layer, stdin)
            out = self._output_of(body, layer, stdin)
        else:
            out = _OPAQUE
        for tail in tails:
            self._pipeline(tail.children, layer, out)

    def _heredoc(self, node: Any, layer: _Layer) -> _Stdin:
        """A heredoc's text as the shell it feeds would read it. An unquoted body's expansions
        stay in the text: re-read, they are the expansions they are (its substitutions run in
        the outer shell and are read there too)."""
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return _Stdin("")
        text = layer.src[body.start_byte : body.end_byte].decode("utf-8", "replace")
        if any(c.type == "<<-" for c in node.children):
            text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
        return _Stdin(text, spans=((body.start_byte, body.end_byte),))

    def _herestring(self, node: Any, layer: _Layer) -> _Stdin:
        target = next((c for c in node.children if c.type != "<<<"), None)
        if target is None:
            return _Stdin("")
        self._visit(target, layer)
        word = _word(target, layer.src)
        if word.value is None:
            return _Stdin(None, dynamic=True)
        return _Stdin(word.value + "\n", spans=(word.span,) if word.span else ())

    def _output_of(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> _Stdin:
        """What a pipeline stage writes, when the command line spells it: echo, printf, cat."""
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            return self._output_of(body, layer, stdin) if body is not None else _OPAQUE
        if node.type != "command":
            return _OPAQUE
        name = node.child_by_field_name("name")
        if name is None:
            return _OPAQUE
        args = [_word(a, layer.src) for a in node.children_by_field_name("argument")]
        program = _word(name, layer.src).tail
        spans = tuple(a.span for a in args if a.span)
        if program == "echo":
            escapes = False
            while args and args[0].value in ("-n", "-e", "-E", "-ne", "-en"):
                escapes = escapes or "e" in (args[0].value or "")
                args = args[1:]
            values = [a.value for a in args]
            if any(v is None for v in values) or (escapes and any("\\" in v for v in values if v)):
                return _DYNAMIC_STDIN
            return _Stdin(" ".join(v for v in values if v is not None) + "\n", spans=spans)
        if program == "printf":
            values = [a.value for a in args]
            if len(values) != 1 or values[0] is None or "%" in values[0]:
                return _DYNAMIC_STDIN
            return _Stdin(_ansi_c(values[0]), spans=spans)
        if program == "cat" and all(a.value == "-" for a in args):
            return stdin or _OPAQUE
        return _OPAQUE

    # one simple command

    def _command(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> None:
        env: dict[str, _Word] = {}
        argv: list[_Word] = []
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if child.type == "variable_assignment":
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                if name is not None:
                    env[name.text.decode()] = (
                        _word(value, layer.src) if value is not None else _literal_word("")
                    )
                self._visit(child, layer)
            elif field_name in ("name", "argument"):
                argv.append(_word(child, layer.src))
                self._visit(child, layer)
            elif child.type == "herestring_redirect":
                stdin = self._herestring(child, layer)
            else:
                self._visit(child, layer)
        if argv:
            self._argv(argv, env, stdin, layer, open_args=False)

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
            if program in ("su", "runuser", "script"):
                self._dash_c(argv, layer)
                return
            if program == "glab":
                self._glab(argv, env, layer, open_args)
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

    def _shell(
        self, argv: list[_Word], stdin: _Stdin | None, layer: _Layer, open_args: bool
    ) -> None:
        """sh/bash/zsh: re-read what ``-c`` runs, or a script fed on standard input."""
        i, command_mode = 1, False
        while i < len(argv):
            value = argv[i].value
            if value is None and command_mode:
                break  # the text -c runs, read below
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
        if operands or stdin is None:
            return  # a script file, or the session's own (empty) input: not read
        if stdin.text is not None:
            layer.consumed.update(stdin.spans)
            self.read(stdin.text, layer.depth + 1)
        elif stdin.dynamic:
            self.unknown.append(
                f"{_short(' '.join(w.raw for w in argv))}: a shell reads commands built from "
                "variables or substitutions"
            )

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

    def _dash_c(self, argv: list[_Word], layer: _Layer) -> None:
        for i, word in enumerate(argv[1:], start=1):
            if word.value in ("-c", "--command") and i + 1 < len(argv):
                self._reread_words(argv, [argv[i + 1]], layer, f"{argv[0].raw} -c")
            elif (word.value or "").startswith("--command="):
                text = (word.value or "")[len("--command=") :]
                self.read(text, layer.depth + 1)

    def _other(
        self, argv: list[_Word], env: dict[str, _Word], stdin: _Stdin | None, layer: _Layer
    ) -> None:
        """Any other program. It may still run one of its arguments (find -exec, flock, ssh,
        parallel, a renamed copy of glab): read from any argument that names glab, a shell or
        eval, and read `<program> mr merge ...` and `<program> api ...` as glab would."""
        values = [w.value for w in argv]
        j = 1  # glab's own -R may come before its subcommand: `g -R group/p mr merge 12`
        while j < len(values) and (values[j] or "").startswith("-"):
            j += 2 if values[j] in ("-R", "--repo") else 1
        if values[j : j + 1] == ["mr"] and j + 1 < len(values) and _is_merge_word(values[j + 1]):
            self._glab(argv, env, layer, open_args=False)
            return
        for i in range(1, len(argv)):
            tail = argv[i].tail
            if tail in _SHELLS or tail in ("glab", "eval"):
                self._argv(argv[i:], env, None, layer, open_args=False)

    # glab itself

    def _glab(
        self, argv: list[_Word], env: dict[str, _Word], layer: _Layer, open_args: bool
    ) -> None:
        call = _GlabCall(_short(" ".join(w.raw for w in argv)), [argv[0]], None, env, open_args)
        args = argv[1:]
        path: list[str] = []
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
                call.repo = _literal_word(value[2:].removeprefix("="))  # -Racme/app, -R=acme/app
                call.structural.append(args[i])
            elif value in ("-h", "--help", "-v", "--version") and not path:
                return  # glab prints help or its version
            elif not value.startswith("-"):
                call.structural.append(args[i])
                path.append(value)
                if len(path) == 2 or path[0] != "mr":
                    break
            i += 1
        rest = args[i + 1 :]
        if not path or (path == ["mr"]):
            if open_args:
                self.unknown.append(f"{call.words}: glab's command comes from xargs' input")
            return
        top = path[0]
        if top == "api":
            self._glab_api(call, rest, layer)
        elif top not in _GLAB_COMMANDS:
            self.unknown.append(
                f"{call.words}: `glab {top}` is not a glab command the hook knows; an alias "
                "could expand to a merge"
            )
        elif top == "mr" and _is_merge_word(path[1]):
            self._glab_merge(call, rest, layer)
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
        for reading in _host_readings(project):
            self.merges.append(MergeFound(call.words, reading, iid, problem))

    def _glab_api(self, call: _GlabCall, args: list[_Word], layer: _Layer) -> None:
        """``glab api <endpoint> [flags]``: a merge when it is not a GET or HEAD to a merge
        request's merge endpoint (or a merge train), or a GraphQL mergeRequestAccept."""
        flags = _cobra(args, _API_FLAGS)
        if flags.help:
            return
        endpoint = flags.positionals[0][1] if flags.positionals else None
        for name in ("--method", "--repo"):
            call.structural += flags.spelled.get(name, [])
        if endpoint is not None:
            call.structural.append(endpoint)
        fields = [f or _literal_word("") for f in flags.values.get("--raw-field", [])]
        for f in flags.values.get("--field", []):  # -F key=@file reads a file
            if f is None or (f.value or "").partition("=")[2].startswith("@"):
                f = _Word((DYNAMIC,), None, "-F")
            fields.append(f)
        if "--input" in flags.values:
            fields.append(_Word((DYNAMIC,), None, "--input"))
        if endpoint is None:
            if call.open_args:
                self.unknown.append(f"{call.words}: the endpoint comes from xargs' input")
            return
        target = endpoint.value
        if target is not None and target.strip("/").lower() == "graphql":
            self._consume(layer, call.structural)
            self._graphql(call, [f.value for f in fields])
            return
        method = flags.last("--method", None)
        if method is None:
            verb: str | None = "POST" if fields else "GET"  # glab's default
        else:
            verb = method.value.upper() if method.value is not None else None
        if verb is None:
            self.unknown.append(f"{call.words}: the HTTP method is built from variables")
            return
        if verb in ("GET", "HEAD"):
            self._consume(layer, call.structural)
            return  # a read merges nothing
        if target is None:
            self.unknown.append(
                f"{call.words}: a {verb} to an endpoint built from variables or substitutions"
            )
            return
        self._consume(layer, call.structural)
        found = _merge_endpoint(target)
        if found is not None:
            repo = flags.last("--repo", call.repo)
            project, iid, problem = _attribute_endpoint(*found, repo, call.env)
            readings = _host_readings(project) if project != found[0] else (project,)
            for reading in readings:  # only a project -R names may start with a host
                self.merges.append(MergeFound(call.words, reading, iid, problem))

    def _graphql(self, call: _GlabCall, bodies: list[str | None]) -> None:
        if any(b is None for b in bodies):
            self.unknown.append(
                f"{call.words}: a GraphQL request whose body the hook cannot read (a file, "
                "standard input or an expansion)"
            )
        elif any("mergerequestaccept" in (b or "").lower() for b in bodies):
            self.merges.append(
                MergeFound(
                    call.words,
                    None,
                    None,
                    "a GraphQL mergeRequestAccept cannot be attributed to one project and one "
                    "merge request by this hook; merge with glab mr merge <iid> -R <project>",
                )
            )
