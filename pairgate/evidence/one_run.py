"""One run of a collection: a fresh copy of the checkout, the mutant applied and checked, the test
command in the sandbox, and what the run showed and changed."""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairgate.evidence import bwrap, changes, gitops, mutant_rules
from pairgate.evidence.isolation import Isolation, Places, Sealing, fixed_env, run_isolated
from pairgate.evidence.patches import Patch, touched
from pairgate.evidence.sensitive import is_test_file
from pairgate.evidence.verdict import classify, killed_by, mutant_verdict, names_pytest, read_junit


def _writable(func: Any, path: str, _exc: Any) -> None:
    """rmtree's retry for what a run left read-only."""
    os.chmod(os.path.dirname(path), stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, stat.S_IRWXU)
    func(path)


def remove(path: Path) -> None:
    shutil.rmtree(path, onerror=_writable)


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def apply_mutant(
    git_env: dict[str, str], pristine: Path, clone: Path, patch: Patch, patch_file: Path
) -> tuple[str | None, str | None, list[str]]:
    """Apply ``patch`` to ``clone`` (a copy of ``pristine``): (what git apply said when it did
    not apply, why the mutant is refused (mutant_rules), the files it touches)."""
    patch_file.write_bytes(patch.text.encode("utf-8"))
    error = gitops.apply_patch(git_env, clone, patch_file)
    files = touched(patch.text)[0]
    if error is not None:
        return error, None, files
    refused = mutant_rules.refusal(
        files,
        before=lambda p: _text(pristine / p),
        after=lambda p: _text(clone / p),
        is_test=is_test_file,
    )
    return None, refused, files


@dataclass(frozen=True)
class Runs:
    """What every run of one collection shares."""

    command: str
    timeout: float
    network: bool
    pids: int
    may_change: tuple[str, ...]
    work: Path
    pristine: Path  # the checkout of the SHA that every run copies
    tracked: frozenset[str]  # what git checked out there
    git_env: dict[str, str]
    isolation: Isolation
    sealing: Sealing
    python_dir: str | None
    logs: Path | None  # where each run's whole log is kept (--logs), or None
    take: Callable[[], Path]  # a directory holding a fresh copy of the checkout at ``repo``
    give_back: Callable[[Path], None]  # removes it once the run is over

    def run(self, index: int, patch: Patch | None) -> dict[str, Any]:
        """One run in a fresh copy: ``applied``, ``apply_error``, ``refused`` (why the mutant
        is refused before it runs, or None) and ``run`` of the entry."""
        where = self.take()
        places = Places(where / "repo", where / "report", where / "home", where / "tmp")
        try:
            for d in (places.report, places.home, places.tmp):
                d.mkdir()
            files: list[str] = []
            if patch is not None:
                error, refused, files = apply_mutant(
                    self.git_env, self.pristine, places.clone, patch, where / "mutant.patch"
                )
                if error is not None or refused is not None:
                    applied = error is None
                    return {
                        "applied": applied,
                        "apply_error": error,
                        "refused": refused,
                        "run": None,
                    }
            given = changes.snapshot(places.clone, files)
            expected = (self.tracked - set(files)) | {f for f, c in given.items() if c}
            since = time.time_ns()
            run = self._test(places, where / "output.log", "mutant-" + str(index) if index else "")
            changed = changes.changed(
                places.clone,
                self.pristine,
                expected=frozenset(expected),
                given=given,
                since_ns=since,
            )
            run["changed_files"] = changed
            run["unexpected_changes"] = changes.unexpected(changed, self.may_change)
            applied = patch is not None
            return {"applied": applied, "apply_error": None, "refused": None, "run": run}
        finally:
            self.give_back(where)

    def _test(self, places: Places, log: Path, name: str) -> dict[str, Any]:
        iso = self.isolation
        home, tmp, report = places.seen(iso.mode)
        env = fixed_env(
            home=home,
            tmp=tmp,
            junit=report / "junit.xml",
            proxy_off=iso.mode == "env-only" and not self.network,
            python_dir=self.python_dir,
        )
        raw = run_isolated(
            self.command,
            places=places,
            env=env,
            log=log,
            timeout=self.timeout,
            network=self.network,
            pids=self.pids,
            isolation=iso,
            sealing=self.sealing,
        )
        junit = places.report / "junit.xml"
        runner = "pytest" if names_pytest(self.command) or junit.exists() else "exit-code"
        roots = (bwrap.INSIDE_REPO, str(places.clone))
        outcome = classify(
            runner=runner,
            exit_code=raw.exit_code,
            timed_out=raw.timed_out,
            timeout=self.timeout,
            junit=read_junit(junit, is_test_file, roots) if runner == "pytest" else None,
        )
        kept = None
        if self.logs is not None:
            kept = self.logs / f"{name or 'baseline'}.log"
            shutil.copyfile(log, kept)
        return {
            "command": self.command,
            "runner": runner,
            "exit_code": raw.exit_code,
            "timed_out": raw.timed_out,
            "duration_ms": raw.duration_ms,
            "isolation": iso.describe(network=self.network, pids=self.pids),
            "outcome": outcome.outcome,
            "detail": outcome.detail,
            "failed_tests": [
                {"id": t.id, "kind": t.kind, "message": t.message, "frame": t.frame}
                for t in outcome.failed_tests
            ],
            "output_tail": raw.output_tail,
            "log_path": None if kept is None else str(kept),
            "_killed_by": killed_by(outcome),
            "_verdict": mutant_verdict(outcome),
            "_env": sorted(env),
        }


def public(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if not k.startswith("_")}
