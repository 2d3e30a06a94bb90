#!/usr/bin/env python3
"""How many HTTP requests each verb makes, counted by the sandbox's request log. Prints;
asserts nothing. Target for status: at most 3 + ceil(notes / 100) (the issue, its notes, the
group's open merge requests and its shared projects), plus one per shared-in project.

    python3 benchmarks/verb_requests.py [--quick]

(``--quick``: status with 5 more notes only, for a smoke run.)
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pairgate.sandbox.testing import running_sandbox  # noqa: E402
from tests.kit.world import Round  # noqa: E402


def counted(sb, world: Round, agent: str | None, *argv: object) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    sb.clear_requests()
    result = world.run(agent, *argv)
    assert result.code == 0, result.err
    log = sb.requests()
    calls = ", ".join(f"{r['method']} {r['path'].split('/api/v4/')[-1]}" for r in log)
    return len(log), calls


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="status with 5 more notes only")
    args = parser.parse_args(argv)
    with running_sandbox() as sb:
        world = Round(sb)
        head = world.head
        steps = [
            ("claim", "acme-lead", ("claim", world.issue, "--role", "lead")),
            (
                "handoff",
                "acme-lead",
                ("handoff", world.issue, "--to", "acme-review", "--role", "review", "--sha", head),
            ),
            ("accept", "acme-review", ("accept", world.issue)),
            (
                "approve",
                "acme-review",
                (
                    "approve",
                    world.issue,
                    "--mr",
                    world.mr,
                    "--mr-project",
                    "acme/app",
                    "--sha",
                    head,
                    "--to",
                    "acme-lead",
                ),
            ),
            ("decline", "acme-lead", ("decline", world.issue)),
            ("release", "acme-review", ("release", world.issue)),
            ("status", None, ("status", world.issue)),
        ]
        print(f"{'verb':<9} {'requests':>8}  calls")
        for name, agent, argv in steps:
            n, calls = counted(sb, world, agent, *argv)
            print(f"{name:<9} {n:>8}  {calls}")
        notes = len(world.notes())
        for extra in (5,) if args.quick else (95, 100, 300):
            for i in range(extra):
                sb.note(world.issue, f"comment {i}")
            notes += extra
            n, calls = counted(sb, world, None, "status", world.issue)
            print(
                f"status with {notes} notes: {n} requests "
                f"(target {3 + math.ceil(notes / 100)}): {calls}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
