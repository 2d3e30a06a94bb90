"""GraphQL: a mergeRequestAccept mutation, read from glab api's fields."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["graphql_read"]

_GQL_TOKEN = re.compile(
    r"(?P<skip>[\t\n\r ,\ufeff]+|#[^\n\r]*)"
    r'|(?P<block>"""(?:\\"""|[^"]|"(?!""))*""")'
    r'|(?P<string>"(?:\\.|[^"\\\n\r])*")'
    r"|(?P<name>[_A-Za-z][_0-9A-Za-z]*)"
    r"|(?P<number>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<punct>\.\.\.|[!$&():=@\[\]{|}])"
)
_GQL_MISSING = object()  # a variable the request does not give


def _gql_tokens(text: str) -> list[tuple[str, str]] | None:
    tokens, pos = [], 0
    while pos < len(text):
        m = _GQL_TOKEN.match(text, pos)
        if m is None:
            return None
        pos = m.end()
        if m.lastgroup != "skip":
            tokens.append((m.lastgroup or "", m.group()))
    return tokens


def _gql_string(kind: str, text: str) -> str | None:
    if kind == "block":  # a block string: common indentation and blank edges dropped
        lines = re.split(r"\r\n|\n|\r", text[3:-3].replace('\\"""', '"""'))
        indents = [len(x) - len(x.lstrip(" \t")) for x in lines[1:] if x.strip(" \t")]
        cut = min(indents, default=0)
        lines = [lines[0], *(x[cut:] for x in lines[1:])]
        while lines and not lines[0].strip(" \t"):
            lines.pop(0)
        while lines and not lines[-1].strip(" \t"):
            lines.pop()
        return "\n".join(lines)
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _gql_value(
    tokens: list[tuple[str, str]], i: int, variables: Mapping[str, Any], depth: int = 0
) -> tuple[Any, int]:
    """One GraphQL value from token ``i``: (the value, the index after it); ValueError when the
    reader cannot read it."""
    if depth > 32 or i >= len(tokens):
        raise ValueError("too deep")
    kind, text = tokens[i]
    if text == "$" and i + 1 < len(tokens) and tokens[i + 1][0] == "name":
        return variables.get(tokens[i + 1][1], _GQL_MISSING), i + 2
    if kind in ("string", "block"):
        value = _gql_string(kind, text)
        if value is None:
            raise ValueError("string")
        return value, i + 1
    if kind in ("name", "number"):
        return text, i + 1
    if text in ("[", "{"):
        close = "]" if text == "[" else "}"
        items: list[Any] = []
        fields: dict[str, Any] = {}
        i += 1
        while i < len(tokens) and tokens[i][1] != close:
            if text == "{":
                if tokens[i][0] != "name" or i + 1 >= len(tokens) or tokens[i + 1][1] != ":":
                    raise ValueError("object")
                fields[tokens[i][1]], i = _gql_value(tokens, i + 2, variables, depth + 1)
            else:
                item, i = _gql_value(tokens, i, variables, depth + 1)
                items.append(item)
        if i >= len(tokens):
            raise ValueError("unclosed")
        return (items if text == "[" else fields), i + 1
    raise ValueError(text)


def graphql_read(
    query: str, variables: Mapping[str, Any]
) -> tuple[list[tuple[str | None, int | None, str | None, str]], list[str]]:
    """Each ``mergeRequestAccept`` field of a GraphQL document as (project, iid, sha, problem),
    its ``input`` read from literals, the request's variables and the variables' defaults (sha
    "" when none is given, None when it cannot be read), and every string literal in it."""
    tokens = _gql_tokens(query)
    if tokens is None:
        return [], []
    strings = [
        s for kind, text in tokens if kind in ("string", "block")
        if (s := _gql_string(kind, text)) is not None
    ]  # fmt: skip
    defaults: dict[str, Any] = {}
    for i in range(len(tokens) - 2):  # $name: Type = default
        if tokens[i][1] == "$" and tokens[i + 1][0] == "name" and tokens[i + 2][1] == ":":
            j = i + 3
            while j < len(tokens) and (tokens[j][0] == "name" or tokens[j][1] in "![]"):
                j += 1
            if j < len(tokens) and tokens[j][1] == "=":
                try:
                    defaults[tokens[i + 1][1]] = _gql_value(tokens, j + 1, {})[0]
                except ValueError:
                    defaults[tokens[i + 1][1]] = None
    known = {**defaults, **variables}
    problem = "a GraphQL mergeRequestAccept whose projectPath, iid or sha the hook cannot read"
    found: list[tuple[str | None, int | None, str | None, str]] = []
    for i, (kind, text) in enumerate(tokens):
        if kind != "name" or text != "mergeRequestAccept":
            continue
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if after == ":" or before in ("$", "...", "fragment", "on", "query", "mutation"):
            continue  # an alias, a variable, a fragment or an operation named so
        try:
            if after != "(":
                raise ValueError("no arguments")
            arguments: dict[str, Any] = {}
            j = i + 2
            while j < len(tokens) and tokens[j][1] != ")":
                if tokens[j][0] != "name" or j + 1 >= len(tokens) or tokens[j + 1][1] != ":":
                    raise ValueError("argument")
                arguments[tokens[j][1]], j = _gql_value(tokens, j + 2, known)
            data = arguments.get("input")
            if not isinstance(data, dict):
                raise ValueError("input")
        except ValueError:
            found.append((None, None, None, problem))
            continue
        project, iid, sha = data.get("projectPath"), data.get("iid"), data.get("sha", "")
        if not isinstance(project, str) or not isinstance(iid, str):
            found.append((project if isinstance(project, str) else None, None, None, problem))
            continue
        if not re.fullmatch(r"[1-9][0-9]*", iid):
            found.append((project, None, None, f"{iid!r} is not a merge request iid"))
            continue
        if sha is _GQL_MISSING:
            sha = ""
        found.append((project, int(iid), sha if isinstance(sha, str) else None, ""))
    return found, strings
