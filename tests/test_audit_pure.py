"""The audit's pure parts: the cut-off fold, the window, a merge it cannot date, and which
audit issues count as already filed."""

from __future__ import annotations

import pytest

from pairgate.standalone.audit import LedgersAt, MergedMr, judge_merged, merged_listing_params
from pairgate.standalone.audit_door import audit_window
from pairgate.standalone.audit_issues import audit_marker, filed_findings
from pairgate.standalone.config import Config
from pairgate.standalone.errors import UsageError
from pairgate.standalone.ledger import Note
from tests.kit.trail import Trail

HEAD = "c" * 40
MERGED = {
    "iid": 3,
    "title": "Fix",
    "description": "Related to acme/tracker#5",
    "author": {"id": 10},
    "source_branch": "fix",
    "target_branch": "main",
    "diff_refs": {"base_sha": "c" * 40, "start_sha": "c" * 40, "head_sha": "c" * 40},
    "labels": [],
    "sha": HEAD,
    "state": "merged",
    "references": {"full": "acme/app!3"},
    "merged_at": "2026-01-01T00:00:00.000Z",
    "merged_by": {"username": "maintainer"},
    "merge_user": {"username": "maintainer"},
    "source_project_id": 2,
    "target_project_id": 2,
}


def unedited(notes: dict[int, list[Note]]) -> dict[int, str | None]:
    """GitLab's answer for notes nobody edited: lastEditedAt null, for every note."""
    return {n.id: None for listed in notes.values() for n in listed}


def at(stamp: str, notes: list[Note]) -> list[Note]:
    return [n._replace(created_at=stamp, updated_at=stamp) for n in notes]


def test_only_the_notes_written_by_the_merge_count(config: Config) -> None:
    trail = Trail(config, issue=5, first_id=1000)
    trail.claim("acme-lead")
    before = at("2025-12-31T23:59:59.999Z", trail.notes)
    offer = trail.handoff("acme-lead", "acme-review", sha=HEAD, mr=("acme/app", 3))
    trail.accept("acme-review", offer, "acme-lead", role="review")
    trail.approve("acme-review", "acme-lead", sha=HEAD, mr=("acme/app", 3))
    late = at("2026-01-01T00:00:00.001Z", trail.notes[1:])
    merged = MergedMr.from_api(MERGED)
    notes = {5: before + late}
    judged = judge_merged(merged, config=config, families=(), notes=notes, frozen=(),
                          ledgers_at=LedgersAt(notes, config), edits=unedited(notes))  # fmt: skip
    assert (judged.code, judged.finding, judged.decided) == ("never-approved", True, True)
    on_time = {5: before + at("2026-01-01T00:00:00.000Z", trail.notes[1:])}  # at the merge: in
    judged = judge_merged(merged, config=config, families=(), notes=on_time, frozen=(),
                          ledgers_at=LedgersAt(on_time, config), edits=unedited(on_time))  # fmt: skip
    assert (judged.code, judged.finding) == ("approved", False)


def test_a_note_whose_time_does_not_parse_never_counts(config: Config) -> None:
    trail = Trail(config, issue=5, first_id=1000)
    trail.reviewed(sha=HEAD, mr=("acme/app", 3))
    notes = {5: at("yesterday", trail.notes)}
    merged = MergedMr.from_api(MERGED)
    judged = judge_merged(merged, config=config, families=(), notes=notes, frozen=(),
                          ledgers_at=LedgersAt(notes, config), edits=unedited(notes))  # fmt: skip
    assert judged.code == "unclaimed" and "no ownership record" in judged.why


def test_a_merge_gitlab_gives_no_time_for_is_undecided(config: Config) -> None:
    merged = MergedMr.from_api({**MERGED, "merged_at": None})
    judged = judge_merged(merged, config=config, families=(), notes={}, frozen=(),
                          ledgers_at=LedgersAt({}, config), edits={})  # fmt: skip
    assert (judged.code, judged.decided, judged.finding) == ("merged-at-unknown", False, True)


def test_both_time_filters_are_sent() -> None:
    assert merged_listing_params(0.0) == {
        "state": "merged",
        "updated_after": "1970-01-01T00:00:00Z",
        "merged_after": "1970-01-01T00:00:00Z",
    }


@pytest.mark.parametrize(
    ("since", "days", "start"),
    [
        ("2026-01-02", None, 1767312000.0),
        ("2026-01-02T00:00:00Z", None, 1767312000.0),
        ("2026-01-02T01:00:00+01:00", None, 1767312000.0),
        (None, None, 1000000.0 - 7 * 86400),
        (None, 2, 1000000.0 - 2 * 86400),
    ],
)
def test_the_window(since: str | None, days: int | None, start: float) -> None:
    assert audit_window(since, days, 1000000.0) == start


@pytest.mark.parametrize(("since", "days"), [("2026-13-01", None), (None, -1), ("", None)])
def test_a_window_that_cannot_be_read_is_a_usage_error(since: str | None, days: int | None) -> None:
    with pytest.raises(UsageError):
        audit_window(since, days, 0.0)


def issue(
    author: int, description: str, created: str = "2026-01-02T00:00:00Z", iid: int = 9
) -> dict:
    return {"iid": iid, "author": {"id": author}, "description": description, "created_at": created}


def test_which_audit_issues_count_as_filed(config: Config) -> None:
    merged = MergedMr.from_api(MERGED)
    finding = judge_merged(merged, config=config, families=(), notes={5: []}, frozen=(),
                           ledgers_at=LedgersAt({5: []}, config), edits={})  # fmt: skip
    marker = audit_marker(finding)
    key = ("acme/app", 3, HEAD)
    assert filed_findings([issue(10, f"text\n{marker}\n")], config) == {key: (9, 1767312000.0)}
    assert filed_findings([issue(14, marker)], config) == {}  # not a ledger author
    assert filed_findings([issue(10, f"{marker}\n{marker}")], config) == {}  # two markers
    assert filed_findings([issue(10, marker.replace(HEAD, "d" * 40))], config) != {}  # its own key
    assert key not in filed_findings([issue(10, marker.replace(HEAD, "d" * 40))], config)
    assert filed_findings([issue(10, "<!-- pairgate-audit {not json} -->")], config) == {}
    assert filed_findings([issue(10, marker, created="garbage")], config) == {}
    upper = marker.replace("acme/app", "ACME/App")
    assert key in filed_findings([issue(10, upper)], config)  # paths compare without case
