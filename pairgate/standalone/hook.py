"""The merge hook's Python half: hook JSON in, allow (0) or block (2) out."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from pairgate.standalone.command_reader.glab import normalise_repo
from pairgate.standalone.command_reader.mcp import read_tool_call
from pairgate.standalone.command_reader.read import read_command
from pairgate.standalone.command_reader.words import (
    MERGE_MENTION,
    CommandReading,
    MergeFound,
    PushFound,
    could_name_glab_merge,
    short,
)
from pairgate.standalone.config import CONFIG_ENV, CONFIG_FILENAME, Config, load_config
from pairgate.standalone.errors import (
    Context,
    Exit,
    PairgateError,
    first_today,
    log_crash,
    reader_dir,
)
from pairgate.standalone.gate import gate_merge, project_in_group
from pairgate.standalone.gitlab import GitLab, encode_project
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.standalone.gitlab_once import one_attempt_transport
from pairgate.standalone.scope import ROSTER_FILENAME
from pairgate.standalone.verdict import GateVerdict

__all__ = ["HOOK_TIMEOUT", "hook_main", "hook_process"]

# The merge hook's Python half. block-unapproved-merge.sh allows what cannot name a glab merge
# without starting Python, and runs ``python3 ownership.py hook`` for the rest, with the hook
# JSON on stdin. Exit 0 lets the command through (no decision: Claude Code's own permission
# flow goes on); exit 2 blocks it, and Claude Code shows stderr to the agent. Every failure
# blocks, because Claude Code lets a command through on any other exit.

HOOK_SCRIPT = "block-unapproved-merge.sh"
# The seven files of the specification: the four deploy-hooks copies, the three the deployment
# supplies. All but deployed_currency.py must be there for the hook to allow a merge.
HOOK_REQUIRED = (
    HOOK_SCRIPT,
    "ownership.py",
    "validate-mr-carries-ownership-record.py",
    CONFIG_FILENAME,
    "_hooklib.sh",
    ROSTER_FILENAME,
)
HOOK_CURRENCY = "deployed_currency.py"
# The hook's own GitLab budget: one attempt, short timeouts (a merge is decided in well under a
# second on a reachable GitLab; an unreachable one blocks quickly rather than hanging the agent).
HOOK_TIMEOUT: tuple[float, float] = (3.0, 10.0)


class HookDenied(PairgateError):
    """The hook blocks the command: its message says why and what to run."""


def run_hook(ctx: Context, raw: str, *, here: Path | None = None) -> int:
    """Decide one PreToolUse call. Returns 0 (allow) or raises HookDenied / PairgateError."""
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise HookDenied(f"the hook input is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise HookDenied("the hook input is not a JSON object")
    reading = _hook_reading(payload.get("tool_name", "Bash"), payload.get("tool_input"))
    if reading is None:
        return Exit.OK  # a tool that runs no command and merges nothing
    problems = reading.problems()
    if not problems and not reading.merges and not reading.pushes:
        return Exit.OK  # it merges nothing: the gate has nothing to say
    here = here or reader_dir()
    env = {**ctx.env, CONFIG_ENV: str(here / CONFIG_FILENAME)}  # never the session's
    _hook_files_present(here, env)
    config = load_config(env)
    if problems:
        raise HookDenied(_hook_message(config, problems, reading.merges, spelling=reading.misread))
    _hook_currency_note(ctx, here, config)
    client = gitlab_from_env(config, ctx.env, timeout=HOOK_TIMEOUT, transport=one_attempt_transport)
    refused = []
    for merge in reading.merges:
        assert merge.project is not None and merge.iid is not None
        verdict = gate_merge(client, config, merge.project, merge.iid, now=ctx.now())
        refusal = _hook_binding(merge, verdict)
        if refusal:
            refused.append(refusal)
    cwd = payload.get("cwd")
    for push in reading.pushes:
        refused += _hook_push(ctx, client, config, push, cwd if isinstance(cwd, str) else None)
    if refused:
        raise HookDenied(_hook_message(config, refused, reading.merges, spelling=False))
    return Exit.OK


# The tools the hook reads (register it for them: docs/agent-handoff.md, "The merge hook"):
# Bash and Monitor run a shell command; PowerShell runs one bash cannot read; MCP tools
# (mcp__<server>__<tool>) are read by read_tool_call.
HOOK_COMMAND_TOOLS = ("Bash", "Monitor")


def _hook_reading(tool: Any, tool_input: Any) -> CommandReading | None:
    """What one tool call would merge; None when the tool runs nothing the hook reads."""
    if not isinstance(tool, str):
        raise HookDenied("the hook input's tool_name is not a string")
    if tool in HOOK_COMMAND_TOOLS:
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        if tool == "Monitor" and isinstance(tool_input, dict) and "command" not in tool_input:
            return None  # a WebSocket monitor runs no command
        if not isinstance(command, str):
            raise HookDenied("the hook input has no tool_input.command string")
        return read_command(command) if could_name_glab_merge(command) else None
    if tool == "PowerShell":
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        if not isinstance(command, str):
            raise HookDenied("the hook input has no tool_input.command string")
        text = command.lower()
        if "glab" in text or "merge_request" in text or MERGE_MENTION.search(command):
            return CommandReading(
                unknown=(
                    f"{short(command)}: a PowerShell command that names glab or a merge "
                    "request; the merge hook reads bash only, so run it through the Bash tool",
                )
            )
        return None
    if tool.startswith("mcp__"):
        if not isinstance(tool_input, dict):
            raise HookDenied("the hook input has no tool_input object for an MCP tool")
        return read_tool_call(tool, tool_input)
    return None


def _hook_binding(merge: MergeFound, verdict: GateVerdict) -> str | None:
    """Why the gate's verdict does not let this merge through, or None. An approved merge
    request passes only when the merge carries the approved head itself (--sha, the sha field):
    GitLab then refuses (409) a head that moved between this check and the merge."""
    if not verdict.allowed:
        return verdict.message
    if not verdict.in_scope:
        return None  # not gated: there is no approval to bind it to
    head = verdict.approved_sha  # the commit the approval names, which "approved" makes the head
    ref = f"{verdict.project}!{verdict.iid}"
    right = f"glab mr merge {verdict.iid} -R {verdict.project} --sha {head}"
    what = "this /merge quick action" if merge.kind == "/merge" else "this merge"
    if not merge.shas:
        return (
            f"{ref} is approved at its head {head}, but {what} does not name that head, so a "
            f"push between this check and the merge would merge a commit nobody reviewed. "
            f"Bind the merge to the approved head: {right}"
        )
    if any(sha is None for sha in merge.shas):
        return (
            f"{ref} is approved at its head {head}, but {what} names its SHA through "
            f"variables, substitutions or a file the hook cannot read. Spell the approved "
            f"head: {right}"
        )
    wrong = next((sha for sha in merge.shas if sha != head), None)
    if wrong is not None:
        return (
            f"{ref}: {what} names {wrong}, but the approved head is {head}; GitLab would merge "
            f"only {wrong}, which no approval names. Merge the approved head: {right}"
        )
    return None


def _hook_push(
    ctx: Context, client: GitLab, config: Config, push: PushFound, cwd: str | None
) -> list[str]:
    """Refusals for a push that arms auto-merge: GitLab merges the merge request of the pushed
    branch at the pushed commit (no other SHA binds it), so the push passes only when that
    commit is the head the gate approved, or when the merge request is not gated."""
    project = push.target_project
    if project is None:
        project, why = _hook_remote_project(ctx, push, cwd)
        if project is None:
            return [f"{push.words}: {why}"]
    if not project_in_group(client, config, project):
        return []
    path = f"projects/{encode_project(project)}/merge_requests"
    found = client.get_all(path, source_branch=push.branch, state="opened")
    if not found:
        if not push.creates:
            return []  # GitLab arms nothing without a merge request to arm
        return [
            f"{push.words}: creates a merge request of {project} from {push.branch} with "
            f"auto-merge armed, and no approval can name its head yet. Push without the "
            f"auto-merge option, have the head reviewed, then merge with glab mr merge <iid> "
            f"-R {project} --sha <approved head>"
        ]
    refusals = []
    for mr in found:
        verdict = gate_merge(client, config, project, int(mr["iid"]), now=ctx.now())
        if not verdict.allowed:
            refusals.append(verdict.message)
        elif verdict.in_scope and verdict.head_sha != push.sha:
            refusals.append(
                f"{push.words}: arms auto-merge of {verdict.project}!{verdict.iid} at "
                f"{push.sha}, but its approved head is {verdict.head_sha}: GitLab would merge "
                f"the pushed commit, which no approval names. Push without the auto-merge "
                f"option, and merge the reviewed head with glab mr merge {verdict.iid} -R "
                f"{verdict.project} --sha <approved head>"
            )
    return refusals


def _hook_remote_project(ctx: Context, push: PushFound, cwd: str | None) -> tuple[str | None, str]:
    """The project a push goes to: the remote's URL as spelled, or the URL git has for the
    remote's name in the session's directory, read only when the push is the command's only
    command (anything before it could change the remote)."""
    remote = push.remote or ""
    if "://" in remote or re.match(r"^[\w.+-]+@[^:/]+:", remote):
        project = normalise_repo(remote)
        return project, "" if project else f"{remote} is not a project URL the hook can read"
    if not push.alone:
        return None, (
            f"pushes to the remote named {remote} in a command that does more than push, so "
            f"the hook cannot read that remote's URL before the command runs; push alone, or "
            f"name the remote by its URL"
        )
    if not cwd or not Path(cwd).is_dir():
        return None, f"the hook has no working directory to read the URL of remote {remote}"
    import subprocess  # only here: every import of the reader would pay for it

    try:
        found = subprocess.run(
            ["git", "-C", cwd, "remote", "get-url", "--push", "--", remote],
            env=dict(ctx.env),
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"git could not read the URL of remote {remote}: {exc}"
    url = found.stdout.strip()
    project = normalise_repo(url) if found.returncode == 0 else None
    if project is None:
        detail = found.stderr.strip() or url or "no URL"
        return None, f"git has no project URL for remote {remote} in {cwd} ({detail})"
    return project, ""


# Where each file beside the hook comes from, so a missing one is named with its source: the four
# that deploy-hooks copies, and the three that are the deployment's own.
_HOOK_FILE_SOURCES = {
    CONFIG_FILENAME: "the deployment's own configuration: `init` writes one, "
    "`sandbox --config-out` one for a trial",
    "_hooklib.sh": "the deployment's own preflight library: `init` writes one",
    ROSTER_FILENAME: "the deployment's own automation roster: `init` writes one, and "
    "examples/automation_mr_families.py in pairgate's repository is an example",
}


def _hook_files_present(here: Path, env: Mapping[str, str]) -> None:
    missing = [name for name in HOOK_REQUIRED if not (here / name).is_file()]
    if not missing:
        return
    names = "".join(
        f"\n  - {name} ({_HOOK_FILE_SOURCES.get(name, 'deploy-hooks')})" for name in missing
    )
    if CONFIG_FILENAME in missing:
        remedy = (
            f"{CONFIG_FILENAME} is the deployment's own configuration, so the hook cannot read "
            f"which command reinstalls it. Put the deployment's {CONFIG_FILENAME} back in "
            f"{here}, then reinstall the hooks with the deployment's hooks install command "
            f"(the hooks_install_command key of that file; for pairgate itself, "
            f"pairgate deploy-hooks --target {here})."
        )
    else:
        try:
            remedy = f"Reinstall them: {load_config(env).hooks_install_command}"
        except PairgateError as exc:
            remedy = f"Reinstall them; the configuration cannot say how: {exc.message}"
    raise HookDenied(
        f"the merge hook runs beside files that are missing from {here}:{names}\nUntil they "
        f"are there it cannot check a merge, so it blocks every command that could make one.\n"
        f"{remedy}"
    )


def _hook_currency_note(ctx: Context, here: Path, config: Config) -> None:
    """The hook's currency check is never fatal: it only ever prints a note."""
    if not (here / HOOK_CURRENCY).is_file():
        print(
            f"pairgate merge hook: note: {HOOK_CURRENCY} is missing beside the hook, so its own "
            f"currency was not established",
            file=ctx.stderr,
        )
        return
    try:
        import deployed_currency  # type: ignore[import-not-found,unused-ignore]

        currency = deployed_currency.measure(here, config.deployed_paths, env=ctx.env)
        # A stale copy is said every time; one that cannot be measured once a day, as the CLI
        # says it: the same note on every merge decision teaches the agent to skip it.
        if currency.state == deployed_currency.STALE or (
            currency.state == deployed_currency.UNVERIFIABLE
            and first_today(ctx.env, f"merge hook {here}", ctx.now())
        ):
            print(
                f"pairgate merge hook: note: {deployed_currency.describe(currency)}",
                file=ctx.stderr,
            )
    except Exception as exc:  # never fatal, by the specification
        print(f"pairgate merge hook: note: currency not established: {exc}", file=ctx.stderr)


def _hook_message(
    config: Config, problems: Sequence[str], merges: Sequence[MergeFound], *, spelling: bool
) -> str:
    """The block's reasons, the checks to run, and the spelling the hook reads only when the
    spelling was the problem."""
    lines = ["the merge hook blocked this command:"]
    lines += [f"- {p}" for p in problems]
    cli = config.cli
    checks = [
        f"{cli} merge-check --mr {m.iid} --mr-project {m.project}" for m in merges if not m.problem
    ]
    if checks:
        lines.append("Check before merging: " + "; ".join(checks))
    if spelling:
        lines.append(
            "Merge one reviewed merge request per command, spelled so the hook can read it: "
            "glab mr merge <iid> -R <group/project> --sha <approved head>"
        )
    lines.append(f"Background: {config.handoff_doc}.")
    return "\n".join(lines)


def hook_main(ctx: Context, stdin: TextIO) -> int:
    """``python3 ownership.py hook``: 0 allows the command, 2 blocks it; nothing else, ever."""
    try:
        return run_hook(ctx, stdin.read())
    except ModuleNotFoundError as exc:  # the interpreter the hook runs lacks a dependency
        print(f"pairgate: {_hook_missing_module(exc)}", file=ctx.stderr)
        return Exit.ERROR
    except BaseException as exc:  # every failure blocks: Claude Code runs it on any other exit
        message = exc.message if isinstance(exc, PairgateError) else f"{type(exc).__name__}: {exc}"
        message = message.removeprefix("pairgate: ")
        if not isinstance(exc, HookDenied):
            message = f"the merge hook could not decide, so it blocks: {message}"
        print(f"pairgate: {message}", file=ctx.stderr)
        if isinstance(exc, Exception) and not isinstance(exc, PairgateError):
            log_crash(exc, ctx, program="the merge hook (python3 ownership.py hook)")
        return Exit.ERROR


def hook_process() -> NoReturn:
    """The merge hook's Python half as block-unapproved-merge.sh starts it: hook_main on this
    process's environment and streams, then out through os._exit once what it wrote is flushed.
    Nothing it holds needs CPython's teardown (it writes no file but a crash's log, closed by
    then, starts no thread and registers nothing to run at exit; its one child, git, has been
    waited for), and tearing down the reader's modules cost a merge decision several
    milliseconds."""
    code = hook_main(Context(), sys.stdin)
    for stream in (sys.stdout, sys.stderr):
        # Nobody reading what it wrote: the exit code still says all that counts.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _hook_missing_module(exc: ModuleNotFoundError) -> str:
    """What to run when the Python the hook starts cannot import a dependency: install them for
    that interpreter, or name the interpreter that has them in the deployment's _hooklib.sh."""
    here = reader_dir()
    cli, install = "pairgate", f"pairgate deploy-hooks --target {here}"
    try:  # the configuration's own spelling, read without the dependencies that may be missing
        values = json.loads((here / CONFIG_FILENAME).read_text(encoding="utf-8"))
        cli = str(values.get("cli_command") or cli)
        install = str(values.get("hooks_install_command") or f"{cli} deploy-hooks --target {here}")
    except (OSError, ValueError, AttributeError):
        pass
    return (
        f"the merge hook could not decide, so it blocks: the Python it runs ({sys.executable}) "
        f"cannot import {exc.name or exc} (ModuleNotFoundError: {exc}). Either install "
        f"pairgate's runtime dependencies for that interpreter: {sys.executable} -m pip install "
        f"requests jsonschema pyyaml tree-sitter tree-sitter-bash; or name the interpreter "
        f"that has them (the one pairgate is installed in) in {here / '_hooklib.sh'}, with "
        f"the line hooklib_python=/path/to/that/python3 ({install} prints the line for the "
        f"interpreter {cli} runs under)"
    )
