"""The bubblewrap program line of one run, and the seccomp filter it loads with ``--network``.

What the run sees (docs/agent-handoff-reference.md, "What isolation means"):

- ``/usr`` and ``/etc`` read-only, the top-level links into ``/usr`` (``/bin``, ``/lib``, ...)
  as the host has them, and the Python that runs pairgate (its prefix and its virtual
  environment) read-only at their own paths, even inside a home directory: nothing else of any
  home, and no ``/var``, ``/opt``, ``/srv``, ``/mnt`` or ``/sys``;
- its clone at ``/evidence/repo`` and an empty directory for its report at
  ``/evidence/report``, the only trees of the host it can write;
- fresh tmpfs for ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm`` and ``$HOME``, a minimal
  ``/dev`` and a fresh ``/proc`` of its own pid namespace (nothing of the host's ``/proc`` lies
  beneath it, since ``/`` is not bound), and the root itself read-only;
- the configuration's directory and the token files masked where they lie inside a tree it
  sees (a tmpfs over a directory, an unreadable file over a file);
- its own user, pid, mount, IPC, UTS and cgroup namespaces, with no capability
  (``--cap-drop ALL``: run as root, bubblewrap would otherwise leave every capability, and the
  run could remount a read-only bind read-write or unmount ``/proc``), no new privileges (which
  bubblewrap always sets), no further user namespace (``--disable-userns``), a session of its
  own (``--new-session``: no terminal to inject into) and death with its parent;
- its own network namespace with only loopback unless ``--network``. With ``--network`` it shares
  the host's network namespace, where the host's abstract Unix sockets live, so a seccomp filter
  refuses ``socket(AF_UNIX, ...)`` (``socketpair`` still works) and io_uring, which creates
  sockets without that system call.

Pure, but for ``system_links`` (which reads the host's top-level directory once).
"""

from __future__ import annotations

import functools
import os
import platform
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path

INSIDE_REPO = "/evidence/repo"
INSIDE_REPORT = "/evidence/report"
INSIDE_HOME = "/home/evidence"
INSIDE_TMP = "/tmp"
_TOP_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# The directories a sealed run gets as a fresh tmpfs of its own.
FRESH = (INSIDE_TMP, "/var/tmp", "/run", INSIDE_HOME)


@functools.cache
def system_links() -> tuple[tuple[str, str, str], ...]:
    """How the host's top-level ``/bin``, ``/lib``, ... are to be made: ("symlink", target,
    path) where the host has a link, ("bind", path, path) where it has a directory."""
    made = []
    for name in _TOP_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            made.append(("symlink", os.readlink(host), str(host)))
        elif host.is_dir():
            made.append(("bind", str(host), str(host)))
    return tuple(made)


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies under one."""
    return any(path == root or root in path.parents for root in roots)


def masks(
    seen: Sequence[Path], *, hide_dirs: Sequence[Path], hide_files: Sequence[Path]
) -> list[str]:
    """The options that hide what must not be read, where the run would see it: a tmpfs over a
    directory strictly inside a tree it sees (one that holds a whole tree it is given, such as
    the virtual environment, is left: its files are masked one by one), an unreadable file over
    a file."""
    out: list[str] = []
    for d in hide_dirs:
        if inside(d, seen) and d not in seen and not any(d in s.parents for s in seen):
            out += ["--tmpfs", str(d)]
    for f in hide_files:
        if inside(f, seen):
            out += ["--ro-bind-try", "/dev/null", str(f)]
    return out


def bwrap_argv(
    bwrap: str,
    *,
    clone: Path,
    report: Path,
    python_roots: Sequence[Path],
    hide_dirs: Sequence[Path],
    hide_files: Sequence[Path],
    env: Mapping[str, str],
    network: bool,
    seccomp_fd: int | None,
    status_fd: int | None = None,
    links: Sequence[tuple[str, str, str]],
    resolv: Path | None,
    inner: Sequence[str],
) -> list[str]:
    """The whole program line (pure): bubblewrap's options, then ``inner``, the command."""
    argv = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns"]
    if network:
        argv.append("--share-net")
    argv += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += ["--hostname", "pairgate-evidence", "--ro-bind", "/usr", "/usr"]
    for kind, source, dest in links:
        argv += ["--symlink", source, dest] if kind == "symlink" else ["--ro-bind", source, dest]
    argv += ["--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev"]
    argv += ["--tmpfs", "/dev/shm"]
    for fresh in FRESH:
        argv += ["--tmpfs", fresh]
    if network and resolv is not None:
        # /etc/resolv.conf names a file under /run (systemd-resolved), which is a fresh tmpfs
        # here: that one file, so that names resolve.
        argv += ["--ro-bind-try", str(resolv), str(resolv)]
    roots = [Path("/usr"), Path("/etc")]
    for root in python_roots:
        if not inside(root, roots):
            argv += ["--ro-bind", str(root), str(root)]
            roots.append(root)
    argv += masks(roots, hide_dirs=hide_dirs, hide_files=hide_files)
    argv += ["--bind", str(clone), INSIDE_REPO, "--bind", str(report), INSIDE_REPORT]
    argv += ["--remount-ro", "/", "--chdir", INSIDE_REPO, "--clearenv"]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if status_fd is not None:
        # bubblewrap writes {"exit-code": N} there once the command ran to its end: without it,
        # its own exit status (1 when it could not set the sandbox up) is not the command's
        argv += ["--json-status-fd", str(status_fd)]
    return [*argv, "--", *inner]


def ran_to_its_end(status: str) -> bool:
    """Whether bubblewrap's JSON status lines say the command ran and exited."""
    import json

    for line in status.splitlines():
        try:
            if "exit-code" in json.loads(line):
                return True
        except (ValueError, TypeError):
            continue
    return False


def resolv_target() -> Path | None:
    """Where /etc/resolv.conf leads when that is outside /etc (under /run, say), else None."""
    conf = Path("/etc/resolv.conf")
    if not conf.is_symlink():
        return None
    target = conf.resolve()
    return None if Path("/etc") in target.parents else target


# -- the seccomp filter (classic BPF over struct seccomp_data) -----------------------------------

# (AUDIT_ARCH_*, __NR_socket, __NR_io_uring_setup, whether x32 numbers share the arch)
_ARCHES = {
    "x86_64": (0xC000003E, 41, 425, True),
    "aarch64": (0xC00000B7, 198, 425, False),
}
_AF_UNIX = 1
_EPERM = 1
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_DENY = 0x00050000 | _EPERM  # SECCOMP_RET_ERRNO | EPERM
_X32_BIT = 0x40000000


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(machine: str | None = None) -> bytes | None:
    """The filter as bubblewrap's ``--seccomp`` reads it, or None on an architecture this does
    not know (the isolation then says the host's abstract sockets are not blocked). A system
    call of another architecture (a 32-bit program's socketcall) is refused outright."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit, socket_nr, uring_nr, x32 = arch
    ops = [
        _op(_LD_W_ABS, 4),  # seccomp_data.arch
        _op(_JEQ_K, audit, 1, 0),
        _op(_RET_K, _DENY),
        _op(_LD_W_ABS, 0),  # seccomp_data.nr
    ]
    if x32:
        ops += [_op(_JGE_K, _X32_BIT, 0, 1), _op(_RET_K, _DENY)]
    ops += [
        _op(_JEQ_K, uring_nr, 0, 1),
        _op(_RET_K, _DENY),
        _op(_JEQ_K, socket_nr, 0, 3),
        _op(_LD_W_ABS, 16),  # the low half of args[0], the domain (little-endian)
        _op(_JEQ_K, _AF_UNIX, 0, 1),
        _op(_RET_K, _DENY),
        _op(_RET_K, _ALLOW),
    ]
    return b"".join(ops)
