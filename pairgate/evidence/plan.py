"""``evidence plan``: what a run would do, without running the test command.

It reads what ``evidence run`` reads (the SHA, the files that judge the change), makes the same
copy of the commit, and applies each mutant to a copy of its own to say whether it applies and
whether it would be refused as a mutant; it names the isolation this machine gives, where the
copies would go, the runner and so whether the evidence would be weak. Nothing else runs.
"""

from __future__ import annotations

from typing import Any

from pairgate.evidence import gitops, workspace
from pairgate.evidence.changes import DEFAULT_MAY_CHANGE
from pairgate.evidence.isolation import Isolation, probe
from pairgate.evidence.one_run import apply_mutant, remove
from pairgate.evidence.patches import touched
from pairgate.evidence.runner import Request, check_request, seeded_copy
from pairgate.evidence.sensitive import matching_pattern
from pairgate.evidence.verdict import names_pytest


def plan(request: Request, *, isolation: Isolation | None = None) -> dict[str, Any]:
    """The plan as a document (``--json`` prints it). UsageError (exit 2) as ``collect``."""
    check_request(request)
    iso = isolation or probe()
    with seeded_copy(request, "pairgate-evidence-plan-") as (genv, found, work):
        pristine, place = work / "pristine", work.parent
        mutants = []
        for index, patch in enumerate(request.patches, start=1):
            clone = work / f"m{index}"
            gitops.copy_checkout(pristine, clone)
            error, refused, files = apply_mutant(
                genv, pristine, clone, patch, work / f"m{index}.patch"
            )
            remove(clone)
            mutants.append(
                {
                    "index": index,
                    "name": patch.name,
                    "sha256": patch.sha256,
                    "files": files,
                    "hunks": [vars(h) for h in touched(patch.text)[1]],
                    "sensitive_files": [f for f in files if matching_pattern(f, request.patterns)],
                    "applies": error is None,
                    "apply_error": error,
                    "refused": refused,
                }
            )
    pytest = names_pytest(request.command)
    return {
        "repository": {"path": str(found.top), "root_commit": found.root},
        "sha": found.sha,
        "command": request.command,
        "runner": "pytest" if pytest else "exit-code",
        "weak": not pytest,
        "runs": 1 + len(mutants),
        "timeout_seconds": request.timeout,
        "network": request.network,
        "pids": request.pids,
        "isolation": iso.describe(network=request.network, pids=request.pids),
        "workspace": {"kind": workspace.filesystem_kind(place), "path": str(place)},
        "may_change": [*DEFAULT_MAY_CHANGE, *request.may_change],
        "mutants": mutants,
        "sensitive_changes": found.sensitive_changes(request.patterns),
    }
