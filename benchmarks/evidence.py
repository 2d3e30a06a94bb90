#!/usr/bin/env python3
"""What mutation evidence costs, on a repository of 2,000 files. Prints; asserts nothing.

    python3 benchmarks/evidence.py [--quick]

- The overhead of one mutant run over running the test command directly (goal: at most
  0.25 s; at most 0.5 s must hold): the cost of one more mutant ((8 mutants - 1 mutant) / 7,
  serial) less the direct run (and less the runs' own test time), the same with ``true`` as the
  test command (the runner's own cost, without the test's jitter), and its parts (a fresh copy
  of the checkout on the filesystem the evidence chose, and its removal; the sandbox's
  start-up). The copies are made ahead of the runs and removed behind them, so with a real test
  command most of their cost is off the runs' way.
- ``--jobs 2`` on 8 mutants against serial (goal: at most 60% of the serial time), both for the
  whole run (the baseline always runs first, alone) and for the mutants' part of it.

``benchmarks/run.py`` prints the first figure in its table (``measure``). The machine's load
moves these figures: run it when nothing else is running. ``--quick`` is a smoke run, for the
suite (``QUICK``: the least that runs every figure once): its figures mean nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
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

COMMAND = "python3 -m pytest -q -p no:cacheprovider tests/test_calc.py"
# --quick: two mutants are the fewest "one more mutant" is taken from; pytest's plugin
# auto-loading off, as the suite's evidence tests run it (the package's tests use no plugin, and
# the ones this environment has cost each of the run's pytests up to a second of start-up).
QUICK: dict[str, Any] = {
    "files": 20,
    "mutants": 2,
    "rounds": 1,
    "command": f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {COMMAND}",
}


def timed(action: Callable[[], object], rounds: int) -> float:
    """The least wall time of ``action`` over the rounds, in seconds: on a shared machine the
    least is the one run the others disturbed least."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(
    *,
    files: int = 2000,
    mutants: int = 8,
    rounds: int = 3,
    command: str = COMMAND,
    overhead_only: bool = False,
) -> dict[str, Any]:
    """Every figure, in seconds (``jobs`` fractions in ``parallel``). ``overhead_only``: the
    direct run, one mutant and all of them, and what follows from them (run.py's row), without
    the runner's own cost, its parts and ``--jobs 2``."""
    with tempfile.TemporaryDirectory(prefix="pairgate-evidence-bench-") as tmp:
        work = Path(tmp)
        pkg = make_package(work)
        filler = {f"data/d{i // 100:02d}/f{i:04d}.txt": f"file {i}\n" for i in range(files - 2)}
        commit(pkg.repo, filler, f"{files:,} files")
        made = [pkg.calc(f"m{i}.patch", "a + b", f"a + b + {i + 1}") for i in range(mutants)]
        patches = tuple(Patch(p.name, p.read_text()) for p in made)
        isolation = probe()
        place = workspace.choose(10**8, runtime_dir=os.environ.get("XDG_RUNTIME_DIR"))
        env = fixed_env(home=work, tmp=work, junit=work / "direct.xml", proxy_off=False)
        if "pytest" in command and importlib.util.find_spec("pytest") is None:
            # The runs use this interpreter's directory first on PATH (fixed_env).
            raise SystemExit(
                f"benchmarks/evidence.py: {sys.executable} has no pytest, which the sample "
                "package's test command runs: run it with the python that has pairgate's test "
                "extra (pip install -e '.[test]'), and give run.py the clean venv as --venv"
            )
        direct = timed(
            lambda: subprocess.run(
                ["/bin/sh", "-c", command], cwd=pkg.repo, env=env, check=True, capture_output=True
            ),
            rounds,
        )
        docs: list[dict[str, Any]] = []

        def evidence(n: int, jobs: int = 1, test: str = command) -> float:
            request = Request(pkg.repo, test, patches[:n], jobs=jobs)
            return timed(lambda: docs.append(collect(request)), rounds)

        more = mutants - 1
        one, all_of_them = evidence(1), evidence(mutants)
        per_mutant = (all_of_them - one) / more
        # The same runs' own test time, as the evidence measured it around the command.
        own = min(m["run"]["duration_ms"] for d in docs[-rounds:] for m in d["mutants"]) / 1000
        figures: dict[str, Any] = {
            "files": files,
            "mutants": mutants,
            "isolation": isolation.mode,
            "workspace": f"{workspace.filesystem_kind(place)} ({place})",
            "direct": direct,
            "one": one,
            "all": all_of_them,
            "per_mutant": per_mutant,
            "overhead": per_mutant - direct,
            "overhead_own": per_mutant - own,
        }
        if overhead_only:
            return figures
        # With a command that costs nothing, one more mutant is the runner's own cost alone
        # (least disturbed by the test command's jitter on a shared machine).
        bare_mutant = (evidence(mutants, test="true") - evidence(1, test="true")) / more
        scratch = Path(tempfile.mkdtemp(prefix="pairgate-evidence-bench-", dir=place))
        try:
            gitops.seed_checkout(gitops.git_env(work), pkg.repo / ".git", pkg.sha(), scratch / "p")
            counter = iter(range(1000))

            def copy_and_remove() -> None:
                dest = scratch / f"run{next(counter)}"
                gitops.copy_checkout(scratch / "p", dest)
                subprocess.run(["rm", "-rf", str(dest)], check=True)

            checkout = timed(copy_and_remove, rounds)
            places = Places(scratch / "p", work, work, work)
            sandboxed = timed(
                lambda: run_isolated(
                    "true", places=places, env=env, log=work / "log", timeout=30,
                    network=False, pids=256, isolation=isolation,
                ),
                rounds + 2,
            )  # fmt: skip
        finally:
            subprocess.run(["rm", "-rf", str(scratch)], check=True)
        bare = timed(lambda: subprocess.run(["/bin/sh", "-c", "true"], env=env), rounds + 2)
        parallel = evidence(mutants, jobs=2)
    return {
        **figures,
        "bare_mutant": bare_mutant,
        "checkout": checkout,
        "sandbox": sandboxed - bare,
        "parallel": parallel,
    }


def line(label: str, value: float, goal: str = "") -> None:
    print(f"  {label:<58} {value:7.3f} s  {goal}".rstrip())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: small, once")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    f = measure(**QUICK) if args.quick else measure()
    n = f["mutants"]
    print(
        f"evidence benchmark: {f['files']} files, isolation {f['isolation']}, copies on "
        f"{f['workspace']}, test: {QUICK['command'] if args.quick else COMMAND}"
    )
    print("one mutant run")
    line("the test command run directly", f["direct"])
    line("evidence run, 1 mutant (clone, baseline, 1 mutant)", f["one"])
    line(f"one more mutant ({n} mutants - 1 mutant) / {n - 1}", f["per_mutant"])
    line(
        "overhead of one mutant run over the direct run",
        f["overhead"],
        "goal <= 0.25 s (must: <= 0.5 s)",
    )
    line("the same, over the least test time the evidence measured", f["overhead_own"])
    line("one more mutant when the test command is `true`", f["bare_mutant"], "goal <= 0.25 s")
    line("  its parts: a fresh copy of the checkout, and its removal", f["checkout"])
    line("  its parts: the sandbox's start-up (true, sandboxed - bare)", f["sandbox"])
    fixed = f["one"] - f["per_mutant"]  # the clone and the baseline: serial in both
    print(f"{n} mutants, --jobs 2 against serial")
    line("serial", f["all"])
    line("--jobs 2", f["parallel"])
    whole = f["parallel"] / f["all"]
    print(f"  {'whole run: --jobs 2 / serial':<58} {whole:7.0%}    goal <= 60%")
    part = (f["parallel"] - fixed) / (f["all"] - fixed)
    print(f"  {'the mutants part alone (without clone and baseline)':<58} {part:7.0%}")
    after = os.getloadavg()
    print(f"load average {load[0]:.2f} before, {after[0]:.2f} after, on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
