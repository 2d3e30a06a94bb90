"""What the gate gates: the automation roster, the merge request's facts, citations, scope."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pairgate.standalone.config import Config
from pairgate.standalone.errors import ConfigError, reader_dir
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.schema_check import SchemaCheck, draft_validator

__all__ = [
    "RENOVATE_LABEL",
    "ROSTER_FILENAME",
    "ROSTER_SCHEMA",
    "AutomationFamily",
    "Scope",
    "author_account",
    "cited_issues",
    "decide_scope",
    "is_automation_author",
    "load_automation_families",
    "renovate_exemption_gaps",
    "roster_path",
    "under",
]

ROSTER_FILENAME = "automation_mr_families.py"
RENOVATE_LABEL = "renovate"

ROSTER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pairgate automation roster (FAMILIES in automation_mr_families.py)",
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "author_id", "branch_prefix", "cites_issue"],
        "properties": {
            "name": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9._-]*$"},
            "author_id": {"type": "integer", "minimum": 1},
            "branch_prefix": {"type": "string", "minLength": 1, "pattern": r"\S"},
            "cites_issue": {"type": ["integer", "null"], "minimum": 1},
        },
    },
}


class AutomationFamily(NamedTuple):
    """One unattended merge request family: an MR is the family's when all three hold."""

    name: str
    author_id: int
    branch_prefix: str
    cites_issue: int | None  # the one tracker issue its MRs cite, or None: they cite none


def roster_path(config: Config, explicit: Path | None = None) -> Path | None:
    """Where the automation roster is: the path given, else beside ownership.py (a flat
    deployment), else beside the configuration file. None when there is none."""
    if explicit is not None:
        return explicit
    for directory in (reader_dir(), config.path.parent):
        candidate = directory / ROSTER_FILENAME
        if candidate.is_file():
            return candidate
    return None


def load_automation_families(path: Path | None) -> tuple[AutomationFamily, ...]:
    """Read the roster's FAMILIES without running the file: it is data, parsed as a literal.

    No roster means no families, so every MR stays in scope (a gate that cannot find its
    roster fails toward review, never toward exemption).
    """
    if path is None:
        return ()
    import ast  # only here: a command that reads no roster does not pay for the parser

    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"pairgate: cannot read the automation roster {path}: {exc}") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ConfigError(
            f"pairgate: malformed automation roster {path}: line {exc.lineno}: {exc.msg}"
        ) from None
    value: Any = None
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring, or a bare string
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value and value is None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if [getattr(t, "id", None) for t in targets] == ["FAMILIES"]:
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    raise ConfigError(
                        f"pairgate: malformed automation roster {path}: line {node.lineno}: "
                        f"FAMILIES must be a literal (lists, dicts, strings, numbers, None)"
                    ) from None
                continue
        raise ConfigError(
            f"pairgate: malformed automation roster {path}: line {node.lineno}: the file holds "
            f"one assignment, FAMILIES = [...], and nothing else (it is data, never run)"
        )
    if value is None:
        raise ConfigError(f"pairgate: malformed automation roster {path}: no FAMILIES = [...]")
    errors = sorted(
        _roster_check().iter_errors(value),
        key=lambda e: list(e.path),
    )
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "FAMILIES"
        raise ConfigError(
            f"pairgate: malformed automation roster {path}: FAMILIES/{where}: {errors[0].message}"
        )
    names = [family["name"] for family in value]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise ConfigError(
            f"pairgate: malformed automation roster {path}: family {duplicate!r} is named twice"
        )
    return tuple(AutomationFamily(**family) for family in value)


# A project path may hold letters, digits, '_', '.', '-' and '/'. A reference counts only when
# it does not continue a longer path or word: "bigacme/tracker#3" does not cite acme/tracker#3.
_NOT_AFTER_PATH = r"(?<![\w.\-/#&])"
_NUMBER = r"(\d+)(?![\w])"


def cited_issues(text: str, *, mr_project: str, tracker: str) -> tuple[int, ...]:
    """The tracker issues a merge request's title and description cite, in order, once each.

    Three forms count: ``group/tracker#NN``, the issue's URL (any host, ``/-/issues/NN`` or
    ``/-/work_items/NN``), and a bare ``#NN`` when the merge request lives in the tracker
    project itself (anywhere else a bare ``#NN`` names that project's own issue).
    """
    path = re.escape(tracker)
    patterns = [
        rf"{_NOT_AFTER_PATH}{path}#{_NUMBER}",
        rf"https?://[^\s/]+/{path}/(?:-/)?(?:issues|work_items)/{_NUMBER}",
    ]
    if mr_project.casefold() == tracker.casefold():
        patterns.append(rf"{_NOT_AFTER_PATH}#{_NUMBER}")
    found: dict[int, int] = {}  # issue -> first position, so the order is the text's
    for pattern in patterns:
        for match in re.finditer(pattern, text, flags=re.IGNORECASE):
            number = int(match.group(1))
            if number > 0:
                found[number] = min(found.get(number, match.start()), match.start())
    return tuple(sorted(found, key=found.__getitem__))


def under(path: str, namespace: str) -> bool:
    return path.casefold().startswith(namespace.casefold().rstrip("/") + "/")


def renovate_exemption_gaps(mr: MergeRequestFacts, config: Config) -> list[str]:
    """Which of the Renovate exemption's four conditions this MR misses ([] means exempt)."""
    gaps = []
    if RENOVATE_LABEL not in mr.labels:
        gaps.append(f"it does not carry the {RENOVATE_LABEL!r} label")
    if mr.author_id != config.renovate_bot_user_id:
        gaps.append(
            f"its author is user id {mr.author_id}, not renovate_bot_user_id "
            f"{config.renovate_bot_user_id}"
        )
    if not mr.source_branch.startswith(config.renovate_branch_prefix):
        gaps.append(
            f"its source branch {mr.source_branch!r} does not start with "
            f"renovate_branch_prefix {config.renovate_branch_prefix!r}"
        )
    namespaces = config.renovate_exempt_namespaces
    if not any(under(mr.project, ns) for ns in namespaces):
        gaps.append(  # the list as the file spells it
            f"its project {mr.project} is in none of renovate_exempt_namespaces {list(namespaces)}"
        )
    return gaps


def automation_family_of(
    mr: MergeRequestFacts, cited: Sequence[int], families: Sequence[AutomationFamily]
) -> AutomationFamily | None:
    """The roster family this MR belongs to: its author, its branch prefix, and it cites
    exactly the family's issue (or none, for a family that cites none). ``cited`` leaves out
    the generic tracking issue."""
    for family in families:
        wanted = () if family.cites_issue is None else (family.cites_issue,)
        if (
            mr.author_id == family.author_id
            and mr.source_branch.startswith(family.branch_prefix)
            and tuple(cited) == wanted
        ):
            return family
    return None


def author_account(
    mr: MergeRequestFacts, families: Sequence[AutomationFamily], config: Config
) -> str:
    """Who opened the merge request, and whether the roster says that account is automation:
    said out loud for an MR the gate lets out of scope on its citation alone."""
    who = f"@{mr.author_username or '?'} (user {mr.author_id})"
    names = [f.name for f in families if f.author_id == mr.author_id]
    if names:
        return f"{who}, an automation account (the roster's {', '.join(names)})"
    if mr.author_id == config.renovate_bot_user_id:
        return f"{who}, the Renovate account (renovate_bot_user_id), not in the roster"
    return f"{who}, not an automation account: no family of the roster is authored by it"


def is_automation_author(
    mr: MergeRequestFacts, families: Sequence[AutomationFamily], config: Config
) -> bool:
    """Did an automation account open it: a roster family's author, or Renovate's?"""
    return mr.author_id == config.renovate_bot_user_id or any(
        f.author_id == mr.author_id for f in families
    )


class Scope(NamedTuple):
    """Whether the gate judges a merge request, and why (``code``, said in ``detail``)."""

    in_scope: bool
    code: str  # "in-scope", "outside-group", "generic-issue-only", "renovate", "automation"
    detail: str


def decide_scope(
    mr: MergeRequestFacts,
    *,
    cited: Sequence[int],
    in_group: bool,
    config: Config,
    families: Sequence[AutomationFamily],
) -> Scope:
    """Is this merge request gated? The first rule that lets it out says why."""
    if not in_group:
        return Scope(
            False,
            "outside-group",
            f"{mr.project} is not in group {config.group_path}'s project listing",
        )
    generic = config.generic_tracking_issue
    if generic is not None and tuple(cited) == (generic,):
        # The generic issue exempts unattended automation, the reason it exists; an MR anyone
        # else opened that cites only it is work with no issue of its own, and gated.
        if is_automation_author(mr, families, config):
            return Scope(
                False,
                "generic-issue-only",
                f"it cites only the generic tracking issue {config.tracker_project}#{generic}; "
                f"its author is {author_account(mr, families, config)}",
            )
        return Scope(
            True,
            "in-scope",
            f"its author is {author_account(mr, families, config)}",
        )
    if RENOVATE_LABEL in mr.labels:
        gaps = renovate_exemption_gaps(mr, config)
        if not gaps:
            return Scope(False, "renovate", "it is a Renovate merge request in an exempt namespace")
        renovate_note = f"; it carries the {RENOVATE_LABEL!r} label, but " + "; ".join(gaps)
    else:
        renovate_note = ""
    specific = [issue for issue in cited if issue != generic]
    family = automation_family_of(mr, specific, families)
    if family is not None:
        return Scope(False, "automation", f"it belongs to the automation family {family.name!r}")
    return Scope(True, "in-scope", f"{mr.project} is in group {config.group_path}{renovate_note}")


@functools.cache
def _roster_check() -> SchemaCheck:
    """The roster's check, built once a process (the configuration's, for the same reason)."""
    return draft_validator(ROSTER_SCHEMA)
