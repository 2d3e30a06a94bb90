"""Collect mutation evidence: the baseline and each mutant, each in its own clean clone.

One disposable copy of the repository's objects is taken (``git clone --local --no-hardlinks``),
and one checkout of the SHA from it that nothing runs in; every run (the baseline, then each
mutant) gets its own copy of that checkout, so no run sees another's files, and the real
repository's working tree is never read. The baseline runs
first and must pass: otherwise no mutant is run and each is recorded as refused.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairgate.evidence import DEFAULT_TIMEOUT, gitops
from pairgate.evidence.isolation import Isolation, fixed_env, probe, run_isolated
from pairgate.evidence.patches import Patch, touched
from pairgate.evidence.schema import SCHEMA_NAME, SCHEMA_VERSION, VERDICTS, sealed
from pairgate.evidence.sensitive import DEFAULT_PATTERNS, matching_pattern, sensitive
from pairgate.evidence.verdict import (
    classify,
    killed_by,
    mutant_verdict,
    names_pytest,
    read_junit,
)
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


def _check(request: Request) -> None:
    if not request.command.strip():
        raise UsageError("--test is empty; name the command that runs the tests")
    if not request.patches:
        raise UsageError("give at least one --mutant PATCH")
    if not request.timeout > 0:
        raise UsageError(f"--timeout {request.timeout:g} is not a positive time")
    if request.jobs < 1:
        raise UsageError(f"--jobs {request.jobs} is not a positive number")


def _writable(func: Any, path: str, _exc: Any) -> None:
    """rmtree's retry for what a run left read-only."""
    os.chmod(os.path.dirname(path), stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, stat.S_IRWXU)
    func(path)


def _remove(path: Path) -> None:
    shutil.rmtree(path, onerror=_writable)


@dataclass(frozen=True)
class _World:
    """What every run of one collection shares."""

    request: Request
    sha: str
    work: Path
    pristine: Path  # the checkout of the SHA that every run copies
    git_env: dict[str, str]
    isolation: Isolation
    python_dir: str | None

    def run(self, index: int, patch: Patch | None) -> dict[str, Any]:
        """One run in a fresh checkout: ``applied``, ``apply_error`` and ``run`` of the entry."""
        where = self.work / f"run-{index}"
        home, tmp = where / "home", where / "tmp"
        for d in (home, tmp):
            d.mkdir(parents=True)
        clone = where / "repo"
        try:
            gitops.copy_checkout(self.pristine, clone)
            if patch is not None:
                patch_file = where / "mutant.patch"
                patch_file.write_bytes(patch.text.encode("utf-8"))
                error = gitops.apply_patch(self.git_env, clone, patch_file)
                if error is not None:
                    return {"applied": False, "apply_error": error, "run": None}
            return {"applied": patch is not None, "apply_error": None, "run": self._test(where)}
        finally:
            _remove(where)

    def _test(self, where: Path) -> dict[str, Any]:
        req = self.request
        junit = where / "junit.xml"
        proxy_off = self.isolation.mode == "env-only" and not req.network
        env = fixed_env(
            home=where / "home",
            tmp=where / "tmp",
            junit=junit,
            proxy_off=proxy_off,
            python_dir=self.python_dir,
        )
        raw = run_isolated(
            req.command,
            cwd=where / "repo",
            env=env,
            log=where / "output.log",
            timeout=req.timeout,
            network=req.network,
            isolation=self.isolation,
        )
        runner = "pytest" if names_pytest(req.command) or junit.exists() else "exit-code"
        outcome = classify(
            runner=runner,
            exit_code=raw.exit_code,
            timed_out=raw.timed_out,
            timeout=req.timeout,
            junit=read_junit(junit) if runner == "pytest" else None,
        )
        return {
            "command": req.command,
            "runner": runner,
            "exit_code": raw.exit_code,
            "timed_out": raw.timed_out,
            "duration_ms": raw.duration_ms,
            "isolation": self.isolation.describe(network=req.network),
            "outcome": outcome.outcome,
            "detail": outcome.detail,
            "failed_tests": [
                {"id": t.id, "kind": t.kind, "message": t.message} for t in outcome.failed_tests
            ],
            "output_tail": raw.output_tail,
            "_killed_by": killed_by(outcome),
            "_verdict": mutant_verdict(outcome),
            "_env": sorted(env),
        }


def _mutant(
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
    if ran["run"] is None:
        entry.update(
            verdict="error", reason=f"the patch does not apply at {sha}: {ran['apply_error']}"
        )
        return entry
    run = ran["run"]
    verdict, reason = run.pop("_verdict")
    entry.update(run=_public(run), verdict=verdict, reason=reason, killed_by=run["_killed_by"])
    return entry


def _public(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if not k.startswith("_")}


def collect(
    request: Request,
    *,
    now: Callable[[], float] = time.time,
    isolation: Isolation | None = None,
    python_dir: str | None = None,
) -> dict[str, Any]:
    """The sealed evidence document. UsageError (exit 2) when it cannot be run as asked."""
    _check(request)
    work = Path(tempfile.mkdtemp(prefix="pairgate-evidence-"))
    try:
        (work / "git-home").mkdir()
        genv = gitops.git_env(work / "git-home")
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
        gitops.clone_base(genv, gitdir, work / "base")
        gitops.clone_run(genv, work / "base", work / "pristine", sha)
        world = _World(
            request, sha, work, work / "pristine", genv, isolation or probe(), python_dir
        )
        baseline = world.run(0, None)["run"]
        env_names = baseline.pop("_env")
        ran: list[dict[str, Any] | None]
        if baseline["outcome"] != "passed":
            ran = [None] * len(request.patches)
        else:
            with ThreadPoolExecutor(max_workers=request.jobs) as pool:
                ran = list(pool.map(world.run, range(1, len(request.patches) + 1), request.patches))
        mutants = [
            _mutant(i, p, r, request.patterns, sha)
            for i, (p, r) in enumerate(zip(request.patches, ran, strict=True), start=1)
        ]
    finally:
        _remove(work)
    doc = {
        "schema": SCHEMA_NAME,
        "v": SCHEMA_VERSION,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now())),
        "repository": {"path": str(top), "root_commit": root},
        "sha": sha,
        "command": request.command,
        "timeout_seconds": request.timeout,
        "network": request.network,
        "environment": env_names,
        "baseline": _public(baseline),
        "mutants": mutants,
        "sensitive_changes": {
            "base": base,
            "base_source": base_source,
            "patterns": list(request.patterns),
            "files": sensitive(changed, request.patterns),
        },
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
