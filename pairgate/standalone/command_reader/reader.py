"""The command reader: bash parsed with tree-sitter-bash, read the way bash would run it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pairgate.standalone.command_reader.reader_base import _Layer, _short
from pairgate.standalone.command_reader.reader_git import _GitReading
from pairgate.standalone.command_reader.reader_glab import _GlabReading
from pairgate.standalone.command_reader.reader_programs import _ProgramReading
from pairgate.standalone.command_reader.words import (
    _DYNAMIC_STDIN,
    _MAX_DEPTH,
    _OPAQUE,
    _TREE_BUDGET,
    _WORDISH,
    MergeFound,
    PushFound,
    _echo_escapes,
    _file_key,
    _literal_word,
    _mentions_merge,
    _printf,
    _Stdin,
    _Word,
    _word,
)
from pairgate.standalone.command_reader.wrappers import _AUTO_MERGE_TEXT

# --- the reader -------------------------------------------------------------------------------


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


def _uncovered(src: bytes, root: Any) -> list[tuple[int, bytes]]:
    """Text no node of the tree covers, other than blanks: bash reads it, so the reader must
    too. tree-sitter-bash 0.25 drops a lone ``-`` word before a heredoc (``make -f - <<EOF``)."""
    spans = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count == 0 or node.type in _LITERAL_NODES:
            spans.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    spans.sort()
    gaps, pos = [], 0
    for start, end in [*spans, (len(src), len(src))]:
        if start > pos and src[pos:start].strip():
            gaps.append((pos, src[pos:start]))
        pos = max(pos, end)
    return gaps


def _parse(src: bytes) -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER.parse(src)


class _Reader(_ProgramReading, _GlabReading, _GitReading):
    """Reads one command: the layers and the syntax tree here; what each program does with its
    arguments in the mixins (programs that run programs, glab, git)."""

    def __init__(self) -> None:
        self.merges: list[MergeFound] = []
        self.pushes: list[PushFound] = []
        self.unknown: list[str] = []
        self.mentions: list[str] = []
        self.aliases: dict[str, str] = {}  # every alias the command defines, wherever
        self.expanding: set[str] = set()  # bash never expands an alias inside its own expansion
        # glab aliases `glab alias set` defines earlier in the command: name -> (expansion or
        # None when built from expansions, whether it runs in a shell, where it is written)
        self.glab_aliases: dict[str, tuple[str | None, bool, _Layer, tuple[int, int] | None]] = {}
        self.glab_names: set[str] = set()  # names the command gives copies of glab (cp, ln)
        # git aliases and push options `git config` sets earlier in the command
        self.git_aliases: dict[str, tuple[_Word, _Layer]] = {}
        self.git_push_options: list[_Word | None] = []
        # files the command writes (path -> what it writes), and scripts it runs by a path the
        # reader has not seen written yet (read again at the end, in case a loop writes them later)
        self.files: dict[str, _Stdin] = {}
        self.unnamed_writes = False  # a write to a path bash computes
        self.script_runs: list[tuple[str | None, _Layer]] = []
        self.level = 0  # nesting of the syntax tree being walked, against _TREE_BUDGET
        self.over_budget = False
        self.simple_commands = 0
        self.text = ""  # the command as the hook received it
        self.layers: list[tuple[_Layer, Any]] = []  # every text read, for the mention check

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
        for start, gap in _uncovered(src, tree.root_node):
            if gap.strip() == b"-":  # tree-sitter-bash drops a lone `-` before a heredoc
                layer.dashes.add(start)
            else:
                self.unknown.append(f"{_short(text)}: bash would not parse this cleanly")
        self._visit(tree.root_node, layer)
        self.layers.append((layer, tree.root_node))  # its mentions are checked at the end

    def _find_aliases(self, root: Any, layer: _Layer) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "command":
                name = node.child_by_field_name("name")
                if name is not None and _word(name, layer.src).value == "alias":
                    args = [_word(a, layer.src) for a in node.children_by_field_name("argument")]
                    self._alias([_word(name, layer.src), *args])
            stack.extend(reversed(node.children))

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

    def _free_words(self, root: Any, layer: _Layer) -> Iterator[str]:
        stack = [root]  # depth first, in order, without recursion (a command may nest deeply)
        while stack:
            node = stack.pop()
            if (node.start_byte, node.end_byte) in layer.consumed:
                continue
            if node.type in _WORDISH:
                yield _word(node, layer.src).loose
            elif node.type in ("heredoc_body", "comment"):
                text = bytearray(layer.src[node.start_byte : node.end_byte])
                for child in node.children:  # its substitutions are read below, as commands
                    start = child.start_byte - node.start_byte
                    end = child.end_byte - node.start_byte
                    text[start:end] = b" " * (end - start)
                yield text.decode("utf-8", "replace")
            stack.extend(reversed(node.children))  # substitutions inside words are words too

    # the tree

    def _visit(self, node: Any, layer: _Layer, stdin: _Stdin | None = None) -> None:
        if self.level >= _TREE_BUDGET:
            if not self.over_budget:
                self.over_budget = True
                self.unknown.append(
                    f"{_short(layer.src.decode('utf-8', 'replace'))}: nested more than "
                    f"{_TREE_BUDGET} levels deep, the reader's budget; it reads no deeper"
                )
            return
        self.level += 1
        try:
            kind = node.type
            if kind == "command":
                self._command(node, layer, stdin)
            elif kind == "redirected_statement":
                self._redirected(node, layer, stdin)
            elif kind == "pipeline":
                self._pipeline(node.children, layer, stdin)
            else:
                if kind == "variable_assignment":
                    self._assignment(node, layer)
                for child in node.children:
                    self._visit(child, layer)
        finally:
            self.level -= 1

    def _pipeline(self, children: list[Any], layer: _Layer, stdin: _Stdin | None) -> None:
        for child in children:
            if child.type in ("|", "|&"):
                continue
            self._visit(child, layer, stdin)
            stdin = self._output_of(child, layer, stdin)

    def _redirected(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> None:
        body = node.child_by_field_name("body")
        tails: list[Any] = []
        writes: list[tuple[str | None, bool, bool]] = []  # (path, appends, whole output)
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
                operator = next((c.type for c in child.children if c.type[:1] in "<>&"), "")
                target = child.child_by_field_name("destination")
                path = _word(target, layer.src).value if target is not None else None
                if operator in ("<", "<&"):
                    stdin = self.files.get(_file_key(path), _OPAQUE) if path else _OPAQUE
                elif operator in (">", ">>", ">|", "&>", "&>>") or (
                    operator == ">&" and path is not None and not path.isdigit()
                ):
                    whole = child.child_by_field_name("descriptor") is None or operator[0] == "&"
                    writes.append((path, operator.endswith(">>"), whole))
                self._visit(child, layer)
            else:
                self._visit(child, layer)
        if body is not None:
            self._visit(body, layer, stdin)
            out = self._output_of(body, layer, stdin)
        else:
            out = _OPAQUE
        for path, append, whole in writes:  # what the body writes is what the file holds
            self._write_file(path, out if whole else _OPAQUE, append=append)
        for tail in tails:
            self._pipeline(tail.children, layer, out)

    def _write_file(self, path: str | None, text: _Stdin, *, append: bool = False) -> None:
        if path is None:
            self.unnamed_writes = True
            return
        key = _file_key(path)
        before = self.files.get(key)
        if append and before is not None:
            joined = None if before.text is None or text.text is None else before.text + text.text
            text = _Stdin(joined, dynamic=before.dynamic or text.dynamic)
        elif append and text.text is not None:  # appended to what the file held before
            text = _DYNAMIC_STDIN
        if text.text is None:
            text = _DYNAMIC_STDIN  # written, with content the reader cannot tell
        self.files[key] = text

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
            escapes, newline = False, True
            while args and re.fullmatch(r"-[neE]+", args[0].value or ""):
                flags = args[0].value or ""
                escapes = "e" in flags if "e" in flags or "E" in flags else escapes
                newline = newline and "n" not in flags
                args = args[1:]
            values = [a.value for a in args]
            if any(v is None for v in values):
                return _DYNAMIC_STDIN
            text = " ".join(v for v in values if v is not None)
            if escapes:
                text, stopped = _echo_escapes(text)
                newline = newline and not stopped
            return _Stdin(text + ("\n" if newline else ""), spans=spans)
        if program == "printf":
            values = [a.value for a in args]
            if values[:1] == ["--"]:
                values = values[1:]
            printed = _printf(values) if values and values[0] != "-v" else None
            if printed is None:
                return _DYNAMIC_STDIN
            return _Stdin(printed, spans=spans)
        if program == "cat" and all(a.value == "-" for a in args):
            return stdin or _OPAQUE
        if program == "cat" and all(a.value and not a.value.startswith("-") for a in args):
            parts = [self.files.get(_file_key(a.value or "")) for a in args]
            if all(p is not None and p.text is not None for p in parts):
                return _Stdin("".join(p.text or "" for p in parts if p is not None))
            return _DYNAMIC_STDIN if any(p is not None for p in parts) else _OPAQUE
        if program == "tee":
            return stdin or _OPAQUE
        return _OPAQUE

    # one simple command

    def _command(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> None:
        self.simple_commands += 1
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
                for part in child.children:  # the command's own: read with the command (git)
                    self._visit(part, layer)
            elif field_name in ("name", "argument"):
                argv.append(_word(child, layer.src))
                self._visit(child, layer)
            elif child.type == "herestring_redirect":
                stdin = self._herestring(child, layer)
            else:
                self._visit(child, layer)
        if argv and any(
            d >= node.end_byte and not layer.src[node.end_byte : d].strip() for d in layer.dashes
        ):
            argv.append(_literal_word("-"))  # the `-` the parser dropped (see _uncovered)
        if argv:
            self._argv(argv, env, stdin, layer, open_args=False)

    def _assignment(self, node: Any, layer: _Layer) -> None:
        """``NAME=value`` on its own or exported: git reads GIT_CONFIG_* from the environment,
        so one that sets auto-merge push options (or that the hook cannot read) blocks."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or not re.fullmatch(r"GIT_CONFIG\w*", name.text.decode("utf-8", "replace")):
            return
        text = _word(value, layer.src).value if value is not None else ""
        if text is None or _AUTO_MERGE_TEXT.search(text):
            self.unknown.append(
                f"{_short(layer.src[node.start_byte : node.end_byte].decode('utf-8', 'replace'))}"
                ": git configuration set through the environment for the commands after it, "
                "which may arm auto-merge on a push; pass it to the one git command instead "
                "(git -c push.pushOption=...)"
            )
