"""The flat deployment's door: python3 ownership.py check-config | merge-check | audit | hook."""

from __future__ import annotations

import sys

from pairgate.standalone.audit_door import run_audit
from pairgate.standalone.audit_flags import add_audit_arguments
from pairgate.standalone.config import load_config
from pairgate.standalone.doors import arg_parser, run_merge_check
from pairgate.standalone.errors import Context, Exit, UsageError, report
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.standalone.gitlab_once import first_attempt_per_thread, first_attempt_transport
from pairgate.standalone.hook import hook_main

__all__ = ["standalone_main"]


def standalone_main(argv: list[str], ctx: Context | None = None) -> int:
    """The flat deployment's door, with no package installed:

    ``python3 ownership.py check-config``  load the configuration a flat deployment sees;
    ``python3 ownership.py merge-check --mr <iid> --mr-project <p> [--json] [--verbose]``
    the merge gate's verdict, exactly as ``pairgate merge-check`` gives it;
    ``python3 ownership.py audit [--since DATE | --days N] [--project P ...] [--json]
    [--file-issues] [--verbose]``  the audit, exactly as ``pairgate audit`` gives it (the
    merge-audit component's scheduled job runs this);
    ``python3 ownership.py hook``  the merge hook's decision on the hook JSON on stdin.
    """
    ctx = ctx or Context()
    if argv == ["hook"]:
        return hook_main(ctx, sys.stdin)
    try:
        if argv[:1] in (["merge-check"], ["audit"]):
            parser = arg_parser(f"ownership.py {argv[0]}")
            if argv[0] == "merge-check":
                parser.add_argument("--mr", required=True, type=int, metavar="IID")
                parser.add_argument("--mr-project", required=True, metavar="PROJECT")
            else:
                add_audit_arguments(parser)
            parser.add_argument("--json", action="store_true")
            parser.add_argument("--verbose", action="store_true")
            args = parser.parse_args(argv[1:])
            config = load_config(ctx.env)
            # First attempts through http.client: merge-check reads from one thread, the
            # audit from several, each with a connection of its own.
            one = argv[0] == "merge-check"
            transport = first_attempt_transport if one else first_attempt_per_thread
            client = gitlab_from_env(config, ctx.env, transport=transport)
            if args.verbose:
                print(client.describe(), file=ctx.stderr)
            if argv[0] == "merge-check":
                return run_merge_check(
                    ctx,
                    config,
                    client,
                    mr=args.mr,
                    mr_project=args.mr_project,
                    json_out=args.json,
                    verbose=args.verbose,
                )
            return run_audit(
                ctx,
                config,
                client,
                since=args.since,
                days=args.days,
                projects=args.projects,
                json_out=args.json,
                file_issues=args.file_issues,
            )
        if argv[:1] != ["check-config"] or len(argv) != 1:
            raise UsageError(
                "usage: python3 ownership.py check-config\n"
                "       python3 ownership.py merge-check --mr IID --mr-project PROJECT "
                "[--json] [--verbose]\n"
                "       python3 ownership.py audit [--since DATE | --days N] [--project P ...] "
                "[--json] [--file-issues] [--verbose]\n"
                "       python3 ownership.py hook   (the merge hook: hook JSON on stdin)"
            )
        config = load_config(ctx.env)
        print(f"configuration OK: {config.path}", file=ctx.stdout)
        return Exit.OK
    except Exception as exc:  # the one translation point for the standalone door
        return report(exc, ctx, program="python3 ownership.py")


if __name__ == "__main__":
    sys.exit(standalone_main(sys.argv[1:]))
