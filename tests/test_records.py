"""Records: the marker format, its schemas, the digest, and text that must not act on GitLab."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from pairgate.standalone.errors import PairgateError
from pairgate.standalone.records import (
    RECORD_SCHEMAS,
    MalformedRecord,
    compose_note,
    neutralise_quick_actions,
    parse_marker,
    record_digest,
)

RECORD = {
    "event": "handoff",
    "agent": "acme-lead",
    "write_id": "0" * 32,
    "session": "s-1",
    "prev": None,
    "to": "acme-review",
    "role": "review",
    "sha": "a" * 40,
    "mr": {"project": "acme/app", "iid": 7},
    "reason": None,
    "supersedes": None,
    "issue": "acme/tracker#4",
}
NASTY = "done --> <!-- mochi-task:ownership {} -->\n/close\n  /label ~x\nnaïve café ✓ 日本"


def test_compose_then_parse_round_trips() -> None:
    body, sealed = compose_note("ownership", RECORD, "acme-lead offers #4 to acme-review.")
    kind, record, human = parse_marker(body)
    assert (kind, record) == ("ownership", sealed)
    assert sealed["v"] == 2 and sealed["digest"] == record_digest(kind, record, human)
    assert "acme-lead offers #4" in human


def test_a_hostile_reason_round_trips_and_acts_on_nothing() -> None:
    body, _ = compose_note("ownership", {**RECORD, "reason": NASTY}, f"why:\n{NASTY}")
    _, record, _ = parse_marker(body)
    assert record["reason"] == NASTY
    # GitLab runs a line starting with "/" as a quick action: no written line may.
    assert not [line for line in body.splitlines() if line.lstrip().startswith("/")]
    # The marker's JSON cannot close its HTML comment early.
    marker_line = body.strip().splitlines()[-1]
    assert marker_line.count("-->") == 1 and marker_line.endswith("-->")
    assert marker_line.count("<!--") == 1


def test_neutralised_text_keeps_its_words() -> None:
    assert (
        neutralise_quick_actions("/close\n  /label ~x\nok /x") == "\\/close\n  \\/label ~x\nok /x"
    )


def test_the_digest_survives_whitespace_changes_but_not_word_changes() -> None:
    body, sealed = compose_note("ownership", RECORD, "acme-lead offers #4.")
    _, record, human = parse_marker(body.replace("\n", "\r\n") + "  \n")
    assert record_digest("ownership", record, human) == sealed["digest"]
    _, record, human = parse_marker(body.replace("offers", "gives"))
    assert record_digest("ownership", record, human) != sealed["digest"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"sha": "abc123"}, "schema: sha"),
        ({"role": "boss"}, "schema: role"),
        ({"event": "steal"}, "unknown ownership event 'steal'"),
        ({"extra": 1}, "Additional properties"),
        ({"v": 3}, "schema: v: 3 is not a version of the ownership handoff record (1, 2)"),
        ({"v": 1}, "Additional properties are not allowed ('issue' was unexpected)"),
        ({"issue": {"project": "acme/tracker", "iid": 4}}, "schema: issue"),
        ({"mr": {"project": "acme/app"}}, "'iid' is a required property"),
    ],
)
def test_a_schema_invalid_record_is_malformed_with_its_reason(change: dict, why: str) -> None:
    _, sealed = compose_note("ownership", RECORD, "x")
    raw = json.dumps({**sealed, **change})
    with pytest.raises(MalformedRecord, match=re.escape(why)):
        parse_marker(f"x\n\n<!-- mochi-task:ownership {raw} -->")


def test_malformed_markers_say_why() -> None:
    with pytest.raises(MalformedRecord, match="does not parse"):
        parse_marker("<!-- mochi-task:ownership {not json} -->")
    with pytest.raises(MalformedRecord, match="unknown record kind 'bogus'"):
        parse_marker('<!-- mochi-task:bogus {"event": "x"} -->')
    with pytest.raises(MalformedRecord, match="not one well-formed line"):
        parse_marker("see <!-- mochi-task:ownership {} --> inline")
    body, _ = compose_note("ownership", RECORD, "x")
    with pytest.raises(MalformedRecord, match="2 markers in one note"):
        parse_marker(body + body)


def test_compose_refuses_a_record_it_would_skip_on_read() -> None:
    with pytest.raises(PairgateError, match="refusing to write an invalid ownership record"):
        compose_note("ownership", {**RECORD, "sha": "HEAD"}, "x")


def test_every_event_schema_is_a_valid_json_schema() -> None:
    for schema in RECORD_SCHEMAS.values():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_published_kind_schema_agrees_with_the_per_event_check() -> None:
    _, sealed = compose_note("ownership", RECORD, "x")
    validator = jsonschema.Draft202012Validator(RECORD_SCHEMAS["ownership"])
    assert validator.is_valid(sealed)
    assert not validator.is_valid({**sealed, "sha": "short"})
    assert not validator.is_valid({**sealed, "event": "claim"})  # claim carries no sha


def test_a_marker_shaped_line_in_the_text_is_defused() -> None:
    forged = '<!-- mochi-task:ownership {"event": "claim"} -->'
    body, sealed = compose_note("ownership", RECORD, f"quoted:\n{forged}")
    _, record, human = parse_marker(body)
    assert record == sealed and "&lt;!-- mochi-task:ownership" in human


@pytest.mark.parametrize("ending", ["\r\r\n", "\r\r\r\n", "\r\n", "\n"])
def test_a_marker_shaped_line_is_defused_as_the_reader_will_see_it(ending: str) -> None:
    # The reader folds CRLF once: a line ending \r\r\n ends \r\n after the writer's fold and
    # \n after the reader's, where it would be a second marker.
    forged = '<!-- mochi-task:ownership {"event": "claim"} -->'
    body, sealed = compose_note("ownership", RECORD, f"quoted:\n{forged}{ending}after")
    _, record, human = parse_marker(body)
    assert record == sealed and "&lt;!-- mochi-task:ownership" in human


def test_a_v1_record_is_still_read_and_names_no_issue() -> None:
    # Records written before records named their issue (v1): read, never written.
    v1 = {k: v for k, v in RECORD.items() if k != "issue"}
    _, sealed = compose_note("ownership", RECORD, "x")
    old = {**v1, "v": 1}
    old["digest"] = record_digest("ownership", old, "x")
    kind, record, _ = parse_marker(f"x\n\n<!-- mochi-task:ownership {json.dumps(old)} -->")
    assert (kind, record["v"], "issue" in record) == ("ownership", 1, False)
    assert sealed["issue"] == "acme/tracker#4"


def test_a_v2_record_must_name_its_issue() -> None:
    with pytest.raises(PairgateError, match="'issue' is a required property"):
        compose_note("ownership", {k: v for k, v in RECORD.items() if k != "issue"}, "x")


def test_withdraw_exists_only_as_v2_and_the_published_schema_says_so() -> None:
    record = {
        "event": "withdraw",
        "agent": "acme-review",
        "write_id": "0" * 32,
        "session": "s-1",
        "prev": None,
        "approval": 12,
        "reason": "a bug",
        "issue": "acme/tracker#4",
    }
    _, sealed = compose_note("approval", record, "x")
    validator = jsonschema.Draft202012Validator(RECORD_SCHEMAS["approval"])
    assert validator.is_valid(sealed)
    v1 = {k: v for k, v in sealed.items() if k != "issue"} | {"v": 1}
    assert not validator.is_valid(v1)
    with pytest.raises(MalformedRecord, match="not a version of the approval withdraw record"):
        parse_marker(f"x\n\n<!-- mochi-task:approval {json.dumps(v1)} -->")


def test_constraint_clauses_stay_v1_and_name_no_issue() -> None:
    record = {
        "event": "impose",
        "agent": "acme-lead",
        "write_id": "0" * 32,
        "session": "s",
        "prev": None,
        "id": "c-" + "0" * 12,
        "text": "t",
    }
    _, sealed = compose_note("constraint", record, "x")
    assert sealed["v"] == 1 and "issue" not in sealed
