"""Every escape the red team found, tried from inside a run, and refused: the BUBBLEWRAP mode.

One probe (``escape.py``, committed in the lead's repository) is the test command of a re-run in
the reviewer's clone, as ``evidence rerun`` runs it. It tries each escape and prints what
happened as one JSON line; each test below reads one answer. The probe exits 1, so the baseline
fails and no mutant runs: one run answers them all. The fork bomb and ``--network`` need runs
of their own.

The namespaces and env-only modes stop none of the filesystem escapes: they say so in the
evidence ("the filesystem is NOT sealed"), and the last test shows it is true.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pairgate.evidence.bwrap import FRESH
from pairgate.evidence.isolation import probe, weaker
from pairgate.evidence.patches import Patch
from pairgate.evidence.runner import Request, collect, rerun
from tests.kit.evidence_repos import CALC, TESTS, marker
from tests.kit.gitrepos import GIT_ENV, commit, git

pytestmark = pytest.mark.skipif(
    probe().mode != "bubblewrap", reason=f"no bubblewrap on this machine: {probe().why}"
)
ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, os, socket, subprocess, sys
P = json.loads(sys.argv[1])
found = {}

def attempt(name, action):
    try:
        found[name] = "open: " + str(action())[:160]
    except BaseException as exc:
        found[name] = "refused: " + type(exc).__name__ + ": " + str(exc)[:160]

def run(*argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        raise OSError(f"exit {done.returncode}: {(done.stderr or done.stdout).strip()}")
    return done.stdout.strip()

def connect(family, address):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        s.connect(address)
    return "connected"

def write(path):
    with open(path, "w") as out:
        out.write("pwned")
    return path

def landed(path):  # a write that went through: the path, and the mount it landed on
    write(path)
    mounts = [line.split(" - ")[0].split()[4:5] + line.split(" - ")[1].split()[:1]
              for line in open("/proc/self/mountinfo").read().splitlines()]
    point, kind = max((m for m in mounts if path.startswith(m[0].rstrip("/") + "/")),
                      key=lambda m: len(m[0]))
    return f"{path} on {kind} at {point}"

def alternates():
    info = ".git/objects/info/alternates"
    return open(info).read() if os.path.exists(info) else (_ for _ in ()).throw(OSError("none"))

def names_the_repository():
    hits = run("grep", "-rl", "--", P["real"], ".git")
    return hits

found["/run"] = sorted(os.listdir("/run"))  # before mount(8) writes its own /run/mount
found["/tmp"] = sorted(os.listdir("/tmp"))
attempt("alternates", alternates)
attempt("origin", lambda: run("git", "remote", "get-url", "origin"))
attempt("remotes", lambda: run("git", "config", "--get-regexp", "^remote\\.") or (_ for _ in ()).throw(OSError("none")))
attempt("names the repository", names_the_repository)
attempt("sees the repository", lambda: os.listdir(P["real"]))
attempt("plants a hook", lambda: write(os.path.join(P["real"], ".git/hooks/post-checkout")))
attempt("sees the lead's repository", lambda: os.listdir(P["lead"]))
attempt("host unix socket", lambda: connect(socket.AF_UNIX, P["socket"]))
attempt("host abstract socket", lambda: connect(socket.AF_UNIX, "\0" + P["abstract"]))
attempt("host tcp", lambda: connect(socket.AF_INET, ("127.0.0.1", P["port"])))
attempt("token file", lambda: open(P["token"]).read())
attempt("configuration", lambda: open(P["config"]).read())
attempt("netrc", lambda: open(P["netrc"]).read())
attempt("glab config", lambda: open(P["glab"]).read())
attempt("home", lambda: os.listdir(P["home"]))
attempt("writes pairgate's bin", lambda: write(os.path.join(P["bin"], "pwned")))
attempt("writes the caller's checkout", lambda: landed(P["outside"]))
attempt("reads the caller's checkout", lambda: open(P["readme"]).read())
attempt("remounts /usr read-write", lambda: run("mount", "-o", "remount,rw,bind", "/usr"))
attempt("writes /usr", lambda: write("/usr/pwned"))
attempt("unmounts /proc", lambda: run("umount", "-l", "/proc"))
found["processes seen"] = len([e for e in os.listdir("/proc") if e.isdigit()])
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
found["CapEff"] = status["CapEff"].strip()
found["NoNewPrivs"] = status["NoNewPrivs"].strip()
found["own home"] = sorted(os.listdir(os.environ["HOME"]))
write("/tmp/" + P["token_name"])
write(os.path.join(os.environ["HOME"], P["token_name"]))
print("ESCAPES " + json.dumps(found))
sys.exit(1)
"""


class Served:
    """Listeners outside every sandbox: TCP on 127.0.0.1, a Unix socket in a directory of the
    caller, and an abstract Unix socket; each counts the connections it takes."""

    def __init__(self, tmp: Path) -> None:
        self.path = str(tmp / "agent.sock")
        self.abstract = f"pairgate-escape-{marker()}"
        self.accepted = 0
        self.socks = [
            socket.create_server(("127.0.0.1", 0)),
            self._unix(self.path),
            self._unix("\0" + self.abstract),
        ]
        self.port = self.socks[0].getsockname()[1]
        self.threads = [
            threading.Thread(target=self._serve, args=(s,), daemon=True) for s in self.socks
        ]
        for t in self.threads:
            t.start()

    @staticmethod
    def _unix(address: str) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(address)
        sock.listen()
        return sock

    def _serve(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conn.close()
            self.accepted += 1

    def close(self) -> None:
        for sock in self.socks:
            sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def _tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _world(tmp: Path) -> dict[str, Any]:
    lead = tmp / "lead"
    git(tmp, "init", "-q", "-b", "main", str(lead))
    commit(lead, {"calc/__init__.py": CALC, "tests/test_calc.py": TESTS, "escape.py": PROBE}, "x")
    real = tmp / "reviewer-clone"  # the reviewer's clone, whose origin is the lead's repository
    subprocess.run(["git", "clone", "-q", str(lead), str(real)], env=GIT_ENV, check=True)
    deploy = tmp / "deploy"  # the configuration's directory, and its review-bot token
    deploy.mkdir()
    (deploy / "pairgate-config.json").write_text('{"tracker_project": "acme/tracker"}')
    (deploy / "review-bot.token").write_text("glpat-review-bot-secret")
    home = tmp / "home"  # the caller's home, with its secrets
    (home / ".config" / "glab-cli").mkdir(parents=True)
    (home / ".netrc").write_text("machine gitlab.example.com password glpat-netrc-secret\n")
    (home / ".config" / "glab-cli" / "config.yml").write_text("token: glpat-glab-secret\n")
    return {"lead": lead, "real": real, "deploy": deploy, "home": home}


@pytest.fixture(scope="module")
def escapes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One sealed re-run of the probe in the reviewer's clone; what it found, and the trees it
    tried to change, before and after."""
    tmp = tmp_path_factory.mktemp("escape")
    world = _world(tmp)
    served = Served(tmp)
    token_name = f"pairgate-escape-{marker()}"
    args = {
        "real": str(world["real"]),
        "lead": str(world["lead"]),
        "socket": served.path,
        "abstract": served.abstract,
        "port": served.port,
        "token": str(world["deploy"] / "review-bot.token"),
        "config": str(world["deploy"] / "pairgate-config.json"),
        "netrc": str(world["home"] / ".netrc"),
        "glab": str(world["home"] / ".config" / "glab-cli" / "config.yml"),
        "home": str(world["home"]),
        "bin": str(Path(sys.executable).parent),
        "outside": str(ROOT / "pairgate-escape-was-here"),
        "readme": str(ROOT / "README.md"),
        "token_name": token_name,
    }
    before = {name: _tree(world[name]) for name in ("real", "lead", "deploy", "home")}
    mutant = Patch(
        "m.patch", "--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1 +1 @@\n-x\n+y\n"
    )
    request = Request(
        repo=world["real"],
        command=f"python3 escape.py {json.dumps(json.dumps(args))}",
        patches=(mutant, mutant),
        hide_dirs=(world["deploy"],),
        hide_files=(world["deploy"] / "review-bot.token",),
    )
    try:
        doc = rerun(request, offered_sha256=mutant.sha256)
    finally:
        served.close()
    tail = doc["baseline"]["output_tail"]
    line = next((t for t in tail.splitlines() if t.startswith("ESCAPES ")), None)
    assert line is not None, tail
    yield {
        "found": json.loads(line.removeprefix("ESCAPES ")),
        "doc": doc,
        "before": before,
        "after": {name: _tree(world[name]) for name in before},
        "served": served,
        "token_name": token_name,
        "world": world,
    }
    for leftover in (Path(sys.executable).parent / "pwned", ROOT / "pairgate-escape-was-here"):
        leftover.unlink(missing_ok=True)


def refused(escapes: dict[str, Any], name: str) -> str:
    said = escapes["found"][name]
    assert said.startswith("refused: "), f"{name}: {said}"
    return str(said)


def test_the_run_was_sealed(escapes: dict[str, Any]) -> None:
    iso = escapes["doc"]["baseline"]["isolation"]
    assert (iso["mode"], iso["filesystem"], iso["network"]) == ("bubblewrap", "sealed", "blocked")


def test_its_copy_has_no_alternates_and_no_origin_leading_back(escapes: dict[str, Any]) -> None:
    refused(escapes, "alternates")
    refused(escapes, "origin")
    refused(escapes, "remotes")
    refused(escapes, "names the repository")  # no file of its .git names the real path


def test_it_cannot_plant_a_hook_in_the_reviewers_clone(escapes: dict[str, Any]) -> None:
    refused(escapes, "sees the repository")
    refused(escapes, "plants a hook")
    refused(escapes, "sees the lead's repository")
    # The reviewer's clone and the lead's repository were only read: not one byte changed.
    assert escapes["after"]["real"] == escapes["before"]["real"]
    assert escapes["after"]["lead"] == escapes["before"]["lead"]
    assert not (escapes["world"]["real"] / ".git" / "hooks" / "post-checkout").exists()


def test_it_reaches_no_host_socket(escapes: dict[str, Any]) -> None:
    assert "No such file" in refused(escapes, "host unix socket")  # no socket directory
    assert "Connection refused" in refused(escapes, "host abstract socket")  # its own network
    refused(escapes, "host tcp")
    assert escapes["served"].accepted == 0
    assert escapes["found"]["/run"] == []  # no docker.sock, no D-Bus, no ssh-agent


def test_it_reads_no_token_file_and_nothing_of_the_callers_home(escapes: dict[str, Any]) -> None:
    for name in ("token file", "configuration", "netrc", "glab config", "home"):
        refused(escapes, name)
    assert escapes["found"]["own home"] == []  # a fresh, empty $HOME
    refused(escapes, "reads the caller's checkout")  # only the interpreter is given, read-only


def test_it_writes_nothing_outside_its_clone(escapes: dict[str, Any]) -> None:
    assert "Read-only file system" in refused(escapes, "writes pairgate's bin")
    # Refused; or, where the checkout's path is inside a directory the run gets fresh (a clone
    # under /tmp whose virtual environment, inside it, the run is given read-only: its path
    # exists on the run's own /tmp), written to that tmpfs, which the host never sees.
    said = escapes["found"]["writes the caller's checkout"]
    own = [f"pairgate-escape-was-here on tmpfs at {fresh}" for fresh in FRESH]
    assert said.startswith("refused: ") or said.endswith(tuple(own)), said
    assert "Read-only file system" in refused(escapes, "writes /usr")
    assert not (Path(sys.executable).parent / "pwned").exists()
    assert not (ROOT / "pairgate-escape-was-here").exists()
    # its /tmp and $HOME were its own tmpfs: what it wrote there is gone, never on the host
    assert not (Path("/tmp") / escapes["token_name"]).exists()
    assert escapes["after"]["home"] == escapes["before"]["home"]


def test_it_can_neither_remount_nor_unmount_proc(escapes: dict[str, Any]) -> None:
    refused(escapes, "remounts /usr read-write")
    refused(escapes, "unmounts /proc")
    found = escapes["found"]
    assert (found["CapEff"], found["NoNewPrivs"]) == ("0000000000000000", "1")
    assert found["processes seen"] < 10  # its own pid namespace, not the machine's table


def test_a_fork_bomb_is_capped(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    bomb = (
        "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
        "            time.sleep(60)\n            os._exit(0)\n        n += 1\n"
        "except OSError as exc:\n    print('capped at', n, exc.errno)\n"
    )
    commit(repo, {"bomb.py": bomb, "calc.py": "x = 1\n"}, "bomb")
    mutant = Patch("m.patch", "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    doc = collect(Request(repo, "python3 bomb.py; exit 1", (mutant,), pids=24, timeout=30))
    base = doc["baseline"]
    assert base["isolation"]["processes"]["max"] == 24
    assert base["isolation"]["processes"]["by"] in ("pids-cgroup", "rlimit-nproc")
    said = [t for t in base["output_tail"].splitlines() if t.startswith("capped at")]
    assert said and int(said[0].split()[2]) < 24, base["output_tail"]
    assert not base["timed_out"]


def test_with_network_it_reaches_the_network_and_still_no_host_socket(tmp_path: Path) -> None:
    served = Served(tmp_path)
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    code = (
        "import socket, sys\n"
        "def go(family, address):\n"
        "    try:\n"
        "        with socket.socket(family, socket.SOCK_STREAM) as s:\n"
        "            s.settimeout(3); s.connect(address)\n"
        "        return 'connected'\n"
        "    except OSError as exc:\n"
        "        return type(exc).__name__\n"
        f"print('tcp', go(socket.AF_INET, ('127.0.0.1', {served.port})))\n"
        f"print('path', go(socket.AF_UNIX, {served.path!r}))\n"
        f"print('abstract', go(socket.AF_UNIX, '\\0' + {served.abstract!r}))\n"
        "sys.exit(1)\n"
    )
    commit(repo, {"net.py": code, "calc.py": "x = 1\n"}, "net")
    mutant = Patch("m.patch", "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    try:
        doc = collect(Request(repo, "python3 net.py", (mutant,), network=True))
    finally:
        served.close()
    said = dict(t.split(" ", 1) for t in doc["baseline"]["output_tail"].splitlines() if " " in t)
    assert said["tcp"] == "connected"
    assert said["path"] in ("FileNotFoundError", "PermissionError")
    assert said["abstract"] == "PermissionError"  # no Unix socket can be made at all
    assert served.accepted == 1


def test_in_the_namespaces_mode_the_filesystem_is_open_as_it_says(tmp_path: Path) -> None:
    """The NAMESPACES mode (the fallback): what bubblewrap stops above, it does not, and its
    evidence says so."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    secret = tmp_path / "review-bot.token"
    secret.write_text("glpat-open")
    commit(repo, {"calc.py": "x = 1\n"}, "x")
    mutant = Patch("m.patch", "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    doc = collect(
        Request(repo, f"cat {secret}; exit 1", (mutant,)),
        isolation=weaker("namespaces", "forced by the test"),
    )
    base = doc["baseline"]
    assert base["isolation"]["filesystem"] == "open"
    assert "the filesystem is NOT sealed" in base["isolation"]["description"]
    assert "glpat-open" in base["output_tail"]
    assert os.path.exists(secret)


def test_a_configuration_inside_a_tree_the_run_sees_is_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BUBBLEWRAP: pairgate's configuration and token may lie inside a tree the run is given
    read-only (beside ownership.py in the installed package, say): they are masked there."""
    from pairgate.evidence import runner
    from pairgate.evidence.isolation import python_roots

    site = tmp_path / "site"
    (site / "pairgate").mkdir(parents=True)
    (site / "pairgate" / "pairgate-config.json").write_text("{}")
    (site / "pairgate" / "review-bot.token").write_text("glpat-masked")
    (site / "module.py").write_text("seen = True\n")
    monkeypatch.setattr(runner, "python_roots", lambda: (*python_roots(), site))
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    commit(repo, {"calc.py": "x = 1\n"}, "x")
    mutant = Patch("m.patch", "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    reads = " ".join(
        f"cat {site / p} || echo refused {p};" for p in ("module.py", "pairgate/review-bot.token")
    )
    doc = collect(
        Request(
            repo,
            f"{reads} ls {site / 'pairgate'}; exit 1",
            (mutant,),
            hide_dirs=(site / "pairgate",),
            hide_files=(site / "pairgate" / "review-bot.token",),
        )
    )
    tail = doc["baseline"]["output_tail"]
    assert "seen = True" in tail  # the tree is given...
    assert "refused pairgate/review-bot.token" in tail and "glpat-masked" not in tail  # ...masked
    assert "pairgate-config.json" not in tail


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root, to run the sandbox as another user with setpriv",
)
def test_for_a_caller_that_is_not_root_rlimit_nproc_caps_a_fork_bomb() -> None:
    """BUBBLEWRAP, with the RLIMIT_NPROC cap (where no pids cgroup can be made): the kernel
    applies the limit to any user but real root, counted in the run's own user namespace. The
    sandbox's program line, as pairgate builds it, run as nobody."""
    import tempfile

    # a directory nobody may enter (pytest's own are the caller's alone)
    with tempfile.TemporaryDirectory(prefix="pairgate-evidence-nobody-") as where:
        Path(where).chmod(0o755)
        forked, said = _bomb_as_nobody(Path(where))
    assert "Cannot fork" in said
    assert 0 < forked < 16


def _bomb_as_nobody(tmp_path: Path) -> tuple[int, str]:
    """How many processes the bomb made before a fork was refused, and what it said."""
    from pairgate.evidence.isolation import Isolation, Places, argv_for, find_tools
    from pairgate.evidence.proclimit import ProcessCap

    places = Places(tmp_path / "repo", tmp_path / "report", tmp_path, tmp_path)
    for d in (places.clone, places.report):
        d.mkdir()
        d.chmod(0o777)
    iso = Isolation("bubblewrap", "", find_tools(), ProcessCap("rlimit-nproc", ""))
    # dash gives up at the first fork it is refused ("Cannot fork"): the count it left says
    # how many it got
    bomb = "n=0; while sleep 30 & do n=$((n+1)); echo $n > count; [ $n -ge 200 ] && break; done"
    argv = argv_for(
        bomb, isolation=iso, network=False, timeout=20, pids=16, places=places,
        env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert "--nproc=16:16" in argv
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=30,
    )
    count = places.clone / "count"
    return (int(count.read_text()) if count.exists() else 0), done.stdout + done.stderr


def test_a_sandbox_that_cannot_be_set_up_is_an_error_never_a_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BUBBLEWRAP: bubblewrap exits 1 when it cannot set the sandbox up, which the exit-code
    rule would read as a test failure; its status lines say the command never ran."""
    from pairgate.evidence import runner
    from pairgate.evidence.isolation import python_roots
    from pairgate.evidence.proclimit import _MOVE_IN

    monkeypatch.setattr(runner, "python_roots", lambda: (*python_roots(), tmp_path / "gone"))
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    commit(repo, {"calc.py": "x = 1\n"}, "x")
    mutant = Patch("m.patch", "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    doc = collect(Request(repo, "exit 0", (mutant,)))
    base = doc["baseline"]
    assert (base["outcome"], base["exit_code"]) == ("error", None)
    assert "the sandbox did not start the command" in base["output_tail"]
    assert doc["status"] == "error"
    # nor is a run that could not join its pids cgroup
    joined = subprocess.run(["/bin/sh", "-c", _MOVE_IN, "x", str(tmp_path / "gone"), "true"])
    assert joined.returncode == 125
