"""Is this deployed copy current? CURRENT, STALE or UNVERIFIABLE, measured with git.

A deployment runs a copy of pairgate from a git checkout (or names one). The copy is CURRENT
when that checkout holds every ``origin/main`` commit that touches the configured
``deployed_paths``, STALE when it lacks some (each is named), and UNVERIFIABLE when it cannot be
measured: not a git checkout, no ``origin/main``, git missing, or a deployed path that is not in
the checkout. The checkout given is the one measured; nothing here ever falls back to another
location.

It does not fetch by default. Every pairgate command runs this check, and a fetch is a network
round trip (and a credential prompt waiting to happen), so the answer is "as of the last fetch of
origin". ``--fetch`` (or ``measure(..., fetch_timeout=S)``) fetches origin's main first, with a
timeout; a fetch that fails is reported and the measure goes on against what was fetched before.

Deployed flat beside the merge hook and ownership.py, so it imports only the standard library and
never ``pairgate``. Run it as ``python3 deployed_currency.py --checkout DIR --paths P [P ...]``:
exit 0 CURRENT, 1 STALE, 2 UNVERIFIABLE.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import NamedTuple

CURRENT = "CURRENT"
STALE = "STALE"
UNVERIFIABLE = "UNVERIFIABLE"

UPSTREAM = "refs/remotes/origin/main"
GIT_TIMEOUT = 10.0
DEFAULT_FETCH_TIMEOUT = 5.0

# Variables that point git at another repository or work tree (a git hook sets some of them);
# left in place they would measure that repository instead of the checkout we were given.
_REDIRECTING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class Commit(NamedTuple):
    """An origin/main commit the checkout lacks."""

    sha: str  # abbreviated
    subject: str


class Currency(NamedTuple):
    """The answer. ``checkout`` is the work tree's top when git found one."""

    state: str
    reason: str
    checkout: str | None = None
    paths: tuple[str, ...] = ()
    missing: tuple[Commit, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = self._asdict()
        data["paths"] = list(self.paths)
        data["missing"] = [c._asdict() for c in self.missing]
        data["notes"] = list(self.notes)
        return data


class _GitFailed(Exception):
    pass


class _GitMissing(_GitFailed):
    pass


def measure(
    checkout: str | os.PathLike[str],
    paths: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    fetch_timeout: float | None = None,
) -> Currency:
    """Measure the checkout that ``checkout`` (a directory or a file, resolved through symlinks)
    is in against its ``origin/main``. ``env`` is the environment git runs with (default: this
    process's); ``fetch_timeout`` set means fetch origin's main first."""
    paths = tuple(paths)
    start = Path(checkout).resolve()
    if not start.exists():
        return Currency(UNVERIFIABLE, f"{start} does not exist", paths=paths)
    where = start if start.is_dir() else start.parent
    if not _in_a_work_tree(where):
        reason = f"no checkout at {where}: no .git in it or in a directory above it"
        return Currency(UNVERIFIABLE, reason, paths=paths)
    git_env = _git_env(os.environ if env is None else env)
    notes: list[str] = []
    try:
        if fetch_timeout is not None:
            notes.extend(_fetch(where, git_env, fetch_timeout))
        top, head, upstream = _locate(where, git_env)
    except _GitFailed as failed:
        return Currency(UNVERIFIABLE, str(failed), paths=paths, notes=tuple(notes))

    def answer(state: str, reason: str, missing: tuple[Commit, ...] = ()) -> Currency:
        return Currency(state, reason, str(top), paths, missing, tuple(notes))

    if not paths:
        return answer(UNVERIFIABLE, "no deployed paths are configured")
    absent = _absent(top, paths)
    if absent:
        return answer(UNVERIFIABLE, f"not in the checkout: {', '.join(absent)}")
    if head is None:
        return answer(UNVERIFIABLE, "no commit is checked out")
    if upstream is None:
        return answer(UNVERIFIABLE, "it has no origin/main (fetch origin first)")
    try:
        missing = _missing(top, head, upstream, paths, git_env)
    except _GitFailed as failed:
        return answer(UNVERIFIABLE, str(failed))
    if not missing:
        return answer(CURRENT, "it holds every origin/main commit to its deployed paths")
    count = f"{len(missing)} origin/main commit{'s' if len(missing) != 1 else ''}"
    return answer(STALE, f"it lacks {count} to {', '.join(paths)} (as of the last fetch)", missing)


def _in_a_work_tree(where: Path) -> bool:
    """Whether git could find a checkout from ``where``: a ``.git`` (directory or file) in it
    or above it. Where there is none, git finds none either (the variables that could point it
    elsewhere are removed), so an installed copy is told so without starting git: every command
    runs this check, and a git start is most of its cost."""
    return any((directory / ".git").exists() for directory in (where, *where.parents))


def _git_env(env: Mapping[str, str]) -> dict[str, str]:
    clean = {k: v for k, v in env.items() if k not in _REDIRECTING}
    clean.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    return clean


def _git(
    where: Path, args: Sequence[str], env: Mapping[str, str], timeout: float
) -> tuple[int, str, str]:
    import subprocess  # here: a copy in no checkout never starts git, and skips its import

    try:
        proc = subprocess.run(
            ["git", "-C", str(where), *args],
            env=dict(env),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise _GitMissing("git is not installed (not found on PATH)") from None
    except subprocess.TimeoutExpired:
        raise _GitFailed(f"git {args[0]} took longer than {timeout:g}s") from None
    except OSError as exc:
        raise _GitFailed(f"cannot run git: {exc}") from None
    return proc.returncode, proc.stdout, proc.stderr


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "no message"


def _fetch(where: Path, env: Mapping[str, str], timeout: float) -> list[str]:
    refspec = f"+refs/heads/main:{UPSTREAM}"
    try:
        code, _, err = _git(
            where, ["fetch", "--quiet", "--no-tags", "origin", refspec], env, timeout
        )
    except _GitMissing:
        raise
    except _GitFailed as failed:
        return [f"fetch failed ({failed}); measured against the last fetch"]
    if code != 0:
        return [f"fetch failed ({_first_line(err)}); measured against the last fetch"]
    return []


def _locate(where: Path, env: Mapping[str, str]) -> tuple[Path, str | None, str | None]:
    """One git call: the work tree's top, HEAD and origin/main (None when either is absent)."""
    args = ["rev-parse", "--show-toplevel", "HEAD^{commit}", f"{UPSTREAM}^{{commit}}"]
    _, out, err = _git(where, args, env, GIT_TIMEOUT)
    # rev-parse prints what it resolved, then echoes an argument it could not resolve and fails.
    lines = out.splitlines()
    if not lines or not lines[0].startswith("/"):
        raise _GitFailed(f"git finds no checkout at {where} ({_first_line(err)})")
    top = Path(lines[0])
    revs = [line if _SHA.fullmatch(line) else None for line in lines[1:3]]
    revs += [None] * (2 - len(revs))
    return top, revs[0], revs[1]


def _absent(top: Path, paths: Sequence[str]) -> list[str]:
    absent = []
    for path in paths:
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or not (top / pure).exists():
            absent.append(path)
    return absent


def _missing(
    top: Path, head: str, upstream: str, paths: Sequence[str], env: Mapping[str, str]
) -> tuple[Commit, ...]:
    # Default history simplification: a side branch whose change reached main another way (a
    # merge identical to its other parent) is not demanded; its content is already there.
    args = [
        "-c",
        "log.showSignature=false",
        "--literal-pathspecs",
        "log",
        "--no-color",
        "--format=%h%x09%s",
        f"{head}..{upstream}",
        "--",
        *paths,
    ]
    # git's global options go before the subcommand; -C is added by _git in front of them.
    code, out, err = _git(top, args, env, GIT_TIMEOUT)
    if code != 0:
        raise _GitFailed(f"git log failed: {_first_line(err)}")
    commits = []
    for line in out.splitlines():
        sha, _, subject = line.partition("\t")
        commits.append(Commit(sha, subject))
    return tuple(commits)


def describe(currency: Currency) -> str:
    """The answer in words: the first line, then one line per missing commit."""
    where = f" ({currency.checkout})" if currency.checkout else ""
    lines = [f"{currency.state}{where}: {currency.reason}"]
    lines += [f"  {c.sha} {c.subject}" for c in currency.missing]
    lines += [f"  note: {n}" for n in currency.notes]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse  # here: the merge hook imports this module, and reads no arguments

    parser = argparse.ArgumentParser(
        prog="deployed_currency.py",
        description="Does a checkout hold every origin/main commit to its deployed paths?",
        epilog="Exit codes: 0 CURRENT, 1 STALE, 2 UNVERIFIABLE.",
    )
    parser.add_argument("--checkout", required=True, help="any path inside the checkout")
    parser.add_argument("--paths", required=True, nargs="+", help="the deployed paths")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser.add_argument("--fetch", action="store_true", help="fetch origin's main first")
    parser.add_argument(
        "--fetch-timeout",
        type=float,
        default=DEFAULT_FETCH_TIMEOUT,
        metavar="SECONDS",
        help=f"give up on the fetch after this long (default: {DEFAULT_FETCH_TIMEOUT:g})",
    )
    args = parser.parse_args(argv)
    currency = measure(
        args.checkout, args.paths, fetch_timeout=args.fetch_timeout if args.fetch else None
    )
    if args.json:
        print(json.dumps(currency.to_json(), indent=2, sort_keys=True))
    else:
        print(describe(currency))
    return {CURRENT: 0, STALE: 1}.get(currency.state, 2)


if __name__ == "__main__":
    sys.exit(main())
