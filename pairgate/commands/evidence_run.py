"""evidence run's handler: mutation evidence, run where the agent's session cannot reach into it.

The runner is ``pairgate.evidence``; this module reads the command line's files, prints the
document (``--json``) or a short table, writes it (``--out``), and says what to do when a mutant
was not killed. Exit 0 when every mutant was killed, 1 when the baseline failed, a mutant was
not killed or the evidence is weak (the document is still printed, written and kept), 2 when it
could not be run as asked.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pairgate import output as render
from pairgate.evidence import DEFAULT_PIDS, DEFAULT_TIMEOUT, store
from pairgate.evidence.patches import Patch
from pairgate.evidence.runner import Request, collect
from pairgate.evidence.schema import write_evidence
from pairgate.evidence.surface import SELF_REPORTED
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


def secrets_of(config: Config) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(directories, files) no run may see: the configuration's directory, the configuration
    and the review bot's token file."""
    token = Path(config.review_bot_token_file).expanduser()
    token = token if token.is_absolute() else config.path.parent / token
    config_file = config.path.resolve()
    return (config_file.parent,), (config_file, token.resolve())


def request_for(
    config: Config,
    ctx: Context,
    *,
    repo: Path,
    test: str,
    patches: tuple[Patch, ...],
    **flags: Any,
) -> Request:
    """The runner's request, with what no run may see and where the copies may go."""
    dirs, files = secrets_of(config)
    return Request(
        repo=repo,
        command=test,
        patches=patches,
        hide_dirs=dirs,
        hide_files=files,
        runtime_dir=ctx.env.get("XDG_RUNTIME_DIR"),
        **flags,
    )


def keep(doc: dict[str, Any], kind: str, ctx: Context, cli: str) -> None:
    """Keep the document under the state directory; say so when it cannot be."""
    root = store.state_dir(ctx.env)
    if root is None:
        print(f"{cli}: note: the document is not kept: no XDG_STATE_HOME or HOME", file=ctx.stderr)
        return
    try:
        store.keep(doc, kind, root=root)
    except OSError as exc:
        print(f"{cli}: note: the document is not kept under {root}: {exc}", file=ctx.stderr)


def evidence_text(doc: dict[str, Any], style: Style) -> str:
    """The short human report."""
    base = doc["baseline"]
    lines = [
        f"Mutation evidence at {doc['sha']} of {doc['repository']['path']}: {doc['status']}",
        f"Test: {doc['command']} (timeout {doc['timeout_seconds']:g} s, runner {base['runner']})",
        f"Isolation: {base['isolation']['description']}",
        f"Copies: on {doc['workspace']['kind']} ({doc['workspace']['path']})",
        f"Baseline: {base['outcome']} in {base['duration_ms'] / 1000:.1f} s ({base['detail']})",
    ]
    if doc["weak"]:
        lines.append(f"WEAK: {WEAK_WHY}")
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
    runs = [("baseline", base)] + [(f"mutant {m['index']}", m["run"]) for m in doc["mutants"]]
    for name, run in runs:
        if run is not None and run["unexpected_changes"]:
            listed = render.clip(", ".join(run["unexpected_changes"]), 200)
            lines.append(f"Unexpected changes, {name}: {listed} (allowed: --may-change GLOB)")
    logs = [run["log_path"] for _, run in runs if run is not None and run["log_path"]]
    if logs:
        lines.append(f"Logs: {Path(logs[0]).parent}")
    lines.append(f"Digest: {doc['digest']} ({SELF_REPORTED})")
    return "\n".join(lines)


WEAK_WHY = (
    "the runner reports no failing tests (the exit-code rule), so nothing shows that a test "
    "judged a mutant; handoff --evidence does not take it as every mutant killed (run pytest, "
    "whose junit report names the failing test)"
)


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
    if request.pids != DEFAULT_PIDS:
        words += ["--pids", str(request.pids)]
    for glob in request.may_change:
        words += ["--may-change", glob]
    if request.logs is not None:
        words += ["--logs", str(request.logs)]
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
    if not missed and doc["weak"]:
        return Refusal(
            f"{cli} evidence run: every mutant failed the command, but the evidence is weak: "
            f"{WEAK_WHY}.\nRun the tests with pytest, then run again:\n  {again}"
        )
    if not missed:
        return None
    listed = "\n".join(
        f"  mutant {m['index']} ({m['name']}): {m['verdict']}: {m['reason']}" for m in missed
    )
    return Refusal(
        f"{cli} evidence run: {len(missed)} of {len(doc['mutants'])} mutants were not killed:\n"
        f"{listed}\nA survivor needs a test that fails on an assertion with it applied; a mutant "
        f"in error needs fixing (make it apply at the SHA, fail on an assertion in a test file "
        f"rather than crash, or finish within --timeout); a refused mutant needs replacing (it "
        f"must change what the code does, not stop it on purpose or touch only comments). Then "
        f"run again:\n  {again}"
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
    pids: int = DEFAULT_PIDS,
    may_change: Sequence[str] = (),
    logs: Path | None = None,
    out: Path | None = None,
    json: bool = False,
) -> int:
    request = request_for(
        config,
        ctx,
        repo=repo,
        test=test,
        patches=tuple(read_patch(p, config.cli) for p in mutants),
        sha=sha,
        base=base,
        timeout=timeout,
        jobs=jobs,
        network=network,
        pids=pids,
        may_change=tuple(may_change),
        logs=logs,
    )
    try:
        doc = collect(request, now=ctx.now)
    except PairgateError as exc:
        # The runner's messages name no program: the configured one is put in front here.
        raise type(exc)(f"{config.cli} evidence run: {exc.message}") from None
    keep(doc, "evidence", ctx, config.cli)
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
