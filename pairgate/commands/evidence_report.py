"""evidence plan and evidence report: what a run would do, and the last document kept. Neither
runs the tests; both exit 0 when they could answer, 2 when they could not (plan: not a
repository, not a commit, an unreadable mutant; report: no document kept)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pairgate import output as render
from pairgate.commands.evidence_run import evidence_text, read_patch, request_for
from pairgate.evidence import DEFAULT_PIDS, DEFAULT_TIMEOUT, gitops, store
from pairgate.evidence.plan import plan
from pairgate.evidence.rerun import RERUN_SCHEMA_NAME, check_rerun
from pairgate.evidence.schema import check_evidence, digest_problem, load_json
from pairgate.output import Style
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, PairgateError, UsageError


def plan_text(doc: dict[str, Any]) -> str:
    lines = [
        f"Plan of mutation evidence at {doc['sha']} of {doc['repository']['path']} "
        f"(nothing was run)",
        f"Test: {doc['command']} (timeout {doc['timeout_seconds']:g} s, runner {doc['runner']})",
    ]
    if doc["weak"]:
        lines.append(
            "WEAK: the command does not name pytest, so unless it runs pytest (which writes a "
            "junit report) the exit-code rule judges it, and handoff --evidence will refuse it"
        )
    lines += [
        f"Isolation: {doc['isolation']['description']}",
        f"Copies: on {doc['workspace']['kind']} ({doc['workspace']['path']}); "
        f"{doc['runs']} runs (the baseline, then each mutant)",
    ]
    for m in doc["mutants"]:
        if not m["applies"]:
            state = f"does NOT apply: {m['apply_error']}"
        elif m["refused"]:
            state = f"REFUSED as a mutant: {m['refused']}"
        elif m["sensitive_files"]:
            state = f"edits files that judge the change: {', '.join(m['sensitive_files'])}"
        else:
            state = "applies"
        files = ", ".join(m["files"]) or "-"
        lines.append(f"Mutant {m['index']} ({m['name']}, {files}): {state}")
    changes = doc["sensitive_changes"]
    if changes["base"] is None:
        lines.append(f"Files that judge the change: not compared ({changes['base_source']})")
    else:
        listed = ", ".join(f"{f['path']} ({f['pattern']})" for f in changes["files"]) or "none"
        lines.append(f"Files that judge the change, changed since {changes['base'][:12]}: {listed}")
    return "\n".join(lines)


def plan_evidence(
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
    json: bool = False,
) -> int:
    request = request_for(
        config,
        ctx,
        repo=repo,
        test=test,
        patches=tuple(read_patch(p, config.cli, "plan") for p in mutants),
        sha=sha,
        base=base,
        timeout=timeout,
        jobs=jobs,
        network=network,
        pids=pids,
        may_change=tuple(may_change),
    )
    try:
        doc = plan(request)
    except PairgateError as exc:
        raise type(exc)(f"{config.cli} evidence plan: {exc.message}") from None
    if json:
        render.dump(doc, ctx.stdout)
    else:
        print(plan_text(doc), file=ctx.stdout)
    return Exit.OK


def report_evidence(
    *,
    ctx: Context,
    config: Config,
    repo: Path = Path("."),
    sha: str | None = None,
    json: bool = False,
) -> int:
    cli = config.cli
    root = store.state_dir(ctx.env)
    if root is None:
        raise UsageError(f"{cli} evidence report: no state directory: set XDG_STATE_HOME or HOME")
    genv = gitops.git_env(Path("/nonexistent"))
    try:
        _, gitdir = gitops.git_dir(genv, repo)
        rev = gitops.resolve_commit(genv, gitdir, sha or "HEAD", flag="--sha")
        root_commit = gitops.root_commit(genv, gitdir, rev)
    except PairgateError as exc:
        raise type(exc)(f"{cli} evidence report: {exc.message}") from None
    found = store.last(root, root_commit, rev if sha else None)
    if found is None:
        at = f" at {rev}" if sha else ""
        raise UsageError(
            f"{cli} evidence report: no evidence is kept for {repo}{at} under {root}: run "
            f"{cli} evidence run first"
        )
    doc = load_json(found, "the kept document")
    is_rerun = isinstance(doc, dict) and doc.get("schema") == RERUN_SCHEMA_NAME
    problem = check_rerun(doc) if is_rerun else check_evidence(doc) or digest_problem(doc)
    if problem:
        raise UsageError(f"{cli} evidence report: {found} is not a whole document: {problem}")
    if json:
        render.dump(doc, ctx.stdout)
        return Exit.OK
    style = Style(render.use_colour(ctx.stdout, ctx.env))
    if is_rerun:
        from pairgate.commands.evidence_rerun import rerun_text

        print(rerun_text(doc, style), file=ctx.stdout)
    else:
        print(evidence_text(doc, style), file=ctx.stdout)
    print(f"Kept in {found}", file=ctx.stdout)
    return Exit.OK
