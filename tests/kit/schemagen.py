"""Instances of a JSON schema for the differential tests: valid ones built from the schema, then
mutations of each, aimed where two validators are likeliest to read a value differently (types
Python blurs, such as bool for int and tuple for list; whitespace and line ends around patterns;
lengths at their bounds; strings no UTF-8 encoder takes).

It knows the keywords this project's schemas use: type, const, enum, pattern, minLength,
maxLength, minimum, maximum, items, minItems, uniqueItems, required, properties,
additionalProperties, and allOf of if/then (a kind's schema, whose events it picks among).
"""

from __future__ import annotations

import math
import re
import re._parser as sre  # the parser of the patterns themselves: a test aid only
import sys
from collections.abc import Iterator
from random import Random
from typing import Any

# Characters where regex dialects and Unicode tables differ: C0 controls Python calls whitespace
# (U+001C-U+001F), NEL, NBSP, the BOM ECMA-262 calls whitespace, ideographic space, a zero-width
# space nobody calls whitespace, line ends, NUL and a non-BMP letter. (A lone surrogate, which no
# UTF-8 encoder takes, is among the mutations only.)
TRICKY = "\x1c\x1f\x85\xa0\ufeff\u3000\u200b\u2028\t\n\r\x0b\x00é𝔘"
ALPHABET = "abcXYZ019._-/:!~ " + TRICKY


class Str(str):
    """A str subclass: JSON has no such type; Python's validators may or may not take it."""


def _in_class(ch: str, items: list[Any]) -> bool:
    negate = False
    hit = False
    for op, arg in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            hit |= ch == chr(arg)
        elif op is sre.RANGE:
            hit |= arg[0] <= ord(ch) <= arg[1]
        elif op is sre.CATEGORY:
            hit |= bool(re.fullmatch(_CATEGORY[arg], ch))
        else:
            raise NotImplementedError(op)
    return hit != negate


_CATEGORY = {
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S",
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_NOT_WORD: r"\W",
}
_POOL = [chr(c) for c in range(32, 127)] + list(TRICKY)


def _emit(parsed: Any, rng: Random, out: list[str]) -> None:
    for op, arg in parsed:
        if op is sre.LITERAL:
            out.append(chr(arg))
        elif op is sre.IN:
            out.append(rng.choice([c for c in _POOL if _in_class(c, arg)]))
        elif op is sre.CATEGORY:
            out.append(rng.choice([c for c in _POOL if re.fullmatch(_CATEGORY[arg], c)]))
        elif op is sre.ANY:
            out.append(rng.choice([c for c in _POOL if c != "\n"]))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, sub = arg
            high = min(high, low + 6) if high is not sre.MAXREPEAT else low + 6
            for _ in range(rng.randint(low, high)):
                _emit(sub, rng, out)
        elif op is sre.SUBPATTERN:
            _emit(arg[-1], rng, out)
        elif op is sre.BRANCH:
            _emit(rng.choice(arg[1]), rng, out)
        elif op in (sre.AT, sre.ASSERT_NOT):
            continue  # anchors and (?!\n) at the end: nothing to write
        else:
            raise NotImplementedError(op)


def from_pattern(pattern: str, rng: Random) -> str:
    """A string ``re.search(pattern, ...)`` matches: a match, plus free text around an
    unanchored one."""
    out: list[str] = []
    _emit(sre.parse(pattern), rng, out)
    text = "".join(out)
    if not pattern.startswith("^") and rng.random() < 0.5:
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 3))) + text
    if not pattern.endswith(("$", "$(?!\\n)")) and rng.random() < 0.5:
        text += "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 3)))
    return text


def _fits(schema: dict[str, Any], text: str) -> bool:
    return schema.get("minLength", 0) <= len(text) <= schema.get("maxLength", math.inf)


def valid(schema: Any, rng: Random) -> Any:
    """One instance the schema accepts (by construction; the tests check it with jsonschema)."""
    if isinstance(schema, bool):  # ``true``: anything; a record's issue is a string
        return "acme/tracker#4"
    if "oneOf" in schema:  # the branches here are of distinct types: any one fits alone
        return valid(rng.choice(schema["oneOf"]), rng)
    if "allOf" in schema and "then" in schema["allOf"][0]:
        return valid(rng.choice(schema["allOf"])["then"], rng)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    types = schema.get("type")
    kind = rng.choice(types) if isinstance(types, list) else types
    if kind == "null":
        return None
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "integer":
        low = schema.get("minimum", -5)
        return rng.randint(low, schema.get("maximum", low + 10 ** rng.randint(1, 12)))
    if kind == "string":
        for _ in range(50):
            if "pattern" in schema:
                text = from_pattern(schema["pattern"], rng)
            else:
                size = rng.randint(schema.get("minLength", 0), min(schema.get("maxLength", 12), 12))
                text = "".join(rng.choice(ALPHABET) for _ in range(size))
            if _fits(schema, text):
                return text
        raise AssertionError(f"no string for {schema}")
    if kind == "array":
        least = max(schema.get("minItems", 0), schema.get("items", {}).get("type") == "object")
        count = rng.randint(least, least + 3)
        items = [valid(schema.get("items", {"type": "integer"}), rng) for _ in range(count)]
        if schema.get("uniqueItems"):
            items = list(dict.fromkeys(items))
        return items
    if kind == "object":
        return {name: valid(sub, rng) for name, sub in schema["properties"].items()}
    raise NotImplementedError(schema)


def _string_variants(value: str, rng: Random) -> list[Any]:
    spot = rng.randint(0, len(value))
    return [
        value + "\n",
        "\n" + value,
        " " + value,
        value + " ",
        "",
        value + rng.choice(TRICKY),
        rng.choice(TRICKY) + value,
        value[:spot] + rng.choice(TRICKY) + value[spot:],
        rng.choice(TRICKY),
        rng.choice(TRICKY) * 3,
        value.upper(),
        value + value,
        value[:-1],
        value + "a" * rng.choice((1, 50, 50_001)),
        "\ud800" + value,
        Str(value),
    ]


_OTHERS: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    1.0,
    2.5,
    float("nan"),
    float("inf"),
    10**30,
    -(10**30),
    10**400,
    "1",
    "",
    [],
    (),
    {},
    ["a"],
    ("a",),
    {"a": 1},
    {1: 2},
    b"ab",
    {1, 2},
]


def value_mutations(value: Any, rng: Random) -> list[Any]:
    """Values near ``value``, of its type and of every other."""
    out = list(_OTHERS)
    if isinstance(value, str):
        out += _string_variants(value, rng)
    elif isinstance(value, bool):
        out += [int(value), float(value)]
    elif isinstance(value, int):
        out += [
            value + 1,
            value - 1,
            -value,
            float(value),
            value + 0.5,
            value * 10**20,
            bool(value),
        ]
    elif isinstance(value, list):
        out += [tuple(value), value + value, value[:-1], [*value, value[0]] if value else [None]]
        out += [[*value[:i], m, *value[i + 1 :]] for i in range(len(value)) for m in _OTHERS[:14]]
        out += [[rng.choice(_string_variants(v, rng)) if isinstance(v, str) else v for v in value]]
        out += [
            [*value[:i], m, *value[i + 1 :]]
            for i, item in enumerate(value)
            if isinstance(item, dict)
            for m in mutations(item, rng)
        ]
    elif isinstance(value, dict):
        out += list(mutations(value, rng, depth=1))
    return out


def mutations(instance: Any, rng: Random, *, depth: int = 0) -> Iterator[Any]:
    """Instances one change away from ``instance`` (a few changes away, sometimes)."""
    yield from _OTHERS
    if not isinstance(instance, dict):
        yield from value_mutations(instance, rng)
        return
    keys = list(instance)
    for key in keys:
        yield {k: v for k, v in instance.items() if k != key}  # a key missing
        for changed in value_mutations(instance[key], rng):
            yield {**instance, key: changed}
    yield {**instance, "extra": 1}
    yield {**instance, 1: 1}
    yield dict(reversed(list(instance.items())))
    yield [instance]
    if depth == 0 and keys:
        for _ in range(8):  # two or three changes at once
            out = dict(instance)
            for key in rng.sample(keys, min(len(keys), rng.randint(2, 3))):
                out[key] = rng.choice(value_mutations(instance[key], rng))
            yield out


def nested(depth: int) -> Any:
    """A list nested ``depth`` deep (json.loads goes to about sys.getrecursionlimit())."""
    value: Any = 1
    for _ in range(min(depth, sys.getrecursionlimit() - 50)):
        value = [value]
    return value
