"""pairgate audit against the sandbox: a world with merges made every way, judged as merge-check
would have judged each at the moment it merged."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.audit_flags import AUDIT_LABEL
from pairgate.standalone.audit_refs import DiffRefs, read_diff_refs
from pairgate.standalone.config import Config
from pairgate.standalone.gitlab_env import gitlab_from_env
from tests.kit.audit_cases import (
    by_curl_without_approval,
    frozen_when_merged,
    merge,
    merged_every_way,
    through_the_gate,
)
from tests.kit.gate_cases import ref
from tests.kit.names import TRACKER
from tests.kit.run import Result, agent_env, run_cli
from tests.kit.trail import binds_of
from tests.kit.world import World

GRAPHQL = "/api/graphql"

WHY = {
    "never-approved": "never approved: no approval written before the merge in acme/tracker#",
    "not-at-head": "approved behind its head: acme-review approved ",
    "self-approval-only": "a self-approval: acme-solo offers the work back to itself",
    "no-citation": "its source branch 'deps/left-pad-2' does not start with renovate_branch_pre",
    "frozen": "merged while frozen: acme-review froze mr:acme/app!",
    "not-offered": "did not count: acme-lead is the only agent on the trail: nobody else offered",
    "generic-issue-non-automation": "unattended automation alone, and its author is @agents (user 10), not",
}


def audit(sandbox: RunningSandbox, *flags: str, user: str = "agents") -> Result:
    return run_cli(["audit", *flags], agent_env(sandbox, user=user))


def audit_json(sandbox: RunningSandbox, *flags: str) -> dict[str, Any]:
    result = audit(sandbox, "--json", *flags)
    assert result.code in (0, 1, 2), result.err
    return dict(json.loads(result.out))


def found(doc: dict[str, Any]) -> dict[str, str]:
    return {f"{f['mr']['project']}!{f['mr']['iid']}": f["code"] for f in doc["findings"]}


def name(mr: dict[str, Any]) -> str:
    return f"{mr['project']}!{mr['iid']}"


def audit_issues(sandbox: RunningSandbox) -> list[dict[str, Any]]:
    path = "/projects/acme%2Ftracker/issues"
    return list(sandbox.api("GET", path, params={"labels": AUDIT_LABEL, "state": "all"}))


def test_the_audit_finds_exactly_the_merges_that_went_around_the_gate(
    sandbox: RunningSandbox,
) -> None:
    merged = merged_every_way(World(sandbox))
    result = audit(sandbox)
    assert result.code == 1, result.err
    expected = {name(m.mr): m.expected for m in merged if m.expected}
    doc = audit_json(sandbox)
    assert found(doc) == expected
    # The agent's MR citing only the generic issue is gated: the exemption is automation's.
    assert (doc["merged"], doc["gated"], doc["undecided"]) == (len(merged), 11, 0)
    assert doc["approved"] == 1  # through the gate
    not_gated = {"renovate_exempt": "renovate", "generic_issue_by_automation": "generic-issue-only"}
    assert {f"{n['mr']['project']}!{n['mr']['iid']}": n["scope"] for n in doc["not_gated"]} == {
        name(m.mr): not_gated[m.name] for m in merged if m.name in not_gated
    }
    for finding in doc["findings"]:
        assert WHY[finding["code"]] in finding["why"], finding
        assert finding["head_sha"] and finding["merged_at"] and finding["merged_by"]
        ref_ = f"{finding['mr']['project']}!{finding['mr']['iid']}"
        line = f"FINDING {ref_} merged at {finding['head_sha'][:12]} by {finding['merged_by']}, "
        assert line in result.out
    assert "10 finding(s)" in result.out and "--file-issues" in result.out


def test_the_self_approval_finding_names_its_rule_and_the_push_finding_both_heads(
    sandbox: RunningSandbox,
) -> None:
    merged = {m.name: m.mr for m in merged_every_way(World(sandbox))}
    by_ref = {f"{f['mr']['project']}!{f['mr']['iid']}": f for f in audit_json(sandbox)["findings"]}
    pushed = by_ref[name(merged["one_push_after_approval"])]
    assert f"but it merged at {pushed['head_sha'][:12]}, which nobody reviewed" in pushed["why"]
    web = by_ref[name(merged["by_the_web_page_with_the_include_neutered"])]
    assert web["merged_by"] == "maintainer" and web["code"] == "never-approved"
    late = by_ref[name(merged["approved_only_after_the_merge"])]
    assert late["code"] == "never-approved"  # the approval came a minute after the merge
    alone = by_ref[name(merged["by_an_agent_that_claimed_as_review"])]
    assert alone["code"] == "not-offered"
    assert alone["why"].startswith(
        "not independently approved: its approval at the merged head by acme-lead (acme/tracker#"
    )
    assert "acme-lead is the only agent on the trail: nobody else offered it" in alone["why"]


def test_a_clean_window_exits_0_and_says_so(sandbox: RunningSandbox) -> None:
    world = World(sandbox)
    through_the_gate(world)
    result = audit(sandbox)
    assert result.code == 0, result.out + result.err
    assert "1 gated (1 approved at the head they merged at)" in result.out
    assert "0 finding(s)" in result.out and "FINDING" not in result.out


def test_file_issues_twice_opens_each_issue_once(sandbox: RunningSandbox) -> None:
    merged = merged_every_way(World(sandbox))
    wanted = {name(m.mr) for m in merged if m.expected}
    first = audit(sandbox, "--file-issues")
    assert first.code == 1, first.err
    assert first.out.count("(opened now)") == len(wanted)
    issues = audit_issues(sandbox)
    assert len(issues) == len(wanted)
    body = issues[0]["description"]
    assert "<!-- pairgate-audit {" in body and "merge-check would have said" in body
    assert not any(line.startswith("/") for line in body.splitlines())
    sandbox.clear_requests()
    second = audit_json(sandbox, "--file-issues")
    assert all(f["filed"]["new"] is False for f in second["findings"])
    assert len(audit_issues(sandbox)) == len(wanted)
    # Nothing written: the only POST an audit may make is a GraphQL read.
    assert [r for r in sandbox.requests() if r["method"] == "POST" and r["path"] != GRAPHQL] == []
    numbers = {f["filed"]["issue"] for f in second["findings"]}
    assert numbers == {int(i["iid"]) for i in issues}


def test_a_later_clean_run_files_nothing_new(sandbox: RunningSandbox) -> None:
    world = World(sandbox)
    by_curl_without_approval(world)
    assert audit(sandbox, "--file-issues").code == 1
    sandbox.advance_clock(86400)
    through_the_gate(world)
    later = (datetime.now(UTC) + timedelta(hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ")
    sandbox.clear_requests()
    result = audit(sandbox, "--since", later, "--file-issues")
    assert result.code == 0, result.out + result.err
    assert "0 finding(s)" in result.out and len(audit_issues(sandbox)) == 1
    # Nothing written: the only POST an audit may make is a GraphQL read.
    assert [r for r in sandbox.requests() if r["method"] == "POST" and r["path"] != GRAPHQL] == []


def forged_issue(sandbox: RunningSandbox, mr: dict[str, Any], head: str, *, as_user: str) -> None:
    marker = json.dumps({"v": 1, "mr": {"project": mr["project"], "iid": mr["iid"]}, "head": head})
    sandbox.create_issue(
        "audit: nothing to see",
        as_user=as_user,
        description=f"all fine\n\n<!-- pairgate-audit {marker} -->\n",
        labels=AUDIT_LABEL,
    )


def test_an_audit_issue_by_someone_else_never_keeps_a_finding_off_the_tracker(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    mr, _ = by_curl_without_approval(world)
    forged_issue(sandbox, mr, world.head(mr), as_user="reporter")
    doc = audit_json(sandbox, "--file-issues")
    (finding,) = doc["findings"]
    assert finding["filed"]["new"] is True and len(audit_issues(sandbox)) == 2


def test_an_audit_issue_opened_before_the_merge_is_not_its_report(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    forged_issue(sandbox, mr, mr["sha"], as_user="agents")  # filed ahead, by a ledger author
    sandbox.advance_clock(5)
    merge(world, mr)
    doc = audit_json(sandbox, "--file-issues")
    (finding,) = doc["findings"]
    assert finding["filed"]["new"] is True and len(audit_issues(sandbox)) == 2


def test_an_unreadable_ledger_is_never_a_pass(sandbox: RunningSandbox) -> None:
    world = World(sandbox)
    mr, _ = through_the_gate(world)
    issue = int(mr["description"].rpartition("#")[2])
    # A 403, not a 5xx: the reader retries 5xx with real backoff (tests/test_gitlab_client.py covers
    # that with a zero backoff); here only "unreadable" matters.
    sandbox.fault(path=rf"/issues/{issue}/notes$", status=403, count=100)
    result = audit(sandbox)
    sandbox.clear_faults()
    assert result.code == 2, result.out + result.err
    assert f"UNDECIDED {name(mr)} merged at" in result.out and "[ledger-unreadable]" in result.out
    assert f"the ledger of acme/tracker#{issue} could not be read (" in result.out
    assert "an unreadable ledger is never a pass" in result.out
    assert "next: give the read token access" in result.out


def test_each_cited_issue_is_read_once_however_many_merges_cite_it(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    issue = world.issue()
    trail = world.trail(issue)
    trail.claim("acme-lead")
    for _ in range(3):
        mr = world.mr(f"Part of {TRACKER}#{issue}")
        merge(world, mr)
    frozen_when_merged(world)
    sandbox.clear_requests()
    assert audit(sandbox).code == 1
    notes = Counter(r["path"] for r in sandbox.requests() if r["path"].endswith("/notes"))
    assert notes and set(notes.values()) == {1}
    assert len(notes) == 3  # the shared issue, the frozen MR's issue, the window's holder


def test_a_thaw_after_the_merge_does_not_lift_the_window_it_merged_in(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    world.trail(issue).reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    env = agent_env(sandbox, "acme-review")
    scope = f"mr:{mr['project']}!{mr['iid']}"
    assert run_cli(["freeze", str(issue), "--scope", scope, "--reason", "hold"], env).code == 0
    merge(world, mr)
    sandbox.advance_clock(60)
    assert run_cli(["thaw"], env).code == 0
    assert found(audit_json(sandbox)) == {name(mr): "frozen"}


def test_merges_before_the_window_are_left_out_whatever_the_server_filters(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    old, _ = by_curl_without_approval(world)
    sandbox.advance_clock(3 * 86400)
    new, _ = by_curl_without_approval(world)
    merged_at = sandbox.api("GET", f"/projects/2/merge_requests/{new['iid']}")["merged_at"]
    since = merged_at[:10]
    sandbox.set_options(merged_time_filters=False)  # older GitLab ignores merged_after
    sandbox.clear_requests()
    doc = audit_json(sandbox, "--since", since)
    assert found(doc) == {name(new): "never-approved"}
    (listing,) = [r for r in sandbox.requests() if r["path"] == "/api/v4/groups/100/merge_requests"]
    assert "updated_after=" in listing["query"] and "state=merged" in listing["query"]
    assert name(old) not in json.dumps(doc)


def test_project_names_only_that_project(sandbox: RunningSandbox) -> None:
    merged = merged_every_way(World(sandbox))
    doc = audit_json(sandbox, "--project", "partner/shared-lib")
    shared = [m for m in merged if m.mr["project"] == "partner/shared-lib"]
    assert found(doc) == {name(m.mr): m.expected for m in shared}
    assert doc["projects"] == ["partner/shared-lib"]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--project", "outside/app"], "--project outside/app: not a gated project"),
        (["--since", "last tuesday"], "--since 'last tuesday' is not an ISO 8601 date"),
        (["--days", "0"], "--days 0: give a whole number of days, 1 or more"),
        (["--days", "3", "--since", "2026-01-01"], "not allowed with argument"),
    ],
)
def test_usage_errors_exit_2_and_say_what_is_wrong(
    sandbox: RunningSandbox, flags: list[str], says: str
) -> None:
    result = audit(sandbox, *flags)
    assert result.code == 2 and says in result.err, result.err
    assert result.out == ""


def test_filing_with_a_write_token_of_no_ledger_author_stops_after_one_issue(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    by_curl_without_approval(world)
    by_curl_without_approval(world)
    env = agent_env(sandbox, PAIRGATE_TEST_TASK_WRITE_TOKEN=sandbox.token("maintainer"))
    result = run_cli(["audit", "--file-issues"], env)
    assert result.code == 2
    assert "as user id 13, which is not in ledger_author_user_ids" in result.err
    assert "PAIRGATE_TEST_TASK_WRITE_TOKEN" in result.err
    assert len(audit_issues(sandbox)) == 1


def merged_from_a_fork(world: World, *, approved: bool) -> dict[str, Any]:
    sandbox = world.sandbox
    forks = [p for p in sandbox.api("GET", "/groups/outside/projects", as_user="maintainer")
             if p["path"] == "app-fork"]  # fmt: skip
    fork = forks[0] if forks else sandbox.api(
        "POST", "/projects/2/fork", as_user="maintainer",
        json={"namespace_path": "outside", "path": "app-fork"},
    )  # fmt: skip
    issue = world.issue()
    branch = f"fix-{issue}"
    head = sandbox.commit(branch, {f"{branch}.txt": "x\n"}, project="outside/app-fork",
                          as_user="maintainer")["id"]  # fmt: skip
    mr = sandbox.api("POST", f"/projects/{fork['id']}/merge_requests", as_user="maintainer",
                     json={"source_branch": branch, "target_branch": "main", "title": "Fix",
                           "description": f"Related to {TRACKER}#{issue}",
                           "target_project_id": 2})  # fmt: skip
    mr = {**mr, "project": "acme/app"}
    if approved:
        world.trail(issue).reviewed(
            sha=head,
            mr=ref(mr),
            binds=binds_of(sandbox.api("GET", f"/projects/2/merge_requests/{mr['iid']}")),
        )
    else:
        world.trail(issue).claim("acme-lead")
    merge(world, mr, as_user="maintainer")
    return dict(mr)


def test_a_merge_from_a_fork_says_so(sandbox: RunningSandbox) -> None:
    world = World(sandbox)
    unreviewed = merged_from_a_fork(world, approved=False)
    reviewed = merged_from_a_fork(world, approved=True)
    result = audit(sandbox)
    assert result.code == 1
    doc = audit_json(sandbox)
    (finding,) = doc["findings"]
    assert finding["mr"]["iid"] == unreviewed["iid"] and finding["fork"] is True
    assert finding["source_project_id"] == unreviewed["source_project_id"] != 2
    assert "from a fork, project id" in finding["why"] and "no gate job held it" in finding["why"]
    assert [f["mr"]["iid"] for f in doc["forks"]] == [unreviewed["iid"], reviewed["iid"]]
    assert f"fork: acme/app!{reviewed['iid']} merged from project id" in result.out


def test_the_merges_diff_refs_are_read_through_graphql_not_one_get_each(
    sandbox: RunningSandbox,
) -> None:
    """A hundred merge requests of a project per GraphQL read: at 1,000 merges a REST read each
    was the audit's longest wait. The verdicts are those of the REST reads (the suite's other
    audit tests, whose bases and approvals bind diff_refs, pass on them)."""
    world = World(sandbox)
    issue = world.issue()
    world.trail(issue).claim("acme-lead")
    merged = [world.mr(f"Part of {TRACKER}#{issue}") for _ in range(3)]
    for mr in merged:
        merge(world, mr)
    sandbox.clear_requests()
    doc = audit_json(sandbox)
    assert set(found(doc)) == {name(m) for m in merged}
    asked = sandbox.requests()
    one_each = [
        r["path"]
        for r in asked
        if r["method"] == "GET" and re.fullmatch(r".*/merge_requests/\d+", r["path"])
    ]
    assert one_each == []
    # One query for the three (no approval on the trail: no lastEditedAt read).
    assert [r["method"] for r in asked if r["path"] == GRAPHQL] == ["POST"]


def test_a_gitlab_that_cannot_answer_the_query_gives_the_diff_refs_over_rest(
    sandbox: RunningSandbox, config: Config
) -> None:
    """An older GitLab without the field, or a project named by id: one REST read each."""
    world = World(sandbox)
    made = [world.mr("A change") for _ in range(2)]
    project_id = str(sandbox.api("GET", "/projects/acme%2Fapp")["id"])
    wanted = [("acme/app", made[0]["iid"]), (project_id, made[1]["iid"])]
    sandbox.fault(method="POST", path="^/api/graphql$", status=400)
    sandbox.clear_requests()
    refs = read_diff_refs(gitlab_from_env(config, agent_env(sandbox)), wanted, workers=4)
    asked = sorted(f"{r['method']} {r['path']}" for r in sandbox.requests())
    for (project, iid), mr in zip(wanted, made, strict=True):
        rest = sandbox.api("GET", f"/projects/acme%2Fapp/merge_requests/{mr['iid']}")
        assert refs[(project, iid)] == DiffRefs(
            "main", rest["diff_refs"]["base_sha"], rest["diff_refs"]["start_sha"]
        )
    assert asked == sorted(
        [
            "POST /api/graphql",  # the query for acme/app, refused; none for a project id
            f"GET /api/v4/projects/acme%2Fapp/merge_requests/{made[0]['iid']}",
            f"GET /api/v4/projects/{project_id}/merge_requests/{made[1]['iid']}",
        ]
    )
