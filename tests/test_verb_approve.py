"""approve: bound to the exact head, approved on GitLab as the review bot, offered back."""

from __future__ import annotations

import io
from typing import Any

import pytest

from pairgate.commands.approve import approve as approve_verb
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Refusal
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.standalone.ledger import MrRef
from tests.kit.world import Round


@pytest.fixture
def world(sandbox: Any) -> Round:
    w = Round(sandbox)
    w.claim()
    w.offer()
    w.accept()
    return w


def approve(
    world: Round, *extra: Any, agent: str = "acme-review", to: str = "acme-lead", **env: str
) -> Any:
    return world.run(
        agent,
        "approve",
        world.issue,
        "--mr",
        world.mr,
        "--mr-project",
        "acme/app",
        "--to",
        to,
        *extra,
        **env,
    )


def approvers(world: Round) -> list[str]:
    body = world.sb.api("GET", f"{world.mr_path}/approvals")
    return [a["user"]["username"] for a in body["approved_by"]]


def test_approve_records_approves_on_gitlab_and_offers_back(world: Round, config: Config) -> None:
    result = approve(world, "--sha", world.head, "--not-covering", "the docs", "--reason", "LGTM")
    assert result.code == 0, result.err
    ledger = world.ledger(config)
    (approval,) = ledger.approvals
    assert (approval.sha, approval.not_covering, approval.self_approval) == (
        world.head,
        ("the docs",),
        False,
    )
    assert (ledger.holder, ledger.offer.to, ledger.offer.role) == (
        "acme-review",
        "acme-lead",
        "lead",
    )
    assert approvers(world) == [world.sb.users["review_bot"]["username"]]
    assert world.run("acme-lead", "accept", world.issue).code == 0


def test_the_sha_must_be_the_head(world: Round) -> None:
    old = world.head
    new = world.push()
    result = approve(world, "--sha", old)
    assert result.code == 1
    assert f"--sha {old} is not the head of acme/app!{world.mr}; its head is {new}" in result.err
    assert f"--sha {new}" in result.err and approvers(world) == []


def test_only_the_review_holder_approves(sandbox: Any) -> None:
    world = Round(sandbox)
    world.claim()
    result = approve(world, "--sha", world.head, agent="acme-lead", to="acme-lead")
    assert result.code == 1
    assert f"acme-lead holds #{world.issue} as lead; only the review role approves" in result.err
    assert f"pairgate handoff {world.issue} --to acme-review --role review" in result.err


def test_a_non_holder_cannot_approve(world: Round) -> None:
    result = approve(world, "--sha", world.head, agent="acme-review-2")
    assert result.code == 1 and "acme-review-2 does not hold" in result.err


def test_to_must_be_a_known_name(world: Round) -> None:
    result = approve(world, "--sha", world.head, to="bob")
    assert result.code == 1
    assert (
        "--to bob matches neither" in result.err
        and "names on the trail: acme-lead, acme-review" in result.err
    )


def test_a_self_approval_is_recorded_and_said(world: Round, config: Config) -> None:
    result = approve(world, "--sha", world.head, to="acme-review")
    assert result.code == 0
    assert (
        "warning: this is a self-approval (acme-review offers the work back to itself)"
        in result.err
    )
    assert world.ledger(config).approvals[0].self_approval
    assert "**This is a self-approval.**" in world.notes()[-1]["body"]


def test_a_second_approval_needs_supersede(world: Round, config: Config) -> None:
    approve(world, "--sha", world.head)
    pending = world.ledger(config).offer.note_id
    result = approve(world, "--sha", world.head)
    assert result.code == 1
    assert f"already has a pending offer: an approval's offer back in note {pending}" in result.err
    assert f"--supersede {pending}" in result.err
    assert approve(world, "--sha", world.head, "--supersede", pending).code == 0


def test_server_approval_only_repeats_the_gitlab_side(world: Round, sandbox: Any) -> None:
    approve(world, "--sha", world.head)
    sandbox.api("POST", f"{world.mr_path}/unapprove", as_user="review_bot")
    notes = len(world.notes())
    result = approve(world, "--sha", world.head, "--server-approval-only")
    assert result.code == 0 and "no note written" in result.out
    assert len(world.notes()) == notes and approvers(world) != []


def test_server_approval_only_needs_a_ledger_approval(world: Round) -> None:
    result = approve(world, "--sha", world.head, "--server-approval-only")
    assert result.code == 1
    assert "holds no approval by acme-review of acme/app!" in result.err
    assert approvers(world) == []


@pytest.mark.parametrize("legacy", [False, True])  # 304, or older GitLab's 401
def test_approving_twice_on_gitlab_is_fine(world: Round, config: Config, legacy: bool) -> None:
    world.sb.set_options(legacy_approval_statuses=legacy)
    approve(world, "--sha", world.head)
    pending = world.ledger(config).offer.note_id
    assert approve(world, "--sha", world.head, "--supersede", pending).code == 0


def test_without_the_review_bot_credential_nothing_is_written(world: Round) -> None:
    notes = len(world.notes())
    result = approve(world, "--sha", world.head, PAIRGATE_TEST_REVIEW_BOT_TOKEN="")
    assert result.code == 2
    assert "approve needs the review-bot credential" in result.err
    assert "PAIRGATE_TEST_REVIEW_BOT_TOKEN" in result.err and "review-bot-token" in result.err
    assert len(world.notes()) == notes


def test_the_review_bot_token_file(world: Round, tmp_path: Any, sandbox: Any) -> None:
    import json

    from tests.kit.names import FIXTURE_CONFIG

    config = json.loads(FIXTURE_CONFIG.read_text())
    (tmp_path / "pairgate-config.json").write_text(json.dumps(config))
    (tmp_path / "review-bot-token").write_text(sandbox.token("review_bot") + "\n")
    result = approve(
        world,
        "--sha",
        world.head,
        PAIRGATE_TEST_REVIEW_BOT_TOKEN="",
        PAIRGATE_CONFIG=str(tmp_path / "pairgate-config.json"),
    )
    assert result.code == 0, result.err
    assert approvers(world) != []


def test_approving_a_merged_request(world: Round) -> None:
    head = world.head
    world.sb.api("PUT", f"{world.mr_path}/merge", as_user="maintainer")
    result = approve(world, "--sha", head)
    assert result.code == 1
    assert (
        f"acme/app!{world.mr} is merged; an approval binds to an open merge request" in result.err
    )


def test_gitlab_refusing_the_sha_is_a_refusal(world: Round, config: Config) -> None:
    # The head moved between approve's own check and GitLab's: GitLab answers 409.
    world.sb.fault(method="POST", path="/approve$", status=409)
    result = approve(world, "--sha", world.head)
    assert result.code == 1
    assert "pairgate approve: GitLab refused the approval" in result.err
    assert "review the new head and approve that" in result.err
    assert world.ledger(config).approvals == ()


def test_an_unknown_merge_request_is_exit_2(world: Round) -> None:
    result = world.run(
        "acme-review",
        "approve",
        world.issue,
        "--mr",
        99,
        "--mr-project",
        "acme/app",
        "--sha",
        world.head,
        "--to",
        "acme-lead",
    )
    assert result.code == 2 and "acme/app!99 does not exist" in result.err


def test_the_review_bot_variable_wins_over_the_token_file(
    world: Round, tmp_path: Any, sandbox: Any
) -> None:
    import json

    from tests.kit.names import FIXTURE_CONFIG

    # The file holds another account's valid token: whichever is used is the approver.
    (tmp_path / "pairgate-config.json").write_text(FIXTURE_CONFIG.read_text())
    (tmp_path / "review-bot-token").write_text(sandbox.token("maintainer") + "\n")
    assert json.loads(FIXTURE_CONFIG.read_text())["review_bot_token_file"] == "review-bot-token"
    result = approve(
        world,
        "--sha",
        world.head,
        PAIRGATE_TEST_REVIEW_BOT_TOKEN=sandbox.token("review_bot"),
        PAIRGATE_CONFIG=str(tmp_path / "pairgate-config.json"),
    )
    assert result.code == 0, result.err
    assert approvers(world) == [sandbox.users["review_bot"]["username"]]


def test_mr_project_defaults_to_the_tracker_project(sandbox: Any, config: Config) -> None:
    decoy = Round(sandbox)  # acme/app!<n>, a merge request of the same iid elsewhere
    world = Round(sandbox, project="acme/tracker")
    assert world.mr == decoy.mr
    world.claim()
    world.run(
        "acme-lead",
        "handoff",
        world.issue,
        "--to",
        "acme-review",
        "--role",
        "review",
        "--sha",
        world.head,
        "--mr",
        world.mr,
    )
    world.accept()
    argv = ["--mr", world.mr, "--sha", world.head, "--to", "acme-lead"]
    result = world.run("acme-review", "approve", world.issue, *argv)
    assert result.code == 0, result.err
    (approval,) = world.ledger(config).approvals
    assert approval.mr == MrRef("acme/tracker", world.mr)
    body = sandbox.api("GET", f"/projects/acme%2Ftracker/merge_requests/{world.mr}/approvals")
    assert [a["user"]["username"] for a in body["approved_by"]] == [
        sandbox.users["review_bot"]["username"]
    ]


class _DiffNotComputed(GitLab):
    """The real client, but GitLab answers the MR as it does right after its creation, before
    the diff is computed: diff_refs empty."""

    def get(self, path: str, **params: Any) -> Any:
        data = super().get(path, **params)
        if "/merge_requests/" in path and path.rsplit("/", 1)[-1].isdigit():
            data = {**data, "diff_refs": None}
        return data


def test_approve_refuses_while_gitlab_has_no_diff_to_bind(world: Round, config: Config) -> None:
    from tests.kit.run import agent_env

    env = agent_env(world.sb, "acme-review")
    real = gitlab_from_env(config, env)
    client = _DiffNotComputed(
        reader=real._reader, writer=real._writer, api_url=real.api_url, origin=real.origin
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(Refusal) as refused:
        approve_verb(
            ctx=Context(env=env, stdout=out, stderr=err),
            config=config,
            issue=world.issue,
            mr=world.mr,
            sha=world.head,
            to="acme-lead",
            mr_project="acme/app",
            reason=None,
            reason_file=None,
            not_covering=[],
            server_approval_only=False,
            supersede=None,
            as_agent=None,
            client=client,
        )
    assert refused.value.exit_code == 1
    assert f"GitLab has not computed the diff of acme/app!{world.mr} yet" in refused.value.message
    assert (
        f"pairgate approve {world.issue} --mr {world.mr} --sha {world.head}"
        in refused.value.message
    )
    assert world.ledger(config).approvals == () and approvers(world) == []  # nothing written
