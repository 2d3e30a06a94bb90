"""MCP tool calls: which of glab's and GitLab's MCP tools merge, and what they name."""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

from pairgate.standalone.command_reader.reader import Reader
from pairgate.standalone.command_reader.reader_glab import graphql
from pairgate.standalone.command_reader.reading import Layer
from pairgate.standalone.command_reader.words import (
    QUICK_MERGE,
    CommandReading,
    MergeFound,
    literal_word,
)

__all__ = ["read_tool_call"]

# glab mcp serve (internal/commands/mcp/serve/server.go) names a tool "glab_" + the command's path
# and runs `glab <path> <flags> <args>` with only the flags the command itself defines (an
# inherited flag such as --repo is dropped). The local flags of the commands that can merge:
_GLAB_TOOL_FLAGS: dict[tuple[str, ...], frozenset[str]] = {
    ("mr", "merge"): frozenset(
        {"sha", "remove-source-branch", "auto-merge", "message", "squash-message", "squash",
         "rebase", "yes", "when-pipeline-succeeds"}
    ),
    ("mr", "note"): frozenset({"message", "unique"}),
    ("mr", "update"): frozenset(
        {"draft", "ready", "wip", "title", "lock-discussion", "unlock-discussion", "description",
         "label", "unlabel", "assignee", "reviewer", "unassign", "squash-before-merge",
         "remove-source-branch", "milestone", "target-branch", "fill", "fill-commit-body", "yes"}
    ),
    ("api",): frozenset(
        {"hostname", "method", "field", "raw-field", "header", "include", "paginate", "input",
         "silent"}
    ),
    ("alias", "set"): frozenset({"shell"}),
}  # fmt: skip
# Tools of GitLab's MCP server and of the community servers that merge a merge request
# (GitLab: accept_merge_request; zereight/gitlab-mcp: merge_merge_request; jmrplens/gitlab-mcp-server:
# gitlab_mr_merge; ZephyrDeng/mcp-server-gitlab: GitlabAcceptMRTool), that run GraphQL
# (zereight: execute_graphql) or any API request (ZephyrDeng: GitlabRawApiTool). GitLab's server
# may prefix every tool name (X-Gitlab-Mcp-Server-Tool-Name-Prefix), so a name is matched by
# its end. Approving (approve_merge_request, gitlab_mr_approve, glab_mr_approve) merges nothing,
# as `glab mr approve` in Bash does not.
_MCP_MERGE_TOOLS = ("accept_merge_request", "merge_merge_request", "gitlab_mr_merge",
                    "gitlabacceptmrtool")  # fmt: skip
_MCP_GRAPHQL_TOOLS = ("execute_graphql",)
_MCP_API_TOOLS = ("gitlabrawapitool",)
_MCP_PROJECT_KEYS = ("project_id", "projectPath", "project_path", "project", "fullPath", "id")
_MCP_IID_KEYS = ("merge_request_iid", "mergeRequestIid", "iid", "mr_iid", "merge_request_id")


def read_tool_call(tool_name: str, tool_input: Mapping[str, Any]) -> CommandReading:
    """What an MCP tool call (``tool_name`` is ``mcp__<server>__<tool>``) would merge, read as
    the Bash forms are: a glab tool as the glab command it runs, a merge tool by its project,
    merge request and ``sha``, a GraphQL or raw API tool as that request, and a ``/merge``
    quick action in any text a tool posts."""
    tool = tool_name.rsplit("__", 1)[-1]
    lowered = tool.lower()
    words = f"MCP tool {tool_name}"
    if lowered.startswith("glab_"):
        return _read_glab_tool(lowered[len("glab_") :].split("_"), tool_input)
    reader = Reader()
    if lowered.endswith(_MCP_MERGE_TOOLS):
        project, iid, problem = _mcp_target(tool_input)
        sha = tool_input.get("sha")
        shas = () if sha in (None, "") else ((sha if isinstance(sha, str) else None),)
        reader.found_merge(MergeFound(words, project, iid, problem, shas))
        return reader.result()
    if lowered.endswith(_MCP_GRAPHQL_TOOLS):
        variables = tool_input.get("variables") or {}
        if isinstance(variables, str):
            try:
                variables = json.loads(variables)
            except ValueError:
                variables = None
        query = tool_input.get("query")
        if not isinstance(query, str) or not isinstance(variables, dict):
            reader.unclear(f"{words}: a GraphQL request the hook cannot read")
        else:
            graphql(reader, words, {"query": query, **variables}, False)
        return reader.result()
    if lowered.endswith(_MCP_API_TOOLS):
        return _read_api_tool(words, tool_input)
    texts = [t for t in _strings(tool_input) if QUICK_MERGE.search(t)]
    if texts:
        project, iid, problem = _mcp_target(tool_input)
        sha = tool_input.get("merge_request_diff_head_sha")
        shas = () if sha in (None, "") else ((sha if isinstance(sha, str) else None),)
        reader.found_merge(MergeFound(words, project, iid, problem, shas, "/merge"))
    elif re.match(r"merge|.*(merge|accept)$|.*accept", lowered) and not re.match(
        r"(get|list|search|read|view|show|create|approve|unapprove)_|.*cancel", lowered
    ):
        reader.unclear(
            f"{words}: an MCP tool named like a merge that the hook does not know; merge "
            "through the Bash tool with glab mr merge <iid> -R <project> --sha <approved head>"
        )
    return reader.result()


def _read_glab_tool(path: list[str], tool_input: Mapping[str, Any]) -> CommandReading:
    """A ``glab mcp serve`` tool: the glab command it runs (server.go convertParamsToArgs:
    each known flag as --flag value, true booleans as --flag, then the positional args)."""
    known = _GLAB_TOOL_FLAGS.get(tuple(path))
    if known is None:
        return CommandReading()  # a glab command that cannot merge
    argv = ["glab", *path]
    flags = tool_input.get("flags")
    for key, value in flags.items() if isinstance(flags, Mapping) else ():
        name = key.replace("_", "-")
        if value is None or (name not in known and key not in known):
            continue
        if isinstance(value, bool):
            argv += [f"--{name}"] if value else []
        elif isinstance(value, list):
            argv += [
                x for item in value if isinstance(item, str) and item for x in (f"--{name}", item)
            ]
        elif isinstance(value, int | float):
            if value:
                number = str(int(value)) if float(value).is_integer() else repr(value)
                argv += [f"--{name}", number]
        elif str(value) not in ("", "0", "false"):
            argv += [f"--{name}", str(value)]
    args = tool_input.get("args")
    argv += [a for a in (args if isinstance(args, list) else ()) if isinstance(a, str) and a]
    reader = Reader()
    reader.run([literal_word(w) for w in argv], {}, Layer(b"", 0))
    return reader.result()


def _read_api_tool(words: str, tool_input: Mapping[str, Any]) -> CommandReading:
    """A raw API tool: its method, endpoint and parameters, read as ``glab api`` would be."""
    reader = Reader()
    endpoint = next((tool_input[k] for k in ("path", "endpoint", "url") if k in tool_input), None)
    method = str(tool_input.get("method") or "GET").upper()
    data: Any = next((tool_input[k] for k in ("data", "body", "params") if k in tool_input), {})
    if not isinstance(endpoint, str) or not isinstance(data, Mapping):
        if method not in ("GET", "HEAD"):
            reader.unclear(f"{words}: an API request the hook cannot read")
        return reader.result()
    argv = ["glab", "api", "-X", method, endpoint]
    argv += [x for k, v in data.items() for x in ("-f", f"{k}={v}")]
    reader.run([literal_word(w) for w in argv], {}, Layer(b"", 0))
    return reader.result()


def _mcp_target(tool_input: Mapping[str, Any]) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) from an MCP tool's arguments."""
    project = next((tool_input[k] for k in _MCP_PROJECT_KEYS if k in tool_input), None)
    iid = next((tool_input[k] for k in _MCP_IID_KEYS if k in tool_input), None)
    if isinstance(project, int) and not isinstance(project, bool):
        project = str(project)
    if isinstance(project, str):
        project = urllib.parse.unquote(project).strip("/") or None
    if isinstance(iid, str) and re.fullmatch(r"[1-9][0-9]*", iid):
        iid = int(iid)
    if not isinstance(project, str) or not isinstance(iid, int) or isinstance(iid, bool) or iid < 1:
        return (
            project if isinstance(project, str) else None,
            None,
            "the tool's arguments do not name one project and one merge request the hook can read",
        )
    return project, iid, ""


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
