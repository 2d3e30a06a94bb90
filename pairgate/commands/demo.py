"""pairgate demo: one whole round against an embedded sandbox, printed as it happens."""

from __future__ import annotations

import shlex
import textwrap

from pairgate.demo_round import Dispatch, Step, sandboxed_round
from pairgate.standalone.errors import Context


def show(step: Step, n: int) -> str:
    lines = [f"== {n}. {step.title}"]
    if step.aside:
        lines.append(textwrap.fill(step.aside, 96))
    if step.argv:
        who = f"   (as {step.agent})" if step.agent else ""
        lines.append(f"$ pairgate {shlex.join(step.argv)}{who}")
        if step.output:
            lines.append(step.output)
        lines.append(f"[exit {step.code}]")
    for note in step.notes:
        lines.append(f"-- on the issue, note {note.id} by {note.author}:")
        lines.append(textwrap.indent(note.text, "   | ", lambda _: True))
    if step.notes:
        lines.append(f"-- labels: {', '.join(step.labels) or 'none'}")
    return "\n".join(lines)


def demo(*, ctx: Context, dispatch: Dispatch) -> int:
    """``dispatch`` runs one pairgate command line (main gives its own dispatcher)."""
    print("pairgate demo: one round against a GitLab sandbox on loopback\n", file=ctx.stdout)
    for n, step in enumerate(sandboxed_round(dispatch), start=1):
        print(show(step, n) + "\n", file=ctx.stdout, flush=True)
    return 0
