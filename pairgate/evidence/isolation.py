"""Running the test command where the agent's session cannot reach into it.

Two modes, and the evidence names which one each run had:

- ``namespaces``: rootless user, pid and mount namespaces (``unshare -rpf --mount-proc``), plus a
  network namespace unless ``--network`` (``-n``: only the sandbox's own loopback, brought up when
  ``ip`` is installed). The command runs under coreutils ``timeout -s KILL`` as the namespace's
  pid 1, so when the time is up, or the command exits, every process it started dies with the
  namespace; ``--kill-child`` takes the namespace down if unshare itself is killed.
- ``env-only``, where the probe finds namespaces unavailable: the same fixed environment, proxy
  variables pointing at a closed port (which only well-behaved clients honour: the network is NOT
  blocked), and the process group killed at the timeout and after the command exits (a process
  that leaves the group, with setsid, survives).

Either way a backstop in this process kills the whole process group a few seconds after the
timeout, should ``timeout`` be missing or stuck. The filesystem is not isolated: the command runs
as the caller's user and can write what the caller can.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there
PROXY_NAMES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
BACKSTOP_SECONDS = 5.0
TAIL_BYTES = 4000
_INIT = 'if [ -n "$1" ]; then "$1" link set lo up 2>/dev/null; fi; shift; exec "$@"'


@dataclass(frozen=True)
class Isolation:
    """What this machine allows, found once by ``probe``."""

    mode: str  # namespaces | env-only
    why: str  # for env-only: why the namespaces are not used
    unshare: str | None = None
    ip: str | None = None
    timeout: str | None = None

    def describe(self, *, network: bool) -> dict[str, str]:
        """The ``isolation`` object of a run in the evidence."""
        if self.mode == "namespaces":
            if network:
                what = "user, pid and mount namespaces; the network is allowed (--network)"
            else:
                what = (
                    "user, pid, mount and network namespaces; no network beyond the sandbox's "
                    "own loopback"
                )
            return {
                "mode": "namespaces",
                "network": "allowed" if network else "blocked",
                "tree_kill": "pid-namespace",
                "description": f"{what}; every process dies with the pid namespace",
            }
        net = (
            "the network is allowed (--network)"
            if network
            else "the network is NOT blocked: only the proxy variables point at a closed port"
        )
        return {
            "mode": "env-only",
            "network": "allowed" if network else "not-blocked",
            "tree_kill": "process-group",
            "description": (
                f"env-only, the weaker mode ({self.why}): fixed environment only; {net}; the "
                "process group is killed, and a process that left it (setsid) can survive"
            ),
        }


def env_only(why: str) -> Isolation:
    return Isolation("env-only", why, timeout=shutil.which("timeout", path=SYSTEM_PATH))


@functools.cache
def probe() -> Isolation:
    """Whether rootless namespaces work here, tried once per process with the exact flags."""
    unshare = shutil.which("unshare", path=SYSTEM_PATH)
    if unshare is None:
        return env_only("unshare is not installed")
    try:
        tried = subprocess.run(
            [unshare, "-rnpf", "--mount-proc", "--kill-child", "--", "/bin/sh", "-c", "exit 0"],
            env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return env_only(f"unshare -rnpf --mount-proc failed here: {exc}")
    if tried.returncode != 0:
        said = " ".join(tried.stderr.split())[-200:] or f"exit {tried.returncode}"
        return env_only(f"unshare -rnpf --mount-proc failed here: {said}")
    return Isolation(
        "namespaces",
        "",
        unshare=unshare,
        ip=shutil.which("ip", path=SYSTEM_PATH),
        timeout=shutil.which("timeout", path=SYSTEM_PATH),
    )


def fixed_env(
    *, home: Path, tmp: Path, junit: Path, proxy_off: bool, python_dir: str | None = None
) -> dict[str, str]:
    """The whole environment of a run: nothing of the caller's (no token, no agent variable).
    PATH starts with the directory of the Python running pairgate, so ``python3 -m pytest``
    finds the interpreter (and its pytest) the caller runs."""
    first = python_dir if python_dir is not None else str(Path(sys.executable).parent)
    env = {
        "PATH": f"{first}:{SYSTEM_PATH}",
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTEST_ADDOPTS": f"--junitxml={shlex.quote(str(junit))}",
    }
    if proxy_off:
        env.update(dict.fromkeys(PROXY_NAMES, DEAD_PROXY))
    return env


@dataclass(frozen=True)
class RawRun:
    exit_code: int | None
    timed_out: bool
    duration_ms: int
    output_tail: str


def argv_for(command: str, *, isolation: Isolation, network: bool, timeout: float) -> list[str]:
    """The program line of one run (pure)."""
    inner = ["/bin/sh", "-c", command]
    if isolation.timeout:
        inner = [isolation.timeout, "-s", "KILL", f"{timeout:g}", *inner]
    if isolation.mode != "namespaces" or isolation.unshare is None:
        return inner
    flags = ["-rpf", "--mount-proc", "--kill-child"] + ([] if network else ["-n"])
    ip = "" if network or isolation.ip is None else isolation.ip
    return [
        isolation.unshare,
        *flags,
        "--",
        "/bin/sh",
        "-c",
        _INIT,
        "pairgate-evidence",
        ip,
        *inner,
    ]


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_isolated(
    command: str,
    *,
    cwd: Path,
    env: dict[str, str],
    log: Path,
    timeout: float,
    network: bool,
    isolation: Isolation,
    clock: Callable[[], float] = time.monotonic,
) -> RawRun:
    """Run once; the output goes to ``log`` (a file, not a pipe, so a leftover process holding
    it open cannot keep this waiting)."""
    argv = argv_for(command, isolation=isolation, network=network, timeout=timeout)
    start = clock()
    with log.open("wb") as out:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            out.write(f"cannot start the command: {exc}\n".encode())
            return RawRun(None, False, 0, _tail(log))
        backstop = False
        try:
            code: Any = proc.wait(timeout=timeout + BACKSTOP_SECONDS)
        except subprocess.TimeoutExpired:
            backstop = True
            _kill_group(proc.pid)
            code = proc.wait()
        except BaseException:  # interrupted (Ctrl-C): take the run down with us
            _kill_group(proc.pid)
            raise
        # What the command left running dies now (in namespace mode it died with pid 1).
        _kill_group(proc.pid)
    elapsed = clock() - start
    # timeout -s KILL kills its own process group, itself included: 137 (or 124) at the limit.
    timed_out = backstop or (code in (124, 137, -9) and elapsed >= timeout * 0.98)
    return RawRun(int(code), timed_out, int(elapsed * 1000), _tail(log))


def _tail(log: Path) -> str:
    with log.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - TAIL_BYTES))
        data = handle.read()
    return data.decode("utf-8", errors="replace")
