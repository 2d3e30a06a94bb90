"""The board-wide record kinds in the fold (ownership.py 4 and 5b): freeze windows, thaw, and
standing constraints. Pure: notes built with a kept Trail, no server, no clock."""

from __future__ import annotations

import pytest

from pairgate.standalone.config import Config, load_config
from pairgate.standalone.fold import binding_freeze, freeze_refusal
from pairgate.standalone.ledger import Freeze, MrRef
from pairgate.standalone.records import constraint_id, schema_problem
from tests.kit.names import ACCOUNT_BOUND_CONFIG, AGENTS_USER, REVIEW_BOT_USER, STAMP
from tests.kit.trail import Trail

START = 1767225600.0  # STAMP, 2026-01-01T00:00:00Z, as epoch seconds


def freeze(trail: Trail, agent: str, scope: str = "board", minutes: int = 30, **kw: object):
    return trail.record(
        "freeze",
        "freeze",
        agent,
        scope=scope,
        reason=kw.pop("reason", "release"),
        minutes=minutes,
        **kw,
    )


def test_a_freeze_is_a_window_from_the_notes_server_time(config: Config) -> None:
    trail = Trail(config)
    trail.claim("acme-lead")
    note = freeze(trail, "acme-review", minutes=30)
    ledger = trail.fold()
    assert ledger.holder == "acme-lead"  # a freeze never touches ownership
    (window,) = ledger.freezes
    assert (window.note_id, window.agent, window.scope, window.minutes) == (
        note.id,
        "acme-review",
        "board",
        30,
    )
    assert window.created_at == STAMP and window.until == START + 1800
    assert window.live(START + 1799) and not window.live(START + 1800)


def test_thaw_by_the_freezer_ends_the_window(config: Config) -> None:
    trail = Trail(config)
    note = freeze(trail, "acme-review")
    thaw = trail.record("freeze", "thaw", "acme-review", freeze=note.id)
    (window,) = trail.fold().freezes
    assert window.thawed_by == thaw.id and not window.live(START)


@pytest.mark.parametrize(
    ("by", "target", "why"),
    [
        ("acme-lead", None, "is acme-review's to thaw"),
        ("acme-review", 9999, "note 9999 is not a freeze recorded on this issue"),
    ],
)
def test_a_thaw_of_someone_elses_or_of_no_window_is_void(
    config: Config, by: str, target: int | None, why: str
) -> None:
    trail = Trail(config)
    note = freeze(trail, "acme-review")
    trail.record("freeze", "thaw", by, freeze=target or note.id)
    ledger = trail.fold()
    assert ledger.freezes[0].live(START)
    assert why in str(ledger.trail[-1].void)


def test_a_thaw_in_the_freezers_name_from_another_account_is_void() -> None:
    """The agent's name is text any ledger account can write; GitLab records which account
    wrote the note. Where the review account froze, the lead's account cannot thaw as it."""
    trail = Trail(load_config({"PAIRGATE_CONFIG": str(ACCOUNT_BOUND_CONFIG)}))
    note = freeze(trail, "acme-review", author=REVIEW_BOT_USER)
    trail.record("freeze", "thaw", "acme-review", freeze=note.id, author=AGENTS_USER)
    ledger = trail.fold()
    assert ledger.freezes[0].live(START)
    assert ledger.trail[-1].void == (
        f"the freeze of note {note.id} was written by user{REVIEW_BOT_USER} (user "
        f"{REVIEW_BOT_USER}); a thaw by user{AGENTS_USER} (user {AGENTS_USER}) does not lift it"
    )


def test_a_second_thaw_is_void(config: Config) -> None:
    trail = Trail(config)
    note = freeze(trail, "acme-review")
    first = trail.record("freeze", "thaw", "acme-review", freeze=note.id)
    trail.record("freeze", "thaw", "acme-review", freeze=note.id)
    ledger = trail.fold()
    assert ledger.trail[-1].void == f"note {first.id} already thawed it"


def test_a_tampered_freeze_is_skipped_and_binds_nobody(config: Config) -> None:
    trail = Trail(config)
    note = freeze(trail, "acme-review", reason="release")
    trail.edit(note, note.body.replace("release", "nothing", 1))
    ledger = trail.fold()
    assert ledger.freezes == ()
    assert [s.kind for s in ledger.skipped] == ["tampered"]


@pytest.mark.parametrize("scope", ["board", "issue:7", "mr:acme/app!3", "mr:acme/sub/app!12"])
def test_scopes_the_record_accepts(scope: str) -> None:
    record = _freeze_record(scope)
    assert schema_problem("freeze", record) is None


@pytest.mark.parametrize(
    "scope", ["issue", "issue:0", "mr:3", "mr:app!3", "Board", "board ", "issue:7\n"]
)
def test_scopes_the_record_refuses(scope: str) -> None:
    assert "scope" in str(schema_problem("freeze", _freeze_record(scope)))


def _freeze_record(scope: str) -> dict[str, object]:
    return {
        "v": 1,
        "event": "freeze",
        "agent": "acme-lead",
        "write_id": "0" * 32,
        "session": "s",
        "prev": None,
        "digest": "0" * 64,
        "scope": scope,
        "reason": "why",
        "minutes": 30,
    }


def _window(scope: str, agent: str = "acme-review", **kw: object) -> Freeze:
    return Freeze(1, agent, scope, "release", 30, STAMP, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("scope", "issue", "mr", "covered"),
    [
        ("board", 5, None, True),
        ("issue:5", 5, None, True),
        ("issue:5", 6, None, False),
        ("mr:acme/app!3", 5, MrRef("acme/app", 3), True),
        ("mr:acme/app!3", 5, MrRef("ACME/App", 3), True),
        ("mr:acme/app!3", 5, MrRef("acme/app", 4), False),
        ("mr:acme/app!3", 5, MrRef("acme/other", 3), False),
        ("mr:acme/app!3", 5, None, False),
    ],
)
def test_what_a_window_covers(scope: str, issue: int, mr: MrRef | None, covered: bool) -> None:
    assert _window(scope).covers(issue=issue, mr=mr) is covered


def test_a_window_never_binds_its_own_agent_and_binds_the_gate() -> None:
    windows = [(4, _window("mr:acme/app!3"))]
    mr = MrRef("acme/app", 3)
    assert binding_freeze(windows, now=START, agent="acme-review", issue=9, mr=mr) is None
    assert binding_freeze(windows, now=START, agent="acme-lead", issue=9, mr=mr) == windows[0]
    assert binding_freeze(windows, now=START, agent=None, mr=mr) == windows[0]


def test_an_expired_or_thawed_window_binds_nobody() -> None:
    expired = [(4, _window("board"))]
    assert binding_freeze(expired, now=START + 1800, agent="acme-lead", issue=1) is None
    thawed = [(4, _window("board", thawed_by=2))]
    assert binding_freeze(thawed, now=START, agent="acme-lead", issue=1) is None


def test_a_window_whose_time_does_not_parse_binds(config: Config) -> None:
    window = Freeze(1, "acme-review", "board", "why", 30, "yesterday")
    assert window.until is None and window.live(START + 10**9)
    assert "until further notice" in freeze_refusal(4, window, now=START, config=config)


def test_the_refusal_says_who_why_and_until_when(config: Config) -> None:
    text = freeze_refusal(4, _window("board"), now=START + 600, config=config)
    assert text.startswith(
        "acme-review froze the board until 2026-01-01 00:30 UTC (another 20 min): release"
    )
    assert "note 1 on acme/tracker#4" in text and "`pairgate thaw`" in text


def test_a_constraint_is_recorded_with_its_imposer(config: Config) -> None:
    trail = Trail(config)
    text = "Never push to main."
    note = trail.record("constraint", "impose", "acme-lead", id=constraint_id(text), text=text)
    (constraint,) = trail.fold().constraints
    assert (constraint.note_id, constraint.id, constraint.imposer) == (
        note.id,
        constraint_id(text),
        "acme-lead",
    )


def test_a_constraint_whose_id_is_not_its_texts_hash_is_void(config: Config) -> None:
    trail = Trail(config)
    trail.record("constraint", "impose", "acme-lead", id=constraint_id("other"), text="mine")
    ledger = trail.fold()
    assert ledger.constraints == ()
    assert "is not the hash of its text" in str(ledger.trail[-1].void)


def test_constraint_ids_are_stable_and_fold_whitespace() -> None:
    assert constraint_id("Never  push\nto main.") == constraint_id("Never push to main.")
    assert constraint_id("Never push to main.") != constraint_id("Never push to main!")
    assert constraint_id("x").startswith("c-") and len(constraint_id("x")) == 14
