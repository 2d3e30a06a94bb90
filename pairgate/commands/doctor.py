"""doctor: every way around the merge gate that the gated projects' settings (and the group's)
leave open, with the fix. The reads and the checks are pairgate/doctor/'s; this prints them."""

from __future__ import annotations

import json as jsonlib

from pairgate import output
from pairgate.doctor.checks import CANNOT_READ, HOLE, PASS, DoctorCheck
from pairgate.doctor.reads import run_checks
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit
from pairgate.standalone.gitlab import GitLab


def doctor(*, ctx: Context, config: Config, client: GitLab, projects: list[str], json: bool) -> int:
    """Exit 0 no hole, 1 holes, 2 something could not be read (it wins: the report is then
    incomplete). The schema checker line needs no GitLab: in text it comes first, so a run
    whose reads fail still shows it."""
    from pairgate.version import schema_checker

    checker = schema_checker()
    if not json:
        print(f"schema checker: {checker}", file=ctx.stdout)
    paths, checks = run_checks(ctx, config, client, projects)
    holes = [c for c in checks if c.status == HOLE]
    unread = [c for c in checks if c.status == CANNOT_READ]
    if json:
        doc = {
            "holes": len(holes),
            "cannot_read": len(unread),
            "passed": len([c for c in checks if c.status == PASS]),
            "checks": [c.as_json() for c in checks],
            "schema_checker": checker,
        }
        print(jsonlib.dumps(doc, indent=2), file=ctx.stdout)
    else:
        _print(checks, len(paths), config, ctx)
    if unread:
        return Exit.ERROR
    return Exit.REFUSED if holes else Exit.OK


def _print(checks: list[DoctorCheck], projects: int, config: Config, ctx: Context) -> None:
    style = output.Style(output.use_colour(ctx.stdout, ctx.env))
    colour = {PASS: "green", HOLE: "red", CANNOT_READ: "yellow"}
    width = max(len(c.check) for c in checks)
    for c in checks:
        status = style(c.status.upper() if c.status != PASS else c.status, colour[c.status])
        pad = " " * (len("cannot-read") - len(c.status))
        print(f"{status}{pad}  {c.check.ljust(width)}  {c.subject}: {c.detail}", file=ctx.stdout)
        indent = " " * (len("cannot-read") + 2)
        for field in c.read:
            print(f"{indent}read: {field}", file=ctx.stdout)
        if c.fix:
            print(f"{indent}fix: {c.fix}", file=ctx.stdout)
    counts = {s: len([c for c in checks if c.status == s]) for s in (PASS, HOLE, CANNOT_READ)}
    print(
        f"doctor: {len(checks)} checks over {projects} project(s) and group "
        f"{config.group_path}: {counts[PASS]} pass, {counts[HOLE]} hole(s), "
        f"{counts[CANNOT_READ]} cannot read",
        file=ctx.stdout,
    )
