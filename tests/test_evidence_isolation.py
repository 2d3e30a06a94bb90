"""The isolation the evidence claims, proved in each mode: with bubblewrap and with namespaces a
run cannot reach a listener on 127.0.0.1 outside its sandbox and --network lets it; the weakest
mode says that it is weaker (and is); the process tree is gone after a timeout and after the
command exits. (tests/test_evidence_seal.py has the escapes that only bubblewrap stops.)"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pairgate.evidence.isolation import (
    DEAD_PROXY,
    Isolation,
    env_only,
    find_tools,
    probe,
    unshare_problem,
    weaker,
)
from pairgate.evidence.patches import Patch
from pairgate.evidence.proclimit import probe_cap
from pairgate.evidence.runner import Request, collect
from tests.kit.evidence_repos import Package, make_package, marker, processes_with, sleeper_code

BUBBLEWRAP = probe().mode == "bubblewrap"
NO_UNSHARE = unshare_problem(find_tools())
needs_bubblewrap = pytest.mark.skipif(
    not BUBBLEWRAP, reason=f"no bubblewrap on this machine: {probe().why}"
)
needs_namespaces = pytest.mark.skipif(
    NO_UNSHARE is not None, reason=f"no rootless namespaces on this machine: {NO_UNSHARE}"
)
SANDBOXED = [
    pytest.param("bubblewrap", marks=needs_bubblewrap),
    pytest.param("namespaces", marks=needs_namespaces),
]


def isolation(mode: str) -> Isolation | None:
    """The mode a test covers: the probed one for bubblewrap, else that weaker mode forced."""
    if mode == "bubblewrap":
        return None
    return env_only("forced by the test") if mode == "env-only" else weaker(mode, "forced")


class Listener:
    """A TCP listener on 127.0.0.1, outside every sandbox, counting the connections it takes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._accepted = 0
        self._changed = threading.Condition()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.close()
            with self._changed:
                self._accepted += 1
                self._changed.notify_all()

    def accepted(self, expected: int) -> int:
        """The count, once it reaches ``expected`` (the accepting thread may lag the run that
        connected) or after five seconds."""
        with self._changed:
            self._changed.wait_for(lambda: self._accepted >= expected, timeout=5)
            return self._accepted

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(), which close() does not
        self.sock.close()
        self.thread.join(timeout=5)


@pytest.fixture
def listener() -> Iterator[Listener]:
    served = Listener()
    yield served
    served.close()


@pytest.fixture
def pkg(tmp_path: Path) -> Package:
    return make_package(tmp_path)


def connect(port: int) -> str:
    return (
        f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), "
        "timeout=3).close(); print('connected')\""
    )


def readme(pkg: Package) -> tuple[Patch, ...]:
    path = pkg.mutant("readme.patch", {"calc/__init__.py": "# a comment\n"})
    return (Patch(path.name, path.read_text()),)


@pytest.mark.parametrize("mode", SANDBOXED)
def test_a_run_cannot_reach_a_listener_outside(pkg: Package, listener: Listener, mode: str) -> None:
    doc = collect(Request(pkg.repo, connect(listener.port), readme(pkg)), isolation=isolation(mode))
    base = doc["baseline"]
    assert base["isolation"]["mode"] == mode and base["isolation"]["network"] == "blocked"
    assert base["outcome"] == "failed" and "connected" not in base["output_tail"]
    # Its own loopback (empty), or none at all where ip is not installed to bring it up.
    assert any(w in base["output_tail"] for w in ("ConnectionRefused", "Network is unreachable"))
    assert listener.accepted(0) == 0
    assert doc["mutants"][0]["verdict"] == "refused"


@pytest.mark.parametrize("mode", SANDBOXED)
def test_with_network_the_same_run_reaches_it(pkg: Package, listener: Listener, mode: str) -> None:
    request = Request(pkg.repo, connect(listener.port), readme(pkg), network=True)
    doc = collect(request, isolation=isolation(mode))
    base = doc["baseline"]
    assert (base["isolation"]["mode"], base["isolation"]["network"]) == (mode, "allowed")
    assert base["outcome"] == "passed" and "connected" in base["output_tail"]
    assert listener.accepted(2) == 2  # the baseline and the mutant
    assert doc["network"] is True


def test_the_weaker_mode_says_so_and_blocks_no_network(pkg: Package, listener: Listener) -> None:
    weak = env_only("forced by the test")
    command = connect(listener.port) + " && env"
    doc = collect(Request(pkg.repo, command, readme(pkg)), isolation=weak)
    iso = doc["baseline"]["isolation"]
    # A pids cgroup, where this machine can make one, is also the weakest mode's tree kill.
    kill = "cgroup" if probe_cap().by == "pids-cgroup" else "process-group"
    assert (iso["mode"], iso["network"], iso["tree_kill"]) == ("env-only", "not-blocked", kill)
    assert "forced by the test" in iso["description"] and "NOT blocked" in iso["description"]
    # What it claims is true: a direct connection gets out; only proxy variables are set.
    assert doc["baseline"]["outcome"] == "passed" and listener.accepted(2) == 2
    assert f"https_proxy={DEAD_PROXY}" in doc["baseline"]["output_tail"]
    assert "https_proxy" in doc["environment"]
    assert doc["mutants"][0]["run"]["isolation"] == iso


def wait_gone(pid: int, within: float = 5.0) -> bool:
    """Whether ``pid`` is gone (or a zombie: dead, not yet reaped by init) within the time."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_in_the_weaker_mode_a_timeout_kills_the_process_group(pkg: Package, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    command = f'{sys.executable} -c "{sleeper_code(marker(), pid_file=str(pid_file))}"'
    started = time.monotonic()
    doc = collect(Request(pkg.repo, command, readme(pkg), timeout=2.5), isolation=env_only("test"))
    assert time.monotonic() - started < 10
    base = doc["baseline"]
    assert (base["outcome"], base["timed_out"]) == ("timed-out", True)
    pid = int(pid_file.read_text())
    gone = wait_gone(pid)
    if not gone:
        os.kill(pid, signal.SIGKILL)
    assert gone, f"the grandchild {pid} outlived the timeout"


@pytest.mark.parametrize("mode", [*SANDBOXED, "env-only"])
def test_what_the_command_leaves_running_dies_when_it_exits(pkg: Package, mode: str) -> None:
    token = marker()
    # A daemon (its own session) in the namespace modes; a plain background child otherwise,
    # which is what the process group covers. The command exits once the child is running
    # (it says so in a file of the clone, which every mode lets it write).
    daemon = "setsid " if mode != "env-only" else ""
    code = "import time; open('started', 'w').close(); time.sleep(600)"
    command = (
        f'{daemon}python3 -c "{code}" {token} & while [ ! -e started ]; do sleep 0.05; done; '
        "echo running"
    )
    request = Request(pkg.repo, command, readme(pkg), timeout=30)
    doc = collect(request, isolation=isolation(mode))
    assert doc["baseline"]["outcome"] == "passed" and "running" in doc["baseline"]["output_tail"]
    left = [pid for pid in processes_with(token) if not wait_gone(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []
