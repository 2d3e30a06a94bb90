"""inbox --claude-hook: the real command, run as Claude Code runs it, with its hook JSON on stdin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pairgate.watch.hooks import STOP_LIMIT
from tests.kit.names import FIXTURE_CONFIG, LEAD
from tests.kit.run import PAIRGATE, Result, run_program
from tests.kit.world import Round

HOOK = [*PAIRGATE, "inbox", "--claude-hook"]
SESSION = "5f1c9e2a-7b1d-4c55-9a4e-3d2f1e0b9c71"


def hook_input(event: str, **fields: Any) -> str:
    common = {
        "session_id": SESSION,
        "transcript_path": f"/home/agent/.claude/projects/repo/{SESSION}.jsonl",
        "cwd": "/home/agent/repo",
        "permission_mode": "default",
        "hook_event_name": event,
    }
    specific: dict[str, Any] = {
        "SessionStart": {"source": "startup", "model": "claude-sonnet-4-5"},
        "UserPromptSubmit": {"prompt": "carry on with the issue"},
        "Stop": {"stop_hook_active": False, "last_assistant_message": "Done: tests pass."},
    }[event]
    return json.dumps(common | specific | fields)


@pytest.fixture
def world(sandbox: Any, tmp_path: Path) -> Round:
    w = Round(sandbox, watch_dir=tmp_path)
    w.claim()
    w.comment("Please handle the empty list.")
    w.poll()
    return w


def hook(world: Round, event: str, *extra: str, stdin: str | None = None, **env: str) -> Result:
    base = {
        "PAIRGATE_CONFIG": str(FIXTURE_CONFIG),
        "PAIRGATE_TEST_AGENT_ID": LEAD,
        "XDG_STATE_HOME": str(world.state),
    }
    base.update(env)
    return run_program(
        [*HOOK, event, *extra],
        env={k: v for k, v in base.items() if v},
        stdin=hook_input(event) if stdin is None else stdin,
    )


def test_stop_blocks_with_the_pending_list_then_allows_after_the_ack(world: Round) -> None:
    result = hook(world, "Stop")
    assert result.code == 0, result.err
    answer = json.loads(result.out)
    assert answer["decision"] == "block"
    reason = answer["reason"]
    assert "acme-lead holds 1 unacknowledged batch(es)" in reason
    assert f"- b1 on acme/app!{world.mr}: 1 event(s) (comment-added)" in reason
    assert 'pairgate inbox ack b1 --note "<what you did>"' in reason
    assert "pairgate inbox" in reason and "check what has already happened" in reason
    assert world.ack("b1").code == 0
    after = hook(world, "Stop", stdin=hook_input("Stop", stop_hook_active=True))
    assert (after.code, after.out) == (0, "")


def test_stop_blocks_a_bounded_number_of_times_in_a_row(world: Round) -> None:
    answers = [json.loads(hook(world, "Stop").out)]
    for _ in range(STOP_LIMIT):
        result = hook(world, "Stop", stdin=hook_input("Stop", stop_hook_active=True))
        answers.append(json.loads(result.out))
    assert [a.get("decision") for a in answers] == ["block"] * STOP_LIMIT + [None]
    assert (
        f"Reminder {STOP_LIMIT} of at most {STOP_LIMIT} in a row"
        in answers[STOP_LIMIT - 1]["reason"]
    )
    assert answers[-1]["systemMessage"].startswith(
        f"pairgate: acme-lead still holds 1 unacknowledged batch(es) (b1) after {STOP_LIMIT} reminders"
    )
    again = json.loads(hook(world, "Stop").out)  # a new stop (not a continuation) starts over
    assert again["decision"] == "block" and "Reminder 1 of" in again["reason"]
    channels = {a["channel"] for a in world.store().attempts(1)}
    assert channels == {"hook:Stop"}


def test_session_start_adds_the_batches_as_context(world: Round) -> None:
    result = hook(world, "SessionStart")
    assert result.code == 0, result.err
    output = json.loads(result.out)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    context = output["additionalContext"]
    assert context.startswith(
        f"pairgate watch: batch b1 for acme-lead: 1 event on acme/app!{world.mr}"
    )
    assert "   │ Please handle the empty list." in context
    assert context.rstrip().endswith('pairgate inbox ack b1 --note "<what you did>"')


def test_user_prompt_submit_adds_only_what_is_due(world: Round) -> None:
    first = json.loads(hook(world, "UserPromptSubmit").out)["hookSpecificOutput"]
    assert first["hookEventName"] == "UserPromptSubmit" and "batch b1" in first["additionalContext"]
    second = hook(world, "UserPromptSubmit")
    assert (second.code, second.out) == (0, "")  # shown, not due again yet
    due = json.loads(hook(world, "UserPromptSubmit", "--remind-after", "0.001").out)
    assert "Reminder: first sent" in due["hookSpecificOutput"]["additionalContext"]


def test_a_hook_never_exits_2(world: Round) -> None:
    """Exit 2 would block the stop or erase the prompt; a failure is exit 1 (shown, passed)."""
    bad_json = hook(world, "Stop", stdin="{not json")
    assert (bad_json.code, bad_json.out) == (1, "")
    assert bad_json.err.startswith("pairgate inbox: the hook input is not JSON")
    no_config = hook(world, "UserPromptSubmit", PAIRGATE_CONFIG=str(world.state / "missing.json"))
    assert no_config.code == 1 and "missing configuration" in no_config.err


def test_session_start_with_no_identity_tells_the_agent(world: Round) -> None:
    nobody = hook(world, "SessionStart", PAIRGATE_TEST_AGENT_ID="")
    assert nobody.code == 0, nobody.err
    assert json.loads(nobody.out) == {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": (
                "pairgate inbox: no agent identity (PAIRGATE_TEST_AGENT_ID is unset): no batches "
                "shown. The GitLab events the watcher holds for this session's agent (review "
                "comments, pipelines, offers) cannot reach it. To receive them, start the session "
                "with PAIRGATE_TEST_AGENT_ID set to the agent's name, or give the hook's command "
                "--agent <agent>."
            ),
        }
    }
    assert "PAIRGATE_TEST_AGENT_ID is unset" in nobody.err


def test_no_identity_on_a_prompt_or_no_store_is_silent(world: Round, tmp_path: Path) -> None:
    for event in ("UserPromptSubmit", "Stop"):
        nobody = hook(world, event, PAIRGATE_TEST_AGENT_ID="")
        assert (nobody.code, nobody.out) == (0, "")
        assert "PAIRGATE_TEST_AGENT_ID is unset" in nobody.err
    fresh = hook(world, "Stop", XDG_STATE_HOME=str(tmp_path / "elsewhere"))
    assert (fresh.code, fresh.out) == (0, "")
