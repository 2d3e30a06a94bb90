#!/usr/bin/env python3
"""Check a built wheel against the source tree it came from.

The wheel must hold every file of the package (pairgate/) and of validators/, hooks/ and agents/
(carried inside the package, as pairgate/validators/ and so on), each CI component's
templates/<name>/template.yml (as pairgate/components/<name>.yml, which deploy-pipeline renders
from), with the run bit (0755) on every hooks/*.sh and validators/*.py, and nothing else: no
tests, docs, examples or the components' other files, no bytecode. What is required is read from the source tree (git's tracked and not-ignored files when
it is a checkout), so a file added there is required here without editing this script.

    python3 scripts/check-wheel.py dist/*.whl [--source DIR]

Prints one line per problem, naming the wheel and the file. Exit 0 sound, 1 a problem, 2 the
wheel or the source cannot be read.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pairgate"
# Top-level source directories the wheel carries inside the package.
RESOURCES = ("validators", "hooks", "agents")
COMPONENTS = "templates/*/template.yml"  # carried as pairgate/components/<name>.yml
RUN_BITS = ("hooks/*.sh", "validators/*.py")
NEVER = ("tests", "docs", "examples", "templates", "__pycache__")


def source_files(source: Path) -> list[str]:
    """The files the wheel is built from, as POSIX paths relative to ``source``."""
    roots = (PACKAGE, *RESOURCES, "templates")
    top = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
    )
    if top.returncode == 0 and Path(top.stdout.strip()) == source.resolve():
        listed = subprocess.run(
            ["git", "-C", str(source), "ls-files", "-z", "-co", "--exclude-standard", "--", *roots],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\0")
        return sorted(p for p in listed if p and (source / p).is_file() and _shipped(p))
    found = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(source / root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                path = (Path(dirpath) / name).relative_to(source).as_posix()
                if not name.endswith(".pyc") and _shipped(path):
                    found.append(path)
    return sorted(found)


def _shipped(path: str) -> bool:
    """Of templates/, only each component's template.yml ships."""
    return not path.startswith("templates/") or fnmatch.fnmatch(path, COMPONENTS)


def in_wheel(path: str) -> str:
    """Where a source file lives inside the wheel."""
    if fnmatch.fnmatch(path, COMPONENTS):
        return f"{PACKAGE}/components/{PurePosixPath(path).parent.name}.yml"
    return path if path.startswith(f"{PACKAGE}/") else f"{PACKAGE}/{path}"


def forbidden(member: str) -> str | None:
    """Why the wheel must not carry ``member``, or None when it may."""
    parts = PurePosixPath(member).parts
    if parts[0].endswith(".dist-info"):
        return None
    if parts[0] != PACKAGE:
        return f"it is outside the {PACKAGE} package"
    for part in parts[:-1]:
        if part in NEVER:
            return f"the wheel ships no {part}"
    name = parts[-1]
    if name == "conftest.py" or fnmatch.fnmatch(name, "test_*.py"):
        return "the wheel ships no tests"
    if name.endswith(".pyc"):
        return "the wheel ships no bytecode"
    return None


def check(wheel: Path, source: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        modes = {
            info.filename: (info.external_attr >> 16) & 0o777
            for info in archive.infolist()
            if not info.is_dir()
        }
    problems = []
    for path in source_files(source):
        member = in_wheel(path)
        if member not in modes:
            problems.append(f"missing {member} (from {path})")
        elif any(fnmatch.fnmatch(path, pattern) for pattern in RUN_BITS) and modes[member] != 0o755:
            problems.append(
                f"{member} has mode {modes[member]:04o}; it is run by path and must be 0755"
            )
    for member in sorted(modes):
        why = forbidden(member)
        if why:
            problems.append(f"carries {member}: {why}")
    dist_info = {PurePosixPath(m).parts[0] for m in modes if ".dist-info/" in m}
    if len(dist_info) != 1:
        problems.append(f"has {len(dist_info)} .dist-info directories, not one")
    return [f"{wheel}: {problem}" for problem in problems]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheels", nargs="+", type=Path, metavar="WHEEL")
    parser.add_argument(
        "--source", type=Path, default=ROOT, help="the source tree (default: this checkout)"
    )
    args = parser.parse_args(argv)
    failed = False
    for wheel in args.wheels:
        try:
            problems = check(wheel, args.source)
        except (OSError, zipfile.BadZipFile, subprocess.CalledProcessError) as exc:
            print(f"{wheel}: cannot check: {exc}", file=sys.stderr)
            return 2
        for problem in problems:
            print(problem, file=sys.stderr)
        failed = failed or bool(problems)
        if not problems:
            print(f"{wheel}: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
