"""board and waiting against the sandbox: every labelled issue in one pass, and who owes the
next move."""

from __future__ import annotations

import io
import json
import time

from pairgate.main import main
from pairgate.output import Style, duration, table, use_colour
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.errors import Context
from tests.kit.names import LEAD, REVIEW
from tests.kit.run import agent_env, ok, run_cli
from tests.kit.world import Round

BOARD_KEYS = {
    "issue", "title", "state", "web_url", "holder", "role", "holder_since", "label", "offer",
    "approval", "skipped", "breaks", "edited", "unbound", "freezes", "error",
}  # fmt: skip


def board_json(sandbox: RunningSandbox, *flags: str, now: float | None = None) -> dict:
    return json.loads(ok(["board", "--json", *flags], agent_env(sandbox, LEAD), now=now).out)


def test_an_empty_board(sandbox: RunningSandbox) -> None:
    result = ok(["board"], agent_env(sandbox, LEAD))
    assert result.out.strip() == "No labelled issues in acme/tracker."
    doc = board_json(sandbox)
    assert doc["issues"] == [] and doc["live_freezes"] == []
    assert set(doc) == {
        "tracker_project",
        "now",
        "closed_included",
        "live_freezes",
        "issues",
        "independence_basis",
    }
    assert doc["independence_basis"]["mode"] == "names-and-sessions"
    assert doc["independence_basis"]["says"].startswith("independence rests on names and sessions")


def test_the_board_shows_holder_offer_and_approval_at_head(sandbox: RunningSandbox) -> None:
    held = Round(sandbox, "held").claim()
    offered = Round(sandbox, "offered").claim().offer()
    approved = Round(sandbox, "approved").approved()
    sandbox.create_issue("never labelled")
    doc = board_json(sandbox)
    by = {i["issue"]: i for i in doc["issues"]}
    assert sorted(by) == [held.issue, offered.issue, approved.issue]
    assert all(set(i) == BOARD_KEYS for i in doc["issues"])
    assert (by[held.issue]["holder"], by[held.issue]["role"]) == (LEAD, "lead")
    assert by[held.issue]["offer"] is None and by[held.issue]["approval"] is None
    offer = by[offered.issue]["offer"]
    assert (offer["from"], offer["to"], offer["role"], offer["sha"]) == (
        LEAD,
        REVIEW,
        "review",
        offered.sha,
    )
    assert offer["age_seconds"] >= 0 and offer["at"]
    approval = by[approved.issue]["approval"]
    assert (approval["approver"], approval["status"], approval["mr_head"]) == (
        REVIEW,
        "at-head",
        approved.sha,
    )
    assert by[approved.issue]["label"] == {
        "expected": "agent::lead",
        "actual": ["agent::lead"],
        "in_step": True,
    }
    text = ok(["board"], agent_env(sandbox, LEAD)).out
    lines = text.splitlines()
    assert lines[0].split() == ["ISSUE", "HOLDER", "SINCE", "OFFER", "APPROVAL", "LEDGER", "TITLE"]
    assert f"-> {REVIEW} as review" in text and f"{REVIEW} @{approved.sha[:8]} at head" in text
    # Aligned: every row's HOLDER column starts where the header's does.
    column = lines[0].index("HOLDER")
    assert all(line[column - 2 : column] == "  " for line in lines[1:4])
    assert "\033[" not in text  # not a terminal: no colour


def test_a_stale_and_a_self_approval_are_called_so(sandbox: RunningSandbox) -> None:
    stale = Round(sandbox, "stale").approved()
    stale.push()
    solo = Round(sandbox, "solo").claim().offer().accept(REVIEW)
    solo.approve(to=REVIEW)
    by = {i["issue"]: i for i in board_json(sandbox)["issues"]}
    assert by[stale.issue]["approval"]["status"] == "stale"
    assert by[stale.issue]["approval"]["mr_head"] == stale.sha
    assert by[solo.issue]["approval"]["status"] == "self"
    text = ok(["board"], agent_env(sandbox, LEAD)).out
    assert "STALE (head" in text and "SELF-APPROVAL" in text


def test_a_tampered_issue_among_clean_ones(sandbox: RunningSandbox) -> None:
    clean = [Round(sandbox, f"clean {n}").claim() for n in range(3)]
    bad = Round(sandbox, "tampered").claim().offer()
    offer_note = board_json(sandbox)["issues"][-1]["offer"]["note_id"]
    bad.tamper(offer_note, "offers this issue", "gives this issue")
    doc = board_json(sandbox)
    by = {i["issue"]: i for i in doc["issues"]}
    assert by[bad.issue]["offer"] is None  # a tampered record is not part of the state
    assert [(s["note_id"], s["kind"]) for s in by[bad.issue]["skipped"]] == [
        (offer_note, "tampered")
    ]
    assert by[bad.issue]["edited"] == [offer_note]
    for r in clean:
        assert by[r.issue]["skipped"] == [] and by[r.issue]["breaks"] == []
        assert by[r.issue]["holder"] == LEAD
    result = ok(["board"], agent_env(sandbox, LEAD))
    assert f"#{bad.issue}: note {offer_note} skipped (tampered)" in result.out
    row = next(line for line in result.out.splitlines() if line.startswith(f"#{bad.issue} "))
    assert "1 tampered" in row and "1 edited" in row
    # the row counts the edit, so the problems below it say which note it was
    assert f"#{bad.issue}: note {offer_note} was edited after it was written" in result.out
    assert sum(" ok " in line for line in result.out.splitlines()) == 3


def test_a_deleted_note_shows_as_a_chain_break(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).claim().offer()
    offer = board_json(sandbox)["issues"][0]["offer"]["note_id"]
    ok(["decline", str(r.issue)], agent_env(sandbox, REVIEW))
    sandbox.api("DELETE", f"/projects/acme%2Ftracker/issues/{r.issue}/notes/{offer}")
    (issue,) = board_json(sandbox)["issues"]
    assert len(issue["breaks"]) == 1
    assert "1 break" in ok(["board"], agent_env(sandbox, LEAD)).out


def test_label_drift_is_shown(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).claim()
    path = f"/projects/acme%2Ftracker/issues/{r.issue}"
    sandbox.api("PUT", path, json={"add_labels": "agent::review"})
    (issue,) = board_json(sandbox)["issues"]
    assert issue["label"]["in_step"] is False
    assert issue["label"]["actual"] == ["agent::lead", "agent::review"]
    text = ok(["board"], agent_env(sandbox, LEAD)).out
    assert "label drift" in text and "but the notes say agent::lead" in text


def test_closed_issues_only_with_closed(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).claim()
    sandbox.api("PUT", f"/projects/acme%2Ftracker/issues/{r.issue}", json={"state_event": "close"})
    assert board_json(sandbox)["issues"] == []
    (issue,) = board_json(sandbox, "--closed")["issues"]
    assert issue["state"] == "closed"
    assert f"#{r.issue} (closed)" in ok(["board", "--closed"], agent_env(sandbox, LEAD)).out


def test_an_unreadable_issue_is_shown_and_exits_2(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).claim()
    other = Round(sandbox).claim()
    # A 403, not a 5xx: the reader retries 5xx with real backoff (tests/test_gitlab_client.py covers
    # that with a zero backoff); here only "unreadable" matters.
    sandbox.fault(method="GET", path=rf"/issues/{r.issue}/notes", status=403, count=100)
    result = run_cli(["board", "--json"], agent_env(sandbox, LEAD))
    sandbox.clear_faults()
    assert result.code == 2
    by = {i["issue"]: i for i in json.loads(result.out)["issues"]}
    assert "HTTP 403" in by[r.issue]["error"] and by[other.issue]["error"] is None
    assert f"could not read #{r.issue}" in result.err


def test_board_reads_each_issues_notes_once(sandbox: RunningSandbox) -> None:
    rounds = [Round(sandbox, f"n{n}").claim() for n in range(5)]
    sandbox.clear_requests()
    ok(["board"], agent_env(sandbox, LEAD))
    notes = [r["path"] for r in sandbox.requests() if r["path"].endswith("/notes")]
    assert sorted(notes) == sorted(
        f"/api/v4/projects/acme%2Ftracker/issues/{r.issue}/notes" for r in rounds
    )


# -- waiting ----------------------------------------------------------------------------------


def waiting_json(sandbox: RunningSandbox, *flags: str, now: float | None = None) -> dict:
    return json.loads(ok(["waiting", "--json", *flags], agent_env(sandbox, LEAD), now=now).out)


def test_waiting_names_who_owes_the_next_move(sandbox: RunningSandbox) -> None:
    held = Round(sandbox, "held").claim()
    offered = Round(sandbox, "offered").claim().offer()
    back = Round(sandbox, "back").claim().offer().accept(REVIEW).approve()
    released = Round(sandbox, "released").claim()
    ok(["release", str(released.issue)], agent_env(sandbox, LEAD))
    # a released issue keeps no role label; label it as a stale index would be
    sandbox.api(
        "PUT",
        f"/projects/acme%2Ftracker/issues/{released.issue}",
        json={"add_labels": "agent::lead"},
    )
    by = {w["issue"]: w for w in waiting_json(sandbox)["waiting"]}
    assert (by[held.issue]["agent"], by[held.issue]["owes"]) == (LEAD, "next-step")
    assert (by[offered.issue]["agent"], by[offered.issue]["owes"]) == (REVIEW, "answer-offer")
    assert (by[back.issue]["agent"], by[back.issue]["owes"]) == (LEAD, "take-approval")
    assert (by[released.issue]["agent"], by[released.issue]["owes"]) == (None, "nobody")
    assert "released" in by[released.issue]["what"]
    assert set(by[held.issue]) == {
        "issue", "title", "agent", "owes", "what", "note_id", "since", "age_seconds",
        "independent", "independence_reasons",
    }  # fmt: skip
    assert by[held.issue]["independent"] is None  # no approval is waiting there
    assert (by[back.issue]["independent"], by[back.issue]["independence_reasons"]) == (True, [])


def test_waiting_is_sorted_by_age_and_filtered_by_agent(sandbox: RunningSandbox) -> None:
    first = Round(sandbox, "first").claim()
    sandbox.advance_clock(3600)
    second = Round(sandbox, "second").claim().offer()
    now = time.time() + 3600 + 7200
    doc = waiting_json(sandbox, now=now)
    assert [w["issue"] for w in doc["waiting"]] == [first.issue, second.issue]
    ages = [w["age_seconds"] for w in doc["waiting"]]
    assert 3 * 3600 - 60 < ages[0] <= 3 * 3600 + 60 and 7200 - 60 < ages[1] <= 7200 + 60
    mine = waiting_json(sandbox, "--agent", REVIEW, now=now)
    assert [w["issue"] for w in mine["waiting"]] == [second.issue] and mine["agent"] == REVIEW
    text = ok(["waiting"], agent_env(sandbox, LEAD), now=now).out
    assert text.splitlines()[1].startswith("3h ") and text.splitlines()[2].startswith("2h ")
    nobody = ok(["waiting", "--agent", "acme-solo"], agent_env(sandbox, LEAD)).out
    assert nobody.strip() == "Nothing is waiting on acme-solo."


def test_labels_follow_the_verbs(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).claim()
    assert r.labels() == ["agent::lead"]


# -- the terminal -----------------------------------------------------------------------------


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color() -> None:
    assert use_colour(Tty(), {}) is True
    assert use_colour(io.StringIO(), {}) is False
    assert use_colour(Tty(), {"NO_COLOR": "1"}) is False
    assert use_colour(Tty(), {"NO_COLOR": ""}) is True  # no-color.org: set and not empty
    assert use_colour(Tty(), {"TERM": "dumb"}) is False


def test_colour_does_not_move_the_columns() -> None:
    rows = [[("ok", "green"), "x"], ["longer", ("y", "red")]]
    plain = table(["A", "B"], rows, Style(False))
    coloured = table(["A", "B"], rows, Style(True))
    strip = coloured
    for code in ("\033[1m", "\033[32m", "\033[31m", "\033[0m"):
        strip = strip.replace(code, "")
    assert strip == plain
    assert plain.splitlines() == ["A       B", "ok      x", "longer  y"]


def test_durations_read_like_people_write_them() -> None:
    assert [duration(s) for s in (0, 59, 60, 3599, 3600, 3660, 86400, 90000)] == [
        "0s", "59s", "1m", "59m", "1h", "1h 1m", "1d", "1d 1h",
    ]  # fmt: skip


def test_the_board_is_coloured_on_a_terminal_unless_no_color(sandbox: RunningSandbox) -> None:
    Round(sandbox).claim()
    for env, coloured in (({}, True), ({"NO_COLOR": "1"}, False)):
        out = Tty()
        ctx = Context(env={**agent_env(sandbox, LEAD), **env}, stdout=out, stderr=io.StringIO())
        assert main(["board"], ctx=ctx) == 0
        assert ("\033[32mok" in out.getvalue()) is coloured


def test_closed_shows_an_issue_the_close_verb_closed(sandbox: RunningSandbox) -> None:
    # close takes the role label off, which is what board lists by: it leaves pairgate::closed.
    r = Round(sandbox).approved()
    r.merge()
    ok(["close", str(r.issue)], agent_env(sandbox, LEAD))
    labels = sandbox.api("GET", f"/projects/acme%2Ftracker/issues/{r.issue}")["labels"]
    assert labels == ["pairgate::closed"]
    assert board_json(sandbox)["issues"] == []
    (issue,) = board_json(sandbox, "--closed")["issues"]
    assert issue["issue"] == r.issue and issue["state"] == "closed"
