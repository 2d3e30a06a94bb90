"""evidence run's handler: mutation evidence, run where the agent's session cannot reach into it.

The runner is ``pairgate.evidence``; this module reads the command line's files, prints the
document (``--json``) or a short table, writes it (``--out``), and says what to do when a mutant
was not killed. Exit 0 when every mutant was killed, 1 when the baseline failed or a mutant was
not killed (the document is still printed and written), 2 when it could not be run as asked.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pairgate import output as render
from pairgate.evidence import DEFAULT_TIMEOUT
from pairgate.evidence.patches import Patch
from pairgate.evidence.runner import Request, collect
from pairgate.evidence.schema import write_evidence
from pairgate.output import Cell, Style
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, PairgateError, Refusal, UsageError

_VERDICT_COLOUR = {"killed": "green", "survived": "red", "error": "red", "refused": "yellow"}


def read_patch(path: Path, cli: str, verb: str = "run") -> Patch:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{cli} evidence {verb}: cannot read the mutant {path}: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(
            f"{cli} evidence {verb}: the mutant {path} is not UTF-8 text (the evidence carries "
            "each patch's text)"
        ) from None
    return Patch(path.name, text)


def evidence_text(doc: dict[str, Any], style: Style) -> str:
    """The short human report."""
    base = doc["baseline"]
    lines = [
        f"Mutation evidence at {doc['sha']} of {doc['repository']['path']}",
        f"Test: {doc['command']} (timeout {doc['timeout_seconds']:g} s, runner {base['runner']})",
        f"Isolation: {base['isolation']['description']}",
        f"Baseline: {base['outcome']} in {base['duration_ms'] / 1000:.1f} s ({base['detail']})",
    ]
    rows: list[list[Cell]] = []
    for m in doc["mutants"]:
        files = ", ".join(m["patch"]["files"]) or "-"
        rows.append(
            [
                str(m["index"]),
                m["name"],
                render.clip(files, 40),
                (m["verdict"], _VERDICT_COLOUR[m["verdict"]]),
                render.clip(m["reason"], 100),
            ]
        )
    lines.append(render.table(["#", "MUTANT", "FILES", "VERDICT", "WHY"], rows, style))
    changes = doc["sensitive_changes"]
    if changes["base"] is None:
        lines.append(f"Files that judge the change: not compared ({changes['base_source']})")
    else:
        listed = ", ".join(f"{f['path']} ({f['pattern']})" for f in changes["files"]) or "none"
        lines.append(f"Files that judge the change, changed since {changes['base'][:12]}: {listed}")
    lines.append(f"Digest: {doc['digest']}")
    return "\n".join(lines)


def _again(cli: str, request: Request, *, mutants: Sequence[Path], sha: str, **flags: Any) -> str:
    """The same command line, at the SHA that was run, to run once the cause is fixed."""
    words = [*shlex.split(cli), "evidence", "run", "--test", request.command]
    words += ["--repo", str(request.repo), "--sha", sha]
    for m in mutants:
        words += ["--mutant", str(m)]
    if request.base is not None:
        words += ["--base", request.base]
    if request.timeout != DEFAULT_TIMEOUT:
        words += ["--timeout", f"{request.timeout:g}"]
    if request.jobs != 1:
        words += ["--jobs", str(request.jobs)]
    if request.network:
        words.append("--network")
    for flag, value in flags.items():
        if value is True:
            words.append(f"--{flag}")
        elif value is not None and value is not False:
            words += [f"--{flag}", str(value)]
    return shlex.join(words)


def refusal(doc: dict[str, Any], *, cli: str, again: str) -> Refusal | None:
    """Why this evidence supports no offer (exit 1), or None when every mutant was killed."""
    base = doc["baseline"]
    if base["outcome"] != "passed":
        return Refusal(
            f"{cli} evidence run: the baseline did not pass at {doc['sha']}, so every mutant is "
            f"refused: {base['detail']}\nMake the test command pass at that commit (commit the "
            f"fix), then run again:\n  {again}"
        )
    missed = [m for m in doc["mutants"] if m["verdict"] != "killed"]
    if not missed:
        return None
    listed = "\n".join(
        f"  mutant {m['index']} ({m['name']}): {m['verdict']}: {m['reason']}" for m in missed
    )
    return Refusal(
        f"{cli} evidence run: {len(missed)} of {len(doc['mutants'])} mutants were not killed:\n"
        f"{listed}\nA survivor needs a test that fails on an assertion with it applied; a mutant "
        f"in error needs fixing (make it apply at the SHA, fail on an assertion rather than "
        f"crash, or finish within --timeout). Then run again:\n  {again}"
    )


def run_evidence(
    *,
    ctx: Context,
    config: Config,
    test: str,
    mutants: Sequence[Path],
    repo: Path = Path("."),
    sha: str | None = None,
    base: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    jobs: int = 1,
    network: bool = False,
    out: Path | None = None,
    json: bool = False,
) -> int:
    request = Request(
        repo=repo,
        command=test,
        patches=tuple(read_patch(p, config.cli) for p in mutants),
        sha=sha,
        base=base,
        timeout=timeout,
        jobs=jobs,
        network=network,
    )
    try:
        doc = collect(request, now=ctx.now)
    except PairgateError as exc:
        # The runner's messages name no program: the configured one is put in front here.
        raise type(exc)(f"{config.cli} evidence run: {exc.message}") from None
    if out is not None:
        try:
            write_evidence(doc, out)
        except OSError as exc:
            raise UsageError(f"{config.cli} evidence run: cannot write {out}: {exc}") from None
    if json:
        render.dump(doc, ctx.stdout)
    else:
        style = Style(render.use_colour(ctx.stdout, ctx.env))
        print(evidence_text(doc, style), file=ctx.stdout)
        if out is not None:
            print(f"Written to {out}", file=ctx.stdout)
    again = _again(config.cli, request, mutants=mutants, sha=doc["sha"], out=out, json=json)
    refused = refusal(doc, cli=config.cli, again=again)
    if refused is not None:
        raise refused
    return Exit.OK
