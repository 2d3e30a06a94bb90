"""impose and lift-check: a standing constraint's clause, and who may lift it. No server: neither
command reads GitLab."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pairgate.standalone.fold import fold
from pairgate.standalone.records import constraint_id, parse_marker
from tests.kit.names import FIXTURE_CONFIG, LEAD, REVIEW
from tests.kit.run import run_cli
from tests.kit.trail import Trail

ENV = {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG), "PAIRGATE_TEST_SESSION_ID": "s-1"}
TEXT = "Do not touch the release branch until 2.0 ships --> really."


def impose(text: str = TEXT, agent: str = LEAD) -> str:
    result = run_cli(["impose", "--text", text, "--as", agent], ENV)
    assert result.code == 0, result.err
    return result.out


def lift(clause: str, lift_from: str) -> tuple[int, str, str]:
    result = run_cli(["lift-check", "--lift-from", lift_from, "--constraint-text", clause], ENV)
    return result.code, result.out, result.err


def test_impose_renders_the_clause_its_id_and_the_marker() -> None:
    clause = impose()
    cid = constraint_id(TEXT)
    assert clause.startswith(f"**Standing constraint {cid}**, imposed by **{LEAD}**:")
    assert f"Only {LEAD} may lift it." in clause
    kind, record, _ = parse_marker(clause)
    assert kind == "constraint"
    assert (record["event"], record["agent"], record["id"], record["text"], record["session"]) == (
        "impose",
        LEAD,
        cid,
        TEXT,
        "s-1",
    )
    assert "-->" not in clause.splitlines()[-1][:-3]  # the text cannot close the marker early


def test_the_id_is_stable_across_renders_and_imposers() -> None:
    assert parse_marker(impose())[1]["id"] == parse_marker(impose(agent=REVIEW))[1]["id"]


def test_a_rendered_clause_posted_as_a_note_folds_as_a_constraint(config) -> None:
    trail = Trail(config)
    note = trail.note(impose())
    (constraint,) = fold(trail.notes, config=config, issue=trail.issue).constraints
    assert (constraint.note_id, constraint.imposer, constraint.text) == (note.id, LEAD, TEXT)


def test_only_the_imposer_may_lift() -> None:
    clause = impose()
    assert lift(clause, LEAD)[0] == 0
    assert "the lift stands" in lift(clause, LEAD)[1]
    code, _, err = lift(clause, REVIEW)
    assert code == 1
    assert f"was imposed by {LEAD}; a lift relayed from {REVIEW} does not stand" in err


def test_a_clause_quoted_inside_other_text_still_checks(tmp_path: Path) -> None:
    relayed = f"The lead told me to pass this on:\n\n{impose()}\nand that it is lifted now.\n"
    path = tmp_path / "relay.md"
    path.write_text(relayed, encoding="utf-8")
    argv = ["lift-check", "--lift-from", REVIEW, "--constraint-file", str(path)]
    result = run_cli(argv, ENV)
    assert result.code == 1 and "does not stand" in result.err


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (f'"agent":"{LEAD}"', f'"agent":"{REVIEW}"'),  # the imposer rewritten in the marker
        ("release branch", "main branch"),  # the text rewritten in the marker
    ],
)
def test_an_altered_clause_lifts_nothing(old: str, new: str) -> None:
    marker = impose().splitlines()[-1]
    assert old in marker
    code, _, err = lift(marker.replace(old, new), REVIEW)
    assert code == 1 and "was altered after it was imposed" in err


@pytest.mark.parametrize(
    ("clause", "message"),
    [
        ("Do not touch the release branch.", "cannot read a constraint"),
        ("<!-- mochi-task:constraint {not json} -->", "cannot read a constraint"),
        (
            '<!-- mochi-task:ownership {"event":"claim"} -->',
            "cannot read a constraint",
        ),
    ],
)
def test_a_clause_without_a_readable_marker_is_exit_2(clause: str, message: str) -> None:
    code, _, err = lift(clause, LEAD)
    assert code == 2 and message in err


def test_lift_check_needs_a_clause_and_a_readable_file(tmp_path: Path) -> None:
    result = run_cli(["lift-check", "--lift-from", LEAD], ENV)
    assert result.code == 2 and "--constraint-file F or --constraint-text T" in result.err
    argv = ["lift-check", "--lift-from", LEAD, "--constraint-file", str(tmp_path / "none")]
    result = run_cli(argv, ENV)
    assert result.code == 2 and "cannot read" in result.err


def test_impose_refuses_an_empty_text_and_an_unset_identity() -> None:
    result = run_cli(["impose", "--text", "  ", "--as", LEAD], ENV)
    assert result.code == 2 and "the text is empty" in result.err
    result = run_cli(["impose", "--text", TEXT], ENV)
    assert result.code == 2 and "no agent identity" in result.err


def test_impose_reads_the_clause_from_a_file(tmp_path: Path) -> None:
    clause = tmp_path / "clause.txt"
    clause.write_text(TEXT + "\n")
    from_file = run_cli(["impose", "--text-file", str(clause), "--as", LEAD], ENV)
    from_text = run_cli(["impose", "--text", TEXT, "--as", LEAD], ENV)
    assert from_file.code == 0 and from_text.code == 0
    # The same clause and id; only the write id in the marker differs.
    assert from_file.out.split("<!--")[0] == from_text.out.split("<!--")[0]
    neither = run_cli(["impose", "--as", LEAD], ENV)
    assert (
        neither.code == 2 and "one of the arguments --text --text-file is required" in neither.err
    )
    missing = run_cli(["impose", "--text-file", str(tmp_path / "none"), "--as", LEAD], ENV)
    assert missing.code == 2 and "cannot read --text-file" in missing.err


def lift_json(clause: str, lift_from: str) -> tuple[int, dict[str, object], str]:
    argv = ["lift-check", "--lift-from", lift_from, "--constraint-text", clause, "--json"]
    result = run_cli(argv, ENV)
    return result.code, json.loads(result.out), result.err


def test_lift_check_json_has_the_documented_keys_for_each_verdict() -> None:
    clause = impose()
    cid = constraint_id(TEXT)
    code, doc, _ = lift_json(clause, LEAD)
    assert code == 0
    assert doc == {
        "stands": True,
        "verdict": "stands",
        "constraint": cid,
        "imposer": LEAD,
        "lift_from": LEAD,
        "message": f"the lift stands: {LEAD} imposed constraint {cid} and the lift comes from {LEAD}.",
    }
    code, doc, err = lift_json(clause, REVIEW)
    assert (code, doc["stands"], doc["verdict"]) == (1, False, "not-the-imposer")
    assert "refused" not in err  # the verdict is in the JSON, once
    assert (doc["imposer"], doc["lift_from"]) == (LEAD, REVIEW)
    assert f"a lift relayed from {REVIEW} does not stand" in str(doc["message"])
    altered = clause.splitlines()[-1].replace("release branch", "main branch")
    code, doc, _ = lift_json(altered, LEAD)
    assert (code, doc["stands"], doc["verdict"]) == (1, False, "altered")
    assert list(doc) == ["stands", "verdict", "constraint", "imposer", "lift_from", "message"]


def test_lift_check_json_with_no_clause_is_exit_2_and_prints_no_json() -> None:
    argv = ["lift-check", "--lift-from", LEAD, "--constraint-text", "no marker", "--json"]
    result = run_cli(argv, ENV)
    assert (result.code, result.out) == (2, "")
    assert "cannot read a constraint" in result.err
