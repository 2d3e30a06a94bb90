"""The command reader's words: what a command would merge, quote removal, stdin.

The merge hook decides on every Bash command the agent runs, so the reader reads the command the
way bash would and says which merges it would make. It is pure: text in, a CommandReading out;
the hook (hook.py) asks for the verdicts."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = [
    "COMMIT_SHA",
    "DYNAMIC",
    "DYNAMIC_STDIN",
    "GLAB_COMMANDS",
    "GLAB_MR_COMMANDS",
    "GLAB_NOT_ALIASES",
    "GLAB_SOURCE",
    "MAX_DEPTH",
    "MERGE_MENTION",
    "OPAQUE",
    "QUICK_MERGE",
    "RECURSION_FOR_BUDGET",
    "SHELLS",
    "TREE_BUDGET",
    "WORDISH",
    "CommandReading",
    "MergeFound",
    "PushFound",
    "Stdin",
    "Word",
    "could_name_glab_merge",
    "dynamic_word",
    "echo_escapes",
    "file_key",
    "literal_word",
    "mentions_merge",
    "parsed_word",
    "printf",
    "short",
    "spelled",
]

# The hook's fast test. A command can run a glab merge only if its text says glab, merge or accept,
# or if it has a character through which bash could build a word the text does not spell
# (quotes, backslashes, expansions, globs, braces). Anything else is allowed without reading it;
# block-unapproved-merge.sh applies the same test in bash before starting Python.
_FAST_WORDS = ("glab", "merge", "accept")
_FAST_CHARS = frozenset("$`\\'\"*?[{")

# Text that names a glab merge: `mr merge` / `mr accept` (any separators between them, and a -R
# with its value), the REST merge endpoint, a merge train, the GraphQL mutation. It counts only
# where "glab" is in the same text too.
MERGE_MENTION = re.compile(
    r"(?<![a-z0-9])mr[\W_]+(?:-R[\W_]*\S+[\W_]+|--repo[\W_]*\S+[\W_]+)?(?:merge|accept)(?![a-z0-9])"
    r"|merge_requests\S*?merge(?![a-z0-9])|merge_trains|mergerequestaccept",
    re.IGNORECASE,
)
WORDISH = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "concatenation",
        "number",
        "translated_string",
    }
)

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"})

# glab is read as the version whose source was read: v1.79.0-43-g45aa37be (gitlab-org/cli, GitLab's
# mirror gitlabhq/cli@45aa37be0045). Its top-level commands and their aliases, from
# internal/commands/root.go and each command's constructor (`Aliases:`), e.g. version/version.go
# ("v"), opentofu/opentofu.go ("terraform", "tf"), stack/stack.go ("stacks"). A first word outside
# this list is looked up as a user alias (cmd/glab/main.go: `rootCmd.Traverse`, then
# `expand.ExpandAlias`), which could expand to a merge, so it is read as unknown.
GLAB_SOURCE = "glab v1.79.0-43-g45aa37be"
GLAB_COMMANDS = frozenset(
    """alias api auth changelog check-update update ci pipe pipeline cluster completion config
    conf deploy-key duo gpg-key incident issue iteration job label mcp milestone mr opentofu
    terraform tf release repo project schedule sched skd securefile snippet ssh-key stack
    stacks token user variable var version v""".split()  # noqa: SIM905 (a word list reads better as text)
)
# First words glab's alias lookup meets that are never an alias: cobra adds `help` only after the
# lookup, and `glab alias set` refuses it as a command; the root's flags could only name an alias
# set with `glab alias set -- -name`, which the hook refuses (reader_glab).
GLAB_NOT_ALIASES = frozenset({"help", "-h", "--help", "-v", "--version"})
# `glab mr` subcommands and aliases (internal/commands/mr/*/*.go, `Use:` and `Aliases:`).
GLAB_MR_COMMANDS = {
    alias: name
    for name, aliases in {
        "approve": (), "approvers": (), "checkout": (), "close": (), "create": ("new",),
        "delete": ("del",), "diff": (), "for": ("new-for", "create-for", "for-issue"),
        "issues": ("issue",), "list": ("ls",), "merge": ("accept",), "note": ("comment",),
        "rebase": (), "reopen": ("open",), "revoke": ("unapprove",), "subscribe": ("sub",),
        "todo": ("add-todo",), "unsubscribe": ("unsub",), "update": (), "view": ("show",),
    }.items()
    for alias in (name, *aliases)
}  # fmt: skip

MAX_DEPTH = 8  # nested re-reads (bash -c "eval '...'") before the reader gives up
# The reader walks the syntax tree recursively; this is its budget of nested levels (a level is a
# command, a substitution, a subshell...), far above any real command and far below what Python
# can recurse. Only a command deeper than this blocks, and says so.
TREE_BUDGET = 3000
RECURSION_FOR_BUDGET = 8 * TREE_BUDGET  # Python frames the reader may need within the budget

# A GitLab quick action that merges, on a line of its own in a note or a description.
QUICK_MERGE = re.compile(r"^[ \t]*/merge(?![\w-])", re.IGNORECASE | re.MULTILINE)
COMMIT_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def could_name_glab_merge(command: str) -> bool:
    """False only when no reading of ``command`` can run a glab merge (the hook's fast path)."""
    lowered = command.lower()
    return any(w in lowered for w in _FAST_WORDS) or not _FAST_CHARS.isdisjoint(command)


def short(text: str, limit: int = 100) -> str:
    """``text`` on one line, cut to ``limit`` characters, for a message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def spelled(words: Sequence[Word]) -> str:
    """The words as the command spells them, shortened for a message."""
    return short(" ".join(w.raw for w in words))


# `mr` then flags before `merge`: cobra takes any flag there (`glab mr --help=false merge 1`).
# Read a word at a time, a bounded stretch after each `mr`: a pattern with a repeated flag
# group backtracks for seconds on a run of dashes.
_MR_WORD = re.compile(r"(?<![a-z0-9])mr(?![a-z0-9])", re.IGNORECASE)
_WORD_RUN = re.compile(r"[^\s'\"\\]+")
_MERGE_WORD = re.compile(r"(?:merge|accept)(?![a-z0-9])", re.IGNORECASE)
_FLAG_WORDS = 12  # flags a reading of `mr ... merge` looks past


def _flags_then_merge(text: str) -> bool:
    for found in _MR_WORD.finditer(text):
        taking = False
        runs = _WORD_RUN.finditer(text, found.end(), found.end() + 400)
        for word in (m.group() for _, m in zip(range(2 * _FLAG_WORDS), runs, strict=False)):
            if taking or word.startswith("-"):
                taking = not taking and word in ("-R", "--repo")
                continue
            if _MERGE_WORD.match(word):
                return True
            break
    return False


def mentions_merge(text: str) -> bool:
    if "glab" not in text.lower():
        return False
    return MERGE_MENTION.search(text) is not None or _flags_then_merge(text)


class MergeFound(NamedTuple):
    """One merge the command would make. ``problem`` says why it cannot be attributed to one
    project and one merge request; it is empty when ``project`` and ``iid`` are both known.
    ``project`` is a full path, or a numeric project id as the command spelled it.

    ``shas`` are the SHAs GitLab would be given to bind the merge to a head (``--sha``, the
    ``sha`` field, a ``/merge`` note's ``merge_request_diff_head_sha``), one per place the request
    can carry one; ``None`` stands for one the hook cannot read. Empty: the merge names no head.
    ``kind`` is "merge" or "/merge" (a quick action in a note or a description)."""

    words: str
    project: str | None
    iid: int | None
    problem: str = ""
    shas: tuple[str | None, ...] = ()
    kind: str = "merge"


class PushFound(NamedTuple):
    """A ``git push`` that arms auto-merge with push options (GitLab then merges the merge request
    of ``branch`` at the pushed commit). ``remote`` is the remote as spelled (a URL or a remote's
    name), ``sha`` the pushed commit when the refspec spells it, ``target_project`` the
    ``merge_request.target_project`` option; ``alone`` says the push is the command's only
    command, so the remote's URL can be read from the repository before it runs."""

    words: str
    remote: str | None
    sha: str | None
    branch: str | None
    target_project: str | None = None
    creates: bool = False
    alone: bool = False
    problem: str = ""


class CommandReading(NamedTuple):
    """What a command would merge, what the reader could not read, and which texts name a glab
    merge without being one. The hook allows the command only when ``unknown`` and
    ``mentions`` are empty and every merge and push is attributable and passes the gate."""

    merges: tuple[MergeFound, ...] = ()
    unknown: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()
    pushes: tuple[PushFound, ...] = ()

    def problems(self) -> list[str]:
        """Every reason the reading alone blocks the command, before any verdict is asked."""
        found = [f"{m.words}: {m.problem}" for m in self.merges if m.problem]
        found += [f"{p.words}: {p.problem}" for p in self.pushes if p.problem]
        found += list(self.unknown)
        found += [
            f"{text}: this names a glab merge that the command does not run; if it is a "
            f"message, {_from_a_file(text)}"
            for text in self.mentions
        ]
        return found

    @property
    def misread(self) -> bool:
        """Was the spelling of a merge or a push the problem (not a text that names one)?"""
        return (
            bool(self.unknown)
            or any(m.problem for m in self.merges)
            or any(p.problem for p in self.pushes)
        )


# A message flag, and the same command's flag that reads the message from a file.
_FILE_FLAGS = (
    (re.compile(r"(^|\s)--reason(=|\s)"), "pass it from a file with --reason-file <file>"),
    (re.compile(r"(^|\s)--text(=|\s)"), "pass it from a file with --text-file <file>"),
    (
        re.compile(r"(^|\s)--constraint-text(=|\s)"),
        "pass it from a file with --constraint-file <file>",
    ),
    (
        re.compile(r"(^|\s)git\s+(commit|tag|notes)\b"),
        "write it to a file and pass it with -F <file>",
    ),
    (
        re.compile(r"(^|\s)glab\s+(mr|issue)\s+(note|comment)\b"),
        'write it to a file and pass it as -m "$(cat <file>)"',
    ),
)


def _from_a_file(text: str) -> str:
    """How the command that carries ``text`` takes a message from a file."""
    for pattern, remedy in _FILE_FLAGS:
        if pattern.search(text):
            return remedy
    return "write it to a file and give the command the file instead"


class _Dyn:
    """A part of a word that bash computes when it runs: an expansion, a glob, a brace."""

    def __repr__(self) -> str:
        return "<dynamic>"


DYNAMIC = _Dyn()
_Part = str | _Dyn


class Word(NamedTuple):
    """One shell word after quote removal: literal parts and dynamic ones. (Two words compare
    with their syntax nodes; the reader never compares words, it reads each where it stands.)"""

    parts: tuple[_Part, ...]
    span: tuple[int, int] | None  # byte range in its layer, None for words the reader made up
    raw: str
    node: Any = None  # its syntax node, if parsed

    @property
    def value(self) -> str | None:
        if any(isinstance(p, _Dyn) for p in self.parts):
            return None
        return "".join(p for p in self.parts if isinstance(p, str))

    @property
    def tail(self) -> str | None:
        """The literal text after the last '/': a program's name even under ``$HOME/bin/``."""
        text = ""
        for part in reversed(self.parts):
            if isinstance(part, _Dyn):
                return None
            if "/" in part:
                return part.rsplit("/", 1)[1] + text
            text = part + text
        return text

    @property
    def loose(self) -> str:
        """The literal parts only, for the mention test (an expansion reads as nothing)."""
        return "".join(p for p in self.parts if isinstance(p, str))


def literal_word(text: str) -> Word:
    return Word((text,), None, text)


# --- unquoting ---------------------------------------------------------------------------------

_ANSI_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


def _ansi_c(body: str) -> str:
    """The value of ``$'...'`` (bash's ANSI-C quoting)."""
    return _escapes(body, echo=False)[0]


def echo_escapes(text: str) -> tuple[str, bool]:
    """What ``echo -e`` (or printf's ``%b``) prints for ``text``, and whether a ``\\c`` ended it:
    as ``$'...'``, except that an octal escape is ``\\0NNN`` and ``\\c`` stops the output."""
    return _escapes(text, echo=True)


def _escapes(body: str, *, echo: bool) -> tuple[str, bool]:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if echo and nxt == "c":
            return "".join(out), True
        if echo and nxt in "01234567":
            m = re.match(r"[0-7]{0,3}", body[i + 2 :]) if nxt == "0" else None
            if m is None:
                out.append("\\" + nxt)  # echo's octal escapes start with 0
                i += 2
            else:
                out.append(chr(int(m.group() or "0", 8) & 0xFF))
                i += 2 + len(m.group())
        elif nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            m = re.match(rf"[0-9A-Fa-f]{{1,{width}}}", body[i + 2 :])
            if m:
                out.append(chr(int(m.group(), 16)))
                i += 2 + len(m.group())
            else:
                out.append("\\" + nxt)
                i += 2
        elif nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert m is not None
            out.append(chr(int(m.group(), 8) & 0xFF))
            i += 1 + len(m.group())
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out), False


_PRINTF_SPEC = re.compile(r"%([-+ #0]*)([0-9]*)(?:\.([0-9]+))?([a-zA-Z%])")


def printf(values: Sequence[str | None]) -> str | None:
    """What ``printf FORMAT [ARG...]`` prints, for the conversions a script is written with
    (%s %b %c %d %i %u %%, with flags, width and precision); None when the reader cannot tell
    (an expansion, another conversion). The format is reused while arguments remain."""
    if not values or any(v is None for v in values):
        return None
    fmt, args = str(values[0]), [str(v) for v in values[1:]]
    pieces: list[str] = []
    while True:
        used, last = 0, 0
        for m in _PRINTF_SPEC.finditer(fmt):
            pieces.append(_ansi_c(fmt[last : m.start()]))
            last = m.end()
            flags, width, precision, conversion = m.groups()
            if conversion == "%":
                pieces.append("%")
                continue
            if conversion not in "sbcdiu":
                return None
            arg = args[used] if used < len(args) else ""
            used += 1
            stopped = False
            if conversion == "b":
                arg, stopped = echo_escapes(arg)
            elif conversion in "diu":
                if not re.fullmatch(r"[+-]?[0-9]+", arg or "0"):
                    return None
                arg = str(int(arg or "0"))
            elif conversion == "c":
                arg = arg[:1]
            if precision and conversion in "sb":
                arg = arg[: int(precision)]
            if width:
                arg = arg.ljust(int(width)) if "-" in flags else arg.rjust(int(width))
            pieces.append(arg)
            if stopped:
                return "".join(pieces)
        pieces.append(_ansi_c(fmt[last:]))
        args = args[used:]
        if not args or not used:
            return "".join(pieces)


def file_key(path: str) -> str:
    """One spelling per file the command names: ``./run.sh`` and ``run.sh`` are one file."""
    return os.path.normpath(path)


# Brace expansion needs a comma or a sequence inside braces; a lone {} (find -exec) is literal.
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


def _unquoted_word_parts(text: str) -> list[_Part]:
    """An unquoted word: backslashes escape one character; an unescaped glob or brace character
    makes the word something bash computes; so does a leading tilde."""
    parts: list[_Part] = []
    literal: list[str] = []
    i = 0
    if text.startswith("~"):
        parts.append(DYNAMIC)
        i = 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 < len(text) and text[i + 1] != "\n":
                literal.append(text[i + 1])
            i += 2
            continue
        if ch in "*?[]" or (ch in "{}" and _BRACES.search(text)):
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(DYNAMIC)
        else:
            literal.append(ch)
        i += 1
    if literal:
        parts.append("".join(literal))
    return parts


def _double_quoted(text: str) -> str:
    """Inside "...", a backslash escapes only $ ` " \\ and a newline."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _parts(node: Any, src: bytes) -> list[_Part]:
    kind = node.type
    text = src[node.start_byte : node.end_byte].decode("utf-8", "replace")
    if kind == "word":
        return _unquoted_word_parts(text)
    if kind == "number":
        return [text]
    if kind == "raw_string":
        return [text[1:-1]]
    if kind == "ansi_c_string":
        return [_ansi_c(text[2:-1])]
    if kind == "string":
        parts: list[_Part] = []
        pos = node.start_byte + 1  # after the opening quote
        for child in node.children:
            if child.type == '"':
                continue
            if child.start_byte > pos:
                parts.append(_double_quoted(src[pos : child.start_byte].decode("utf-8", "replace")))
            if child.type == "string_content":
                parts.append(_double_quoted(child.text.decode("utf-8", "replace")))
            else:
                parts.append(DYNAMIC)
            pos = child.end_byte
        end = node.end_byte - 1
        if end > pos:
            parts.append(_double_quoted(src[pos:end].decode("utf-8", "replace")))
        return parts
    if kind == "command_name":
        return [p for child in node.children for p in _parts(child, src)]
    if kind == "concatenation":
        unquoted = "".join(
            c.text.decode("utf-8", "replace") if c.type == "word" else "Q" for c in node.children
        )
        if _BRACES.search(unquoted):
            return [DYNAMIC]
        return [p for child in node.children for p in _parts(child, src)]
    return [DYNAMIC]  # expansions, substitutions, arithmetic, anything not yet seen


def parsed_word(node: Any, src: bytes) -> Word:
    raw = src[node.start_byte : node.end_byte].decode("utf-8", "replace")
    return Word(tuple(_parts(node, src)), (node.start_byte, node.end_byte), raw, node)


def dynamic_word(word: Word) -> Word:
    """``word`` as something bash (or the program reading it) fills in when it runs."""
    return Word((DYNAMIC,), word.span, word.raw)


# --- what a command's standard input is ------------------------------------------------------------


class Stdin(NamedTuple):
    """A command's standard input as far as the reader can tell: ``text`` when the command line
    spells it (a heredoc, a here-string, echo piped in), else ``None``; ``dynamic`` when it
    is built from expansions. ``spans`` are the words that carry the text."""

    text: str | None
    dynamic: bool = False
    spans: tuple[tuple[int, int], ...] = ()


OPAQUE = Stdin(None)  # a file or another program's output: not read (the docs say so)
DYNAMIC_STDIN = Stdin(None, dynamic=True)
