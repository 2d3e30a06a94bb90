"""The cap on a run's processes (``--pids N``): a pids cgroup where one can be made, else
RLIMIT_NPROC set inside the run's own user namespace, else none (and the evidence says so).

- ``pids-cgroup``: a child cgroup with ``pids.max = N``, made for each run where this process
  may make one (cgroup v2 where the pids controller is delegated to its own cgroup or the
  hierarchy's root is writable, or a cgroup v1 pids hierarchy). The run's first process moves
  itself in before it starts anything (a shell that writes its pid to ``cgroup.procs``, then
  execs), so every process of the run counts, and after the run whatever is left in the cgroup
  is killed: the cgroup is also the surest tree kill.
- ``rlimit-nproc``: ``prlimit --nproc=N`` as the run's first command inside its user namespace,
  where the count is of that namespace's processes alone. The kernel does not apply the limit
  to real root (uid 0 of the host), so this is offered only to other users, and only in a mode
  with a user namespace.
- ``none``: root with no cgroup to make, or the weaker mode without a user namespace.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# 125 when it cannot: a run that never started is an error, never a test failure (exit 1)
_MOVE_IN = 'echo $$ > "$1/cgroup.procs" || exit 125; shift; exec "$@"'
_counter = itertools.count(1)


@dataclass(frozen=True)
class ProcessCap:
    """How this machine can cap a run's processes, found once by ``probe_cap``."""

    by: str  # pids-cgroup | rlimit-nproc | none
    why: str  # for none: why not
    parent: Path | None = None  # pids-cgroup: where each run's cgroup is made


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, filesystem type, super options) of every mount, from /proc/self/mountinfo."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3:
            found.append((fields[4].replace("\\040", " "), tail[0], tail[2]))
    return found


def cgroup_candidates() -> list[Path]:
    """Directories a run's cgroup could be made in: this process's own cgroup and the
    hierarchy's root, in the unified (v2) hierarchy and in a v1 pids hierarchy."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    own: dict[str, str] = {}
    for line in lines:
        number, controllers, path = ([*line.split(":", 2), "", ""])[:3]
        if number == "0" and controllers == "":
            own["v2"] = path
        elif "pids" in controllers.split(","):
            own["v1"] = path
    found: list[Path] = []
    for point, kind, options in _mounts():
        if kind == "cgroup2" and "v2" in own:
            rel = own["v2"]
        elif kind == "cgroup" and "pids" in options.split(",") and "v1" in own:
            rel = own["v1"]
        else:
            continue
        for where in (Path(point) / rel.lstrip("/"), Path(point)):
            if where not in found:
                found.append(where)
    return found


def _try_parent(parent: Path) -> str | None:
    """None when a capped child cgroup can be made in ``parent``, else why not."""
    child = parent / f"pairgate-evidence-probe-{os.getpid()}"
    try:
        child.mkdir()
    except OSError as exc:
        return f"{parent}: {exc.strerror}"
    try:
        (child / "pids.max").write_text("1\n")
        return None
    except OSError as exc:
        return f"{parent}: no pids controller ({exc.strerror})"
    finally:
        with contextlib.suppress(OSError):
            child.rmdir()


@functools.cache
def probe_cap() -> ProcessCap:
    """The strongest cap this process can set, tried once."""
    tried = []
    for parent in cgroup_candidates():
        why = _try_parent(parent)
        if why is None:
            return ProcessCap("pids-cgroup", "", parent)
        tried.append(why)
    if os.geteuid() != 0:
        return ProcessCap("rlimit-nproc", "")
    said = "; ".join(tried) or "no cgroup hierarchy with a pids controller is mounted"
    return ProcessCap(
        "none",
        f"root, and no pids cgroup could be made here ({said}); RLIMIT_NPROC does not bind root",
    )


def describe_cap(cap: ProcessCap, pids: int, *, has_userns: bool) -> dict[str, object]:
    """The ``processes`` object of a run's isolation."""
    if cap.by == "rlimit-nproc" and not has_userns:
        return {"max": pids, "by": "none", "why": "RLIMIT_NPROC needs a user namespace to count in"}
    if cap.by == "none":
        return {"max": pids, "by": "none", "why": cap.why}
    return {"max": pids, "by": cap.by, "why": ""}


@contextlib.contextmanager
def run_cgroup(cap: ProcessCap, pids: int) -> Iterator[list[str]]:
    """A fresh capped cgroup for one run: yields the program-line prefix that moves the run's
    first process into it (empty without a cgroup), then kills what is left and removes it."""
    if cap.by != "pids-cgroup" or cap.parent is None:
        yield []
        return
    group = cap.parent / f"pairgate-evidence-{os.getpid()}-{next(_counter)}"
    group.mkdir()
    try:
        (group / "pids.max").write_text(f"{pids}\n")
        yield ["/bin/sh", "-c", _MOVE_IN, "pairgate-evidence-cgroup", str(group)]
    finally:
        empty_and_remove(group)


def empty_and_remove(group: Path, *, wait: float = 2.0) -> None:
    """Kill every process in ``group``, then remove it (retrying while the dead are reaped)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            pids = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # left behind, empty or not: never worth failing the evidence over
            time.sleep(0.005)
