"""A test-only entry for ``watch`` and ``inbox`` until main.py registers them: the same parser
class, the same dispatch, the same translation of errors into exit codes as ``pairgate.main``.

    PYTHONPATH=<checkout> python3 -m tests.watch_cli inbox --claude-hook Stop < hook.json
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path

from pairgate import main as pairgate_main
from pairgate import ownership
from pairgate.commands.watch import add_parser
from pairgate.currency import check_currency
from pairgate.ownership import Context


def build_parser() -> pairgate_main._Parser:
    parser = pairgate_main._Parser(prog="pairgate")
    sub = parser.add_subparsers(
        dest="command", metavar="<command>", parser_class=pairgate_main._Parser
    )
    add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, *, ctx: Context | None = None) -> int:
    ctx = ctx or Context()
    try:
        try:
            with contextlib.redirect_stdout(ctx.stdout):
                args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        except SystemExit as done:
            return int(done.code or 0)
        kwargs = {k: v for k, v in vars(args).items() if k not in pairgate_main._META}
        if args.reads_config:
            kwargs["config"] = config = ownership.load_config(ctx.env)
            check_currency(
                Path(pairgate_main.__file__).resolve(),
                config,
                command=args.command,
                writes=args.writes,
                env=ctx.env,
                stderr=ctx.stderr,
            )
        return int(pairgate_main._resolve(args.handler)(ctx=ctx, **kwargs))
    except Exception as exc:
        return ownership.report(exc, ctx.stderr)


if __name__ == "__main__":
    sys.exit(main())
