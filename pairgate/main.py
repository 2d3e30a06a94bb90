"""The pairgate command line: it parses and dispatches, nothing else.

Every command is registered here with its exact flags. Each handler lives in a command module
(``pairgate/commands/``), takes explicit keyword arguments and returns an exit code. Expected
failures are ``PairgateError``s; ``ownership.report`` is the one place that turns them into a
message and an exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pairgate.parser import _META, build_parser
from pairgate.standalone.errors import Context, Exit, UsageError, report

Handler = Callable[..., int]

# The copy main measures when it is given no origin: the checkout this file is in, unless
# <env_prefix>_CHECKOUT names the deployment's checkout (an installed copy is in none).
_OWN_FILE = Path(__file__).resolve()

# The commands whose handler is given the GitLab client main builds (``client=``).
_READS_GITLAB = frozenset(
    {"claim", "handoff", "accept", "decline", "release", "approve", "withdraw", "merge-check"}
    | {"status", "board", "waiting", "close", "sync", "freeze", "thaw", "identity", "graph"}
    | {"watch", "audit", "doctor"}
    | {"evidence"}  # evidence rerun reads the offer from the issue's ledger
)
# The one handler that uses --verbose beyond the client line main prints.
_KEEPS_VERBOSE = frozenset({"merge-check"})


def handler_for(command: str) -> Handler:
    """The handler of ``command``, imported on demand: a run pays for the one module it uses,
    and --help for none."""
    if command in ("claim", "handoff", "accept", "decline", "release", "close"):
        from pairgate.commands import ledger

        verbs: dict[str, Handler] = {
            "claim": ledger.claim,
            "handoff": ledger.handoff,
            "accept": ledger.accept,
            "decline": ledger.decline,
            "release": ledger.release,
            "close": ledger.close,
        }
        return verbs[command]
    if command == "approve":
        from pairgate.commands.approve import approve

        return approve
    if command == "withdraw":
        from pairgate.commands.withdraw import withdraw

        return withdraw
    if command == "merge-check":
        from pairgate.commands.gate import merge_check

        return merge_check
    if command == "audit":
        from pairgate.commands.audit import audit

        return audit
    if command == "doctor":
        from pairgate.commands.doctor import doctor

        return doctor
    if command == "status":
        from pairgate.commands.status import status

        return status
    if command == "board":
        from pairgate.commands.board import board

        return board
    if command == "waiting":
        from pairgate.commands.waiting import waiting

        return waiting
    if command == "sync":
        from pairgate.commands.sync import sync

        return sync
    if command in ("freeze", "thaw"):
        from pairgate.commands.freeze import freeze, thaw

        return freeze if command == "freeze" else thaw
    if command == "identity":
        from pairgate.commands.identity import identity

        return identity
    if command in ("impose", "lift-check"):
        from pairgate.commands.constraints import impose, lift_check

        return impose if command == "impose" else lift_check
    if command == "graph":
        from pairgate.commands.graph import graph

        return graph
    if command == "deploy-agents":
        from pairgate.commands.deploy_agents import deploy_agents

        return deploy_agents
    if command == "deploy-hooks":
        from pairgate.commands.deploy_hooks import deploy_hooks

        return deploy_hooks
    if command == "deploy-pipeline":
        from pairgate.commands.deploy_pipeline import deploy_pipeline

        return deploy_pipeline
    if command == "sandbox":
        from pairgate.sandbox.cli import serve

        return serve
    if command == "watch":
        from pairgate.commands.watcher import watch

        return watch
    if command == "inbox":
        from pairgate.commands.inbox import inbox

        return inbox
    if command == "evidence":
        from pairgate.commands.evidence import evidence

        return evidence
    if command == "init":
        from pairgate.commands.init import init

        return init
    if command == "demo":
        from pairgate.commands.demo import demo

        return demo
    raise UsageError(f"pairgate: no handler for {command!r}")  # a registration bug


def _writes(args: argparse.Namespace) -> bool:
    """Does this run write? The deploy commands write unless they only compare or list."""
    if args.command in ("deploy-agents", "deploy-hooks", "deploy-pipeline"):
        return not args.check and not getattr(args, "list", False)
    if args.command == "audit":  # it writes only the issues it files
        return bool(args.file_issues)
    return bool(args.writes)


def run(argv: Sequence[str], ctx: Context, *, measured: Path | None) -> int:
    """Parse ``argv`` and run its command; the one dispatcher (the demo calls it too).
    ``measured`` is the checkout the currency check measures, None for no check."""
    try:
        try:
            # --help prints and exits inside argparse; keep it on the injected stream.
            with contextlib.redirect_stdout(ctx.stdout):
                args = build_parser().parse_args(list(argv))
        except SystemExit as done:
            return int(done.code or 0)
        if args.version:
            from pairgate.version import installed_version, schema_checker

            print(f"pairgate {installed_version()}", file=ctx.stdout)
            if args.version_verbose:
                print(f"schema checker: {schema_checker()}", file=ctx.stdout)
            return Exit.OK
        if args.version_verbose:
            build_parser().error("--verbose before the command goes with --version only")
        if args.command is None:
            build_parser().print_help(ctx.stdout)
            return Exit.ERROR
        kwargs = {k: v for k, v in vars(args).items() if k not in (*_META, "version")}
        if args.reads_config:
            from pairgate.standalone.config import load_config

            kwargs["config"] = config = load_config(ctx.env)
            if measured is not None:
                named = ctx.env.get(config.env_name("CHECKOUT"), "").strip()
                if measured == _OWN_FILE and named:  # an explicit origin= always wins
                    measured = _checked_origin(named)
                from pairgate.currency import check_currency

                check_currency(
                    measured,
                    config,
                    command=args.command,
                    writes=_writes(args),
                    env=ctx.env,
                    stderr=ctx.stderr,
                    now=ctx.now(),
                    verbose=bool(kwargs.get("verbose")),
                )
            if args.command in _READS_GITLAB:
                from pairgate.standalone.gitlab import gitlab_from_env

                kwargs["client"] = client = gitlab_from_env(config, ctx.env)
                if kwargs.get("verbose"):
                    print(client.describe(), file=ctx.stderr)
        if args.command not in _KEEPS_VERBOSE:
            kwargs.pop("verbose", None)
        if args.command == "demo":  # it plays a round through this same dispatcher
            kwargs["dispatch"] = lambda words, inner: run(words, inner, measured=None)
        return int(handler_for(args.command)(ctx=ctx, **kwargs))
    except BrokenPipeError:
        # The reader of our output went away (``pairgate board | head``): its choice, not
        # an error, so no message and no traceback.
        return Exit.OK
    except Exception as exc:
        return report(exc, ctx.stderr)


def main(
    argv: Sequence[str] | None = None,
    *,
    origin: str | Path | None = None,
    ctx: Context | None = None,
) -> int:
    """Run one command. ``origin`` names the checkout the currency check measures (see the
    README: "Which checkout the currency check measures"); without it, the checkout this file
    is in. The check runs before every command that reads the configuration."""
    ctx = ctx or Context()
    measured = _OWN_FILE if origin is None else _checked_origin(origin)
    return run(sys.argv[1:] if argv is None else argv, ctx, measured=measured)


def _checked_origin(origin: object) -> Path:
    """A given origin is always the one measured; one that cannot name a checkout raises."""
    if not isinstance(origin, (str, Path)):
        raise TypeError(f"origin must be a str or a Path, not {type(origin).__name__}")
    if not str(origin).strip():
        raise ValueError("origin must not be blank")
    path = Path(origin)
    if not path.is_absolute():
        raise ValueError(f"origin must be an absolute path, not {str(origin)!r}")
    return path.resolve()


def console_main() -> None:
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # What is left in the buffer has nowhere to go; point stdout at /dev/null so the
        # interpreter's own last flush does not complain about it either.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code)


if __name__ == "__main__":
    console_main()
