"""The merge hook's Python half: hook JSON in, allow (0) or block (2) out."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from pairgate.standalone.command_reader.read import read_command
from pairgate.standalone.command_reader.words import MergeFound, could_name_glab_merge
from pairgate.standalone.config import CONFIG_ENV, CONFIG_FILENAME, Config, load_config
from pairgate.standalone.errors import Context, Exit, PairgateError, reader_dir
from pairgate.standalone.gate import gate_merge
from pairgate.standalone.gitlab import gitlab_from_env, read_retry
from pairgate.standalone.scope import ROSTER_FILENAME

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
    if payload.get("tool_name", "Bash") != "Bash":
        return Exit.OK  # registered more widely than matcher Bash: other tools merge nothing
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        raise HookDenied("the hook input has no tool_input.command string")
    if not could_name_glab_merge(command):
        return Exit.OK
    reading = read_command(command)
    problems = reading.problems()
    if not problems and not reading.merges:
        return Exit.OK  # it merges nothing: the gate has nothing to say
    here = here or reader_dir()
    env = {**ctx.env, CONFIG_ENV: str(here / CONFIG_FILENAME)}  # never the session's
    _hook_files_present(here, env)
    config = load_config(env)
    if problems:
        raise HookDenied(_hook_message(config, problems, reading.merges))
    _hook_currency_note(ctx, here, config)
    client = gitlab_from_env(config, ctx.env, retry=read_retry(attempts=0), timeout=HOOK_TIMEOUT)
    refused = []
    for merge in reading.merges:
        assert merge.project is not None and merge.iid is not None
        verdict = gate_merge(client, config, merge.project, merge.iid, now=ctx.now())
        if not verdict.allowed:
            refused.append(verdict.message)
    if refused:
        raise HookDenied(_hook_message(config, refused, reading.merges))
    return Exit.OK


def _hook_files_present(here: Path, env: Mapping[str, str]) -> None:
    missing = [name for name in HOOK_REQUIRED if not (here / name).is_file()]
    if not missing:
        return
    names = ", ".join(missing)
    if CONFIG_FILENAME in missing:
        remedy = (
            f"{CONFIG_FILENAME} is the deployment's own configuration, so the hook cannot read "
            f"which command reinstalls it: put the deployment's {CONFIG_FILENAME} back in "
            f"{here}, then reinstall the hooks with the deployment's hooks install command "
            f"(the hooks_install_command key of that file; for pairgate itself, "
            f"pairgate deploy-hooks --target {here})"
        )
    else:
        try:
            remedy = f"reinstall them: {load_config(env)['hooks_install_command']}"
        except PairgateError as exc:
            remedy = f"reinstall them; the configuration cannot say how: {exc.message}"
    raise HookDenied(
        f"the merge hook runs beside files that are missing from {here}: {names}. Until they "
        f"are there it cannot check a merge, so it blocks every command that could make one; "
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

        currency = deployed_currency.measure(here, config["deployed_paths"], env=ctx.env)
        if currency.state != deployed_currency.CURRENT:
            print(
                f"pairgate merge hook: note: {deployed_currency.describe(currency)}",
                file=ctx.stderr,
            )
    except Exception as exc:  # never fatal, by the specification
        print(f"pairgate merge hook: note: currency not established: {exc}", file=ctx.stderr)


def _hook_message(config: Config, problems: Sequence[str], merges: Sequence[MergeFound]) -> str:
    lines = ["the merge hook blocked this command:"]
    lines += [f"- {p}" for p in problems]
    cli = config.cli
    checks = [
        f"{cli} merge-check --mr {m.iid} --mr-project {m.project}" for m in merges if not m.problem
    ]
    if checks:
        lines.append("Check before merging: " + "; ".join(checks))
    lines.append(
        "Merge one reviewed merge request per command, spelled so the hook can read it: "
        "glab mr merge <iid> -R <group/project> --sha <approved head>"
    )
    lines.append(f"Background: {config['handoff_doc']}.")
    return "\n".join(lines)


def hook_main(ctx: Context, stdin: TextIO) -> int:
    """``python3 ownership.py hook``: 0 allows the command, 2 blocks it; nothing else, ever."""
    try:
        return run_hook(ctx, stdin.read())
    except BaseException as exc:  # every failure blocks: Claude Code runs it on any other exit
        message = exc.message if isinstance(exc, PairgateError) else f"{type(exc).__name__}: {exc}"
        message = message.removeprefix("pairgate: ")
        if not isinstance(exc, HookDenied):
            message = f"the merge hook could not decide, so it blocks: {message}"
        print(f"pairgate: {message}", file=ctx.stderr)
        return Exit.ERROR
