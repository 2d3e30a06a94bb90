"""The Claude Code hook registrations a deployment needs, from one place: the merge hook (the
matcher and timeout docs/agent-handoff.md documents) and the inbox hooks
(docs/agent-handoff-reference.md, "The Claude Code hooks"). init prints them and merges them
into a settings file; the suite checks the documents show exactly these.

Merging keeps every key the settings file has, adds each registration that is not there yet
(an identical one is not added twice), and refuses a file that is not a JSON object.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from pathlib import Path
from typing import Any

from pairgate.standalone.errors import UsageError

MERGE_HOOK = "block-unapproved-merge.sh"
# Every tool that can merge: Bash and Monitor run shell commands, PowerShell runs one bash
# cannot read, and MCP servers expose merges as tools (mcp__<server>__<tool>).
MERGE_HOOK_MATCHER = "^(Bash|Monitor|PowerShell|mcp__.+)$"
# Above the hook's own 20 s limit: a hook Claude Code has to kill lets the command through.
MERGE_HOOK_TIMEOUT = 60
INBOX_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")


def merge_hook_command(hooks_dir: str) -> str:
    """How Claude Code runs the merge hook: by bash, from the project's directory when the
    hooks directory is relative to it."""
    script = f"{hooks_dir.rstrip('/')}/{MERGE_HOOK}"
    if os.path.isabs(script):
        return f"bash {shlex.quote(script)}"
    return f'bash "$CLAUDE_PROJECT_DIR"/{shlex.quote(script)}'


def registrations(cli: str, hooks_dir: str) -> dict[str, Any]:
    """The settings' ``hooks`` entries: the merge hook on PreToolUse, the inbox on the three
    events it speaks (exec form: the program and its arguments, no shell)."""
    program, *words = shlex.split(cli)
    hooks: dict[str, Any] = {
        "PreToolUse": [
            {
                "matcher": MERGE_HOOK_MATCHER,
                "hooks": [
                    {
                        "type": "command",
                        "command": merge_hook_command(hooks_dir),
                        "timeout": MERGE_HOOK_TIMEOUT,
                    }
                ],
            }
        ]
    }
    for event in INBOX_EVENTS:
        args = [*words, "inbox", "--claude-hook", event]
        hooks[event] = [{"hooks": [{"type": "command", "command": program, "args": args}]}]
    return {"hooks": hooks}


def merged(existing: Any, wanted: dict[str, Any], *, source: str) -> dict[str, Any]:
    """``existing`` settings with every registration of ``wanted`` added once; no key of
    ``existing`` is dropped or changed."""
    if not isinstance(existing, dict):
        raise UsageError(f"pairgate init: {source} is not a JSON object; nothing was written")
    out = dict(existing)
    hooks = out.get("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(
            f"pairgate init: {source}: its 'hooks' is not an object; nothing was written"
        )
    hooks = dict(hooks)
    for event, entries in wanted["hooks"].items():
        have = hooks.get(event, [])
        if not isinstance(have, list):
            raise UsageError(
                f"pairgate init: {source}: its hooks.{event} is not a list; nothing was written"
            )
        hooks[event] = have + [e for e in entries if e not in have]
    out["hooks"] = hooks
    return out


def read_settings(path: Path) -> Any:
    """The settings file's JSON, or {} when there is none; never through a symbolic link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(
            f"pairgate init: --claude-settings {path}: cannot open it ({exc.strerror}; a "
            f"symbolic link is refused); nothing was written"
        ) from None
    with os.fdopen(fd, encoding="utf-8") as handle:
        text = handle.read()
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(
            f"pairgate init: --claude-settings {path} is not valid JSON ({exc}); fix or move "
            f"it; nothing was written"
        ) from None


def write_settings(path: Path, settings: dict[str, Any]) -> None:
    """Write beside it (O_EXCL|O_NOFOLLOW through mkstemp) and rename over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(settings, indent=2) + "\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
