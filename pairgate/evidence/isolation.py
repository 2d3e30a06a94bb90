"""Running the test command where the agent's session cannot reach into it.

Three modes, tried in this order; the evidence names the one each run had, and why a stronger
one was not used, so a weaker mode is never silent:

- ``bubblewrap`` (``bwrap.py``): a sealed filesystem (the system read-only, the clone the only
  tree of the host it can write, fresh tmpfs for ``/tmp``, ``$HOME``, ``/run`` and ``/dev/shm``,
  no home, no socket directory, no configuration), its own user, pid, mount, IPC, UTS and
  network namespaces, no capability and no new privileges. Every process dies with its pid
  namespace.
- ``namespaces``: rootless user, pid and mount namespaces (``unshare -rpf --mount-proc``), plus a
  network namespace unless ``--network`` (``-n``: only the sandbox's own loopback, brought up
  when ``ip`` is installed). The filesystem is NOT sealed: the command can read and write what
  the caller can, the caller's repository, home and sockets included.
- ``env-only``: the same fixed environment, proxy variables pointing at a closed port (which only
  well-behaved clients honour: the network is NOT blocked), the process group killed at the
  timeout and after the command exits.

In every mode the command runs under coreutils ``timeout -s KILL``, a backstop here kills the
whole process group a few seconds after the timeout, and the run's processes are capped
(``proclimit.py``) where the machine allows it.
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
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairgate.evidence import bwrap
from pairgate.evidence.proclimit import ProcessCap, describe_cap, probe_cap, run_cgroup

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there
PROXY_NAMES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
MODES = ("bubblewrap", "namespaces", "env-only")
BACKSTOP_SECONDS = 5.0
TAIL_BYTES = 4000
_INIT = 'if [ -n "$1" ]; then "$1" link set lo up 2>/dev/null; fi; shift; exec "$@"'


@dataclass(frozen=True)
class Tools:
    """The programs the modes use, found on the system PATH (never the caller's)."""

    bwrap: str | None = None
    unshare: str | None = None
    ip: str | None = None
    timeout: str | None = None
    prlimit: str | None = None


def find_tools() -> Tools:
    def which(name: str) -> str | None:
        return shutil.which(name, path=SYSTEM_PATH)

    return Tools(which("bwrap"), which("unshare"), which("ip"), which("timeout"), which("prlimit"))


@dataclass(frozen=True)
class Sealing:
    """What a sealed run is given read-only, and what is masked where it would see it."""

    python_roots: tuple[Path, ...] = ()
    hide_dirs: tuple[Path, ...] = ()
    hide_files: tuple[Path, ...] = ()


def python_roots() -> tuple[Path, ...]:
    """The Python running pairgate: its virtual environment and the installation under it,
    which a sealed run is given read-only so that ``python3 -m pytest`` finds them."""
    found: list[Path] = []
    for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
        for path in (Path(p), Path(p).resolve()):
            if path not in found and path != Path("/"):
                found.append(path)
    return tuple(found)


@dataclass(frozen=True)
class Isolation:
    """What this machine allows, found once by ``probe``."""

    mode: str  # bubblewrap | namespaces | env-only
    why: str  # for the weaker modes: why the stronger ones are not used
    tools: Tools = field(default_factory=Tools)
    cap: ProcessCap = field(default_factory=lambda: ProcessCap("none", "not probed"))

    @property
    def has_userns(self) -> bool:
        return self.mode in ("bubblewrap", "namespaces")

    def describe(self, *, network: bool, pids: int) -> dict[str, Any]:
        """The ``isolation`` object of a run in the evidence."""
        processes = describe_cap(self.cap, pids, has_userns=self.has_userns)
        capped = (
            f"at most {pids} processes ({processes['by']})"
            if processes["by"] != "none"
            else f"processes NOT capped ({processes['why']})"
        )
        kill = "pid-namespace" if self.has_userns else "process-group"
        if self.mode == "env-only" and processes["by"] == "pids-cgroup":
            kill = "cgroup"
        if self.mode == "bubblewrap":
            if network:
                sockets = (
                    "no Unix socket can be made (the host's abstract sockets share its network)"
                    if bwrap.seccomp_program() is not None
                    else "the host's abstract Unix sockets are reachable (no filter for this "
                    "architecture)"
                )
                net = f"the network is allowed (--network); {sockets}"
            else:
                net = "its own network namespace: no network beyond its own loopback"
            what = (
                "bubblewrap: the system read-only, the clone the only writable tree, fresh "
                "/tmp, $HOME, /run and /dev/shm, no home, socket directory or configuration of "
                f"the host; no capability, no new privileges; {net}"
            )
            filesystem = "sealed"
        elif self.mode == "namespaces":
            net = (
                "the network is allowed (--network)"
                if network
                else "no network beyond the sandbox's own loopback"
            )
            what = (
                f"namespaces, a weaker mode ({self.why}): user, pid and mount namespaces; {net}; "
                "the filesystem is NOT sealed: the command can read and write what the caller "
                "can, the caller's files and sockets included"
            )
            filesystem = "open"
        else:
            net = (
                "the network is allowed (--network)"
                if network
                else "the network is NOT blocked: only the proxy variables point at a closed port"
            )
            gone = (
                "every process in its cgroup is killed"
                if kill == "cgroup"
                else "the process group is killed, and a process that left it (setsid) can survive"
            )
            what = (
                f"env-only, the weakest mode ({self.why}): fixed environment only; {net}; the "
                f"filesystem is NOT sealed; {gone}"
            )
            filesystem = "open"
        state = "allowed" if network else "not-blocked" if self.mode == "env-only" else "blocked"
        return {
            "mode": self.mode,
            "filesystem": filesystem,
            "network": state,
            "tree_kill": kill,
            "processes": processes,
            "description": f"{what}; {capped}",
        }


def weaker(mode: str, why: str) -> Isolation:
    """A weaker mode on purpose (for the tests of what it does and says)."""
    return Isolation(mode, why, find_tools(), probe_cap())


def env_only(why: str) -> Isolation:
    return weaker("env-only", why)


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join(done.stderr.split())[-200:] or f"exit {done.returncode}"


def _try(argv: list[str], **kw: Any) -> str | None:
    """None when ``argv`` exits 0, else what went wrong."""
    try:
        done = subprocess.run(
            argv,
            env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=10,
            **kw,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else _said(done)


def _try_bwrap(tools: Tools) -> str | None:
    if tools.bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    with tempfile.TemporaryDirectory(prefix="pairgate-evidence-probe-") as tmp:
        clone, report = Path(tmp) / "repo", Path(tmp) / "report"
        clone.mkdir()
        report.mkdir()
        with seccomp_fd(network=True) as fd:
            argv = bwrap.bwrap_argv(
                tools.bwrap,
                clone=clone,
                report=report,
                python_roots=(),
                hide_dirs=(),
                hide_files=(),
                env={"PATH": SYSTEM_PATH},
                network=False,
                seccomp_fd=fd,
                links=bwrap.system_links(),
                resolv=None,
                inner=["/bin/sh", "-c", "exit 0"],
            )
            why = _try(argv, pass_fds=() if fd is None else (fd,))
    return None if why is None else f"bwrap failed here: {why}"


def unshare_problem(tools: Tools) -> str | None:
    """None when rootless namespaces work here (the namespaces mode), else why not."""
    if tools.unshare is None:
        return "unshare is not installed"
    argv = [tools.unshare, "-rnpf", "--mount-proc", "--kill-child", "--", "/bin/sh", "-c", "exit 0"]
    why = _try(argv)
    return None if why is None else f"unshare -rnpf --mount-proc failed here: {why}"


@functools.cache
def probe() -> Isolation:
    """The strongest mode that works here, tried once per process with the exact flags."""
    tools, cap = find_tools(), probe_cap()
    no_bwrap = _try_bwrap(tools)
    if no_bwrap is None:
        return Isolation("bubblewrap", "", tools, cap)
    no_unshare = unshare_problem(tools)
    if no_unshare is None:
        return Isolation("namespaces", no_bwrap, tools, cap)
    return Isolation("env-only", f"{no_bwrap}; {no_unshare}", tools, cap)


@contextlib.contextmanager
def seccomp_fd(*, network: bool) -> Iterator[int | None]:
    """A file descriptor holding the seccomp filter bubblewrap loads with ``--network`` (None
    without ``--network``, or on an architecture the filter does not know)."""
    program = bwrap.seccomp_program() if network else None
    if program is None:
        yield None
        return
    fd = os.memfd_create("pairgate-evidence-seccomp", 0)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


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
class Places:
    """Where one run's files are on this machine: its clone, an empty directory for its report,
    and (for the modes without a sealed filesystem) its HOME and TMPDIR."""

    clone: Path
    report: Path
    home: Path
    tmp: Path

    def seen(self, mode: str) -> tuple[Path, Path, Path]:
        """(home, tmp, report directory) as the run sees them."""
        if mode == "bubblewrap":
            inside = (bwrap.INSIDE_HOME, bwrap.INSIDE_TMP, bwrap.INSIDE_REPORT)
            return Path(inside[0]), Path(inside[1]), Path(inside[2])
        return self.home, self.tmp, self.report


@dataclass(frozen=True)
class RawRun:
    exit_code: int | None
    timed_out: bool
    duration_ms: int
    output_tail: str


def argv_for(
    command: str,
    *,
    isolation: Isolation,
    network: bool,
    timeout: float,
    pids: int,
    places: Places | None = None,
    env: dict[str, str] | None = None,
    sealing: Sealing = Sealing(),
    seccomp: int | None = None,
    status: int | None = None,
) -> list[str]:
    """The program line of one run (pure but for the host's top-level links)."""
    inner = ["/bin/sh", "-c", command]
    tools = isolation.tools
    if tools.timeout:
        inner = [tools.timeout, "-s", "KILL", f"{timeout:g}", *inner]
    if isolation.cap.by == "rlimit-nproc" and isolation.has_userns and tools.prlimit:
        inner = [tools.prlimit, f"--nproc={pids}:{pids}", "--", *inner]
    if isolation.mode == "bubblewrap":
        if tools.bwrap is None or places is None:
            raise ValueError("a sealed run needs bwrap and its places")  # never run unsealed
        return bwrap.bwrap_argv(
            tools.bwrap,
            clone=places.clone,
            report=places.report,
            python_roots=sealing.python_roots,
            hide_dirs=sealing.hide_dirs,
            hide_files=sealing.hide_files,
            env=env or {},
            network=network,
            seccomp_fd=seccomp,
            status_fd=status,
            links=bwrap.system_links(),
            resolv=bwrap.resolv_target() if network else None,
            inner=inner,
        )
    if isolation.mode != "namespaces" or tools.unshare is None:
        return inner
    flags = ["-rpf", "--mount-proc", "--kill-child"] + ([] if network else ["-n"])
    ip = "" if network or tools.ip is None else tools.ip
    return [tools.unshare, *flags, "--", "/bin/sh", "-c", _INIT, "pairgate-evidence", ip, *inner]


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_isolated(
    command: str,
    *,
    places: Places,
    env: dict[str, str],
    log: Path,
    timeout: float,
    network: bool,
    pids: int,
    isolation: Isolation,
    sealing: Sealing = Sealing(),
    clock: Callable[[], float] = time.monotonic,
) -> RawRun:
    """Run once; the output goes to ``log`` (a file, not a pipe, so a leftover process holding
    it open cannot keep this waiting)."""
    sealed = isolation.mode == "bubblewrap"
    status_r, status_w = os.pipe() if sealed else (None, None)
    with (
        run_cgroup(isolation.cap, pids) as prefix,
        seccomp_fd(network=network and sealed) as fd,
        log.open("wb") as out,
    ):
        argv = prefix + argv_for(
            command,
            isolation=isolation,
            network=network,
            timeout=timeout,
            pids=pids,
            places=places,
            env=env,
            sealing=sealing,
            seccomp=fd,
            status=status_w,
        )
        start = clock()
        try:
            proc = subprocess.Popen(
                argv,
                cwd=places.clone,
                # bubblewrap is given the run's environment on its command line (--setenv)
                env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"} if sealed else env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=tuple(f for f in (fd, status_w) if f is not None),
            )
        except OSError as exc:
            out.write(f"cannot start the command: {exc}\n".encode())
            out.flush()
            _close(status_r)
            return RawRun(None, False, 0, _tail(log))
        finally:
            _close(status_w)
        code, backstop = _wait(proc, timeout)
        elapsed = clock() - start
    if status_r is not None:
        said = _read_all(status_r)
        if not backstop and not bwrap.ran_to_its_end(said):
            # The sandbox could not be set up: its exit status is bubblewrap's, not the
            # command's, and must never read as a test failure (1).
            with log.open("ab") as out:
                out.write(b"\npairgate: the sandbox did not start the command\n")
            return RawRun(None, False, int(elapsed * 1000), _tail(log))
    # timeout -s KILL kills its own process group, itself included: 137 (or 124) at the limit.
    timed_out = backstop or (code in (124, 137, -9) and elapsed >= timeout * 0.98)
    return RawRun(int(code), timed_out, int(elapsed * 1000), _tail(log))


def _close(*fds: int | None) -> None:
    for f in fds:
        if f is not None:
            with contextlib.suppress(OSError):
                os.close(f)


def _read_all(fd: int) -> str:
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors="replace")


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> tuple[Any, bool]:
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
    # What the command left running dies now (in the namespace modes it died with pid 1).
    _kill_group(proc.pid)
    return code, backstop


def _tail(log: Path) -> str:
    with log.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - TAIL_BYTES))
        data = handle.read()
    return data.decode("utf-8", errors="replace")
