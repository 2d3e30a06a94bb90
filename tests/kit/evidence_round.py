"""The world of the evidence round tests (tests/test_evidence_round.py, tests/test_evidence_approve.py).

The local repository is the source of truth: a real git repository with a real pytest suite
and real mutants (tests/kit/evidence_repos.py). The sandbox's own commit ids are not git's, so its
merge request is given the local commit's id (``mirror_commit``, POST /-/sandbox/commits), and
the evidence run in a clone of the local repository is of the MR's head.

The evidence documents are collected once per session (each run is a real pytest run): both
modules take the ``docs`` and ``world`` fixtures from here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pairgate.evidence.patches import Patch
from pairgate.evidence.rerun import rerun_document
from pairgate.evidence.runner import Request, collect, rerun
from pairgate.evidence.surface import evidence_field, evidence_summary
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.records import parse_marker
from tests.kit.evidence_repos import CALC, PYTEST, TESTS, Package, make_package
from tests.kit.world import Round

FILES = {"calc/__init__.py": CALC, "tests/test_calc.py": TESTS}


class Docs:
    """What the module collects once: the package, its mutants, and the evidence."""

    def __init__(self, tmp: Path) -> None:
        self.pkg: Package = make_package(tmp)
        pkg = self.pkg
        self.sha = pkg.sha()
        self.add = pkg.calc("add.patch", "a + b", "a - b")
        self.clamp = pkg.calc("clamp.patch", "max(lo, min(x, hi))", "min(x, hi)")
        self.survivor = pkg.calc("survive.patch", "return a + b", "return a + b if a != 100 else 0")
        self.own = pkg.calc("own.patch", "return a + b", "return b + b")
        self.good = self._collect(self.add, self.clamp)
        # "2/2 killed", and where the machine has no namespaces "2/2 killed (env-only, ...)"
        self.killed = evidence_summary(evidence_field(self.good))
        assert self.killed.startswith("2/2 killed")
        self.surviving = self._collect(self.add, self.survivor)
        # a mutant of the tests, not of the code: killed, and still no evidence for an offer
        weakened = pkg.mutant("tests.patch", {"tests/test_calc.py": TESTS.replace("== 5", "== 6")})
        self.sensitive = collect(
            Request(repo=pkg.repo, command=PYTEST, patches=(self._patch(weakened),))
        )
        self.failing = collect(
            Request(repo=pkg.repo, command="exit 1", patches=(self._patch(self.add),))
        )
        # the reviewer's re-run of mutant 2 (clamp) and its own, as evidence rerun runs it
        offered = Patch("note-mutant-2", self.clamp.read_text())
        self.rerun_inner = rerun(
            Request(repo=pkg.repo, command=PYTEST, patches=(offered, self._patch(self.own))),
            offered_sha256=offered.sha256,
        )

    @staticmethod
    def _patch(path: Path) -> Patch:
        return Patch(path.name, path.read_text())

    def _collect(self, *mutants: Path) -> dict[str, Any]:
        patches = tuple(self._patch(m) for m in mutants)
        return collect(Request(repo=self.pkg.repo, command=PYTEST, patches=patches, jobs=2))

    def file(self, tmp: Path, doc: dict[str, Any], name: str = "evidence.json") -> Path:
        path = tmp / name
        path.write_text(json.dumps(doc))
        return path


@pytest.fixture(scope="session")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Docs:
    return Docs(tmp_path_factory.mktemp("evidence-round"))


@pytest.fixture
def world(sandbox: RunningSandbox, docs: Docs) -> Round:
    """An issue claimed by the lead, and its MR, whose head is the local repository's commit."""
    w = Round(sandbox)
    sandbox.mirror_commit(docs.sha, w.branch, FILES)
    assert w.head == docs.sha
    w.claim()
    return w


def handoff(world: Round, *extra: Any, sha: str | None = None) -> Any:
    return world.run(
        "acme-lead",
        *("handoff", world.issue, "--to", "acme-review", "--role", "review"),
        *("--sha", sha or world.head, "--mr", world.mr, "--mr-project", world.project),
        *extra,
    )


def approve(world: Round, *extra: Any, sha: str | None = None) -> Any:
    return world.run(
        "acme-review",
        *("approve", world.issue, "--mr", world.mr, "--mr-project", world.project),
        *("--sha", sha or world.head, "--to", "acme-lead"),
        *extra,
    )


def last_note(world: Round) -> dict[str, Any]:
    return world.notes()[-1]


def record_of(note: dict[str, Any]) -> dict[str, Any]:
    return parse_marker(note["body"])[1]


def json_of(world: Round, *argv: Any) -> Any:
    result = world.run("acme-lead", *argv, "--json")
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


def offered_and_accepted(world: Round, docs: Docs, tmp_path: Path) -> int:
    assert handoff(world, "--evidence", docs.file(tmp_path, docs.good)).code == 0
    note = last_note(world)["id"]
    world.accept()
    return int(note)


def rerun_cli(world: Round, docs: Docs, *extra: Any, test: str = PYTEST, index: int = 2) -> Any:
    return world.run(
        "acme-review",
        *("evidence", "rerun", world.issue, "--mutant-index", index, "--mutant", docs.own),
        *("--test", test, "--repo", docs.pkg.repo),
        *extra,
    )


def wrapped(world: Round, docs: Docs, offer_note: int, tmp_path: Path) -> Path:
    """The module's re-run of mutant 2, bound to this world's offer as evidence rerun binds it."""
    doc = rerun_document(
        docs.rerun_inner,
        project="acme/tracker",
        issue=world.issue,
        offer_note=offer_note,
        sender="acme-lead",
        offered=evidence_field(docs.good),
        index=2,
        now=0.0,
    )
    return docs.file(tmp_path, doc, "rerun.json")
