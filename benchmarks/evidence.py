#!/usr/bin/env python3
"""What mutation evidence costs, on a repository of 2,000 files. Prints; asserts nothing.

- The overhead of one mutant run over running the test command directly (goal: at most
  0.25 s; at most 0.5 s must hold): the cost of one more mutant ((8 mutants - 1 mutant) / 7,
  serial) less the direct run (and less the runs' own test time), the same with ``true`` as the
  test command (the runner's own cost, without the test's jitter), and its parts (a fresh copy
  of the checkout on the filesystem the evidence chose, the sandbox's start-up).
- ``--jobs 2`` on 8 mutants against serial (goal: at most 60% of the serial time), both for the
  whole run (the baseline always runs first, alone) and for the mutants' part of it.

The machine's load moves these figures: run it when nothing else is running.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pairgate.evidence import gitops, workspace  # noqa: E402
from pairgate.evidence.isolation import Places, fixed_env, probe, run_isolated  # noqa: E402
from pairgate.evidence.patches import Patch  # noqa: E402
from pairgate.evidence.runner import Request, collect  # noqa: E402
from tests.kit.evidence_repos import make_package  # noqa: E402
from tests.kit.gitrepos import commit  # noqa: E402

FILES = 2000
COMMAND = "python3 -m pytest -q -p no:cacheprovider tests/test_calc.py"
ROUNDS = 3


def timed(action: Callable[[], object], rounds: int = ROUNDS) -> float:
    """The least wall time of ``action`` over the rounds, in seconds: on a shared machine the
    least is the one run the others disturbed least."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def line(label: str, value: float, goal: str = "") -> None:
    print(f"  {label:<58} {value:7.3f} s  {goal}".rstrip())


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pairgate-evidence-bench-") as tmp:
        work = Path(tmp)
        pkg = make_package(work)
        filler = {f"data/d{i // 100:02d}/f{i:04d}.txt": f"file {i}\n" for i in range(FILES - 2)}
        commit(pkg.repo, filler, "2,000 files")
        count = len(
            subprocess.run(
                ["git", "-C", str(pkg.repo), "ls-files"], capture_output=True, text=True, check=True
            ).stdout.split()
        )
        mutants = [pkg.calc(f"m{i}.patch", "a + b", f"a + b + {i + 1}") for i in range(8)]
        patches = tuple(Patch(p.name, p.read_text()) for p in mutants)
        isolation = probe()
        place = workspace.choose(10**8, runtime_dir=None)
        print(
            f"evidence benchmark: {count} files, isolation {isolation.mode}, copies on "
            f"{workspace.filesystem_kind(place)} ({place}), test: {COMMAND}"
        )

        env = fixed_env(home=work, tmp=work, junit=work / "direct.xml", proxy_off=False)
        direct = timed(
            lambda: subprocess.run(
                ["/bin/sh", "-c", COMMAND], cwd=pkg.repo, env=env, check=True, capture_output=True
            )
        )

        docs: list[dict[str, Any]] = []

        def evidence(n: int, jobs: int = 1, command: str = COMMAND) -> float:
            request = Request(pkg.repo, command, patches[:n], jobs=jobs)
            return timed(lambda: docs.append(collect(request)))

        # With a command that costs nothing, one more mutant is the runner's own cost alone
        # (least disturbed by the test command's jitter on a shared machine).
        bare_mutant = (evidence(8, command="true") - evidence(1, command="true")) / 7

        one, eight = evidence(1), evidence(8)
        per_mutant = (eight - one) / 7
        # The same runs' own test time, as the evidence measured it around the command.
        own = min(m["run"]["duration_ms"] for d in docs[-ROUNDS:] for m in d["mutants"]) / 1000
        genv = gitops.git_env(work)
        scratch = Path(tempfile.mkdtemp(prefix="pairgate-evidence-bench-", dir=place))
        gitops.seed_checkout(genv, pkg.repo / ".git", pkg.sha(), scratch / "pristine")
        counter = iter(range(1000))

        def copy_and_remove() -> None:
            dest = scratch / f"run{next(counter)}"
            gitops.copy_checkout(scratch / "pristine", dest)
            subprocess.run(["rm", "-rf", str(dest)], check=True)

        checkout = timed(copy_and_remove)
        log = work / "log"
        places = Places(scratch / "pristine", work, work, work)
        sandboxed = timed(
            lambda: run_isolated(
                "true", places=places, env=env, log=log, timeout=30, network=False, pids=256,
                isolation=isolation,
            ),
            rounds=5,
        )  # fmt: skip
        subprocess.run(["rm", "-rf", str(scratch)], check=True)
        bare = timed(lambda: subprocess.run(["/bin/sh", "-c", "true"], env=env), rounds=5)

        print("one mutant run")
        line("the test command run directly", direct)
        line("evidence run, 1 mutant (clone, baseline, 1 mutant)", one)
        line("one more mutant (8 mutants - 1 mutant) / 7", per_mutant)
        line(
            "overhead of one mutant run over the direct run",
            per_mutant - direct,
            "goal <= 0.25 s (must: <= 0.5 s)",
        )
        line("the same, over the least test time the evidence measured", per_mutant - own)
        line("one more mutant when the test command is `true`", bare_mutant, "goal <= 0.25 s")
        line("  of which: a fresh copy of the checkout, and its removal", checkout)
        line("  of which: the sandbox's start-up (true, sandboxed - bare)", sandboxed - bare)

        parallel = evidence(8, jobs=2)
        fixed = one - per_mutant  # the clone and the baseline: serial in both
        print("8 mutants, --jobs 2 against serial")
        line("serial", eight)
        line("--jobs 2", parallel)
        print(f"  {'whole run: --jobs 2 / serial':<58} {parallel / eight:7.0%}    goal <= 60%")
        mutants_part = (parallel - fixed) / (eight - fixed)
        print(f"  {'the mutants part alone (without clone and baseline)':<58} {mutants_part:7.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
