"""The sandbox's pure parts, in milliseconds: each mode's program line (bubblewrap's above all:
what it binds, masks and drops), the seccomp filter run through a small BPF interpreter, the
environment, what each mode says of itself, the mutant rules, the changed-files check, where
the copies go and where documents are kept."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from pairgate.evidence import bwrap, changes, mutant_rules, store, workspace
from pairgate.evidence.isolation import (
    DEAD_PROXY,
    Isolation,
    Places,
    Sealing,
    Tools,
    argv_for,
    env_only,
    fixed_env,
)
from pairgate.evidence.proclimit import ProcessCap
from pairgate.evidence.sensitive import is_test_file

TOOLS = Tools(
    bwrap="/u/bwrap", unshare="/u/unshare", ip="/s/ip", timeout="/u/timeout", prlimit="/u/prlimit"
)
CGROUP = ProcessCap("pids-cgroup", "", Path("/sys/fs/cgroup/pids"))
RLIMIT = ProcessCap("rlimit-nproc", "")
NONE = ProcessCap("none", "root, and no pids cgroup could be made here")
PLACES = Places(Path("/w/run-1/repo"), Path("/w/run-1/report"), Path("/w/h"), Path("/w/t"))


def line(iso: Isolation, *, network: bool = False, **kw: Any) -> list[str]:
    return argv_for("pytest -q", isolation=iso, network=network, timeout=7.5, pids=64, **kw)


# -- program lines -----------------------------------------------------------------------------


def test_the_namespace_program_line() -> None:
    iso = Isolation("namespaces", "bwrap failed here", TOOLS, CGROUP)
    closed = line(iso)
    assert closed[:6] == ["/u/unshare", "-rpf", "--mount-proc", "--kill-child", "-n", "--"]
    assert closed[-8:] == ["/s/ip", "/u/timeout", "-s", "KILL", "7.5", "/bin/sh", "-c", "pytest -q"]
    opened = line(iso, network=True)
    assert "-n" not in opened and opened[opened.index("pairgate-evidence") + 1] == ""


def test_the_weakest_program_line_is_timeout_alone() -> None:
    argv = line(env_only("forced"))
    assert argv[-3:] == ["/bin/sh", "-c", "pytest -q"]
    assert "unshare" not in " ".join(argv) and "bwrap" not in " ".join(argv)


def test_rlimit_nproc_is_set_inside_a_user_namespace_only() -> None:
    inside = line(Isolation("namespaces", "", TOOLS, RLIMIT))
    at = inside.index("/u/prlimit")
    assert inside[at : at + 3] == ["/u/prlimit", "--nproc=64:64", "--"]
    assert at > inside.index("pairgate-evidence")  # after the namespace is made
    assert "/u/prlimit" not in line(Isolation("env-only", "", TOOLS, RLIMIT))
    assert "/u/prlimit" not in line(Isolation("namespaces", "", TOOLS, CGROUP))


def sealed_line(*, network: bool = False, sealing: Sealing | None = None) -> list[str]:
    iso = Isolation("bubblewrap", "", TOOLS, CGROUP)
    return line(
        iso, network=network, places=PLACES, env={"HOME": bwrap.INSIDE_HOME},
        sealing=sealing or Sealing(),
        seccomp=9 if network else None,
    )  # fmt: skip


def pairs(argv: list[str], option: str, width: int = 2) -> list[tuple[str, ...]]:
    return [tuple(argv[i + 1 : i + 1 + width]) for i, a in enumerate(argv) if a == option]


def test_the_sealed_program_line_drops_everything_and_binds_nothing_of_the_host_writable() -> None:
    argv = sealed_line(
        sealing=Sealing(python_roots=(Path("/root/.pyenv/v/3.11"), Path("/usr/lib/python3")))
    )
    options = argv[: argv.index("--")]
    for flag in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"):
        assert flag in options
    assert pairs(options, "--cap-drop", 1) == [("ALL",)]
    assert "--share-net" not in options and "--seccomp" not in options
    assert pairs(options, "--bind") == [
        (str(PLACES.clone), "/evidence/repo"),
        (str(PLACES.report), "/evidence/report"),
    ]
    assert ("/", "/") not in pairs(options, "--ro-bind")  # /proc of the host never beneath
    assert ("/usr", "/usr") in pairs(options, "--ro-bind")
    assert ("/root/.pyenv/v/3.11", "/root/.pyenv/v/3.11") in pairs(options, "--ro-bind")
    assert ("/usr/lib/python3", "/usr/lib/python3") not in pairs(options, "--ro-bind")
    assert {"/tmp", "/run", "/dev/shm", "/var/tmp", bwrap.INSIDE_HOME} <= {
        t for (t,) in pairs(options, "--tmpfs", 1)
    }
    assert pairs(options, "--proc", 1) == [("/proc",)]
    assert pairs(options, "--remount-ro", 1) == [("/",)]
    assert ("HOME", bwrap.INSIDE_HOME) in pairs(options, "--setenv")
    assert options.index("--clearenv") < options.index("--setenv")
    inner = ["/u/timeout", "-s", "KILL", "7.5", "/bin/sh", "-c", "pytest -q"]
    assert argv[argv.index("--") + 1 :] == inner


def test_a_sealed_run_is_never_run_unsealed_and_reports_how_it_ended() -> None:
    with pytest.raises(ValueError, match="a sealed run needs bwrap and its places"):
        line(Isolation("bubblewrap", "", TOOLS, CGROUP))  # no places: refused, not weakened
    iso = Isolation("bubblewrap", "", TOOLS, CGROUP)
    argv = line(iso, places=PLACES, env={}, status=7)
    assert pairs(argv[: argv.index("--")], "--json-status-fd", 1) == [("7",)]
    assert bwrap.ran_to_its_end('{ "child-pid": 5 }\n{ "exit-code": 1 }\n')
    assert not bwrap.ran_to_its_end('{ "child-pid": 5 }\n')  # it could not set up: not exit 1


def test_with_network_the_sealed_line_shares_the_network_and_loads_the_filter() -> None:
    options = sealed_line(network=True)
    assert "--share-net" in options and pairs(options, "--seccomp", 1) == [("9",)]


def test_what_must_not_be_read_is_masked_where_the_run_would_see_it() -> None:
    seen = [Path("/usr"), Path("/etc"), Path("/venv")]
    masked = bwrap.masks(
        seen,
        hide_dirs=[Path("/etc/pairgate"), Path("/venv"), Path("/"), Path("/home/u/deploy")],
        hide_files=[Path("/venv/token"), Path("/home/u/deploy/token")],
    )
    # the configuration's directory inside /etc: a tmpfs over it; one that holds the whole
    # environment (or is outside what the run sees) is left, and its token file masked alone
    assert masked == ["--tmpfs", "/etc/pairgate", "--ro-bind-try", "/dev/null", "/venv/token"]


# -- the seccomp filter, run -------------------------------------------------------------------


def run_bpf(program: bytes, *, arch: int, nr: int, arg0: int = 0) -> int:
    """A classic BPF interpreter for the few instructions the filter uses."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    ops = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
        elif code == 0x06:
            return k
        elif code in (0x15, 0x35):
            hit = acc == k if code == 0x15 else acc >= k
            pc += jt if hit else jf
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")
        pc += 1


X86_64 = 0xC000003E
ALLOW, EPERM = 0x7FFF0000, 0x00050001


@pytest.mark.parametrize(
    ("arch", "nr", "arg0", "want"),
    [
        (X86_64, 41, 1, EPERM),  # socket(AF_UNIX, ...)
        (X86_64, 41, 2, ALLOW),  # socket(AF_INET, ...)
        (X86_64, 41, 10, ALLOW),  # socket(AF_INET6, ...)
        (X86_64, 53, 1, ALLOW),  # socketpair(AF_UNIX, ...): a pipe, reaches nothing
        (X86_64, 425, 0, EPERM),  # io_uring_setup: sockets without socket()
        (X86_64, 0x40000000 + 41, 1, EPERM),  # the x32 ABI
        (0x40000003, 102, 1, EPERM),  # i386's socketcall
        (X86_64, 0, 0, ALLOW),  # read
    ],
)
def test_the_filter_refuses_unix_sockets_and_io_uring(
    arch: int, nr: int, arg0: int, want: int
) -> None:
    program = bwrap.seccomp_program("x86_64")
    assert program is not None
    assert run_bpf(program, arch=arch, nr=nr, arg0=arg0) == want


def test_aarch64_has_its_numbers_and_an_unknown_machine_no_filter() -> None:
    program = bwrap.seccomp_program("aarch64")
    assert program is not None
    assert run_bpf(program, arch=0xC00000B7, nr=198, arg0=1) == EPERM
    assert run_bpf(program, arch=0xC00000B7, nr=198, arg0=2) == ALLOW
    assert bwrap.seccomp_program("riscv64") is None


# -- the environment and what each mode says ---------------------------------------------------


def test_the_environment_is_fixed_and_holds_nothing_of_the_callers(tmp_path: Path) -> None:
    env = fixed_env(
        home=tmp_path / "h", tmp=tmp_path / "t", junit=tmp_path / "j k.xml", proxy_off=False,
        python_dir="/py/bin",
    )  # fmt: skip
    assert env == {
        "PATH": "/py/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": str(tmp_path / "h"),
        "TMPDIR": str(tmp_path / "t"),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTEST_ADDOPTS": f"--junitxml='{tmp_path / 'j k.xml'}'",
    }
    off = fixed_env(home=tmp_path, tmp=tmp_path, junit=tmp_path, proxy_off=True, python_dir="/p")
    assert off["https_proxy"] == off["HTTP_PROXY"] == DEAD_PROXY


def test_a_sealed_run_sees_its_own_places() -> None:
    assert PLACES.seen("bubblewrap") == (
        Path(bwrap.INSIDE_HOME),
        Path(bwrap.INSIDE_TMP),
        Path(bwrap.INSIDE_REPORT),
    )
    assert PLACES.seen("namespaces") == (PLACES.home, PLACES.tmp, PLACES.report)


def test_each_mode_says_what_it_guarantees_and_the_weaker_ones_say_why() -> None:
    sealed = Isolation("bubblewrap", "", TOOLS, CGROUP).describe(network=False, pids=64)
    assert (sealed["mode"], sealed["filesystem"], sealed["network"], sealed["tree_kill"]) == (
        "bubblewrap", "sealed", "blocked", "pid-namespace",
    )  # fmt: skip
    assert sealed["processes"] == {"max": 64, "by": "pids-cgroup", "why": ""}
    assert "at most 64 processes" in sealed["description"]
    opened = Isolation("bubblewrap", "", TOOLS, CGROUP).describe(network=True, pids=64)
    assert opened["network"] == "allowed" and "Unix socket" in opened["description"]
    ns = Isolation("namespaces", "bwrap failed here: no", TOOLS, NONE).describe(
        network=False, pids=64
    )
    assert (ns["filesystem"], ns["processes"]["by"]) == ("open", "none")
    assert "bwrap failed here: no" in ns["description"]
    assert "NOT sealed" in ns["description"] and "NOT capped" in ns["description"]
    weak = Isolation("env-only", "unshare is not installed", TOOLS, RLIMIT).describe(
        network=False, pids=64
    )
    assert (weak["mode"], weak["network"], weak["tree_kill"]) == (
        "env-only", "not-blocked", "process-group",
    )  # fmt: skip
    assert weak["processes"]["by"] == "none"  # RLIMIT_NPROC needs a user namespace
    assert "unshare is not installed" in weak["description"]
    assert "NOT blocked" in weak["description"]
    capped = Isolation("env-only", "x", TOOLS, CGROUP).describe(network=False, pids=64)
    assert capped["tree_kill"] == "cgroup"


# -- mutants refused before they run -----------------------------------------------------------

CALC = "def add(a, b):\n    # the sum\n    return a + b\n"


@pytest.mark.parametrize(
    ("path", "after", "said"),
    [
        ("calc.py", "def add(a, b):\n    assert False\n    return a + b\n", "`assert`"),
        ("calc.py", "def add(a, b):\n    raise AssertionError\n", "`raise`"),
        ("calc.py", "import sys\ndef add(a, b):\n    sys.exit(1)\n", "`exit()`"),
        ("calc.py", "import os\ndef add(a, b):\n    os.abort()\n", "`abort()`"),
        ("calc.py", "def add(a, b):\n    # the difference\n    return a + b\n", "only comments"),
        ("calc.py", "def add(a,b):\n\n    return a+b  # sum\n", "only comments"),
        ("calc.js", "function add(a, b) {\n  throw new Error()\n}\n", "`throw`"),
        ("calc.js", "// a note\nfunction add(a, b) { return a + b }\n", "only comments"),
        ("calc.py", "def add(a, b):\n    return a - b\n", None),
        ("calc.py", "def add(a, b):\n    return a + b + 1  # assert nothing\n", None),
        ("calc.py", "def add(a, b):\n    return 'raise' + 'exit'\n", None),
        ("calc.py", "def add(a, b:\n", None),  # no longer parses: left to the tests to show
    ],
)
def test_mutant_rules(path: str, after: str, said: str | None) -> None:
    before = {"calc.py": CALC, "calc.js": "function add(a, b) { return a + b }\n"}
    why = mutant_rules.refusal(
        [path], before=before.get, after={path: after}.get, is_test=is_test_file
    )
    assert (why is None) == (said is None), why
    if said is not None:
        assert why is not None and said in why


def test_a_mutant_of_the_tests_is_left_to_the_judging_files_rule() -> None:
    why = mutant_rules.refusal(
        ["tests/test_calc.py"],
        before={"tests/test_calc.py": "assert add(1, 2) == 3\n"}.get,
        after={"tests/test_calc.py": "assert add(1, 2) == 4\nraise SystemExit\n"}.get,
        is_test=is_test_file,
    )
    assert why is None


# -- what a run changed ------------------------------------------------------------------------


def test_the_changed_files_are_what_the_run_added_modified_or_deleted(tmp_path: Path) -> None:
    pristine, clone = tmp_path / "pristine", tmp_path / "clone"
    for root in (pristine, clone):
        (root / "pkg").mkdir(parents=True)
        (root / ".git").mkdir()
        for name in ("pkg/a.py", "pkg/b.py", "pkg/c.py", "keep.txt", "mutated.py"):
            (root / name).write_text(name)
    (clone / "mutated.py").write_text("the mutant's")  # before the run: what it was given
    given = changes.snapshot(clone, ["mutated.py"])
    # The run starts now; what was written just before falls within the clock's margin and is
    # compared by content, so it counts only where it differs from what the run was given.
    since = time.time_ns()
    expected = frozenset({"pkg/a.py", "pkg/b.py", "pkg/c.py", "keep.txt", "mutated.py"})
    os.utime(clone / "keep.txt")  # touched, same content: not a change
    (clone / "pkg/a.py").write_text("changed")
    (clone / "pkg/b.py").unlink()
    (clone / "new.txt").write_text("new")
    (clone / ".git" / "hooks").mkdir()
    (clone / "pkg/c.py").chmod(0o755)
    found = changes.changed(clone, pristine, expected=expected, given=given, since_ns=since)
    assert found == ["new.txt", "pkg/a.py", "pkg/b.py", "pkg/c.py"]
    assert (
        changes.unexpected(
            [*found, ".pytest_cache/v/x", "sub/__pycache__/m.pyc"], changes.DEFAULT_MAY_CHANGE
        )
        == found
    )
    assert changes.unexpected(found, ("pkg/",)) == ["new.txt"]


# -- where the copies go, and where documents are kept ------------------------------------------


def test_the_copies_go_where_there_is_room(tmp_path: Path) -> None:
    roomy, missing = tmp_path / "roomy", tmp_path / "missing"
    roomy.mkdir()
    assert workspace.choose(1024, runtime_dir=None, candidates=[missing, roomy]) == roomy
    fallback = workspace.choose(2**62, runtime_dir=None, candidates=[roomy])
    assert fallback != roomy  # no room anywhere: the temporary directory
    assert workspace.filesystem_kind(Path("/proc")) == "disk"  # not memory, whatever it is
    assert workspace.need_for(1000, jobs=2) == 8000


def test_documents_are_kept_by_repository_and_sha(tmp_path: Path) -> None:
    assert store.state_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "pairgate/evidence"
    assert store.state_dir({"XDG_STATE_HOME": "rel", "HOME": "/h"}) == Path(
        "/h/.local/state/pairgate/evidence"
    )
    assert store.state_dir({}) is None
    root = tmp_path / "kept"
    repo = {"root_commit": "r" * 40}

    def doc(sha: str, when: str) -> dict[str, Any]:
        return {"repository": repo, "sha": sha, "created_at": when, "digest": "sha256:" + "0" * 64}

    first = store.keep(doc("a" * 40, "2026-01-01T00:00:00Z"), "evidence", root=root)
    second = store.keep(doc("b" * 40, "2026-01-01T00:00:01Z"), "evidence", root=root)
    assert first.relative_to(root).parts[:2] == ("r" * 40, "a" * 40)
    assert store.last(root, "r" * 40) == second
    assert store.last(root, "r" * 40, "a" * 40) == first
    assert store.last(root, "x" * 40) is None


# -- the CI re-run's line ------------------------------------------------------------------------

RESULT = {
    "schema": "pairgate-evidence-ci",
    "v": 1,
    "job": 57,
    "pipeline": 901,
    "project": "acme/app",
    "mr": 1,
    "sha": "a" * 40,
    "issue": 4,
    "offer_note": 1003,
    "evidence_digest": "sha256:" + "e" * 64,
    "status": "pass",
    "killed": 2,
    "total": 2,
    "mutants": [{"index": 1, "verdict": "killed"}, {"index": 2, "verdict": "killed"}],
    "isolation": "bubblewrap",
    "network": "blocked",
    "weak": False,
    "digest": "sha256:" + "d" * 64,
}


def test_the_last_result_line_of_a_job_log_counts_only_for_its_job_sha_and_offer() -> None:
    from pairgate.evidence.ci_result import counts, parse_trace, result_line

    faked = result_line({**RESULT, "killed": 0})  # printed earlier, by anyone
    stamped = "2026-01-01T00:00:00.000000Z 01O " + result_line(RESULT)  # timestamped logs
    log = f"section_start:1:x\n{faked}\nrunning the mutants\n{stamped}\nsection_end\n"
    assert parse_trace(log) == RESULT
    assert parse_trace(log + "pairgate-evidence-ci: {not json}\n") is None  # the last one
    assert parse_trace(result_line({**RESULT, "killed": -1})) is None  # not the schema
    assert parse_trace("no line at all") is None
    binding = {"job": 57, "pipeline": 901, "sha": "a" * 40, "offer_note": 1003}
    digest = RESULT["evidence_digest"]
    assert counts(RESULT, **binding, evidence_digest=str(digest))
    for key, other in (("job", 58), ("pipeline", 902), ("sha", "b" * 40), ("offer_note", 9)):
        assert not counts(RESULT, **{**binding, key: other}, evidence_digest=str(digest))
    assert not counts(RESULT, **binding, evidence_digest="sha256:" + "0" * 64)
    assert not counts(None, **binding, evidence_digest=str(digest))
