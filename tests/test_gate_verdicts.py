"""The merge gate's verdict from folded ledgers (pure: no GitLab)."""

from __future__ import annotations

import pytest

from pairgate.standalone.approvals import edit_candidates
from pairgate.standalone.config import Config, load_config
from pairgate.standalone.fold import fold
from pairgate.standalone.gate import gate_merge
from pairgate.standalone.gitlab import GitLabError
from pairgate.standalone.ledger import Note
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.scope import decide_scope
from pairgate.standalone.verdict import GateVerdict, decide
from tests.kit.names import (
    ACCOUNT_BOUND_CONFIG,
    APP,
    FIXTURE_CONFIG,
    REPORTER,
    REVIEW_BOT_USER,
    SHA,
    SHA2,
    mr_facts,
)
from tests.kit.run import suite_config
from tests.kit.trail import Trail

HEAD, OLD = SHA2, SHA
REF = (APP, 3)
FACTS = mr_facts(
    iid=3,
    title="Fix the parser",
    description="Related to acme/tracker#5",
    source_branch="fix-parser",
    head_sha=HEAD,
)


def new_trail(issue: int = 5) -> Trail:
    """A trail kept in memory, its notes numbered from 1000."""
    return Trail(suite_config(), issue=issue, first_id=1000)


@pytest.fixture(scope="module")
def config() -> Config:
    return load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})


def verdict(
    config: Config,
    trails: dict[int, Trail],
    mr: MergeRequestFacts = FACTS,
    *,
    edited: dict[int, str] | None = None,
) -> GateVerdict:
    """The gate's verdict on ``trails`` (issue -> its trail), GitLab reporting the notes in
    ``edited`` as edited at the time given and every other note as never edited."""
    ledgers = {
        issue: fold(trail.notes, config=config, issue=trail.issue)
        for issue, trail in trails.items()
    }
    cited = tuple(trails)
    scope = decide_scope(mr, cited=cited, in_group=True, config=config, families=())
    wanted = edit_candidates(mr, ledgers, config=config)
    edits = {n: (edited or {}).get(n) for ids in wanted.values() for n in ids}
    return decide(mr, scope=scope, cited=cited, ledgers=ledgers, config=config, edits=edits)


def reviewed(sha: str = HEAD, mr: tuple[str, int] = REF) -> Trail:
    trail = new_trail()
    trail.reviewed(sha=sha, mr=mr)
    return trail


def test_an_independent_approval_at_head_passes_and_says_how_to_merge(
    config: Config,
) -> None:
    result = verdict(config, {5: reviewed()})
    assert (result.allowed, result.code, result.record.ok, result.approval.ok) == (
        True,
        "approved",
        True,
        True,
    )
    assert (result.approved_by, result.approval_issue, result.approval_note) == (
        "acme-review",
        5,
        1003,
    )
    assert f"glab mr merge 3 -R acme/app --sha {HEAD}" in result.message


def test_never_approved_is_refused_by_merge_check_but_not_by_the_approval_job(
    config: Config,
) -> None:
    trail = new_trail()
    trail.claim("acme-lead")
    result = verdict(config, {5: trail})
    assert (result.allowed, result.code) == (False, "never-approved")
    assert result.record.ok and result.approval.ok
    approve = f"pairgate approve 5 --mr 3 --mr-project acme/app --sha {HEAD} --to acme-lead"
    assert approve in result.message


def test_a_self_approval_only_is_refused_by_both(config: Config) -> None:
    trail = new_trail()
    trail.solo(sha=HEAD, mr=REF)
    result = verdict(config, {5: trail})
    assert (result.allowed, result.code, result.approval.ok) == (False, "self-approval-only", False)
    assert "self-approval by acme-solo" in result.message
    assert "offers the work back to itself" in result.message
    assert "pairgate handoff 5 --to <reviewer> --role review" in result.message


def test_an_approval_one_push_behind_is_refused_naming_both_commits(
    config: Config,
) -> None:
    result = verdict(config, {5: reviewed(sha=OLD)})
    assert (result.allowed, result.code, result.approval.ok) == (False, "not-at-head", False)
    assert OLD in result.message and f"the head is now {HEAD}" in result.message
    approve = f"pairgate approve 5 --mr 3 --mr-project acme/app --sha {HEAD} --to acme-lead"
    assert approve in result.message


def test_a_self_approval_at_head_does_not_hide_an_independent_one(
    config: Config,
) -> None:
    trail = reviewed()
    solo = new_trail(6)
    solo.solo(sha=HEAD, mr=REF)
    assert verdict(config, {5: trail, 6: solo}).allowed


def test_an_unclaimed_cited_issue_fails_the_record(config: Config) -> None:
    result = verdict(config, {5: new_trail()})
    assert (result.allowed, result.code, result.record.ok) == (False, "unclaimed", False)
    assert "acme/tracker#5" in result.message and "pairgate claim 5 --role lead" in result.message


def test_two_cited_issues_pass_on_either_approval_but_each_must_be_claimed(
    config: Config,
) -> None:
    claimed = new_trail(9)
    claimed.claim("acme-lead-9")
    both = verdict(config, {9: claimed, 5: reviewed()})
    assert both.allowed and both.approval_issue == 5
    one_unclaimed = verdict(config, {5: reviewed(), 9: new_trail(9)})
    assert (one_unclaimed.allowed, one_unclaimed.code) == (False, "unclaimed")
    assert "acme/tracker#9" in one_unclaimed.record.message
    assert one_unclaimed.approval.ok  # the approval job alone would pass it


@pytest.mark.parametrize("other", [("acme/app", 4), ("acme/other", 3)])
def test_an_approval_of_another_merge_request_does_not_count(
    config: Config, other: tuple[str, int]
) -> None:
    assert verdict(config, {5: reviewed(mr=other)}).code == "never-approved"


def test_the_project_is_compared_as_gitlab_does_without_case(config: Config) -> None:
    assert verdict(config, {5: reviewed(mr=("Acme/App", 3))}).allowed


def _tamper(note: Note, old: str, new: str) -> Note:
    assert old in note.body
    return note._replace(body=note.body.replace(old, new))


def test_a_tampered_approval_never_counts_and_is_reported(config: Config) -> None:
    trail = reviewed(sha=OLD)
    # Someone edits the approval note to name the current head.
    trail.notes[-1] = _tamper(trail.notes[-1], OLD, HEAD)
    result = verdict(config, {5: trail})
    assert not result.allowed and result.code == "never-approved"
    assert any("note 1003 skipped (tampered)" in w for w in result.warnings)


def test_a_forged_approval_never_counts_and_is_reported(config: Config) -> None:
    trail = new_trail()
    trail.claim("acme-lead")
    trail.approve("acme-review", "acme-lead", sha=HEAD, mr=REF, author=REPORTER)
    result = verdict(config, {5: trail})
    assert not result.allowed
    assert any("skipped (forged)" in w for w in result.warnings)


def test_a_break_in_the_chain_is_reported(config: Config) -> None:
    trail = reviewed()
    del trail.notes[1]  # the offer, deleted
    result = verdict(config, {5: trail})
    assert any("record chain is broken at note" in w for w in result.warnings)


def test_an_mr_that_cites_no_tracker_issue_passes_the_jobs_but_not_merge_check(
    config: Config,
) -> None:
    result = verdict(config, {}, FACTS._replace(description="no reference"))
    assert (result.allowed, result.code) == (False, "no-citation")
    assert result.record.ok and result.approval.ok
    assert "cites no issue of acme/tracker" in result.message


def test_an_mr_without_commits_has_no_head_to_approve(config: Config) -> None:
    result = verdict(config, {5: reviewed()}, FACTS._replace(head_sha=None))
    assert (result.allowed, result.code) == (False, "not-at-head")
    assert "the merge request has no commits" in result.message


def test_out_of_scope_passes_everywhere(config: Config) -> None:
    scope = decide_scope(FACTS, cited=(5,), in_group=False, config=config, families=())
    result = decide(FACTS, scope=scope, cited=(5,), ledgers={}, config=config, edits={})
    assert (result.allowed, result.in_scope, result.record.ok, result.approval.ok) == (
        True,
        False,
        True,
        True,
    )
    assert "not gated" in result.message


# -- the work offered by another; account-bound roles; the generic issue --------------------------


def test_an_agent_alone_on_the_trail_cannot_approve_what_it_wrote(config: Config) -> None:
    # It claims as review, never held the issue as lead, never offered the MR: no hand in the
    # work shows, and nobody else offered it the work.
    trail = new_trail()
    trail.claim("acme-lead", role="review")
    approval = trail.approve("acme-lead", "acme-review", sha=HEAD, mr=REF)
    result = verdict(config, {5: trail})
    assert (result.allowed, result.code, result.record.ok, result.approval.ok) == (
        False,
        "not-offered",
        True,
        False,
    )
    assert (
        f"acme-lead is the only agent on the trail: nobody else offered it acme/app!3 for review "
        f"before its approval (note {approval.id})"
    ) in result.message
    assert f"(acme/tracker#5, note {approval.id})" in result.message  # the record
    assert "pairgate handoff 5 --to <reviewer> --role review" in result.message  # what to run
    assert "accepts in a session of its own (pairgate accept 5)" in result.message
    assert result.as_json()["independence"]["independent"] is False


def test_an_offer_from_another_name_in_the_same_session_is_no_offer(config: Config) -> None:
    trail = new_trail()
    trail.session = lambda agent: "one-laptop" if agent == "acme-lead" else f"s-{agent}"
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review", sha=HEAD, mr=REF)
    trail.accept("acme-review", offer, "acme-lead", session="one-laptop")
    trail.approve("acme-review", "acme-lead", sha=HEAD, mr=REF)
    result = verdict(config, {5: trail})
    assert not result.allowed
    assert "written in its own session one-laptop" in result.message


def test_the_generic_issue_alone_is_in_scope_and_refused_unless_automation_wrote_it(
    config: Config,
) -> None:
    generic = FACTS._replace(description="Chore. Related to acme/tracker#1")
    scope = decide_scope(generic, cited=(1,), in_group=True, config=config, families=())
    result = decide(generic, scope=scope, cited=(1,), ledgers={}, config=config, edits={})
    assert (result.allowed, result.in_scope, result.code) == (
        False,
        True,
        "generic-issue-non-automation",
    )
    assert (result.record.ok, result.approval.ok) == (False, True)
    assert (
        "acme/app!3 cites only the generic tracking issue acme/tracker#1, which exempts "
        "unattended automation alone, and its author is @? (user 10), not an automation account"
    ) in result.message
    assert "Cite the issue it works on in its description (acme/tracker#NN)" in result.message
    renovate = generic._replace(author_id=config.renovate_bot_user_id)
    scope = decide_scope(renovate, cited=(1,), in_group=True, config=config, families=())
    assert (scope.in_scope, scope.code) == (False, "generic-issue-only")


@pytest.fixture(scope="module")
def bound() -> Config:
    return load_config({"PAIRGATE_CONFIG": str(ACCOUNT_BOUND_CONFIG)})


def bound_trail(*, approval_by: int = REVIEW_BOT_USER) -> Trail:
    trail = Trail(load_config({"PAIRGATE_CONFIG": str(ACCOUNT_BOUND_CONFIG)}), issue=5)
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review", sha=HEAD, mr=REF)
    trail.accept("acme-review", offer, "acme-lead")
    trail.approve("acme-review", "acme-lead", sha=HEAD, mr=REF, author=approval_by)
    return trail


def test_account_bound_an_approval_written_by_the_review_account_counts(bound: Config) -> None:
    result = verdict(bound, {5: bound_trail()})
    assert (result.allowed, result.account_bound) == (True, True)
    doc = result.as_json()["independence_basis"]
    assert doc["mode"] == "account-bound" and "review_author_user_ids: 11" in doc["says"]


def test_account_bound_forged_notes_by_the_agents_account_do_not_count(bound: Config) -> None:
    # A complete handoff, accept and approve, every digest right, all written by the agents'
    # account: names and sessions say independent; GitLab's note author does not.
    trail = bound_trail(approval_by=10)
    result = verdict(bound, {5: trail})
    assert (result.allowed, result.code, result.approval.ok) == (
        False,
        "not-review-account",
        False,
    )
    assert (
        f"the approval of acme/app!3 by acme-review (acme/tracker#5, note {trail.notes[-1].id}) "
        f"does not count: GitLab reports its note as written by user 10, which is no review "
        f"account (review_author_user_ids: 11)"
    ) in result.message
    assert verdict(load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}), {5: trail}).allowed


@pytest.mark.parametrize("hand", ["claim", "offer", "accept back"])
def test_account_bound_a_hand_in_the_work_written_by_the_review_account(
    bound: Config, hand: str
) -> None:
    trail = Trail(bound, issue=5)
    writer = {"claim": REVIEW_BOT_USER if hand == "claim" else 10}
    first = trail.claim("acme-lead", author=writer["claim"])
    if hand == "accept back":
        offer = trail.handoff("acme-lead", "acme-review", sha=OLD, mr=REF)
        trail.accept("acme-review", offer, "acme-lead")
        back = trail.approve("acme-review", "acme-lead", sha=OLD, mr=REF, author=REVIEW_BOT_USER)
        first = trail.accept("acme-lead", back, "acme-review", role="lead", author=REVIEW_BOT_USER)
    by = REVIEW_BOT_USER if hand == "offer" else 10
    offer = trail.handoff("acme-lead", "acme-review", sha=HEAD, mr=REF, author=by)
    if hand == "offer":
        first = offer
    trail.accept("acme-review", offer, "acme-lead")
    trail.approve("acme-review", "acme-lead", sha=HEAD, mr=REF, author=REVIEW_BOT_USER)
    result = verdict(bound, {5: trail})
    assert (result.allowed, result.code) == (False, "not-review-account")
    assert (
        f"the review account that wrote it (user 11) also wrote note {first.id}, in which acme-lead"
    ) in result.message


def test_every_surface_of_the_verdict_says_what_independence_rests_on(
    config: Config, bound: Config
) -> None:
    plain = verdict(config, {5: reviewed()})
    assert plain.as_json()["independence_basis"] == {
        "mode": "names-and-sessions",
        "says": plain.basis,
    }
    assert plain.basis.startswith("independence rests on names and sessions")
    assert verdict(bound, {5: bound_trail()}).basis.startswith("independence is account-bound")


def test_the_json_keys_are_stable(config: Config) -> None:
    assert sorted(verdict(config, {5: reviewed()}).as_json()) == [
        "allowed",
        "approval",
        "approval_issue",
        "approval_note",
        "approvals",
        "approved_by",
        "approved_sha",
        "author",
        "cited_issues",
        "head_sha",
        "in_scope",
        "independence",
        "independence_basis",
        "message",
        "mr",
        "record",
        "scope",
        "scope_detail",
        "verdict",
        "warnings",
    ]


class _MovedProject:
    """GitLab as the gate reads it after acme/app moved there from oldgroup/app: the old path
    still answers (GitLab follows the redirect), and the MR names its real project."""

    def __init__(self) -> None:
        self.mr = {
            "iid": 3,
            "title": "Unreviewed",
            "description": "",
            "author": {"id": 10},
            "source_branch": "x",
            "labels": [],
            "sha": HEAD,
            "references": {"full": "acme/app!3"},
        }

    def get(self, path: str) -> object:
        if path in (
            "projects/oldgroup%2Fapp/merge_requests/3",
            "projects/acme%2Fapp/merge_requests/3",
        ):
            return self.mr
        raise GitLabError(f"GET {path}: HTTP 404", status=404)

    def get_all(self, path: str, **params: object) -> list[object]:
        return []  # no project shared into the group, no freezes


def test_a_path_gitlab_redirects_into_the_group_is_gated_as_the_project_it_names(
    config: Config,
) -> None:
    client = _MovedProject()
    result = gate_merge(client, config, "oldgroup/app", 3, families=(), now=0.0)  # type: ignore[arg-type]
    assert (result.allowed, result.in_scope, result.project) == (False, True, "acme/app")


def test_a_merge_request_the_reader_cannot_see_outside_the_group_stays_outside(
    config: Config,
) -> None:
    client = _MovedProject()
    result = gate_merge(client, config, "outside/app", 3, families=(), now=0.0)  # type: ignore[arg-type]
    assert (result.allowed, result.scope) == (True, "outside-group")
