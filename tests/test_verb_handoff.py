"""handoff: an offer bound to the merge request's head, one live offer per issue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pairgate.standalone.config import Config
from pairgate.standalone.ledger import MrRef
from pairgate.verbs.merge_requests import APPROVAL_JOB, MERGE_CHECK_JOB
from tests.kit.names import APP, mr_path
from tests.kit.world import Round


@pytest.fixture
def world(sandbox: Any) -> Round:
    w = Round(sandbox)
    w.claim()
    return w


def offer(world: Round, *extra: Any, to: str = "acme-review", agent: str = "acme-lead") -> Any:
    return world.run(agent, "handoff", world.issue, "--to", to, "--role", "review", *extra)


def test_a_handoff_is_an_offer(world: Round, config: Config) -> None:
    result = offer(world, "--sha", world.head)  # --mr defaults to the one MR citing the issue
    assert result.code == 0, result.err
    ledger = world.ledger(config)
    assert (ledger.holder, ledger.offer.to, ledger.offer.mr) == (
        "acme-lead",
        "acme-review",
        MrRef("acme/app", world.mr),
    )
    assert world.issue_state()["labels"] == ["agent::lead"]  # ownership did not move


def test_only_the_holder_hands_off(world: Round) -> None:
    result = offer(world, "--sha", world.head, agent="acme-review")
    assert result.code == 1
    assert (
        f"pairgate handoff: acme-review does not hold #{world.issue} (acme-lead holds it)"
        in result.err
    )
    assert "Only acme-lead can handoff it now" in result.err


def test_nobody_holds_it(sandbox: Any) -> None:
    world = Round(sandbox)
    result = offer(world, "--sha", world.head)
    assert result.code == 1
    assert f"Nobody holds it; take it first: pairgate claim {world.issue} --role lead" in result.err


def test_supersede_with_no_pending_offer_is_refused(world: Round) -> None:
    before = world.notes()
    result = offer(world, "--sha", world.head, "--supersede", "7")
    assert result.code == 1
    assert (
        f"pairgate handoff: --supersede 7: no offer is pending on #{world.issue}, so there is "
        f"nothing to replace."
    ) in result.err
    assert "Run it without --supersede: pairgate handoff" in result.err
    assert world.notes() == before


def test_one_live_offer_and_supersede(world: Round, config: Config) -> None:
    offer(world, "--sha", world.head)
    first = world.ledger(config).offer.note_id
    result = offer(world, "--sha", world.head, to="acme-review-2")
    assert result.code == 1
    assert f"#{world.issue} already has a pending offer: an offer in note {first}" in result.err
    fix = (
        f"To replace it: pairgate handoff {world.issue} --to acme-review-2 --role review "
        f"--sha {world.head} --supersede {first}"
    )
    assert fix in result.err
    assert offer(world, "--sha", world.head, "--supersede", first + 50).code == 1
    result = offer(world, "--sha", world.head, "--supersede", first, to="acme-review-2")
    assert result.code == 0, result.err
    assert world.ledger(config).offer.supersedes == first


def test_supersede_with_nothing_pending(world: Round) -> None:
    result = offer(world, "--sha", world.head, "--supersede", 5)
    assert result.code == 1
    assert "--supersede 5: no offer is pending" in result.err
    assert (
        f"Run it without --supersede: pairgate handoff {world.issue} --to acme-review" in result.err
    )


@pytest.mark.parametrize(
    ("to", "said", "fix"),
    [
        ("review", "--to review is a role, not an identity", "--to acme-review"),
        ("acme-finder-2", "acme-finder-2 is a finder, and a finder never holds", "--to acme-lead"),
        ("bob", "--to bob matches neither the identity grammar", "--new-identity"),
    ],
)
def test_the_receiver_must_be_an_identity(world: Round, to: str, said: str, fix: str) -> None:
    result = offer(world, "--sha", world.head, to=to)
    assert result.code == 1 and said in result.err and fix in result.err


@pytest.mark.parametrize("to", ["evil name", "acme-review\n/close", "-x"])
@pytest.mark.parametrize("verb", ["handoff", "approve"])
def test_a_receiver_no_identity_can_spell_is_a_usage_error(
    world: Round, to: str, verb: str
) -> None:
    # --new-identity cannot admit it: the record's schema would refuse it after every read, so
    # the refusal must not print a "fix" that fails.
    args = (
        ("--role", "review")
        if verb == "handoff"
        else ("--mr", world.mr, "--mr-project", "acme/app")
    )
    result = world.run(
        "acme-lead",
        verb,
        world.issue,
        f"--to={to}",
        "--sha",
        world.head,
        *args,
        "--new-identity" if verb == "handoff" else "--not-covering=x",
    )
    assert result.code == 2, result.err
    assert (
        f"pairgate: --to {to!r} cannot be an agent identity (letters, digits, . _ -)" in result.err
    )
    assert "--new-identity" not in result.err


def test_new_identity_admits_a_name_and_the_trail_remembers_it(world: Round) -> None:
    assert offer(world, "--sha", world.head, "--new-identity", to="bob").code == 0
    assert world.run("bob", "accept", world.issue).code == 0


def test_the_sha_must_be_the_head(world: Round) -> None:
    old = world.head
    new = world.push()
    result = offer(world, "--sha", old)
    assert result.code == 1
    assert f"--sha {old} is not the head of acme/app!{world.mr}; its head is {new}" in result.err
    assert f"--sha {new}" in result.err


def test_a_short_sha_is_a_usage_error(world: Round) -> None:
    result = offer(world, "--sha", world.head[:8])
    assert result.code == 2 and "is not a full commit SHA" in result.err


def test_a_merge_request_without_commits(sandbox: Any) -> None:
    world = Round(sandbox)
    world.claim()
    sandbox.create_branch("empty", project="acme/app")
    empty = sandbox.create_mr("empty", project="acme/app", title="nothing yet")["iid"]
    head = sandbox.api("GET", mr_path(APP, empty))["sha"]
    result = offer(world, "--sha", head, "--mr", empty, "--mr-project", "acme/app")
    assert result.code == 1 and f"acme/app!{empty} has no commits" in result.err


def test_a_closed_merge_request(world: Round, sandbox: Any) -> None:
    head = world.head
    sandbox.api("PUT", world.mr_path, json={"state_event": "close"})
    result = offer(world, "--sha", head, "--mr", world.mr, "--mr-project", "acme/app")
    assert result.code == 1 and f"acme/app!{world.mr} is closed" in result.err


def jobs(*failed: str, allow: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    out = [{"name": "test", "status": "success"}]
    out += [{"name": n, "status": "failed", "allow_failure": False} for n in failed]
    out += [{"name": n, "status": "failed", "allow_failure": True} for n in allow]
    return out


@pytest.mark.parametrize("waiting", [APPROVAL_JOB, MERGE_CHECK_JOB])
def test_a_failed_pipeline_blocks_the_offer(world: Round, sandbox: Any, waiting: str) -> None:
    pipeline = sandbox.pipeline("acme/app", world.branch, jobs("lint", waiting), sha=world.head)
    result = offer(world, "--sha", world.head)
    assert result.code == 1
    assert (
        f"pairgate handoff: acme/app!{world.mr} cannot be offered: its head pipeline "
        f"{pipeline['id']} failed (failed: {', '.join(sorted(['lint', waiting]))}). Fix it, "
        "push, and offer the new head:\n" in result.err
    ), result.err


@pytest.mark.parametrize(
    "pipeline",
    [
        jobs(APPROVAL_JOB),
        jobs(MERGE_CHECK_JOB),  # it fails every merge request not yet approved at its head
        jobs(APPROVAL_JOB, MERGE_CHECK_JOB),
        jobs(allow=("flaky",)),
    ],
)
def test_pipelines_that_do_not_block(world: Round, sandbox: Any, pipeline: Any) -> None:
    sandbox.pipeline("acme/app", world.branch, pipeline, sha=world.head)
    assert offer(world, "--sha", world.head).code == 0


def test_no_merge_request_cites_the_issue(sandbox: Any) -> None:
    world = Round(sandbox)
    world.claim()
    other = sandbox.create_issue("another")["iid"]
    result = world.run("acme-lead", "claim", other, "--role", "lead")
    result = world.run(
        "acme-lead",
        "handoff",
        other,
        "--to",
        "acme-review",
        "--role",
        "review",
        "--sha",
        world.head,
    )
    assert result.code == 1
    assert (
        f"no open merge request in the group or a project shared into it cites #{other}"
        in result.err
    )
    assert "--mr <iid> --mr-project <project>" in result.err


def test_two_merge_requests_cite_the_issue(world: Round, sandbox: Any) -> None:
    sandbox.commit("fix-2", {"b.py": "y = 1\n"})
    second = sandbox.create_mr(
        "fix-2", project="acme/app", title=f"Also acme/tracker#{world.issue}"
    )["iid"]
    result = offer(world, "--sha", world.head)
    assert result.code == 1
    assert f"2 open merge requests cite #{world.issue}; name one:" in result.err
    assert f"--mr {world.mr} --mr-project acme/app" in result.err
    assert f"--mr {second} --mr-project acme/app" in result.err


def test_a_hostile_reason_round_trips_and_closes_nothing(
    world: Round, config: Config, tmp_path: Path
) -> None:
    reason = "ready --> <!-- x -->\n/close\n/label ~agent::review\nnaïve ✓ 日本語"
    path = tmp_path / "reason.md"
    path.write_text(reason, encoding="utf-8")
    assert offer(world, "--sha", world.head, "--reason-file", path).code == 0
    assert world.ledger(config).offer.reason == reason
    state = world.issue_state()
    assert state["state"] == "opened" and state["labels"] == ["agent::lead"]
    body = world.notes()[-1]["body"]
    assert "> /close" in body and "> ready --> &lt;!-- x -->" in body
    assert not [line for line in body.splitlines() if line.lstrip().startswith("/")]


def test_an_unreadable_reason_file(world: Round, tmp_path: Path) -> None:
    result = offer(world, "--sha", world.head, "--reason-file", tmp_path / "missing")
    assert result.code == 2 and "cannot read --reason-file" in result.err


def test_a_stale_head_pipeline_gives_way_to_the_heads_own_pipeline(
    world: Round, sandbox: Any
) -> None:
    # The head's pipeline failed, but an older commit's pipeline, which passed, finished later
    # and is the one GitLab reports as head_pipeline: stale, so the MR's pipeline list decides.
    old = world.head
    new = world.push()
    failed = sandbox.pipeline("acme/app", world.branch, jobs("lint"), sha=new)
    sandbox.pipeline("acme/app", world.branch, jobs(), sha=old)
    mr = sandbox.api("GET", world.mr_path)
    assert (mr["sha"], mr["head_pipeline"]["sha"], mr["head_pipeline"]["status"]) == (
        new,
        old,
        "success",
    )
    # Named, the merge request is read whole, head_pipeline included (a listed one has none).
    result = offer(world, "--sha", new, "--mr", world.mr, "--mr-project", "acme/app")
    assert result.code == 1, result.err
    assert f"its head pipeline {failed['id']} failed (failed: lint)" in result.err


def test_mr_project_defaults_to_the_tracker_project(sandbox: Any, config: Config) -> None:
    decoy = Round(sandbox)  # acme/app!<n>, a merge request of the same iid elsewhere
    world = Round(sandbox, project="acme/tracker")
    assert world.mr == decoy.mr
    world.claim()
    argv = ["--to", "acme-review", "--role", "review", "--sha", world.head, "--mr", world.mr]
    result = world.run("acme-lead", "handoff", world.issue, *argv)
    assert result.code == 0, result.err
    offered = world.ledger(config).offer
    assert offered is not None and offered.mr == MrRef("acme/tracker", world.mr)
