"""merge-check: the merge gate's verdict as a command (the verdict itself is ownership.py's)."""

from __future__ import annotations

from pairgate.standalone.config import Config
from pairgate.standalone.doors import run_merge_check
from pairgate.standalone.errors import Context
from pairgate.standalone.gitlab import GitLab


def merge_check(
    *,
    ctx: Context,
    config: Config,
    client: GitLab,
    mr: int,
    mr_project: str,
    json: bool,
    verbose: bool,
) -> int:
    """Exit 0 pass (or not gated), 1 refused, 2 could not decide (any read error)."""
    return run_merge_check(
        ctx, config, client, mr=mr, mr_project=mr_project, json_out=json, verbose=verbose
    )
