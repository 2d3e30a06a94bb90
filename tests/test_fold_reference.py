"""The fold against its frozen self: field by field, the same ledger from the same notes.

tests/reference_fold/ownership_independence.py is the reader as the approval-independence work
left it (commit 25165ec), before the fold was made fast (its records name their issue, v2), cut
to what this comparison runs: the oracle for "behaviour identical". Over generated trails
(tests/kit/trailgen.py) both folds must give equal ledgers, first fold and again (the second
reads from what the first remembered)."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pairgate.standalone import records
from pairgate.standalone.config import load_config
from pairgate.standalone.fold import fold
from pairgate.standalone.ledger import Ledger, Note
from tests.kit.names import FIXTURE_CONFIG, ISSUE
from tests.kit.trailgen import trail

REFERENCE = Path(__file__).resolve().parent / "reference_fold" / "ownership_independence.py"
REFERENCE_SHA256 = "9bff560629dc762305c69d7d1eb821bd661d6ee2b5c4941287488fdf0a720f15"
TRAILS = 300


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference_ownership", REFERENCE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


# Fields the fold's records gained after the reference was cut, by class: the reference cannot
# say what they hold, so the comparison leaves them out and test_generated_trails_fold_to_the_
# same_ledger checks them against the notes instead.
ADDED_SINCE = {"Event": frozenset({"author_id"})}


def field_names(value: Any) -> list[str] | None:
    """The fields of a record, ours (a NamedTuple) or the reference's (a dataclass), in order;
    None for anything else."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [f.name for f in dataclasses.fields(value)]
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return list(value._fields)
    return None


def plain(value: Any, added: dict[str, frozenset[str]] | None = None) -> Any:
    """A ledger as plain data, every record as (its class name, its fields by name), less the
    ``added`` fields of each class."""
    added = added or {}
    names = field_names(value)
    if names is not None:
        name = type(value).__name__
        left = added.get(name, frozenset())
        return (name, {f: plain(getattr(value, f), added) for f in names if f not in left})
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [plain(v, added) for v in value])
    if isinstance(value, dict):
        return ("dict", [(k, plain(v, added)) for k, v in value.items()])  # key order counts too
    return value


def compare(new: Ledger, old: Any) -> None:
    """Field by field, so a difference names the field it is in. Against the reference, the
    fields added since it was cut are left out; between two of today's ledgers, nothing is."""
    added = {} if isinstance(old, Ledger) else ADDED_SINCE
    names = field_names(new)
    assert names is not None and names == field_names(old)
    for name in names:
        ours, theirs = plain(getattr(new, name), added), plain(getattr(old, name))
        assert ours == theirs, name
    assert (new.label, new.names) == (old.label, old.names)


def test_the_reference_is_the_frozen_reader_unchanged() -> None:
    assert hashlib.sha256(REFERENCE.read_bytes()).hexdigest() == REFERENCE_SHA256


def test_generated_trails_fold_to_the_same_ledger(reference: ModuleType) -> None:
    env = {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}
    config, old_config = load_config(env), reference.load_config(env)
    seen: dict[str, int] = {}
    for seed in range(TRAILS):
        notes = trail(seed, size=5 + seed % 40)
        old = reference.fold(
            [reference.Note.from_api(n) for n in notes], config=old_config, issue=ISSUE
        )
        ours = [Note.from_api(n) for n in notes]
        records.forget_reads()
        first = fold(ours, config=config, issue=ISSUE)
        compare(first, old)
        authors = {n.id: n.author_id for n in ours}
        assert all(e.author_id == authors[e.note_id] for e in first.trail)
        compare(fold(ours, config=config, issue=ISSUE), old)
        for s in old.skipped:
            seen[s.kind] = seen.get(s.kind, 0) + 1
        seen["void"] = seen.get("void", 0) + sum(e.void is not None for e in old.trail)
        seen["effective"] = seen.get("effective", 0) + sum(e.void is None for e in old.trail)
        seen["breaks"] = seen.get("breaks", 0) + len(old.breaks)
        seen["edited"] = seen.get("edited", 0) + len(old.edited)
        seen["concurrent"] = seen.get("concurrent", 0) + len(old.concurrent)
        seen["approvals"] = seen.get("approvals", 0) + len(old.approvals)
        for event in ("accept", "decline", "handoff"):
            taken = [e for e in old.trail if e.event == event and e.void is None]
            seen[f"{event}s taken"] = seen.get(f"{event}s taken", 0) + len(taken)
        superseding = [e for e in old.trail if e.void is None and e.record.get("supersedes")]
        seen["supersedes taken"] = seen.get("supersedes taken", 0) + len(superseding)
        seen["pending at the end"] = seen.get("pending at the end", 0) + (old.offer is not None)
        seen["freezes"] = seen.get("freezes", 0) + len(old.freezes)
        seen["constraints"] = seen.get("constraints", 0) + len(old.constraints)
    # The trails reach every part of a ledger, or the comparison would prove little.
    for part in ("forged", "malformed", "tampered", "duplicate", "void", "effective", "breaks"):
        assert seen.get(part, 0) >= 20, (part, seen)
    for part in ("edited", "concurrent", "approvals", "freezes", "constraints"):
        assert seen.get(part, 0) >= 5, (part, seen)
    for part in ("accepts taken", "declines taken", "handoffs taken", "pending at the end"):
        assert seen.get(part, 0) >= 20, (part, seen)
    assert seen.get("supersedes taken", 0) >= 5, seen


def test_what_the_reader_remembers_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    notes = [Note.from_api(n) for n in trail(7, size=40)]
    records.forget_reads()
    first = fold(notes, config=config, issue=ISSUE)
    one_issue = _held()
    assert 20 <= one_issue[0] <= 40
    assert records._READS[_ref(ISSUE)].unsealed  # its tampered and malformed notes, kept apart
    # Bounds below one issue's notes: the issue read last is remembered whole, and every other
    # forgotten. (The same notes under other issue numbers: read alike, skipped as replayed.)
    monkeypatch.setattr(records, "_READS_MAX", 5)
    monkeypatch.setattr(records, "_READS_MAX_CHARS", 4000)
    records.forget_reads()
    for issue in (ISSUE + 1, ISSUE + 2, ISSUE):
        again = fold(notes, config=config, issue=issue)
        assert list(records._READS) == [_ref(issue)]
        assert _held() == one_issue
        assert records._held == list(one_issue)  # what it counts is what it holds
    compare(again, first)  # forgetting changes nothing but the time
    # The characters alone bound it too, whichever kind of note holds them.
    monkeypatch.setattr(records, "_READS_MAX", 65536)
    monkeypatch.setattr(records, "_READS_MAX_CHARS", one_issue[1] * 5 // 2)
    records.forget_reads()
    for issue in (ISSUE + 1, ISSUE + 2, ISSUE + 1, ISSUE + 3):
        fold(notes, config=config, issue=issue)
    # Two issues fit: the one read least recently (ISSUE + 2) was forgotten first.
    assert list(records._READS) == [_ref(ISSUE + 1), _ref(ISSUE + 3)]
    assert _held() == (2 * one_issue[0], 2 * one_issue[1])


def test_a_second_fold_reads_nothing_afresh_however_long_the_ledger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No cliff: a ledger longer than the bound is remembered whole, so folding it again finds
    every note, where starting afresh when full would read it all again on every fold."""
    config = load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    notes = [Note.from_api(n) for n in trail(11, size=120)]
    monkeypatch.setattr(records, "_READS_MAX", 10)
    parsed = records._parsed
    calls: list[str] = []

    def counted(body: str) -> Any:
        calls.append(body)
        return parsed(body)

    monkeypatch.setattr(records, "_parsed", counted)
    records.forget_reads()
    first = fold(notes, config=config, issue=ISSUE)
    read_first = len(calls)
    assert read_first > 50
    assert _held()[0] == read_first
    calls.clear()
    compare(fold(notes, config=config, issue=ISSUE), first)
    assert calls == []
    # The bound holds across issues: reading another forgets this one.
    fold(notes[:30], config=config, issue=ISSUE + 1)
    assert list(records._READS) == [_ref(ISSUE + 1)]
    assert records._held == list(_held())


def _ref(issue: int) -> str:
    """An issue's key in what the reader remembers: its tracker reference."""
    return f"acme/tracker#{issue}"


def _held() -> tuple[int, int]:
    """(notes, characters) the reader remembers, counted from what it holds."""
    count = chars = 0
    for reads in records._READS.values():
        unsealed = reads.unsealed.values()
        count += len(reads.sealed) + len(unsealed)
        chars += sum(map(len, reads.sealed.values()))
        chars += sum(len(body) + len(json_or_why) for body, _, json_or_why in unsealed)
    return count, chars


def test_a_note_read_again_with_another_body_is_read_afresh(reference: ModuleType) -> None:
    """What the reader remembers is keyed by note id, so a note edited between two folds (or
    another instance's note of the same id) must not be given its old body's reading."""
    env = {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}
    config, old_config = load_config(env), reference.load_config(env)
    for seed in range(40):
        notes = trail(seed, size=12)
        records.forget_reads()
        fold([Note.from_api(n) for n in notes], config=config, issue=ISSUE)
        # The same ids, each record's human text edited: its digest no longer matches.
        changed = [
            {**n, "body": "Edited. " + n["body"]} if records.MARKER_OPEN in n["body"] else n
            for n in notes
        ]
        new = fold([Note.from_api(n) for n in changed], config=config, issue=ISSUE)
        old = reference.fold(
            [reference.Note.from_api(n) for n in changed], config=old_config, issue=ISSUE
        )
        compare(new, old)
        assert not new.trail  # nothing read from the first bodies' answers
        # The edits undone, then made again: each body gets its own reading back, whichever of
        # the two (a record that reads, a tampered or malformed one) it was remembered as.
        original = reference.fold(
            [reference.Note.from_api(n) for n in notes], config=old_config, issue=ISSUE
        )
        compare(fold([Note.from_api(n) for n in notes], config=config, issue=ISSUE), original)
        compare(fold([Note.from_api(n) for n in changed], config=config, issue=ISSUE), old)
        records.forget_reads()  # and the other way: first read tampered, then as written
        compare(fold([Note.from_api(n) for n in changed], config=config, issue=ISSUE), old)
        compare(fold([Note.from_api(n) for n in notes], config=config, issue=ISSUE), original)
