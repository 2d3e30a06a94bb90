"""bash parsed with tree-sitter-bash, and the two places where the tree and bash disagree."""

from __future__ import annotations

from typing import Any

__all__ = ["join_continued_lines", "parse", "uncovered"]

_PARSER: Any = None


# Where a backslash-newline is text, not a line continuation: single quotes, $'...', comments and
# heredoc bodies (a shell that reads a body joins its lines itself, and is read as one).
_LITERAL_NODES = frozenset({"raw_string", "ansi_c_string", "comment", "heredoc_body"})


def join_continued_lines(src: bytes, root: Any) -> bytes:
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


def uncovered(src: bytes, root: Any) -> list[tuple[int, bytes]]:
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


def parse(src: bytes) -> Any:
    """The syntax tree of ``src``. tree-sitter is imported on the first call, so that nothing
    but a command to read pays for it."""
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER.parse(src)
