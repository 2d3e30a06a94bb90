"""The command reader: bash parsed with tree-sitter-bash, read the way bash would run it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pairgate.standalone.command_reader.bash_tree import join_continued_lines, parse, uncovered
from pairgate.standalone.command_reader.program_table import PROGRAMS
from pairgate.standalone.command_reader.reader_glab import read_glab
from pairgate.standalone.command_reader.reader_programs import (
    dynamic_program,
    read_other,
    reread_script,
    run_written,
)
from pairgate.standalone.command_reader.reading import GitAlias, GlabAlias, Layer
from pairgate.standalone.command_reader.words import (
    DYNAMIC_STDIN,
    MAX_DEPTH,
    OPAQUE,
    TREE_BUDGET,
    WORDISH,
    CommandReading,
    MergeFound,
    PushFound,
    Stdin,
    Word,
    echo_escapes,
    file_key,
    literal_word,
    mentions_merge,
    parsed_word,
    printf,
    short,
)
from pairgate.standalone.command_reader.wrappers import AUTO_MERGE_TEXT

MENTION_MAX = 200  # characters of a command quoted in a block that names a merge it does not run
# An auto-merge push option as GitLab reads one (lib/gitlab/push_options.rb), in a command that
# also says push and reaches git's configuration: when the reader found no push arming it, git
# may still send it from where the hook does not look (a variable set by printf -v or read, a
# configuration file the command writes, a setting made before the push).
# GitLab matches options unanchored and strips each part, so `.mr.auto_merge` and
# `mr . auto_merge` arm it too.
_AUTO_MERGE_OPTION = re.compile(
    r"(?<![a-z0-9_])(?:merge_request|mr)\s*\.\s*(?:auto_merge|merge_when_pipeline_succeeds)"
    r"(?![a-z0-9_])",
    re.IGNORECASE,
)
_PUSH_WORD = re.compile(r"(?<![\w-])push(?![\w-])|send-pack|push-?option", re.IGNORECASE)
# A file git reads its configuration from, as the command names one it writes.
_GIT_CONFIG_FILE = re.compile(r"(^|/)\.git/(config|hooks/)|gitconfig$|(^|/)git/config$")
# ... and a sign the text reaches git's configuration (not prose: a commit message about them)
_GIT_CONFIG_SIGN = re.compile(r"GIT_CONFIG|pushoption|\.git/|gitconfig", re.IGNORECASE)

__all__ = ["Reader"]


class Reader:
    """Reads one command: the layers, the syntax tree and the state of one reading here; what
    each program does with its arguments in the functions of PROGRAMS, through the steps of
    reading.Reading (which this class is)."""

    def __init__(self, text: str = "") -> None:
        self.merges: list[MergeFound] = []
        self.pushes: list[PushFound] = []
        self.unknown: list[str] = []
        self.mentions: list[str] = []
        self.aliases: dict[str, str] = {}  # every alias the command defines, wherever
        self.expanding: set[str] = set()  # bash never expands an alias inside its own expansion
        # glab aliases `glab alias set` defines earlier in the command: name -> (expansion or
        # None when built from expansions, whether it runs in a shell, where it is written)
        self.glab_aliases: dict[str, GlabAlias] = {}
        self.glab_names: set[str] = set()  # names the command gives copies of glab (cp, ln)
        # git aliases and push options `git config` sets earlier in the command
        self.git_aliases: dict[str, GitAlias] = {}
        self.git_push_options: list[Word | None] = []
        self.armed_push_read = False
        self.push_read = False
        # files the command writes (path -> what it writes), and scripts it runs by a path the
        # reader has not seen written yet (read again at the end, in case a loop writes them later)
        self.files: dict[str, Stdin] = {}
        self.unnamed_writes = False  # a write to a path bash computes
        self.script_runs: list[tuple[str | None, Layer]] = []
        self.level = 0  # nesting of the syntax tree being walked, against TREE_BUDGET
        self.over_budget = False
        self.simple_commands = 0
        self.text = text  # the command as the hook received it
        self.layers: list[tuple[Layer, Any]] = []  # every text read, for the mention check

    # layers

    def read(self, text: str, depth: int = 0) -> None:
        """Parse ``text`` as bash and read every command in it."""
        if depth > MAX_DEPTH:
            self.unclear(f"{short(text)}: shells nested too deep to read")
            return
        src = text.encode("utf-8", "surrogatepass")
        tree = parse(src)
        if b"\\\n" in src:  # bash joins continued lines before it splits words; so does the reader
            joined = join_continued_lines(src, tree.root_node)
            if joined != src:
                src, tree = joined, parse(joined)
        layer = Layer(src, depth)
        if b"alias" in src:  # a loop can run a use before the definition: register them first
            self._find_aliases(tree.root_node, layer)
        if tree.root_node.has_error:
            self.unclear(f"{short(text)}: bash would not parse this cleanly")
        for start, gap in uncovered(src, tree.root_node):
            if gap.strip() == b"-":  # tree-sitter-bash drops a lone `-` before a heredoc
                layer.dashes.add(start)
            else:
                self.unclear(f"{short(text)}: bash would not parse this cleanly")
        self._visit(tree.root_node, layer)
        self.layers.append((layer, tree.root_node))  # its mentions are checked at the end

    def _find_aliases(self, root: Any, layer: Layer) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "command":
                name = node.child_by_field_name("name")
                if name is not None and parsed_word(name, layer.src).value == "alias":
                    args = [
                        parsed_word(a, layer.src) for a in node.children_by_field_name("argument")
                    ]
                    self.alias([parsed_word(name, layer.src), *args])
            stack.extend(reversed(node.children))

    def alias(self, argv: list[Word]) -> None:
        """``alias name=text``: remember it; one built from expansions cannot be read."""
        for word in argv[1:]:
            if word.value is None:
                self.unclear(
                    f"{short(' '.join(w.raw for w in argv))}: an alias built from variables "
                    "or substitutions, which the hook cannot read"
                )
            elif "=" in word.value and not word.value.startswith("-"):
                name, _, text = word.value.partition("=")
                self.aliases[name] = text

    def _expand_alias(self, argv: list[Word], layer: Layer) -> None:
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

    def _check_mentions(self, layer: Layer, root: Any) -> None:
        """Text that names a glab merge, once the words read as glab's own and the text re-read
        as a script are taken out: the raw text (quotes and all), and the same words unquoted."""
        masked = bytearray(layer.src)
        for start, end in layer.consumed:
            masked[start:end] = b" " * (end - start)
        raw = masked.decode("utf-8", "replace")
        unquoted = " ".join(self._free_words(root, layer))
        for text in (raw, unquoted):
            if mentions_merge(text):
                # Quoted as the command spells it: the masked text lacks the words that say
                # which command it is, and so which of its flags reads a file.
                self.mentions.append(short(layer.src.decode("utf-8", "replace"), MENTION_MAX))
                return

    def _free_words(self, root: Any, layer: Layer) -> Iterator[str]:
        stack = [root]  # depth first, in order, without recursion (a command may nest deeply)
        while stack:
            node = stack.pop()
            if (node.start_byte, node.end_byte) in layer.consumed:
                continue
            if node.type in WORDISH:
                yield parsed_word(node, layer.src).loose
            elif node.type in ("heredoc_body", "comment"):
                text = bytearray(layer.src[node.start_byte : node.end_byte])
                for child in node.children:  # its substitutions are read below, as commands
                    start = child.start_byte - node.start_byte
                    end = child.end_byte - node.start_byte
                    text[start:end] = b" " * (end - start)
                yield text.decode("utf-8", "replace")
            stack.extend(reversed(node.children))  # substitutions inside words are words too

    # the tree

    def _visit(self, node: Any, layer: Layer, stdin: Stdin | None = None) -> None:
        if self.level >= TREE_BUDGET:
            if not self.over_budget:
                self.over_budget = True
                self.unclear(
                    f"{short(layer.src.decode('utf-8', 'replace'))}: nested more than "
                    f"{TREE_BUDGET} levels deep, the reader's budget; it reads no deeper"
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

    def _pipeline(self, children: list[Any], layer: Layer, stdin: Stdin | None) -> None:
        for child in children:
            if child.type in ("|", "|&"):
                continue
            self._visit(child, layer, stdin)
            stdin = self.output_of(child, layer, stdin)

    def _redirected(self, node: Any, layer: Layer, stdin: Stdin | None) -> None:
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
                path = parsed_word(target, layer.src).value if target is not None else None
                if operator in ("<", "<&"):
                    stdin = self.files.get(file_key(path), OPAQUE) if path else OPAQUE
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
            out = self.output_of(body, layer, stdin)
        else:
            out = OPAQUE
        for path, append, whole in writes:  # what the body writes is what the file holds
            self.write_file(path, out if whole else OPAQUE, append=append)
        for tail in tails:
            self._pipeline(tail.children, layer, out)

    def write_file(self, path: str | None, text: Stdin, *, append: bool = False) -> None:
        if path is None:
            self.unnamed_writes = True
            return
        key = file_key(path)
        before = self.files.get(key)
        if append and before is not None:
            joined = None if before.text is None or text.text is None else before.text + text.text
            text = Stdin(joined, dynamic=before.dynamic or text.dynamic)
        elif append and text.text is not None:  # appended to what the file held before
            text = DYNAMIC_STDIN
        if text.text is None:
            text = DYNAMIC_STDIN  # written, with content the reader cannot tell
        self.files[key] = text

    def _heredoc(self, node: Any, layer: Layer) -> Stdin:
        """A heredoc's text as the shell it feeds would read it. An unquoted body's expansions
        stay in the text: re-read, they are the expansions they are (its substitutions run in
        the outer shell and are read there too)."""
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return Stdin("")
        text = layer.src[body.start_byte : body.end_byte].decode("utf-8", "replace")
        if any(c.type == "<<-" for c in node.children):
            text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
        return Stdin(text, spans=((body.start_byte, body.end_byte),))

    def _herestring(self, node: Any, layer: Layer) -> Stdin:
        target = next((c for c in node.children if c.type != "<<<"), None)
        if target is None:
            return Stdin("")
        self._visit(target, layer)
        word = parsed_word(target, layer.src)
        if word.value is None:
            return Stdin(None, dynamic=True)
        return Stdin(word.value + "\n", spans=(word.span,) if word.span else ())

    def output_of(self, node: Any, layer: Layer, stdin: Stdin | None) -> Stdin:
        """What a pipeline stage writes, when the command line spells it: echo, printf, cat."""
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            return self.output_of(body, layer, stdin) if body is not None else OPAQUE
        if node.type != "command":
            return OPAQUE
        name = node.child_by_field_name("name")
        if name is None:
            return OPAQUE
        args = [parsed_word(a, layer.src) for a in node.children_by_field_name("argument")]
        program = parsed_word(name, layer.src).tail
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
                return DYNAMIC_STDIN
            text = " ".join(v for v in values if v is not None)
            if escapes:
                text, stopped = echo_escapes(text)
                newline = newline and not stopped
            return Stdin(text + ("\n" if newline else ""), spans=spans)
        if program == "printf":
            values = [a.value for a in args]
            if values[:1] == ["--"]:
                values = values[1:]
            printed = printf(values) if values and values[0] != "-v" else None
            if printed is None:
                return DYNAMIC_STDIN
            return Stdin(printed, spans=spans)
        if program == "cat" and all(a.value == "-" for a in args):
            return stdin or OPAQUE
        if program == "cat" and all(a.value and not a.value.startswith("-") for a in args):
            parts = [self.files.get(file_key(a.value or "")) for a in args]
            if all(p is not None and p.text is not None for p in parts):
                return Stdin("".join(p.text or "" for p in parts if p is not None))
            return DYNAMIC_STDIN if any(p is not None for p in parts) else OPAQUE
        if program == "tee":
            return stdin or OPAQUE
        return OPAQUE

    # one simple command

    def _command(self, node: Any, layer: Layer, stdin: Stdin | None) -> None:
        self.simple_commands += 1
        env: dict[str, Word] = {}
        argv: list[Word] = []
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if child.type == "variable_assignment":
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                if name is not None:
                    env[name.text.decode()] = (
                        parsed_word(value, layer.src) if value is not None else literal_word("")
                    )
                for part in child.children:  # the command's own: read with the command (git)
                    self._visit(part, layer)
            elif field_name in ("name", "argument"):
                argv.append(parsed_word(child, layer.src))
                self._visit(child, layer)
            elif child.type == "herestring_redirect":
                stdin = self._herestring(child, layer)
            else:
                self._visit(child, layer)
        if argv and any(
            d >= node.end_byte and not layer.src[node.end_byte : d].strip() for d in layer.dashes
        ):
            argv.append(literal_word("-"))  # the `-` the parser dropped (see bash_tree.uncovered)
        if argv:
            self.run(argv, env, layer, stdin)

    def _assignment(self, node: Any, layer: Layer) -> None:
        """``NAME=value`` on its own or exported: git reads GIT_CONFIG_* from the environment,
        for every git command after it, so one that sets auto-merge push options or a git
        alias (or that the hook cannot read) blocks."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        variable = name.text.decode("utf-8", "replace") if name is not None else ""
        if not re.fullmatch(r"GIT_CONFIG\w*", variable):
            return
        text = parsed_word(value, layer.src).value if value is not None else ""
        said = short(layer.src[node.start_byte : node.end_byte].decode("utf-8", "replace"))
        if text is None or AUTO_MERGE_TEXT.search(text):
            self.unclear(
                f"{said}: git configuration set through the environment for the commands after "
                "it, which may arm auto-merge on a push; pass it to the one git command instead "
                "(git -c push.pushOption=...)"
            )
        elif re.fullmatch(r"GIT_CONFIG_KEY_\d+|GIT_CONFIG_PARAMETERS", variable) and re.search(
            r"(?i)\balias\.", text
        ):
            self.unclear(
                f"{said}: git configuration set through the environment for the commands after "
                "it, which defines a git alias; pass it to the one git command instead "
                "(git -c alias.NAME=...)"
            )

    # the steps of reading.Reading that the program readers take

    def run(
        self,
        argv: list[Word],
        env: dict[str, Word],
        layer: Layer,
        stdin: Stdin | None = None,
        open_args: bool = False,
    ) -> None:
        if not argv:
            return
        if self.aliases:
            self._expand_alias(argv, layer)
        program = argv[0].tail
        if program is None:
            dynamic_program(self, argv)
            return
        reader = PROGRAMS.get(program)
        if reader is None and program in self.glab_names:
            reader = read_glab
        if reader is not None:
            reader(self, argv, env, layer, stdin, open_args)
        elif not run_written(self, argv, stdin, layer):
            read_other(self, argv, env, layer, stdin, open_args)

    def found_merge(self, merge: MergeFound) -> None:
        self.merges.append(merge)

    def found_push(self, push: PushFound) -> None:
        self.pushes.append(push)

    def unclear(self, why: str) -> None:
        self.unknown.append(why)

    def read_alone(self, text: str, depth: int) -> CommandReading:
        later = Reader(text)
        later.files = dict(self.files)
        later.glab_names = set(self.glab_names)
        later.glab_aliases = dict(self.glab_aliases)
        later.git_aliases = dict(self.git_aliases)
        later.read(text, depth)
        return later.result()

    # the end of a reading

    def result(self) -> CommandReading:
        """What the command would merge and push, what could not be read, and the text that
        names a glab merge it does not run; each once."""
        self._read_late_scripts()
        for layer, root in self.layers:
            self._check_mentions(layer, root)
        written = [p for p in self.files if _GIT_CONFIG_FILE.search(p)]
        if self.push_read and written:
            # git joins a config line ending in a backslash with the next, so the option's
            # text need not appear whole: a push beside a write of git's configuration blocks
            self.unclear(
                f"{short(self.text)}: writes git's configuration ({written[0]}) and pushes in "
                "the same command, and the push may take push options from it; write it in a "
                "command of its own, or pass the options to the push itself"
            )
        if (
            not self.armed_push_read
            and _AUTO_MERGE_OPTION.search(self.text)
            and _PUSH_WORD.search(self.text)
            and _GIT_CONFIG_SIGN.search(self.text)
        ):
            self.unclear(
                f"{short(self.text)}: names an auto-merge push option that no push the hook "
                "read passes (git may take it from a variable, a configuration file or a git "
                "hook the command sets up); pass it to the push itself: git push -o ... "
                "<remote> <sha>:refs/heads/<branch>"
            )
        self.layers = []
        seen: set[tuple[str | None, int | None, str, tuple[str | None, ...], str]] = set()
        merges = []
        for m in self.merges:
            key = (m.project, m.iid, m.problem, m.shas, m.kind)
            if key not in seen:
                seen.add(key)
                merges.append(m)
        alone = self.simple_commands == 1
        return CommandReading(
            tuple(merges),
            tuple(dict.fromkeys(self.unknown)),
            tuple(dict.fromkeys(self.mentions)),
            tuple(dict.fromkeys(p._replace(alone=alone) for p in self.pushes)),
        )

    def _read_late_scripts(self) -> None:
        """Scripts the command runs by a path it writes later in its text (a loop runs them
        after the write), or by a path bash computes in a command that writes files."""
        done: set[tuple[str | None, int]] = set()
        while self.script_runs:
            key, layer = self.script_runs.pop()
            if (key, id(layer)) in done:
                continue
            done.add((key, id(layer)))
            if key is None and (self.files or self.unnamed_writes):
                self.unclear(
                    "a script run by a path bash computes, in a command that writes files: the "
                    "hook cannot tell which file runs; spell its path"
                )
            elif key is not None and key in self.files:
                reread_script(self, self.files[key], [literal_word(key)], layer, key)
            elif key is not None and self.unnamed_writes:
                self.unclear(
                    f"{key}: runs a script in a command that writes files whose names bash "
                    "computes; the hook cannot tell whether it is one of them"
                )
