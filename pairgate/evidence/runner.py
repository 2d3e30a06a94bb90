"""Collect mutation evidence: the baseline and each mutant, each in its own fresh copy.

Everything the runs need is read from the real repository first, and only read: the SHA, its
history's root, the files that judge the change, and one copy of the commit
(``gitops.seed_checkout``: a new shallow repository with no remote and no alternates). Only then
does anything run. Every run (the baseline, then each mutant) gets its own copy of that
checkout, on tmpfs where there is room (``workspace``), so no run sees another's files, and none
can reach the real repository through its own. The baseline runs first and must pass:
otherwise no mutant is run and each is recorded as refused.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairgate.evidence import DEFAULT_PIDS, DEFAULT_TIMEOUT, gitops, workspace
from pairgate.evidence.changes import DEFAULT_MAY_CHANGE
from pairgate.evidence.copies import Copies
from pairgate.evidence.isolation import Isolation, Sealing, probe, python_roots
from pairgate.evidence.one_run import Runs, public, remove
from pairgate.evidence.patches import Patch, touched
from pairgate.evidence.schema import SCHEMA_NAME, SCHEMA_VERSION, VERDICTS, sealed
from pairgate.evidence.sensitive import DEFAULT_PATTERNS, matching_pattern, sensitive
from pairgate.standalone.errors import Refusal, UsageError


@dataclass(frozen=True)
class Request:
    """What to run: ``command`` at ``sha`` (default HEAD) of ``repo``, then with each patch."""

    repo: Path
    command: str
    patches: tuple[Patch, ...]
    sha: str | None = None
    base: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    jobs: int = 1
    network: bool = False
    patterns: tuple[str, ...] = field(default=DEFAULT_PATTERNS)
    pids: int = DEFAULT_PIDS
    may_change: tuple[str, ...] = ()  # beyond DEFAULT_MAY_CHANGE
    logs: Path | None = None  # --logs: keep each run's whole log under here
    hide_dirs: tuple[Path, ...] = ()  # the configuration's directory: never seen by a run
    hide_files: tuple[Path, ...] = ()  # token files: never read by a run
    runtime_dir: str | None = None  # $XDG_RUNTIME_DIR, a place for the copies


def check_request(request: Request) -> None:
    if not request.command.strip():
        raise UsageError("--test is empty; name the command that runs the tests")
    if not request.patches:
        raise UsageError("give at least one --mutant PATCH")
    if not request.timeout > 0:
        raise UsageError(f"--timeout {request.timeout:g} is not a positive time")
    if request.jobs < 1:
        raise UsageError(f"--jobs {request.jobs} is not a positive number")
    if request.pids < 1:
        raise UsageError(f"--pids {request.pids} is not a positive number")


@dataclass(frozen=True)
class Resolved:
    """What the real repository says, read before anything runs."""

    top: Path
    gitdir: Path
    sha: str
    root: str
    base: str | None
    base_source: str
    changed: tuple[str, ...]

    def sensitive_changes(self, patterns: Sequence[str]) -> dict[str, Any]:
        """The evidence's ``sensitive_changes``: the files since the base that judge the change."""
        return {
            "base": self.base,
            "base_source": self.base_source,
            "patterns": list(patterns),
            "files": sensitive(self.changed, patterns),
        }


def resolve(request: Request, genv: dict[str, str]) -> Resolved:
    top, gitdir = gitops.git_dir(genv, request.repo)
    sha = gitops.resolve_commit(genv, gitdir, request.sha or "HEAD", flag="--sha")
    root = gitops.root_commit(genv, gitdir, sha)
    base: str | None
    if request.base is not None:
        base = gitops.resolve_commit(genv, gitdir, request.base, flag="--base")
        base_source = "--base"
    else:
        base, base_source = gitops.default_base(genv, gitdir, sha)
    changed = gitops.changed_files(genv, gitdir, base, sha) if base else []
    return Resolved(top, gitdir, sha, root, base, base_source, tuple(changed))


@contextlib.contextmanager
def seeded_copy(request: Request, prefix: str) -> Iterator[tuple[dict[str, str], Resolved, Path]]:
    """The commit ``request`` names, resolved (git's environment, what ``resolve`` finds) and
    checked out into ``<work>/pristine``, ``work`` made where the copies fit (tmpfs where there
    is room); both the work directory and git's home are removed when done."""
    home = Path(tempfile.mkdtemp(prefix="pairgate-evidence-git-"))
    try:
        genv = gitops.git_env(home)
        found = resolve(request, genv)
        need = workspace.need_for(
            gitops.checkout_bytes(genv, found.gitdir, found.sha), jobs=request.jobs
        )
        place = workspace.choose(need, runtime_dir=request.runtime_dir)
        work = Path(tempfile.mkdtemp(prefix=prefix, dir=place))
        try:
            gitops.seed_checkout(genv, found.gitdir, found.sha, work / "pristine")
            yield genv, found, work
        finally:
            remove(work)
    finally:
        remove(home)


def mutant_entry(
    index: int, patch: Patch, ran: dict[str, Any] | None, patterns: Sequence[str], sha: str
) -> dict[str, Any]:
    files, hunks = touched(patch.text)
    entry: dict[str, Any] = {
        "index": index,
        "name": patch.name,
        "patch": {
            "sha256": patch.sha256,
            "text": patch.text,
            "files": files,
            "hunks": [vars(h) for h in hunks],
        },
        "sensitive_files": [f for f in files if matching_pattern(f, patterns)],
        "applied": False,
        "apply_error": None,
        "run": None,
        "killed_by": [],
    }
    if ran is None:
        entry.update(verdict="refused", reason="the baseline did not pass, so no mutant was run")
        return entry
    entry.update(applied=ran["applied"], apply_error=ran["apply_error"])
    if ran["refused"] is not None:
        entry.update(verdict="refused", reason=f"not a mutant: {ran['refused']}")
        return entry
    if ran["run"] is None:
        entry.update(
            verdict="error", reason=f"the patch does not apply at {sha}: {ran['apply_error']}"
        )
        return entry
    run = ran["run"]
    verdict, reason = run.pop("_verdict")
    entry.update(run=public(run), verdict=verdict, reason=reason, killed_by=run["_killed_by"])
    return entry


def overall(baseline: dict[str, Any], mutants: Sequence[dict[str, Any]]) -> str:
    """pass: the baseline passed and every mutant was killed; fail: the tests fail unmutated, or
    a mutant survived; error: something could not be judged (a timeout, a crash, a patch that
    does not apply, a refused mutant)."""
    if baseline["outcome"] != "passed":
        return "fail" if baseline["outcome"] in ("assertion-failed", "failed") else "error"
    verdicts = {m["verdict"] for m in mutants}
    if "survived" in verdicts:
        return "fail"
    return "error" if verdicts - {"killed"} else "pass"


def collect(
    request: Request,
    *,
    now: Callable[[], float] = time.time,
    isolation: Isolation | None = None,
    python_dir: str | None = None,
) -> dict[str, Any]:
    """The sealed evidence document. UsageError (exit 2) when it cannot be run as asked."""
    check_request(request)
    try:
        with seeded_copy(request, "pairgate-evidence-") as (genv, found, work):
            place = work.parent
            logs = None
            if request.logs is not None:
                stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now()))
                request.logs.mkdir(parents=True, exist_ok=True)
                logs = Path(
                    tempfile.mkdtemp(prefix=f"{found.sha[:12]}-{stamp}-", dir=request.logs)
                ).resolve()
            copies = Copies(
                work / "pristine",
                work,
                total=1 + len(request.patches),
                ahead=request.jobs + 1,
                makers=request.jobs,  # one copy made per run in flight
            )
            runs = Runs(
                command=request.command,
                timeout=request.timeout,
                network=request.network,
                pids=request.pids,
                may_change=(*DEFAULT_MAY_CHANGE, *request.may_change),
                work=work,
                pristine=work / "pristine",
                tracked=gitops.tracked(genv, work / "pristine"),
                git_env=genv,
                isolation=isolation or probe(),
                sealing=Sealing(python_roots(), request.hide_dirs, request.hide_files),
                python_dir=python_dir,
                logs=logs,
                take=copies.take,
                give_back=copies.give_back,
            )
            try:
                baseline = runs.run(0, None)["run"]
                ran: list[dict[str, Any] | None]
                if baseline["outcome"] != "passed":
                    ran = [None] * len(request.patches)
                else:
                    with ThreadPoolExecutor(max_workers=request.jobs) as pool:
                        indexes = range(1, len(request.patches) + 1)
                        ran = list(pool.map(runs.run, indexes, request.patches))
            finally:
                copies.close()
    except OSError as exc:
        raise UsageError(f"cannot make the runs' copies: {exc}") from None
    env_names = baseline.pop("_env")
    mutants = [
        mutant_entry(i, p, r, request.patterns, found.sha)
        for i, (p, r) in enumerate(zip(request.patches, ran, strict=True), start=1)
    ]
    runs_made = [baseline] + [m["run"] for m in mutants if m["run"] is not None]
    doc = {
        "schema": SCHEMA_NAME,
        "v": SCHEMA_VERSION,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now())),
        "status": overall(baseline, mutants),
        "weak": any(r["runner"] == "exit-code" for r in runs_made),
        "repository": {"path": str(found.top), "root_commit": found.root},
        "sha": found.sha,
        "command": request.command,
        "timeout_seconds": request.timeout,
        "network": request.network,
        "pids": request.pids,
        "environment": env_names,
        "workspace": {"kind": workspace.filesystem_kind(place), "path": str(place)},
        "may_change": list(runs.may_change),
        "baseline": public(baseline),
        "mutants": mutants,
        "sensitive_changes": found.sensitive_changes(request.patterns),
        "summary": {v: sum(m["verdict"] == v for m in mutants) for v in VERDICTS},
    }
    return sealed(doc)


def rerun(
    request: Request,
    *,
    offered_sha256: str,
    now: Callable[[], float] = time.time,
    isolation: Isolation | None = None,
    python_dir: str | None = None,
) -> dict[str, Any]:
    """What ``evidence rerun`` needs: ``request.patches`` is exactly (the offer's mutant, one of
    the reviewer's own), run at the offered SHA. The offered patch must be the one the offer
    recorded: its SHA-256 is checked before anything runs."""
    if len(request.patches) != 2:
        raise UsageError("a re-run takes the offer's mutant and one of yours")
    offered = request.patches[0]
    if offered.sha256 != offered_sha256.lower():
        raise Refusal(
            f"the offered mutant {offered.name} has SHA-256 {offered.sha256}, "
            f"but the offer recorded {offered_sha256}: it is not the patch the evidence ran"
        )
    return collect(request, now=now, isolation=isolation, python_dir=python_dir)
