"""The fast schema check (jsonschema-rs) against its authority (jsonschema), instance by instance:
over thousands of generated valid and mutated instances of every schema the project checks, it
never accepts what jsonschema rejects, and accepts all that jsonschema accepts but for three
differences known by design (_known_difference). Without the library, jsonschema alone decides,
with the same answers and messages."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from random import Random
from typing import Any

import jsonschema
import pytest

from pairgate.standalone import records
from pairgate.standalone.config import CONFIG_SCHEMA, Config
from pairgate.standalone.fold import fold
from pairgate.standalone.records import (
    RECORD_FIELDS,
    _event_schema,
    compose_note,
    schema_problem,
)
from pairgate.standalone.schema_check import PYTHON_SPACE, SchemaCheck, fast_pattern, json_typed
from pairgate.standalone.scope import ROSTER_SCHEMA
from tests.kit.names import FIXTURE_CONFIG, ISSUE, ROOT
from tests.kit.run import run_program
from tests.kit.schemagen import mutations, nested, valid
from tests.kit.trail import Trail

pytest.importorskip("jsonschema_rs", reason="the fast check's library (the fast extra)")

SCHEMAS: dict[str, dict[str, Any]] = {
    **{
        f"{kind}/v{version}/{event}": _event_schema(version, event, fields)
        for kind, versions in RECORD_FIELDS.items()
        for version, events in versions.items()
        for event, fields in events.items()
    },
    # RECORD_SCHEMAS (each kind's events under if/then on v and event) is only published for
    # readers; every check the code makes is one of the per-event schemas above.
    "config": CONFIG_SCHEMA,
    "roster": ROSTER_SCHEMA,
}
MUTATED = 2500  # at least this many mutated instances per schema, of at least VALID valid ones
VALID = 3


def _instances(name: str) -> Iterator[tuple[Any, bool]]:
    """(instance, generated valid?) for one schema, the same every run."""
    rng = Random(name)
    schema = SCHEMAS[name]
    mutated = made = 0
    while made < VALID or mutated < MUTATED:
        instance = valid(schema, rng)
        made += 1
        yield instance, True
        for changed in mutations(instance, rng):
            mutated += 1
            yield changed, False
    # Deep, but shallow enough for jsonschema's own messages (it recurses through a repr).
    yield nested(200), False


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _known_difference(instance: Any) -> bool:
    """Where the fast check may decline what jsonschema accepts, by design: a value of a type
    JSON has not (a str subclass, say), a string that ends in a newline (Python's $ matches
    before it, ECMA-262's does not), a lone surrogate (no UTF-8 encoder takes one)."""
    return not json_typed(instance) or any(
        text.endswith("\n") or any("\ud800" <= c <= "\udfff" for c in text)
        for text in _strings(instance)
    )


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_fast_check_never_accepts_what_jsonschema_rejects(name: str) -> None:
    schema = SCHEMAS[name]
    check = SchemaCheck(schema)
    assert check.has_fast_check, "every schema here has a fast check"
    authority = jsonschema.Draft202012Validator(schema)
    counts = {"valid": 0, "mutated": 0, "rejected": 0, "fast missed": 0}
    for instance, generated_valid in _instances(name):
        truth = authority.is_valid(instance)
        fast = check.accepts(instance)
        assert truth or not fast, f"{name}: the fast check accepted {instance!r:.300}"
        if generated_valid:
            assert truth, f"{name}: the generator built an invalid {instance!r:.300}"
        # ... and accepts all jsonschema accepts, but for the differences known by design.
        if truth and not fast:
            assert _known_difference(instance), f"{name}: the fast check missed {instance!r:.300}"
        # As the fold gives it: decoded from JSON, with no look at the types first.
        if json_typed(instance) and check.accepts(instance, decoded=True) != fast:
            raise AssertionError(f"{name}: decoded=True changed the answer for {instance!r:.300}")
        counts["valid" if generated_valid else "mutated"] += 1
        counts["rejected"] += not truth
        counts["fast missed"] += truth and not fast
    assert counts["valid"] >= VALID and counts["mutated"] >= MUTATED, counts
    assert counts["rejected"] >= 1000, counts
    assert check.is_valid(instance) == authority.is_valid(instance)


@pytest.mark.parametrize("name", ["ownership/v2/handoff", "config", "roster"])
def test_a_value_nested_as_deep_as_json_goes_is_declined_without_harm(name: str) -> None:
    check = SchemaCheck(SCHEMAS[name])
    deep = nested(990)
    assert not check.accepts(deep)
    assert not check.accepts({"mr": deep, "role": deep}, decoded=True)


def test_a_tuple_is_no_array_so_the_fast_check_sees_only_json_types() -> None:
    check = SchemaCheck(ROSTER_SCHEMA)
    family = {"name": "renovate", "author_id": 5, "branch_prefix": "renovate/", "cites_issue": None}
    assert check.accepts([family])
    # jsonschema-rs takes a tuple for an array; jsonschema does not. Given one with no look at
    # its types (decoded=True), the fast check would accept what jsonschema rejects.
    assert check.accepts((family,), decoded=True)
    assert not check.accepts((family,))
    assert not check.is_valid((family,))
    assert [e.message for e in check.iter_errors((family,))] == [
        e.message for e in jsonschema.Draft202012Validator(ROSTER_SCHEMA).iter_errors((family,))
    ]


def test_python_space_is_pythons_backslash_s() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert re.findall(f"[{PYTHON_SPACE}]", every) == re.findall(r"\s", every)


@pytest.mark.parametrize(
    ("pattern", "given"),
    [
        ("^[0-9a-f]{40}$", "^[0-9a-f]{40}$"),
        (r"^(board|x:[1-9])$(?!\n)", r"^(board|x:[1-9])$(?!\n)"),
        (r"^[^/~]", r"^[^/~]"),
        (r"\S", f"[^{PYTHON_SPACE}]"),
        (r"a\sb", f"a[{PYTHON_SPACE}]b"),
    ],
)
def test_patterns_both_dialects_read_alike_are_given_as_they_are(pattern: str, given: str) -> None:
    assert fast_pattern(pattern) == given


@pytest.mark.parametrize("pattern", [r"\d", r"\w+", r"\bword", r"(a)\1", "é", r"[\S]", "(?i)abc"])
def test_a_pattern_either_dialect_may_read_otherwise_leaves_its_schema_to_jsonschema(
    pattern: str,
) -> None:
    assert fast_pattern(pattern) is None
    check = SchemaCheck({"type": "object", "properties": {"a": {"pattern": pattern}}})
    assert not check.has_fast_check
    assert check.is_valid({"a": "x"}) == bool(re.search(pattern, "x"))


def test_a_pattern_inside_a_const_is_data_not_a_schema() -> None:
    schema = {"const": {"pattern": r"\d"}, "properties": {"enum": {"pattern": r"\S"}}}
    check = SchemaCheck(schema)
    assert check.has_fast_check
    assert check.accepts({"pattern": r"\d"}) and not check.accepts({"pattern": "[0-9]"})


# -- without the library: jsonschema alone, the same answers and the same messages -------------


@pytest.fixture
def without_fast_library(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As in a CI image with only requests, jsonschema and pyyaml: jsonschema_rs not importable."""
    monkeypatch.setitem(sys.modules, "jsonschema_rs", None)
    records._CHECKS.clear()
    records.forget_reads()
    yield
    records._CHECKS.clear()
    records.forget_reads()


def _record_cases() -> list[tuple[str, Any]]:
    rng = Random("records")
    cases = []
    for kind, versions in RECORD_FIELDS.items():
        for version, events in versions.items():
            for event, fields in events.items():
                record = valid(_event_schema(version, event, fields), rng)
                cases.append((kind, record))
                cases += [(kind, m) for m in mutations(record, rng) if json_typed(m)]
    return cases


def test_without_the_library_every_verdict_and_message_is_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cases = _record_cases()
    assert len(cases) > 1500
    assert records._event_validator("ownership", 2, "claim").has_fast_check
    with_library = [schema_problem(kind, r) for kind, r in cases]
    with monkeypatch.context() as hidden:
        hidden.setitem(sys.modules, "jsonschema_rs", None)
        records._CHECKS.clear()
        try:
            assert not records._event_validator("ownership", 2, "claim").has_fast_check
            without = [schema_problem(kind, r) for kind, r in cases]
        finally:
            records._CHECKS.clear()
    assert with_library == without
    assert sum(p is None for p in without) >= 20 and sum(p is not None for p in without) > 1500


def test_without_the_library_the_fold_reads_the_same(
    config: Config, without_fast_library: None
) -> None:
    trail = Trail(config)
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review")
    trail.accept("acme-review", offer, "acme-lead")
    body, _ = compose_note(
        "ownership",
        {
            "event": "release",
            "agent": "acme-review",
            "write_id": "0" * 32,
            "session": "s",
            "prev": None,
            "role": "review",
            "issue": f"acme/tracker#{ISSUE}",
        },
        "x",
    )
    trail.note(body.replace('"role":"review"', '"role":"boss"'))
    ledger = fold(trail.notes, config=config, issue=ISSUE)
    assert ledger.holder == "acme-review"
    assert [s.reason for s in ledger.skipped] == [
        "schema: role: 'boss' is not one of ['lead', 'review']"
    ]
    assert "jsonschema" in sys.modules


FLAT_READER = """
import json, os, sys
sys.modules["jsonschema_rs"] = None  # as in an image without the fast extra
import ownership
config = ownership.load_config(os.environ)
notes = [ownership.Note(**n) for n in json.loads(sys.stdin.read())]
ledger = ownership.fold(notes, config=config, issue=4)
print(json.dumps({"holder": ledger.holder, "skipped": [s.reason for s in ledger.skipped],
                  "fast": ownership._event_validator("ownership", 2, "claim").has_fast_check}))
"""


def test_the_flat_reader_runs_without_the_library(config: Config, tmp_path: Path) -> None:
    trail = Trail(config)
    trail.claim("acme-lead")
    trail.note(trail.notes[0].body.replace('"role":"lead"', '"role":"boss"'))
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "ownership.py").write_bytes((ROOT / "pairgate" / "ownership.py").read_bytes())
    (flat / "read.py").write_text(FLAT_READER)
    notes = json.dumps([n._asdict() for n in trail.notes])
    result = run_program(
        [sys.executable, "-B", "read.py"],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG), "PYTHONPATH": ""},
        cwd=flat,
        stdin=notes,
    )
    assert result.code == 0, result.err
    assert json.loads(result.out) == {
        "holder": "acme-lead",
        "skipped": ["schema: role: 'boss' is not one of ['lead', 'review']"],
        "fast": False,
    }
