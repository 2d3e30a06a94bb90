"""The merge hook's command reader (pairgate/standalone/command_reader/), continued: the SHA a
merge carries, git push with auto-merge push options, and MCP tool calls read like the Bash
forms (the three tables of disguised, blocked and harmless commands are in
tests/kit/command_corpus.py)."""

from __future__ import annotations

import pytest

from pairgate.standalone.command_reader.mcp import read_tool_call
from pairgate.standalone.command_reader.read import read_command
from pairgate.standalone.command_reader.words import (
    CommandReading,
    MergeFound,
)

# -- the SHA a merge carries: the hook allows a merge only when it is the approved head --------

SHA, OTHER = "a" * 40, "b" * 40
REST = "glab api -X PUT projects/acme%2Fapp/merge_requests/12/merge"
GRAPHQL = "glab api graphql -f query='mutation($s: String = \"" + SHA + '") { mergeRequestAccept'

# (command, the SHAs GitLab would be given to bind the merge: None is one the hook cannot read)
SHAS: list[tuple[str, tuple[str | None, ...]]] = [
    ("glab mr merge 12 -R acme/app", ()),
    (f"glab mr merge 12 -R acme/app --sha {SHA}", (SHA,)),
    (f"glab mr merge 12 -R acme/app --sha={OTHER} --sha {SHA}", (SHA,)),  # pflag: the last
    (f"glab mr merge 12 -R acme/app --sha {SHA} --sha ''", ()),  # glab sends no empty --sha
    ('glab mr merge 12 -R acme/app --sha "$(git rev-parse HEAD)"', (None,)),
    (f"glab mr merge 12 -R acme/app --auto-merge --sha {SHA}", (SHA,)),
    (f"{REST} -f sha={SHA}", (SHA,)),
    (f"{REST} -F sha={OTHER} -f sha={SHA}", (OTHER,)),  # -F replaces -f (api.go parseFields)
    (f"glab api -X PUT 'projects/acme%2Fapp/merge_requests/12/merge?sha={SHA}'", (SHA,)),
    (f"glab api -X PUT 'projects/acme%2Fapp/merge_requests/12/merge?sha={SHA}' -f sha={OTHER}",
     (OTHER, SHA)),
    (f"{REST} --input body.json", (None,)),
    (f"{REST} -F sha=@sha.txt", (None,)),
    (f"{REST} -f \"sha=$SHA\"", (None,)),
    (f"glab api -X POST projects/acme%2Fapp/merge_trains/merge_requests/12 -f sha={SHA}", (SHA,)),
    (GRAPHQL + '(input: {projectPath: "acme/app", iid: "12", sha: $s}) { errors } }\'', (SHA,)),
    (
        "glab api graphql -f query='mutation { mergeRequestAccept(input: "
        '{projectPath: "acme/app", iid: "12", sha: """\n  ' + SHA + '\n"""}) { errors } }\'',
        (SHA,),
    ),
    (
        "glab api -X POST projects/acme%2Fapp/merge_requests/12/notes -f body=/merge "
        f"-f merge_request_diff_head_sha={SHA}",
        (SHA,),
    ),
    ("glab mr note 12 -R acme/app -m /merge", ()),
]  # fmt: skip


@pytest.mark.parametrize(("command", "shas"), SHAS, ids=[c for c, _ in SHAS])
def test_the_sha_a_merge_carries_is_read_as_gitlab_gets_it(
    command: str, shas: tuple[str | None, ...]
) -> None:
    reading = read_command(command)
    assert reading.problems() == []
    assert [(m.project, m.iid, m.shas) for m in reading.merges] == [("acme/app", 12, shas)]


def test_a_quick_action_is_a_merge_of_its_own_kind() -> None:
    (merge,) = read_command("glab mr note 12 -R acme/app -m '/merge'").merges
    assert merge == MergeFound(merge.words, "acme/app", 12, "", (), "/merge")
    # a note body the hook cannot read carries no merge_request_diff_head_sha, without which
    # GitLab runs no /merge (lib/gitlab/quick_actions/merge_request_actions.rb)
    assert read_command('glab mr note 12 -R acme/app -m "$(cat note.md)"') == CommandReading()
    found = read_command(
        "glab api -X POST projects/acme%2Fapp/merge_requests/12/notes -F body=@note.md "
        f"-f merge_request_diff_head_sha={SHA}"
    )
    assert [(m.kind, m.shas) for m in found.merges] == [("/merge", (SHA,))]


# -- git push with auto-merge push options ---------------------------------------------------------

PUSHED = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("command", "remote", "branch"),
    [
        (f"git push origin {PUSHED}:refs/heads/feature -o merge_request.auto_merge", "origin", "feature"),
        (f"git push -o mr.merge_when_pipeline_succeeds origin +{PUSHED}:feature", "origin", "feature"),
        (f"git push --push-option=merge_request.auto_merge=true origin {PUSHED}:f", "origin", "f"),
        (f"git push -vomerge_request.auto_merge origin {PUSHED}:f", "origin", "f"),
        (f"git -c push.pushOption=merge_request.auto_merge push https://h/acme/app.git {PUSHED}:f",
         "https://h/acme/app.git", "f"),
        (f"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=push.pushOption GIT_CONFIG_VALUE_0=mr.auto_merge "
         f"git push origin {PUSHED}:f", "origin", "f"),
        (f"git -c alias.p='push -o merge_request.auto_merge' p origin {PUSHED}:f", "origin", "f"),
        # refs/heads/heads/x is the branch heads/x; the operand names the remote even with --repo
        (f"git push -o mr.auto_merge origin {PUSHED}:refs/heads/heads/x", "origin", "heads/x"),
        (f"git push --repo=https://h/outside/tool.git -o mr.auto_merge https://h/acme/app.git "
         f"{PUSHED}:refs/heads/f", "https://h/acme/app.git", "f"),
        # --no-push-option empties -o's list: push.pushOption counts again
        (f"git -c push.pushOption=mr.auto_merge push -o ci.skip --no-push-option origin {PUSHED}:f",
         "origin", "f"),
    ],
)  # fmt: skip
def test_a_push_that_arms_auto_merge_is_read_with_its_remote_head_and_branch(
    command: str, remote: str, branch: str
) -> None:
    reading = read_command(command)
    assert reading.problems() == []
    assert [(p.remote, p.sha, p.branch) for p in reading.pushes] == [(remote, PUSHED, branch)]


def test_a_push_is_alone_only_when_it_is_the_whole_command() -> None:
    alone = read_command(f"git push origin {PUSHED}:f -o mr.auto_merge").pushes
    assert [p.alone for p in alone] == [True]
    after = read_command(
        f"git remote set-url origin x && git push origin {PUSHED}:f -o mr.auto_merge"
    )
    assert [p.alone for p in after.pushes] == [False]
    options = read_command(
        f"git push origin {PUSHED}:f -o mr.auto_merge -o merge_request.target_project=acme/app "
        "-o merge_request.create"
    ).pushes
    assert [(p.target_project, p.creates) for p in options] == [("acme/app", True)]


@pytest.mark.parametrize(
    "command",
    [
        "git push origin feature",
        f"git push -o ci.skip origin {PUSHED}:f",
        f"git push -o merge_request.create origin {PUSHED}:f",
        "git push -o merge_request.auto_merge origin :f",  # deletes the branch
        f"git push -o merge_request.auto_merge origin {PUSHED}:refs/tags/v1",
    ],
)
def test_a_push_that_arms_no_auto_merge_is_no_merge(command: str) -> None:
    reading = read_command(command)
    assert (reading.pushes, reading.problems()) == ((), [])


# -- MCP tool calls, read like the Bash forms ----------------------------------------------------

URL = "https://gitlab.example.com/acme/app/-/merge_requests/12"


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        # glab mcp serve runs `glab mr merge <flags> <args>` with the command's own flags only
        ("mcp__glab__glab_mr_merge", {"args": [URL], "flags": {"sha": SHA, "yes": True}},
         [("acme/app", 12, (SHA,), "merge")]),
        ("mcp__glab__glab_mr_merge", {"args": [URL]}, [("acme/app", 12, (), "merge")]),
        ("mcp__glab__glab_api", {"args": ["projects/acme%2Fapp/merge_requests/12/merge"],
                                 "flags": {"method": "PUT", "raw_field": [f"sha={SHA}"]}},
         [("acme/app", 12, (SHA,), "merge")]),
        ("mcp__glab__glab_mr_note", {"args": [URL], "flags": {"message": "/merge"}},
         [("acme/app", 12, (), "/merge")]),
        ("mcp__GitLab__accept_merge_request", {"id": "acme/app", "merge_request_iid": 12,
                                               "sha": SHA}, [("acme/app", 12, (SHA,), "merge")]),
        ("mcp__GitLab__team_accept_merge_request", {"project_id": "acme%2Fapp",
                                                    "merge_request_iid": "12"},
         [("acme/app", 12, (), "merge")]),
        ("mcp__gitlab__merge_merge_request", {"project_id": "acme/app", "merge_request_iid": "12",
                                              "sha": SHA, "auto_merge": True},
         [("acme/app", 12, (SHA,), "merge")]),
        ("mcp__plugin_x_gitlab__gitlab_mr_merge", {"project_id": 42, "merge_request_iid": 12},
         [("42", 12, (), "merge")]),
        ("mcp__z__GitlabAcceptMRTool", {"projectId": 1, "project_id": "acme/app", "iid": 12},
         [("acme/app", 12, (), "merge")]),
        ("mcp__gitlab__execute_graphql",
         {"query": 'mutation { mergeRequestAccept(input: {projectPath: "acme/app", iid: "12", '
                   f'sha: "{SHA}"}}) {{ errors }} }}'},
         [("acme/app", 12, (SHA,), "merge")]),
        ("mcp__z__GitlabRawApiTool", {"method": "PUT",
                                      "path": "projects/acme%2Fapp/merge_requests/12/merge",
                                      "data": {"sha": SHA}},
         [("acme/app", 12, (SHA,), "merge")]),
        ("mcp__gitlab__create_merge_request_note", {"project_id": "acme/app",
                                                    "merge_request_iid": 12, "body": "/merge"},
         [("acme/app", 12, (), "/merge")]),
        ("mcp__GitLab__save_note", {"project_id": "acme/app", "merge_request_iid": 12,
                                    "body": "ok\n/merge", "merge_request_diff_head_sha": SHA},
         [("acme/app", 12, (SHA,), "/merge")]),
    ],
)  # fmt: skip
def test_an_mcp_tool_that_merges_is_read_with_its_project_mr_and_sha(
    tool: str, tool_input: dict[str, object], expected: list[tuple[object, ...]]
) -> None:
    reading = read_tool_call(tool, tool_input)
    assert reading.problems() == []
    assert [(m.project, m.iid, m.shas, m.kind) for m in reading.merges] == expected


@pytest.mark.parametrize(
    ("tool", "tool_input", "why"),
    [
        # the server drops --repo (an inherited flag): glab would merge in its own directory
        ("mcp__glab__glab_mr_merge", {"args": ["12"], "flags": {"repo": "acme/app", "sha": SHA}},
         "no project named"),
        ("mcp__GitLab__accept_merge_request", {"merge_request_iid": 12}, "do not name one project"),
        ("mcp__gitlab__execute_graphql", {"query": "mutation { mergeRequestAccept(input: $i) { errors } }"},
         "cannot read"),
        ("mcp__other__mr_merge", {"iid": 12}, "named like a merge"),
    ],
)  # fmt: skip
def test_an_mcp_merge_the_hook_cannot_attribute_is_blocked_saying_why(
    tool: str, tool_input: dict[str, object], why: str
) -> None:
    problems = read_tool_call(tool, tool_input).problems()
    assert any(why in p for p in problems), problems


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("mcp__glab__glab_mr_list", {"flags": {"label": ["ready"]}}),
        ("mcp__glab__glab_mr_approve", {"args": ["12"], "flags": {"sha": SHA}}),
        ("mcp__glab__glab_mr_note", {"args": [URL], "flags": {"message": "looks good"}}),
        ("mcp__gitlab__approve_merge_request", {"project_id": "acme/app", "merge_request_iid": 12}),
        ("mcp__gitlab__get_merge_request", {"project_id": "acme/app", "merge_request_iid": 12}),
        ("mcp__gitlab__create_merge_request", {"project_id": "acme/app", "title": "Merge x"}),
        ("mcp__jm__gitlab_mr_cancel_auto_merge", {"project_id": "acme/app", "merge_request_iid": 1}),
        ("mcp__memory__create_entities", {"entities": [{"name": "merge notes"}]}),
    ],
)  # fmt: skip
def test_an_mcp_tool_that_merges_nothing_is_read_as_nothing(
    tool: str, tool_input: dict[str, object]
) -> None:
    assert read_tool_call(tool, tool_input) == CommandReading()
