"""Merge request states on the sandbox, for the gate's tests: each builds one MR and its
ledger, and says what merge-check, the record job and the approval job must answer."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.names import APP, LEAD, REPORTER, TRACKER, mr_path, notes_path, project_path
from tests.kit.trail import Trail, binds_of, own_session, resealed
from tests.kit.world import World

_branches = itertools.count(1)


@dataclass(frozen=True)
class GateCase:
    """One MR state and the three exit codes it must get: merge-check, the record job and the
    approval job (0 pass, 1 refused, 2 could not decide)."""

    name: str
    build: Callable[[World], tuple[str, int]]
    merge_check: int
    record: int
    approval: int
    verdict: str | None = None  # merge-check --json's verdict code, where a case pins it


def ref(mr: dict[str, Any]) -> tuple[str, int]:
    return mr["project"], int(mr["iid"])


def _reviewed(world: World, *, project: str = APP, cite: str = "{tracker}#{issue}") -> Any:
    issue = world.issue()
    mr = world.mr(cite.format(tracker=TRACKER, issue=issue), project=project)
    world.trail(issue).reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def approved_at_head(world: World) -> tuple[str, int]:
    return _reviewed(world)  # type: ignore[no-any-return]


def never_approved(world: World) -> tuple[str, int]:
    issue = world.issue()
    world.trail(issue).claim("acme-lead")
    return ref(world.mr(f"Related to {TRACKER}#{issue}"))


def self_approval_only(world: World) -> tuple[str, int]:
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    world.trail(issue).solo(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def claim_as_review_then_approve(world: World) -> tuple[str, int]:
    """The agent that wrote it claims as review, never as lead, and approves: no hand shows,
    but nobody else offered it the work."""
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    trail = world.trail(issue)
    trail.claim("acme-lead", role="review")
    trail.approve("acme-lead", "acme-review", sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def approval_one_push_behind(world: World) -> tuple[str, int]:
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    world.trail(issue).reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    world.push(mr["project"], mr["source_branch"])
    return ref(mr)


def unclaimed_issue(world: World) -> tuple[str, int]:
    return ref(world.mr(f"Related to {TRACKER}#{world.issue()}"))


def no_citation(world: World) -> tuple[str, int]:
    return ref(world.mr("A change with no issue"))


def bare_reference_outside_the_tracker(world: World) -> tuple[str, int]:
    issue = world.issue()
    world.trail(issue).claim("acme-lead")
    return ref(world.mr(f"Related to #{issue}"))  # acme/app's own issue, not the tracker's


def bare_reference_in_the_tracker(world: World) -> tuple[str, int]:
    return _reviewed(world, project=TRACKER, cite="Related to #{issue}")  # type: ignore[no-any-return]


def cited_by_url(world: World) -> tuple[str, int]:
    url = world.sandbox.url + "/{tracker}/-/issues/{issue}"
    return _reviewed(world, cite=url)  # type: ignore[no-any-return]


def generic_issue_only(world: World) -> tuple[str, int]:
    return ref(world.mr(f"Chore. Related to {TRACKER}#1"))


def generic_issue_by_automation(world: World) -> tuple[str, int]:
    """The roster's nightly-lockfiles account (the maintainer): the generic issue exempts it."""
    return ref(world.mr(f"Chore. Related to {TRACKER}#1", as_user="maintainer"))


def generic_and_an_unclaimed_issue(world: World) -> tuple[str, int]:
    return ref(world.mr(f"{TRACKER}#1 and {TRACKER}#{world.issue()}"))


def outside_the_group(world: World) -> tuple[str, int]:
    issue = world.issue()
    return ref(
        world.mr(f"Related to {TRACKER}#{issue}", project="outside/app", as_user="maintainer")
    )


def shared_in_never_approved(world: World) -> tuple[str, int]:
    issue = world.issue()
    world.trail(issue).claim("acme-lead")
    return ref(world.mr(f"Related to {TRACKER}#{issue}", project="partner/shared-lib"))


def shared_in_approved(world: World) -> tuple[str, int]:
    return _reviewed(world, project="partner/shared-lib")  # type: ignore[no-any-return]


def _renovate(world: World, **change: Any) -> tuple[str, int]:
    fields = {
        "project": "acme/app",
        "branch": f"renovate/dep-{next(_branches)}",
        "as_user": "renovate_bot",
        "labels": "renovate,dependencies",
        **change,
    }
    return ref(world.mr("Update a dependency", **fields))


def renovate_exempt(world: World) -> tuple[str, int]:
    return _renovate(world)


def renovate_without_label(world: World) -> tuple[str, int]:
    return _renovate(world, labels="dependencies")


def renovate_by_another_author(world: World) -> tuple[str, int]:
    return _renovate(world, as_user="agents")


def renovate_from_another_branch(world: World) -> tuple[str, int]:
    return _renovate(world, branch=f"deps/dep-{next(_branches)}")


def renovate_outside_the_exempt_namespaces(world: World) -> tuple[str, int]:
    return _renovate(world, project="partner/shared-lib")


def two_issues_one_approved(world: World) -> tuple[str, int]:
    other = world.issue()
    world.trail(other).claim("acme-lead-2")
    return _reviewed(world, cite=f"{{tracker}}#{other}, {{tracker}}#{{issue}}")  # type: ignore[no-any-return]


def two_issues_one_unclaimed(world: World) -> tuple[str, int]:
    return _reviewed(world, cite=f"{{tracker}}#{world.issue()} {{tracker}}#{{issue}}")  # type: ignore[no-any-return]


def tampered_approval(world: World) -> tuple[str, int]:
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    old = mr["sha"]
    approval = world.trail(issue).reviewed(sha=old, mr=ref(mr), binds=binds_of(mr))
    new = world.push(mr["project"], mr["source_branch"])
    notes = f"{notes_path(issue)}/{approval.id}"
    body = world.sandbox.api("GET", notes)["body"]
    world.sandbox.api("PUT", notes, json={"body": body.replace(old, new)})
    return ref(mr)


def forged_approval(world: World) -> tuple[str, int]:
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    trail = world.trail(issue)
    trail.claim("acme-lead")
    trail.approve(  # written by the reporter, who is no ledger author
        "acme-review", "acme-lead", sha=mr["sha"], mr=ref(mr), binds=binds_of(mr), author=REPORTER
    )
    return ref(mr)


def approval_of_another_mr(world: World) -> tuple[str, int]:
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    world.trail(issue).reviewed(
        sha=mr["sha"], mr=(mr["project"], int(mr["iid"]) + 100), binds=binds_of(mr)
    )
    return ref(mr)


def automation_family(world: World) -> tuple[str, int]:
    branch = f"automation/lockfiles/{next(_branches)}"
    return ref(world.mr("Refresh lock files", branch=branch, as_user="maintainer"))


def automation_family_look_alike(world: World) -> tuple[str, int]:
    branch = f"automation/lockfiles/{next(_branches)}"
    return ref(world.mr("Refresh lock files", branch=branch, as_user="agents"))


def missing_merge_request(world: World) -> tuple[str, int]:
    return "acme/app", 999


# -- what an approval binds: independence, the diff, the issue, the record, the withdrawal --------


def _cited(world: World) -> tuple[int, dict[str, Any], Trail]:
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    return issue, mr, world.trail(issue)


def lead_reclaims_as_review(world: World) -> tuple[str, int]:
    # The lead releases, claims the issue again as review, and approves its own work.
    _, mr, trail = _cited(world)
    trail.claim("acme-lead")
    trail.release("acme-lead")
    trail.claim("acme-lead", role="review")
    trail.approve("acme-lead", "acme-review", sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def solo_claims_as_review(world: World) -> tuple[str, int]:
    _, mr, trail = _cited(world)
    trail.claim("acme-solo")
    trail.release("acme-solo")
    trail.claim("acme-solo", role="review")
    trail.approve("acme-solo", "acme-lead", sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def role_swap(world: World) -> tuple[str, int]:
    # The reviewer hands the issue back as review; the lead accepts and approves its own code.
    _, mr, trail = _cited(world)
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review", sha=mr["sha"], mr=ref(mr))
    trail.accept("acme-review", offer, "acme-lead", role="review")
    back = trail.handoff("acme-review", "acme-lead", sha=mr["sha"], mr=ref(mr))
    trail.accept("acme-lead", back, "acme-review", role="review")
    trail.approve("acme-lead", "acme-review", sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def laundered_through_a_second_issue(world: World) -> tuple[str, int]:
    # The MR cites two issues: the author leads the first and approves in the second.
    first, second = world.issue(), world.issue()
    mr = world.mr(f"{TRACKER}#{first} and {TRACKER}#{second}")
    world.trail(first).claim("acme-lead")
    other = world.trail(second)
    other.claim("acme-lead", role="review")
    other.approve("acme-lead", "acme-review", sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def two_names_one_session(world: World) -> tuple[str, int]:
    _, mr, trail = _cited(world)
    trail.session = lambda agent: own_session(LEAD)  # one session writes as both
    trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def edited_and_resealed_approval(world: World) -> tuple[str, int]:
    # The approval note is edited onto a new, unreviewed head; its digest and the next record
    # are re-sealed, so the chain reads clean: only GitLab's lastEditedAt tells.
    issue, mr, trail = _cited(world)
    approval = trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    accept = trail.accept("acme-lead", approval, "acme-review", role="lead")
    new = world.push(mr["project"], mr["source_branch"])
    path = f"{notes_path(issue)}/{approval.id}"
    body, digest = resealed(world.sandbox.api("GET", path)["body"], sha=new)
    world.sandbox.api("PUT", path, json={"body": body})
    path = f"{notes_path(issue)}/{accept.id}"
    body, _ = resealed(world.sandbox.api("GET", path)["body"], prev=digest)
    world.sandbox.api("PUT", path, json={"body": body})
    return ref(mr)


def approval_before_a_deleted_note(world: World) -> tuple[str, int]:
    # A note after the approval is deleted: the next record breaks the chain, after the last
    # record the approval's writer saw, so the trail no longer vouches for it.
    issue, mr, trail = _cited(world)
    approval = trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    accept = trail.accept("acme-lead", approval, "acme-review", role="lead")
    trail.handoff("acme-lead", "acme-review", sha=mr["sha"], mr=ref(mr))
    world.sandbox.api("DELETE", f"{notes_path(issue)}/{accept.id}")
    return ref(mr)


def retargeted_after_approval(world: World) -> tuple[str, int]:
    # Approved while targeting staging, which already held an unreviewed commit; then
    # retargeted to main: that commit would land on main unreviewed.
    staging = f"staging-{next(_branches)}"
    world.sandbox.commit(staging, {"unreviewed.txt": "nobody read this\n"})
    feature = f"feature-{next(_branches)}"
    world.sandbox.commit(feature, {"feature.txt": "reviewed\n"}, start_branch=staging)
    issue = world.issue()
    mr = {
        **world.sandbox.create_mr(
            feature, description=f"Related to {TRACKER}#{issue}", target_branch=staging
        ),
        "project": "acme/app",
    }
    world.trail(issue).reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    world.sandbox.api("PUT", mr_path(*ref(mr)), json={"target_branch": "main"})
    return ref(mr)


def merge_base_moved(world: World) -> tuple[str, int]:
    # The approval names a merge base GitLab no longer diffs from (a force-pushed target, a
    # retarget there and back): the change to be merged is not the one reviewed.
    _, mr, trail = _cited(world)
    target, _, start = binds_of(mr)
    trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=(target, "d" * 40, start))
    return ref(mr)


def target_advanced_same_base(world: World) -> tuple[str, int]:
    # Only start_sha differs (the target branch advanced since the review): the change
    # base..head is the one reviewed, so the approval stands.
    _, mr, trail = _cited(world)
    target, base, _ = binds_of(mr)
    trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=(target, base, "e" * 40))
    return ref(mr)


def replayed_from_another_issue(world: World) -> tuple[str, int]:
    # A claim and an approval copied from another issue's notes onto the one the MR cites.
    source, target = world.issue(), world.issue()
    mr = world.mr(f"Related to {TRACKER}#{target}")
    world.trail(source).reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    for note in world.sandbox.api("GET", notes_path(source), params={"sort": "asc"}):
        if "mochi-task" in note["body"]:
            world.sandbox.note(target, note["body"])
    return ref(mr)


def withdrawn_approval(world: World) -> tuple[str, int]:
    _, mr, trail = _cited(world)
    approval = trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    trail.withdraw("acme-review", approval)
    return ref(mr)


def withdrawn_by_another_is_void(world: World) -> tuple[str, int]:
    _, mr, trail = _cited(world)
    approval = trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    trail.withdraw("acme-lead", approval)  # not the approver's: void, the approval stands
    return ref(mr)


def emoji_on_the_approval(world: World) -> tuple[str, int]:
    # A reaction moves the note's updated_at; it is no edit, and voids nothing.
    issue, mr, trail = _cited(world)
    approval = trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    world.sandbox.advance_clock(60)
    path = f"{notes_path(issue)}/{approval.id}/award_emoji"
    world.sandbox.api("POST", path, json={"name": "thumbsup"}, as_user="maintainer")
    return ref(mr)


def v1_approval_at_head(world: World) -> tuple[str, int]:
    _, mr, trail = _cited(world)
    trail.version = 1
    trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def solo_then_a_second_agent(world: World) -> tuple[str, int]:
    # The solo round: its own approval, then a handoff to a second agent, who approves.
    _, mr, trail = _cited(world)
    own = trail.solo(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    trail.accept("acme-solo", own, "acme-solo", role="lead")
    offer = trail.handoff("acme-solo", "acme-review", sha=mr["sha"], mr=ref(mr))
    trail.accept("acme-review", offer, "acme-solo", role="review")
    trail.approve("acme-review", "acme-solo", sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


def pushed_then_reviewed_again(world: World) -> tuple[str, int]:
    _, mr, trail = _cited(world)
    first = trail.reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    trail.accept("acme-lead", first, "acme-review", role="lead")
    head = world.push(mr["project"], mr["source_branch"])
    offer = trail.handoff("acme-lead", "acme-review", sha=head, mr=ref(mr))
    trail.accept("acme-review", offer, "acme-lead", role="review")
    trail.approve("acme-review", "acme-lead", sha=head, mr=ref(mr), binds=binds_of(mr))
    return ref(mr)


CASES = [
    GateCase("approved-at-head", approved_at_head, 0, 0, 0, "approved"),
    GateCase("never-approved", never_approved, 1, 0, 0),
    GateCase("self-approval-only", self_approval_only, 1, 0, 1, "self-approval-only"),
    GateCase("claim-as-review-then-approve", claim_as_review_then_approve, 1, 0, 1, "not-offered"),
    GateCase("approval-one-push-behind", approval_one_push_behind, 1, 0, 1),
    GateCase("unclaimed-issue", unclaimed_issue, 1, 1, 0),
    GateCase("no-citation", no_citation, 1, 0, 0),
    GateCase("bare-reference-outside-the-tracker", bare_reference_outside_the_tracker, 1, 0, 0),
    GateCase("bare-reference-in-the-tracker", bare_reference_in_the_tracker, 0, 0, 0),
    GateCase("cited-by-url", cited_by_url, 0, 0, 0),
    GateCase(
        "generic-issue-only-by-an-agent",
        generic_issue_only,
        1,
        1,
        0,
        "generic-issue-non-automation",
    ),
    GateCase("generic-issue-only-by-automation", generic_issue_by_automation, 0, 0, 0),
    GateCase("generic-and-an-unclaimed-issue", generic_and_an_unclaimed_issue, 1, 1, 0),
    GateCase("outside-the-group", outside_the_group, 0, 0, 0),
    GateCase("shared-in-never-approved", shared_in_never_approved, 1, 0, 0),
    GateCase("shared-in-approved", shared_in_approved, 0, 0, 0),
    GateCase("renovate-exempt", renovate_exempt, 0, 0, 0),
    GateCase("renovate-without-label", renovate_without_label, 1, 0, 0),
    GateCase("renovate-by-another-author", renovate_by_another_author, 1, 0, 0),
    GateCase("renovate-from-another-branch", renovate_from_another_branch, 1, 0, 0),
    GateCase("renovate-outside-exempt-namespaces", renovate_outside_the_exempt_namespaces, 1, 0, 0),
    GateCase("two-issues-one-approved", two_issues_one_approved, 0, 0, 0),
    GateCase("two-issues-one-unclaimed", two_issues_one_unclaimed, 1, 1, 0),
    GateCase("tampered-approval", tampered_approval, 1, 0, 0),
    GateCase("forged-approval", forged_approval, 1, 0, 0),
    GateCase("approval-of-another-mr", approval_of_another_mr, 1, 0, 0),
    GateCase("automation-family", automation_family, 0, 0, 0),
    GateCase("automation-family-look-alike", automation_family_look_alike, 1, 0, 0),
    GateCase("missing-merge-request", missing_merge_request, 2, 2, 2),
    GateCase("lead-reclaims-as-review", lead_reclaims_as_review, 1, 0, 1, "self-approval-only"),
    GateCase("solo-claims-as-review", solo_claims_as_review, 1, 0, 1, "self-approval-only"),
    GateCase("role-swap", role_swap, 1, 0, 1, "self-approval-only"),
    GateCase(
        "laundered-through-a-second-issue",
        laundered_through_a_second_issue,
        1,
        0,
        1,
        "self-approval-only",
    ),
    GateCase("two-names-one-session", two_names_one_session, 1, 0, 1, "self-approval-only"),
    GateCase(
        "edited-and-resealed-approval", edited_and_resealed_approval, 1, 0, 1, "approval-edited"
    ),
    GateCase(
        "approval-before-a-deleted-note",
        approval_before_a_deleted_note,
        1,
        0,
        1,
        "approval-after-break",
    ),
    GateCase("retargeted-after-approval", retargeted_after_approval, 1, 0, 1, "retargeted"),
    GateCase("merge-base-moved", merge_base_moved, 1, 0, 1, "base-moved"),
    GateCase("target-advanced-same-base", target_advanced_same_base, 0, 0, 0, "approved"),
    GateCase("replayed-from-another-issue", replayed_from_another_issue, 1, 1, 0, "unclaimed"),
    GateCase("withdrawn-approval", withdrawn_approval, 1, 0, 1, "withdrawn"),
    GateCase("withdrawn-by-another-is-void", withdrawn_by_another_is_void, 0, 0, 0, "approved"),
    GateCase("emoji-on-the-approval", emoji_on_the_approval, 0, 0, 0, "approved"),
    GateCase("v1-approval-at-head", v1_approval_at_head, 0, 0, 0, "approved"),
    GateCase("solo-then-a-second-agent", solo_then_a_second_agent, 0, 0, 0, "approved"),
    GateCase("pushed-then-reviewed-again", pushed_then_reviewed_again, 0, 0, 0, "approved"),
]


GATE_JOBS = (
    "validate-mr-carries-ownership-record",
    "validate-mr-approval-at-head",
    "validate-mr-merge-check",
)


def ci_variables(
    sandbox: RunningSandbox,
    mr: tuple[str, int],
    *,
    jobs: tuple[str, ...] = GATE_JOBS,
    source: str = "merge_request_event",
) -> dict[str, str]:
    """What GitLab gives a gate job of a merge request pipeline of ``mr``: a pipeline in the
    sandbox at the MR's head (the main branch's head when there is no such MR), its jobs
    running, and the first job's token, which GET /job answers for while it runs. ``source``
    ``parent_pipeline``: the same for a job of the child pipeline such a pipeline starts."""
    project, iid = mr
    found = sandbox.request("GET", mr_path(project, iid), "maintainer")
    if found.status_code == 200:
        sha = str(found.json()["sha"])
    else:
        branch = f"{project_path(project)}/repository/branches/main"
        sha = str(sandbox.api("GET", branch, as_user="maintainer")["commit"]["id"])
    pipeline = sandbox.pipeline(
        project,
        f"refs/merge-requests/{iid}/head",
        [{"name": name, "status": "running"} for name in jobs],
        sha=sha,
        source=source,
    )
    return {
        "CI_SERVER_URL": sandbox.url,
        "CI_API_V4_URL": sandbox.api_url,
        "CI_JOB_TOKEN": str(pipeline["jobs"][0]["token"]),
        "CI_PIPELINE_ID": str(pipeline["id"]),
        "CI_PROJECT_ID": str(pipeline["project_id"]),
        "CI_MERGE_REQUEST_PROJECT_ID": str(pipeline["project_id"]),
        "CI_MERGE_REQUEST_PROJECT_PATH": project,
        "CI_MERGE_REQUEST_IID": str(iid),
        "CI_COMMIT_SHA": sha,
    }
