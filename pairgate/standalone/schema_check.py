"""The schema checks: jsonschema is the authority for every rejection.

jsonschema interprets a schema afresh for every instance, which is most of a first fold's cost.
When jsonschema-rs is installed (the ``fast`` extra) it checks first, and it may only ACCEPT: an
instance it accepts is valid; anything else, and every instance where it is missing, goes to
jsonschema, whose verdict and message stand. So the two can only differ in speed, provided
jsonschema-rs never accepts what jsonschema rejects. Two things it reads differently are handled
here: a tuple (an array to jsonschema-rs, not to jsonschema), by giving it only JSON's own types,
and regular expressions (ECMA-262 there, Python's ``re`` here), by giving it only patterns both
read alike, with ``\\s`` and ``\\S`` spelled out as Python's whitespace. tests/test_schema_check.py
checks it on thousands of generated and mutated instances of every schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["PYTHON_SPACE", "SchemaCheck", "draft_validator", "fast_pattern", "json_typed"]

# Python's \s (str.isspace), as a character class body both regex dialects read the same; an
# ECMA-262 \s differs (it adds U+FEFF and lacks U+001C-U+001F and U+0085).
PYTHON_SPACE = (
    "\\t-\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
)
_SHORTHAND = {"\\s": f"[{PYTHON_SPACE}]", "\\S": f"[^{PYTHON_SPACE}]"}
# The pattern syntax both dialects read alike, token by token: ASCII literals, classes of ASCII
# literals and ranges, groups, lookahead, alternation, anchors and quantifiers. (Python's $ also
# matches before a final newline, ECMA-262's never does; ECMA-262's . also skips \r, U+2028 and
# U+2029: the fast check is the stricter there, which is safe.)
_LITERAL = r"[A-Za-z0-9 _,:;!~/@#%&=<>'\"`-]"
_ESCAPED = r"\\[nrt.\-/\\^$()|\[\]{}*+?]"
_TOKEN = re.compile(
    rf"\\[sS]|{_ESCAPED}|\[\^?(?:{_LITERAL}|[.()|*+?$^{{}}]|{_ESCAPED})+\]"
    rf"|\(\?[:!=]|\((?!\?)|[)|^$*+?.]|\{{[0-9]+(?:,[0-9]*)?\}}|{_LITERAL}"
)


def fast_pattern(pattern: str) -> str | None:
    """``pattern`` as jsonschema-rs is given it (``\\s`` and ``\\S`` spelled out), or None when
    its dialect might read it more loosely than Python's ``re`` (the schema then has no fast
    check)."""
    out, at = [], 0
    for token in _TOKEN.finditer(pattern):
        if token.start() != at:
            return None
        out.append(_SHORTHAND.get(token.group(), token.group()))
        at = token.end()
    return "".join(out) if at == len(pattern) else None


class _NoFastSchema(Exception):
    """A pattern in the schema that jsonschema-rs might read more loosely."""


# Keywords whose values are instances or words, not schemas: never rewritten.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples", "title", "description"})
# Keywords whose values map names to schemas (the names are not keywords).
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})


def _fast_schema(schema: Any) -> Any:
    """The schema with every pattern made fast_pattern's; _NoFastSchema when one cannot be."""
    if isinstance(schema, list):
        return [_fast_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DATA_KEYWORDS:
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _fast_schema(sub) for name, sub in value.items()}
        elif key == "pattern" and isinstance(value, str):
            out[key] = fast_pattern(value)
            if out[key] is None:
                raise _NoFastSchema(value)
        else:
            out[key] = _fast_schema(value)
    return out


_SCALARS = (str, int, float, bool, type(None))


def json_typed(value: Any) -> bool:
    """Does ``value`` hold only JSON's types (what json.loads returns): dict with str keys, list,
    str, int, float, bool, None, and no subclass of any?"""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if any(type(key) is not str for key in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind not in _SCALARS:
            return False
    return True


def _fast_validator(schema: Mapping[str, Any]) -> Any:
    """jsonschema-rs's validator for ``schema``, or None (not installed, or no fast schema)."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    try:
        return jsonschema_rs.Draft202012Validator(_fast_schema(dict(schema)))
    except _NoFastSchema:
        return None
    except Exception:  # a schema it cannot build is checked by jsonschema alone
        return None


class SchemaCheck:
    """A draft 2020-12 check of one schema, with jsonschema's ``is_valid`` and ``iter_errors``.

    ``decoded=True`` says the instance came from json.loads, so it holds JSON's types alone and
    needs no look before the fast check."""

    def __init__(self, schema: Mapping[str, Any], *, fast: bool = True) -> None:
        self.schema = schema
        self._fast = _fast_validator(schema) if fast else None
        self._authority: Any = None

    @property
    def has_fast_check(self) -> bool:
        return self._fast is not None

    def accepts(self, instance: Any, *, decoded: bool = False) -> bool:
        """The fast check alone: True only when it accepts (False says nothing)."""
        return (decoded or json_typed(instance)) and self.accepts_decoded(instance)

    def accepts_decoded(self, instance: Any) -> bool:
        """``accepts(instance, decoded=True)``, for an instance json.loads returned (the fold
        calls it for every record it reads)."""
        if self._fast is None:
            return False
        try:
            return self._fast.is_valid(instance) is True
        except Exception:  # a value it cannot read (a lone surrogate, ...): jsonschema decides
            return False

    def authority(self) -> Any:
        """jsonschema's validator, built (and jsonschema imported) on first use."""
        if self._authority is None:
            import jsonschema

            self._authority = jsonschema.Draft202012Validator(self.schema)
        return self._authority

    def is_valid(self, instance: Any, *, decoded: bool = False) -> bool:
        return self.accepts(instance, decoded=decoded) or bool(self.authority().is_valid(instance))

    def iter_errors(self, instance: Any, *, decoded: bool = False) -> Iterator[Any]:
        """jsonschema's errors (none when the fast check accepts)."""
        if self.accepts(instance, decoded=decoded):
            return iter(())
        return iter(self.authority().iter_errors(instance))


def draft_validator(schema: Mapping[str, Any]) -> SchemaCheck:
    """The check for one of this file's schemas (all draft 2020-12). Formats are not asserted
    (jsonschema's default): no schema here uses ``format``."""
    return SchemaCheck(schema)
