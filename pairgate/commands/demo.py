"""pairgate demo: one whole round against an embedded sandbox, printed as it happens."""

from __future__ import annotations

import textwrap

from pairgate.sandbox.demo_round import Dispatch, Step, sandboxed_round
from pairgate.standalone.errors import Context

WIDTH = 96


def wrap(text: str, *, indent: str = "") -> str:
    """Long lines folded at spaces only: an identity (acme-lead) or a path is never broken."""
    if len(text) <= WIDTH:
        return text
    return textwrap.fill(
        text, WIDTH, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
    )


def show(step: Step, n: int) -> str:
    lines = [f"== {n}. {step.title}"]
    if step.aside:
        lines.extend(wrap(line, indent="    ") for line in step.aside.splitlines())
    if step.argv:
        who = f"   (as {step.agent})" if step.agent else ""
        lines.append(f"$ {step.command_line}{who}")
        if step.output:
            lines.append("\n".join(wrap(line, indent="    ") for line in step.output.splitlines()))
        lines.append(f"[exit {step.code}]")
    for note in step.notes:
        lines.append(f"-- on {note.where}, note {note.id} by {note.author}:")
        lines.append(textwrap.indent(note.text, "   | ", lambda _: True))
    if any(note.where == "the issue" for note in step.notes):
        lines.append(f"-- labels: {', '.join(step.labels) or 'none'}")
    return "\n".join(lines)


def demo(*, ctx: Context, dispatch: Dispatch, ci: bool = False) -> int:
    """``dispatch`` runs one pairgate command line (main gives its own dispatcher). ``ci``: the
    round through the CI door (sandbox/demo_ci.py), which needs gitlab-ci-local."""
    if ci:
        from pairgate.sandbox.demo_ci import ci_round, program

        steps = ci_round(dispatch, program())
        title = "one round through the CI door, its pipelines run by gitlab-ci-local"
    else:
        steps, title = sandboxed_round(dispatch), "one round against a GitLab sandbox on loopback"
    print(f"pairgate demo: {title}\n", file=ctx.stdout)
    for n, step in enumerate(steps, start=1):
        print(show(step, n) + "\n", file=ctx.stdout, flush=True)
    return 0
