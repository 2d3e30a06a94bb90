"""sync against the sandbox: close what merged at a head an independent approval named, say why
for every issue, and write nothing without --apply."""

from __future__ import annotations

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.names import LEAD, REVIEW
from tests.kit.run import agent_env, ok, run_cli
from tests.kit.world import Round


def issue_state(sandbox: RunningSandbox, issue: int) -> str:
    return str(sandbox.api("GET", f"/projects/acme%2Ftracker/issues/{issue}")["state"])


def test_a_dry_run_says_what_it_would_close_and_writes_nothing(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).approved()
    r.merge()
    before = len(r.notes())
    result = ok(["sync"], agent_env(sandbox, None))  # a dry run needs no identity
    assert (
        f"#{r.issue}: would close: acme/app!{r.mr} merged at {r.sha[:8]}, which {REVIEW} "
        in result.out
    )
    assert f"To close them: pairgate sync {r.issue} --apply" in result.out
    assert issue_state(sandbox, r.issue) == "opened" and len(r.notes()) == before


def test_apply_closes_with_a_record_and_drops_the_role_label(
    sandbox: RunningSandbox, suite_configuration: str
) -> None:
    r = Round(sandbox).approved()
    r.merge()
    result = ok(["sync", "--apply"], r.lead)
    assert f"#{r.issue}: closed (note " in result.out
    assert issue_state(sandbox, r.issue) == "closed"
    assert r.labels() == ["pairgate::closed"]  # the role label is gone
    last = r.notes()[-1]["body"]
    # The note GitLab holds names the configured command (it is not read back as "pairgate").
    assert f"`{suite_configuration} sync`" in last and '"event":"close"' in last


def test_each_reason_not_to_close(sandbox: RunningSandbox) -> None:
    unmerged = Round(sandbox, "unmerged").approved()
    pushed = Round(sandbox, "pushed").approved()
    pushed.push()
    pushed.merge()
    solo = Round(sandbox, "solo").claim().offer().accept(REVIEW)
    solo.approve(to=REVIEW)
    solo.merge()
    pending = Round(sandbox, "pending").claim().offer().accept(REVIEW)
    pending.approve()
    pending.merge()
    unapproved = Round(sandbox, "unapproved").claim()
    still_open = Round(sandbox, "still open").approved()
    still_open.merge()
    sandbox.commit("follow-up", {"f.txt": "x"})
    sandbox.create_mr("follow-up", description=f"acme/tracker#{still_open.issue}")
    out = ok(["sync", "--apply"], unmerged.lead).out
    lines = {int(line.split(":")[0][1:]): line for line in out.splitlines() if line.startswith("#")}
    assert "no merge request an independent approval names has merged" in lines[unmerged.issue]
    assert "what merged is not what was approved" in lines[pushed.issue]
    assert "only approvals are self-approvals" in lines[solo.issue]
    assert (
        "an offer is pending (note" in lines[pending.issue]
        and f"{LEAD} answers it first" in lines[pending.issue]
    )
    assert "no approval is recorded on it" in lines[unapproved.issue]
    assert (
        "acme/app!" in lines[still_open.issue]
        and "citing it is still open" in lines[still_open.issue]
    )
    assert all("not closed" in line for line in lines.values())
    assert all(issue_state(sandbox, n) == "opened" for n in lines)


def test_named_issues_in_any_state(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).approved()
    r.merge()
    other = Round(sandbox).approved()
    other.merge()
    ok(["sync", str(r.issue), "--apply"], r.lead)
    out = ok(["sync", str(r.issue), str(other.issue)], r.lead).out
    assert f"#{r.issue}: not closed: it is already closed" in out
    assert f"#{other.issue}: would close" in out
    missing = run_cli(["sync", "999"], r.lead)
    assert missing.code == 2 and "acme/tracker#999 does not exist" in missing.err


def test_apply_needs_an_identity_before_anything_is_read(sandbox: RunningSandbox) -> None:
    sandbox.clear_requests()
    result = run_cli(["sync", "--apply"], agent_env(sandbox, None))
    assert result.code == 2 and "no agent identity" in result.err
    assert sandbox.requests() == []


def test_apply_inside_another_agents_freeze_is_refused(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).approved()
    r.merge()
    ok(["freeze", str(r.issue), "--scope", "board", "--reason", "audit"], r.review)
    result = run_cli(["sync", "--apply"], r.lead)
    assert result.code == 1
    assert (
        f"#{r.issue}: not closed: pairgate: refused on #{r.issue}: {REVIEW} froze the board"
        in result.out
    )
    assert issue_state(sandbox, r.issue) == "opened"


def test_nothing_to_sync(sandbox: RunningSandbox) -> None:
    assert ok(["sync"], agent_env(sandbox, LEAD)).out.strip() == "No open labelled issues to sync."


def test_an_unreadable_issue_is_exit_2(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).approved()
    r.merge()
    other = Round(sandbox).claim()
    # A 403, not a 5xx: the reader retries 5xx with real backoff (tests/test_gitlab_client.py covers
    # that with a zero backoff); here only "unreadable" matters.
    sandbox.fault(method="GET", path=rf"/issues/{other.issue}/notes", status=403, count=100)
    result = run_cli(["sync"], r.lead)
    sandbox.clear_faults()
    assert result.code == 2
    assert f"#{other.issue}: not closed: could not be read" in result.out
    assert f"#{r.issue}: would close" in result.out
