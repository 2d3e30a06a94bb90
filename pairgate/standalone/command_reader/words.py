"""The command reader's words: what a command would merge, quote removal, stdin."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# A merge hook decides on every Bash command the agent runs, so this section reads the command the
# way bash would and says which merges it would make. It is pure: text in, a CommandReading out;
# the verdicts are asked for by the hook's entry point (section 8). tree-sitter is imported lazily
# so that nothing else pays for it. Its imports sit here, not at the top, to keep the sections
# independent of each other.

# The hook's fast test. A command can run a glab merge only if its text says glab, merge or accept,
# or if it has a character through which bash could build a word the text does not spell
# (quotes, backslashes, expansions, globs, braces). Anything else is allowed without reading it;
# block-unapproved-merge.sh applies the same test in bash before starting Python.
_FAST_WORDS = ("glab", "merge", "accept")
_FAST_CHARS = frozenset("$`\\'\"*?[{")

# Text that names a glab merge: `mr merge` / `mr accept`, the REST merge endpoint, a merge train,
# the GraphQL mutation. It counts only where "glab" is in the same text too.
_MERGE_MENTION = re.compile(
    r"(?<![a-z0-9])mr[\W_]{1,8}(?:merge|accept)(?![a-z0-9])"
    r"|merge_requests\S*?merge(?![a-z0-9])|merge_trains|mergerequestaccept",
    re.IGNORECASE,
)
_WORDISH = frozenset(
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

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"})

# glab's top-level commands and their aliases. A word outside this list may be a glab alias
# (`glab alias set`), which could expand to a merge, so it is read as unknown.
_GLAB_COMMANDS = frozenset(
    """alias api attestation auth changelog check-update update ci pipe pipeline cluster
    completion config conf deploy-key duo gpg-key help incident issue issues iteration job
    label mcp milestone mr opentofu tofu release repo project runner schedule sched skd
    securefile snippet snip ssh-key stack token user variable var version workitems
    work-items""".split()  # noqa: SIM905 (a word list reads better as text)
)

_MAX_DEPTH = 8  # nested re-reads (bash -c "eval '...'") before the reader gives up


def could_name_glab_merge(command: str) -> bool:
    """False only when no reading of ``command`` can run a glab merge (the hook's fast path)."""
    lowered = command.lower()
    return any(w in lowered for w in _FAST_WORDS) or not _FAST_CHARS.isdisjoint(command)


def _mentions_merge(text: str) -> bool:
    return "glab" in text.lower() and _MERGE_MENTION.search(text) is not None


@dataclass(frozen=True)
class MergeFound:
    """One merge the command would make. ``problem`` says why it cannot be attributed to one
    project and one merge request; it is empty when ``project`` and ``iid`` are both known.
    ``project`` is a full path, or a numeric project id as the command spelled it."""

    words: str
    project: str | None
    iid: int | None
    problem: str = ""


@dataclass(frozen=True)
class CommandReading:
    """What a command would merge, what the reader could not read, and which texts name a glab
    merge without being one. The hook allows the command only when ``unknown`` and
    ``mentions`` are empty and every merge is attributable and passes the gate."""

    merges: tuple[MergeFound, ...] = ()
    unknown: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()

    def problems(self) -> list[str]:
        """Every reason the reading alone blocks the command, before any verdict is asked."""
        found = [f"{m.words}: {m.problem}" for m in self.merges if m.problem]
        found += list(self.unknown)
        found += [
            f"{text}: this names a glab merge that the command does not run; if it is a "
            "message, pass it from a file (--reason-file) instead"
            for text in self.mentions
        ]
        return found


class _Dyn:
    """A part of a word that bash computes when it runs: an expansion, a glob, a brace."""

    def __repr__(self) -> str:
        return "<dynamic>"


DYNAMIC = _Dyn()
_Part = str | _Dyn


@dataclass(frozen=True)
class _Word:
    """One shell word after quote removal: literal parts and dynamic ones."""

    parts: tuple[_Part, ...]
    span: tuple[int, int] | None  # byte range in its layer, None for words the reader made up
    raw: str

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


def _literal_word(text: str) -> _Word:
    return _Word((text,), None, text)


# --- unquoting ---------------------------------------------------------------------------------

_ANSI_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


def _ansi_c(body: str) -> str:
    """The value of ``$'...'`` (bash's ANSI-C quoting)."""
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_SIMPLE:
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
    return "".join(out)


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


def _word(node: Any, src: bytes) -> _Word:
    raw = src[node.start_byte : node.end_byte].decode("utf-8", "replace")
    return _Word(tuple(_parts(node, src)), (node.start_byte, node.end_byte), raw)


# --- what a command's standard input is ------------------------------------------------------------


@dataclass(frozen=True)
class _Stdin:
    """A command's standard input as far as the reader can tell: ``text`` when the command line
    spells it (a heredoc, a here-string, echo piped in), else ``None``; ``dynamic`` when it
    is built from expansions. ``spans`` are the words that carry the text."""

    text: str | None
    dynamic: bool = False
    spans: tuple[tuple[int, int], ...] = ()


_OPAQUE = _Stdin(None)  # a file or another program's output: not read (the docs say so)
_DYNAMIC_STDIN = _Stdin(None, dynamic=True)
