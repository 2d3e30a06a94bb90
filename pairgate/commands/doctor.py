"""doctor: every way around the merge gate that the gated projects' settings (and the group's)
leave open, with the fix. The reads and the checks are pairgate/doctor/'s; this prints them."""

from __future__ import annotations

import json as jsonlib
from typing import TextIO

from pairgate import output
from pairgate.deployment.gate_files import one_line
from pairgate.doctor import fix as fixes
from pairgate.doctor.checks import CANNOT_READ, HOLE, PASS, DoctorCheck
from pairgate.doctor.reads import doctor_paths, run_checks
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, PairgateError, UsageError
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.gitlab_env import gitlab_client


def doctor(
    *,
    ctx: Context,
    config: Config,
    client: GitLab,
    projects: list[str],
    json: bool,
    fix: bool = False,
    dry_run: bool = False,
    pipeline: str | None = None,
) -> int:
    """Exit 0 no hole, 1 holes, 2 something could not be read (it wins: the report is then
    incomplete). The schema checker line needs no GitLab: in text it comes first, so a run
    whose reads fail still shows it. With --fix, the changes come first, then the checks."""
    from pairgate.version import schema_checker

    if (dry_run or pipeline is not None) and not fix:
        raise UsageError(f"{config.cli} doctor: --dry-run and --pipeline go with --fix")
    if pipeline is not None:
        one_line(f"{config.cli} doctor", "--pipeline", pipeline)
    checker = schema_checker()
    if not json:
        print(f"schema checker: {checker}", file=ctx.stdout)
    if fix:
        _fix(ctx, config, client, projects, dry_run, pipeline, ctx.stderr if json else ctx.stdout)
        if dry_run:
            return Exit.OK
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


def _fix(
    ctx: Context,
    config: Config,
    client: GitLab,
    projects: list[str],
    dry_run: bool,
    pipeline: str | None,
    out: TextIO,
) -> None:
    """Plan every change with the Maintainer's token, print each, and (unless dry_run) make
    them in order; a refused call stops the run and says what was already changed."""
    command = f"{config.cli} doctor --fix"
    variable = config.env_name("DEPLOY_TOKEN")
    token = ctx.env.get(variable, "").strip()
    if not token:
        raise UsageError(
            f"{command}: set {variable} to a token (scope api) of a Maintainer of every gated "
            f"project and of {config.tracker_project}: the settings and protected branches "
            f"need Maintainer. Nothing was changed."
        )
    if client.api_url is None:
        raise UsageError(
            f"{command}: set {config.env_name('GITLAB_URL')}: the Maintainer's token goes "
            f"over HTTPS to that instance only. Nothing was changed."
        )
    maintainer = gitlab_client(
        client.api_url,
        client.origin,
        read_token=token,
        read_token_source=variable,
        write_token=token,
        write_token_source=variable,
    )
    try:
        changes, notes = fixes.plan(maintainer, config, doctor_paths(config, client, projects),
                                    pipeline)  # fmt: skip
    except PairgateError as exc:
        raise PairgateError(
            f"{command}: could not read what to fix: {exc.message}. Nothing was changed."
        ) from None
    done: list[str] = []
    for change in changes:
        if not dry_run:
            try:
                change.apply()
            except PairgateError as exc:
                raise PairgateError(
                    f"{command}: {change.call} was refused: {exc.message}. Already changed: "
                    f"{'; '.join(done) or 'nothing'}."
                ) from None
            done.append(f"{change.subject} {change.what}")
        print(change.line(done=not dry_run), file=out)
    for note in notes:
        print(note, file=out)
    if not changes:
        print(f"{command}: nothing to change", file=out)
