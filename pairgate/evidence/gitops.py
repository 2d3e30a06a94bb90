"""The git the runner needs: resolve the commit, copy it, apply a mutant, list changed files.

Every git here runs with a fixed environment (no ``GIT_DIR``, ``GIT_INDEX_FILE`` or other
variable of the caller's, no global or system configuration), and the real repository is only
read, and only before the first run: the runs happen in copies of one checkout that holds
nothing leading back to it, and its working tree and index are never used. No git runs in a
run's copy after its run: a run can write its ``.git`` (a configured ``core.fsmonitor`` or
filter would run a program).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from pairgate.evidence.isolation import SYSTEM_PATH
from pairgate.standalone.errors import UsageError


def git_env(home: Path) -> dict[str, str]:
    return {
        "PATH": SYSTEM_PATH,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
    }


def git(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
        )
    except FileNotFoundError:
        raise UsageError(f"git is not installed on {SYSTEM_PATH}") from None


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join((done.stderr or done.stdout).split())[-300:] or f"exit {done.returncode}"


def git_dir(env: dict[str, str], repo: Path) -> tuple[Path, Path]:
    """(the path to report, the git directory to clone from) of the repository at ``repo``."""
    done = git(env, "-C", str(repo), "rev-parse", "--absolute-git-dir", "--is-bare-repository")
    if done.returncode != 0:
        raise UsageError(f"{repo} is not a git repository: {_said(done)}")
    found, bare = done.stdout.split("\n")[:2]
    if bare == "true":
        return Path(found), Path(found)
    top = git(env, "-C", str(repo), "rev-parse", "--show-toplevel").stdout.strip()
    return Path(top), Path(found)


def resolve_commit(env: dict[str, str], gitdir: Path, rev: str, *, flag: str) -> str:
    """The full SHA of ``rev``, which must name a commit (not a tree, blob or tag of one)."""
    if not rev or rev.startswith("-") or any(c.isspace() for c in rev):
        raise UsageError(f"{flag} {rev!r} is not a revision")
    done = git(env, "--git-dir", str(gitdir), "cat-file", "-t", rev)
    kind = done.stdout.strip()
    if done.returncode != 0 or kind != "commit":
        what = f"is a {kind}" if done.returncode == 0 else "names nothing"
        raise UsageError(
            f"{flag} {rev} {what} in {gitdir}, not a commit: evidence is run "
            "at a committed SHA (commit the change first; the working tree is never used)"
        )
    return git(env, "--git-dir", str(gitdir), "rev-parse", "--verify", rev).stdout.strip()


def root_commit(env: dict[str, str], gitdir: Path, sha: str) -> str:
    """The first root commit of the history of ``sha`` (stable across moves and clones)."""
    done = git(env, "--git-dir", str(gitdir), "rev-list", "--max-parents=0", "--reverse", sha)
    return done.stdout.split()[0]


def default_base(env: dict[str, str], gitdir: Path, sha: str) -> tuple[str | None, str]:
    """The merge base of ``sha`` with origin/main, when there is one, and how it was found."""
    ref = "refs/remotes/origin/main"
    there = git(env, "--git-dir", str(gitdir), "rev-parse", "--verify", "--quiet", ref)
    if there.returncode != 0:
        return None, "none: no --base, and no origin/main"
    done = git(env, "--git-dir", str(gitdir), "merge-base", ref, sha)
    if done.returncode != 0:
        return None, "none: no --base, and no merge base with origin/main"
    return done.stdout.strip(), "the merge base with origin/main"


def changed_files(env: dict[str, str], gitdir: Path, base: str, sha: str) -> list[str]:
    """Every path changed between ``base`` and ``sha`` (a rename names both of its paths)."""
    done = git(
        env,
        *("--git-dir", str(gitdir), "diff", "--no-ext-diff", "--no-textconv", "--name-only"),
        *("--no-renames", "-z", base, sha),
    )
    if done.returncode != 0:
        raise UsageError(f"cannot diff {base}..{sha}: {_said(done)}")
    return [p for p in done.stdout.split("\0") if p]


def checkout_bytes(env: dict[str, str], gitdir: Path, sha: str) -> int:
    """What a checkout of ``sha`` holds, in bytes (the sizes of its blobs)."""
    done = git(env, "--git-dir", str(gitdir), "ls-tree", "-r", "-l", "-z", sha)
    total = 0
    for entry in done.stdout.split("\0"):
        size = entry.split("\t", 1)[0].split()[-1:] if entry else []
        if size and size[0].isdigit():
            total += int(size[0])
    return total


def seed_checkout(env: dict[str, str], gitdir: Path, sha: str, dest: Path) -> None:
    """The one copy taken from the real repository, before any run: a new repository holding
    the commit alone (fetched at depth 1, so it is shallow), checked out. It has no remote, no
    alternates, no FETCH_HEAD and no hook: nothing in it names or leads back to the real
    repository, and a run's copy of it is a whole repository of its own."""
    for args in (
        ("init", "--quiet", "--template=", str(dest)),
        (
            "-C",
            str(dest),
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--depth=1",
            str(gitdir),
            sha,
        ),
        ("-C", str(dest), "checkout", "--quiet", "--detach", sha),
    ):
        done = git(env, *args)
        if done.returncode != 0:
            raise UsageError(f"cannot check out {sha} of {gitdir}: {_said(done)}")


def tracked(env: dict[str, str], checkout: Path) -> frozenset[str]:
    """The paths git checked out in ``checkout`` (read before any run)."""
    done = git(env, "-C", str(checkout), "ls-files", "-z")
    return frozenset(p for p in done.stdout.split("\0") if p)


def copy_checkout(pristine: Path, dest: Path) -> None:
    """A run's own copy of the pristine checkout (cheaper than checking the SHA out again)."""
    try:
        done = subprocess.run(
            ["cp", "-a", "--reflink=auto", str(pristine), str(dest)],
            env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
        )
    except FileNotFoundError:
        raise UsageError(f"cp is not installed on {SYSTEM_PATH}") from None
    if done.returncode != 0:
        raise UsageError(f"cannot copy the checkout: {_said(done)}")


def apply_patch(env: dict[str, str], clone: Path, patch: Path) -> str | None:
    """None when the patch applied; otherwise what git apply said (nothing is changed then)."""
    done = git(env, "-C", str(clone), "apply", "--whitespace=nowarn", str(patch))
    return None if done.returncode == 0 else _said(done)
