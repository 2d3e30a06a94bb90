#!/usr/bin/env python3
"""Render docs/cli.md from the real ``--help`` of every command, so the command reference cannot
drift from the parser: ``--check`` writes nothing and exits 1 when the committed file is stale.
The help is rendered at a fixed width so the file does not depend on the terminal."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pairgate.parser import build_parser, command_names  # noqa: E402

OUT = ROOT / "docs" / "cli.md"
WIDTH = "100"

HEADER = """\
# pairgate command reference

Generated from the parser by `python3 scripts/render-cli-reference.py`; a test fails when it is
stale. Configured values are spelled as the configuration key they come from (`<tracker_project>`,
`<env_prefix>_AGENT_ID`), because `--help` reads no configuration. The protocol behind each
command is in docs/agent-handoff.md (the operator card) and docs/agent-handoff-reference.md.
"""


def help_text(argv: list[str], parser: argparse.ArgumentParser | None = None) -> str:
    """``--help`` of ``argv``, from ``parser`` (which parsing leaves as it was) or a new one."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        (parser or build_parser()).parse_args([*argv, "--help"])
    return out.getvalue().rstrip() + "\n"


def subcommands(name: str, parser: argparse.ArgumentParser | None = None) -> list[str]:
    """The subcommands of a command (``evidence run``, ``inbox ack``), in registration order."""
    top = next(
        a for a in (parser or build_parser())._actions if isinstance(a, argparse._SubParsersAction)
    )
    found = [a for a in top.choices[name]._actions if isinstance(a, argparse._SubParsersAction)]
    return [sub for action in found for sub in action.choices]


def rendered() -> str:
    os.environ["COLUMNS"] = WIDTH
    parser = build_parser()  # one for every command's help: each build is every command's
    parts = [HEADER, "## pairgate\n", "```text\n" + help_text([], parser) + "```\n"]
    for name in command_names():
        parts += [f"## pairgate {name}\n", "```text\n" + help_text([name], parser) + "```\n"]
        for sub in subcommands(name, parser):
            words = [name, sub]
            text = help_text(words, parser)
            parts += [f"## pairgate {name} {sub}\n", "```text\n" + text + "```\n"]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/cli.md is stale")
    args = parser.parse_args(argv)
    want = rendered()
    have = OUT.read_text(encoding="utf-8") if OUT.exists() else None
    if args.check:
        if have != want:
            print(
                "docs/cli.md is stale: run python3 scripts/render-cli-reference.py", file=sys.stderr
            )
            return 1
        return 0
    if have != want:
        OUT.write_text(want, encoding="utf-8")
        print("wrote docs/cli.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
