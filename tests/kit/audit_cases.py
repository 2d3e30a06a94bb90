"""A sandbox world of merges made every way, for the audit's tests: each builder makes one
merged merge request and says what the audit must find (None: nothing, it passed the gate or is
not gated)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.kit.gate_cases import ref
from tests.kit.names import TRACKER, mr_path, project_path
from tests.kit.run import agent_env, run_cli
from tests.kit.trail import binds_of
from tests.kit.world import World


def merge(world: World, mr: dict[str, Any], *, as_user: str = "agents") -> dict[str, Any]:
    """The merge, as any API client makes it (curl, a script, an MCP tool): PUT .../merge."""
    path = f"{mr_path(mr['project'], mr['iid'])}/merge"
    head = world.head(mr)
    return dict(world.sandbox.api("PUT", path, as_user=as_user, json={"sha": head}))


def _cited(world: World) -> tuple[int, dict[str, Any]]:
    issue = world.issue()
    return issue, world.mr(f"Related to {TRACKER}#{issue}")


def through_the_gate(world: World) -> tuple[dict[str, Any], str | None]:
    """Reviewed at its head; merge-check passes (as the hook and the CI job would); merged."""
    issue, mr = _cited(world)
    world.trail(issue).reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    env = agent_env(world.sandbox, "acme-lead")
    checked = run_cli(["merge-check", "--mr", str(mr["iid"]), "--mr-project", mr["project"]], env)
    assert checked.code == 0, checked.err
    merge(world, mr)
    return mr, None


def by_curl_without_approval(world: World) -> tuple[dict[str, Any], str | None]:
    issue, mr = _cited(world)
    world.trail(issue).claim("acme-lead")
    merge(world, mr)
    return mr, "never-approved"


def one_push_after_approval(world: World) -> tuple[dict[str, Any], str | None]:
    issue, mr = _cited(world)
    world.trail(issue).reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    world.push(mr["project"], mr["source_branch"])
    merge(world, mr)
    return mr, "not-at-head"


def by_a_self_approval(world: World) -> tuple[dict[str, Any], str | None]:
    issue, mr = _cited(world)
    world.trail(issue).solo(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    merge(world, mr)
    return mr, "self-approval-only"


def by_the_web_page_with_the_include_neutered(world: World) -> tuple[dict[str, Any], str | None]:
    """ "Pipelines must succeed" on, and a green pipeline (the plain include's jobs redefined
    to pass): the web page merges it. In the sandbox that is a merge with no approval."""
    sandbox = world.sandbox
    issue, mr = _cited(world)
    world.trail(issue).claim("acme-lead")
    project = project_path(mr["project"])
    sandbox.api(
        "PUT", project, as_user="maintainer", json={"only_allow_merge_if_pipeline_succeeds": True}
    )
    jobs = [
        {"name": n, "status": "success"}
        for n in ("validate-mr-carries-ownership-record", "validate-mr-approval-at-head")
    ]
    sandbox.pipeline(mr["project"], mr["source_branch"], jobs)
    merge(world, mr, as_user="maintainer")
    sandbox.api(
        "PUT", project, as_user="maintainer", json={"only_allow_merge_if_pipeline_succeeds": False}
    )
    return mr, "never-approved"  # fmt: skip


def renovate_missing_one_condition(world: World) -> tuple[dict[str, Any], str | None]:
    """Renovate's account and label, from a branch outside renovate_branch_prefix."""
    mr = world.mr(
        "Update a dependency",
        branch="deps/left-pad-2",
        as_user="renovate_bot",
        labels="renovate,dependencies",
    )
    merge(world, mr, as_user="renovate_bot")
    return mr, "no-citation"


def renovate_exempt(world: World) -> tuple[dict[str, Any], str | None]:
    mr = world.mr(
        "Update a dependency",
        branch="renovate/left-pad-3",
        as_user="renovate_bot",
        labels="renovate,dependencies",
    )
    merge(world, mr, as_user="renovate_bot")
    return mr, None


def frozen_when_merged(world: World) -> tuple[dict[str, Any], str | None]:
    """Approved at its head, but merged inside a live mr: window recorded on another issue."""
    issue, mr = _cited(world)
    world.trail(issue).reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    holder = world.issue("Release window")
    argv = ["freeze", str(holder), "--scope", f"mr:{mr['project']}!{mr['iid']}"]
    froze = run_cli([*argv, "--reason", "release cut"], agent_env(world.sandbox, "acme-review"))
    assert froze.code == 0, froze.err
    merge(world, mr)
    return mr, "frozen"


def generic_issue_by_an_agent(world: World) -> tuple[dict[str, Any], str | None]:
    mr = world.mr(f"Chore. Related to {TRACKER}#1")
    merge(world, mr)
    return mr, "generic-issue-non-automation"


def generic_issue_by_automation(world: World) -> tuple[dict[str, Any], str | None]:
    """The roster's nightly-lockfiles account (the maintainer) citing the generic issue."""
    mr = world.mr(f"Chore. Related to {TRACKER}#1", as_user="maintainer")
    merge(world, mr, as_user="maintainer")
    return mr, None


def by_an_agent_that_claimed_as_review(world: World) -> tuple[dict[str, Any], str | None]:
    """The agent that wrote it claims the issue as review, never as lead, and approves."""
    issue, mr = _cited(world)
    trail = world.trail(issue)
    trail.claim("acme-lead", role="review")
    trail.approve("acme-lead", "acme-review", sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    merge(world, mr)
    return mr, "not-offered"


def approved_only_after_the_merge(world: World) -> tuple[dict[str, Any], str | None]:
    """The approval note comes a minute after the merge: it never counts for it."""
    issue, mr = _cited(world)
    trail = world.trail(issue)
    trail.claim("acme-lead")
    merge(world, mr)
    world.sandbox.advance_clock(60)
    offer = trail.handoff("acme-lead", "acme-review", sha=mr["sha"], mr=ref(mr))
    trail.accept("acme-review", offer, "acme-lead", role="review")
    trail.approve("acme-review", "acme-lead", sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return mr, "never-approved"


def shared_in_without_approval(world: World) -> tuple[dict[str, Any], str | None]:
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}", project="partner/shared-lib")
    world.trail(issue).claim("acme-lead")
    merge(world, mr)
    return mr, "never-approved"


@dataclass(frozen=True)
class Merged:
    name: str
    mr: dict[str, Any]
    expected: str | None


EVERY_WAY: list[Callable[[World], tuple[dict[str, Any], str | None]]] = [
    through_the_gate,
    by_curl_without_approval,
    one_push_after_approval,
    by_a_self_approval,
    by_an_agent_that_claimed_as_review,
    by_the_web_page_with_the_include_neutered,
    renovate_missing_one_condition,
    renovate_exempt,
    frozen_when_merged,
    generic_issue_by_an_agent,
    generic_issue_by_automation,
    approved_only_after_the_merge,
    shared_in_without_approval,
]


def merged_every_way(world: World) -> list[Merged]:
    found = []
    for build in EVERY_WAY:
        mr, expected = build(world)
        found.append(Merged(build.__name__, mr, expected))
    return found
