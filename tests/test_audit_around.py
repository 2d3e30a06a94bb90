"""The audit around the merge button, against the sandbox: a commit pushed to a default branch
with no merge request is a finding naming its pusher; the commits merges bring are not; and
erasing a freeze (its note deleted, or its label removed) never leaves a merge made inside it
clean. Each with its message and the audit's exit code."""

from __future__ import annotations

import json
import re
from typing import Any

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.audit_freezes import frozen_spans, held_at
from pairgate.standalone.audit_pushes import (
    BranchCommit,
    BranchRead,
    BroughtBy,
    pushed_without_mr,
)
from pairgate.standalone.ledger import stamp_epoch
from tests.kit.audit_cases import merge, through_the_gate
from tests.kit.gate_cases import ref
from tests.kit.names import TRACKER, project_path
from tests.kit.run import Result, agent_env, run_cli
from tests.kit.trail import binds_of
from tests.kit.world import World


def audit(sandbox: RunningSandbox, *flags: str) -> Result:
    return run_cli(["audit", *flags], agent_env(sandbox))


def audit_json(sandbox: RunningSandbox) -> dict[str, Any]:
    result = audit(sandbox, "--json")
    return dict(json.loads(result.out))


def test_a_direct_push_is_a_finding_naming_its_pusher_and_merges_are_not(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    through_the_gate(world)  # a merge commit on main
    # A fast-forward merge of a branch with two commits: both are the merge request's.
    sandbox.settings("acme/app", merge_method="ff")
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    world.push(mr["project"], mr["source_branch"])
    head = world.head(mr)
    world.trail(issue).reviewed(sha=head, mr=ref(mr), binds=binds_of(mr))
    merge(world, mr)
    pushed = sandbox.commit("main", {"hotfix.txt": "fixed\n"}, message="Hotfix straight to main")
    sha = pushed["id"]
    result = audit(sandbox)
    assert result.code == 1, result.out + result.err
    lines = result.out.splitlines()
    assert f"FINDING acme/app main {sha[:12]} [pushed-without-mr]" in lines, result.out
    why = next(line for line in lines if line.startswith(f"  {sha[:12]} "))
    assert re.fullmatch(
        rf"  {sha[:12]} \('Hotfix straight to main'\) was pushed to main by maintainer at "
        r"\S+; no merged merge request brought it, so the gate never judged it",
        why,
    ), why
    assert "audit: 1 commit(s) pushed to a default branch without a merge request" in lines
    assert "0 finding(s)" in result.out  # both merges passed the gate
    doc = audit_json(sandbox)
    assert [
        (p["project"], p["branch"], p["sha"], p["pusher"]) for p in doc["pushed_without_mr"]
    ] == [("acme/app", "main", sha, "maintainer")]
    entry = doc["pushed_without_mr"][0]
    assert entry["code"] == "pushed-without-mr" and entry["decided"] is True
    assert entry["title"] == "Hotfix straight to main" and entry["pushed_at"]
    assert doc["findings"] == [] and doc["approved"] == 2 and doc["undecided"] == 0


def test_without_a_direct_push_the_merges_leave_the_branch_clean(sandbox: RunningSandbox) -> None:
    through_the_gate(World(sandbox))
    result = audit(sandbox)
    assert result.code == 0, result.out + result.err
    assert "audit: 0 commit(s) pushed to a default branch without a merge request" in result.out


def _freeze(world: World, holder: int, mr: dict[str, Any]) -> int:
    """An mr: freeze on ``holder`` as acme-review; the freeze note's id."""
    argv = ["freeze", str(holder), "--scope", f"mr:{mr['project']}!{mr['iid']}"]
    froze = run_cli([*argv, "--reason", "release cut"], agent_env(world.sandbox, "acme-review"))
    assert froze.code == 0, froze.err
    return int(next(n["id"] for n in reversed(world.notes(holder)) if "freeze" in n["body"]))


def _approved_and_frozen(world: World) -> tuple[dict[str, Any], int, int]:
    issue = world.issue()
    mr = world.mr(f"Related to {TRACKER}#{issue}")
    world.trail(issue).reviewed(sha=mr["sha"], mr=ref(mr), binds=binds_of(mr))
    holder = world.issue("Release window")
    note = _freeze(world, holder, mr)
    merge(world, mr)
    return mr, holder, note


def _unlabel(sandbox: RunningSandbox, holder: int) -> None:
    path = f"{project_path(TRACKER)}/issues/{holder}"
    sandbox.api("PUT", path, as_user="maintainer", json={"remove_labels": "pairgate::frozen"})


def _delete(sandbox: RunningSandbox, holder: int, note: int) -> None:
    path = f"{project_path(TRACKER)}/issues/{holder}/notes/{note}"
    sandbox.api("DELETE", path, as_user="maintainer")


def test_a_merge_inside_an_mr_freeze_stays_a_finding_after_the_label_is_removed(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    mr, holder, _ = _approved_and_frozen(world)
    _unlabel(sandbox, holder)
    assert "pairgate::frozen" not in world.labels(holder)
    result = audit(sandbox)
    assert result.code == 1, result.out + result.err
    assert f"FINDING {mr['project']}!{mr['iid']} merged at" in result.out
    assert f"[frozen]\n  merged while frozen: acme-review froze mr:{mr['project']}!{mr['iid']}" in (
        result.out
    )


def test_a_merge_inside_a_freeze_whose_note_was_deleted_is_undecided(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    mr, holder, note = _approved_and_frozen(world)
    _delete(sandbox, holder, note)
    result = audit(sandbox)
    assert result.code == 2, result.out + result.err
    lines = result.out.splitlines()
    head = next(line for line in lines if line.startswith("UNDECIDED "))
    assert head.startswith(f"UNDECIDED {mr['project']}!{mr['iid']} merged at ")
    assert head.endswith("[freeze-note-missing]")
    why = lines[lines.index(head) + 1]
    assert re.fullmatch(
        rf"  {TRACKER}#{holder} carried the pairgate::frozen label at the merge \(added \S+Z, "
        r"it is still there\) but no freeze note is left on it to say what it froze, so "
        r"whether the merge was frozen cannot be told",
        why,
    ), why
    doc = audit_json(sandbox)
    assert [(f["code"], f["decided"]) for f in doc["findings"]] == [("freeze-note-missing", False)]
    assert doc["undecided"] == 1


def test_both_traces_erased_still_leaves_the_merge_undecided(sandbox: RunningSandbox) -> None:
    world = World(sandbox)
    mr, holder, note = _approved_and_frozen(world)
    _delete(sandbox, holder, note)
    _unlabel(sandbox, holder)
    result = audit(sandbox)
    assert result.code == 2, result.out + result.err
    assert f"UNDECIDED {mr['project']}!{mr['iid']} merged at" in result.out
    assert re.search(
        r"carried the pairgate::frozen label at the merge \(added \S+Z, until \S+Z\) but no "
        r"freeze note is left on it",
        result.out,
    ), result.out


def test_a_freeze_label_whose_note_is_there_leaves_other_merges_clean(
    sandbox: RunningSandbox,
) -> None:
    world = World(sandbox)
    through_the_gate(world)
    holder = world.issue("Old window")
    mr = world.mr(f"Related to {TRACKER}#{holder}")
    _freeze(world, holder, mr)  # the label stays on; the window is on another merge request
    through_the_gate(world)
    result = audit(sandbox)
    assert result.code == 0, result.out + result.err


# -- the walk's pure part: what merges bring, who pushed the rest ----------------------------------


def _chain(*shas: str) -> tuple[BranchCommit, ...]:
    """Newest first, each the first parent's child."""
    return tuple(
        BranchCommit(s, shas[i + 1] if i + 1 < len(shas) else None, f"t{s}", "2026-01-01T00:00:00Z")
        for i, s in enumerate(shas)
    )


def test_a_squash_commit_is_the_merge_requests_and_an_unnamed_pusher_is_unknown() -> None:
    read = BranchRead("acme/app", "main", _chain("d", "c", "b", "a"))
    merged = [BroughtBy(None, "c", "feature-head", None), BroughtBy(None, None, "b", "a")]
    found = pushed_without_mr(read, merged)
    assert [f.sha for f in found] == ["a", "d"]  # oldest first
    assert found[1].pusher is None
    assert found[1].why == (
        "d ('td') was pushed to main by an unknown pusher (no push event names it); no merged "
        "merge request brought it, so the gate never judged it"
    )


def test_one_push_of_several_commits_names_its_pusher_for_each() -> None:
    event = {
        "author_username": "mallory",
        "created_at": "2026-01-01T00:00:00Z",
        "push_data": {"ref": "main", "ref_type": "branch", "commit_from": "a", "commit_to": "c"},
    }
    other_branch = {
        **event,
        "author_username": "x",
        "push_data": {**event["push_data"], "ref": "dev"},
    }
    read = BranchRead("acme/app", "main", _chain("c", "b", "a"), (other_branch, event))
    found = pushed_without_mr(read, [])
    assert [(f.sha, f.pusher) for f in found] == [("a", None), ("b", "mallory"), ("c", "mallory")]


def test_an_unreadable_branch_is_undecided() -> None:
    read = BranchRead("acme/app", "main", error="HTTP 403")
    (found,) = pushed_without_mr(read, [])
    assert (found.code, found.decided) == ("history-unreadable", False)
    assert "could not be read (HTTP 403)" in found.why


# -- the label history's pure part ----------------------------------------------------------------


def _event(n: int, action: str, when: str, label: str = "pairgate::frozen") -> dict[str, Any]:
    return {"id": n, "action": action, "created_at": when, "label": {"name": label}}


def test_the_spans_the_freeze_label_was_held() -> None:
    t = [stamp_epoch(f"2026-01-0{d}T00:00:00Z") for d in range(1, 6)]
    events = [
        _event(1, "add", "2026-01-01T00:00:00Z"),
        _event(2, "add", "2026-01-01T12:00:00Z", label="agent::lead"),
        _event(3, "remove", "2026-01-02T00:00:00Z"),
        _event(4, "add", "2026-01-04T00:00:00Z"),
    ]
    spans = frozen_spans(events, labelled_now=True)
    assert [(s.start, s.end, s.previous_end) for s in spans] == [
        (t[0], t[1], None),
        (t[3], None, t[1]),
    ]
    assert held_at(spans, t[2] or 0.0) is None and held_at(spans, t[4] or 0.0) == spans[1]
    # Labelled with no history (older than the events API): held always.
    assert [(s.start, s.end) for s in frozen_spans([], labelled_now=True)] == [(None, None)]
    # A removal with no add before it: held from before the history began.
    (only,) = frozen_spans([_event(7, "remove", "2026-01-02T00:00:00Z")], labelled_now=False)
    assert (only.start, only.end) == (None, t[1])
    assert frozen_spans([], labelled_now=False) == ()
