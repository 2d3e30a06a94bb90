"""The agent templates rendered for one deployment: what ``pairgate deploy-agents`` writes.

Each ``agents/<role>.md`` becomes ``<agent_identity_prefix>-<role>.md``. Three placeholders are
filled: ``{{agent:<role>}}`` (that role's identity), ``{{config:<key>}}`` (a configuration value,
or one computed from it) and ``{{text:<name>}}`` (the deployment's own ``<name>.md`` from
``agent_text_dir``, one trailing newline removed). In finder.md the text between the
liveness-oracle markers is replaced by the deployment's oracle file; the markers stay.

Everything is rendered and checked before anything is written, so a refusal writes nothing.
Files are carried as UTF-8 text decoded from bytes without newline translation, so a CRLF stays
a CRLF. This module is the only parser of the oracle markers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from pairgate import yaml_io
from pairgate.standalone.config import Config
from pairgate.standalone.errors import PairgateError

ROLES = ("lead", "review", "solo", "finder")
ORACLE_ROLE = "finder"
ORACLE_BEGIN = "<!-- pairgate:liveness-oracle:begin -->"
ORACLE_END = "<!-- pairgate:liveness-oracle:end -->"
# Any mention of this counts as a marker: a near-miss spelling in a template must not slip
# through as prose, and a text or oracle must not smuggle one in.
_ORACLE_MARK = "pairgate:liveness-oracle"

# Configuration values a template may name, and the two computed from tracker_project so that
# no text has to repeat it.
CONFIG_PLACEHOLDERS = (
    "agent_identity_prefix",
    "cli_command",
    "env_prefix",
    "group_path",
    "handoff_doc",
    "tracker_project",
)

# Every "{{" in a template must open a well-formed placeholder; group 1 is None when it does not.
_OPENING = re.compile(r"\{\{(?:([a-z]+):([^{}\r\n]*)\}\})?")
# What makes a text or the oracle "carry a placeholder": the opening of any of the three kinds.
_PLACEHOLDER_LIKE = re.compile(r"\{\{\s*(?:agent|config|text)\s*:", re.IGNORECASE)
_TEXT_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
_TEXT_FILE = re.compile(r"([a-z0-9][a-z0-9-]*)\.md")
_FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n", re.DOTALL)


class RenderError(PairgateError):
    """The templates, texts or oracle cannot be rendered; every problem is listed."""

    def __init__(self, problems: list[str], *, cli: str) -> None:
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{cli} deploy-agents: cannot render; nothing was written:\n{listed}")
        self.problems = problems


def deployed_name(config: Config, role: str) -> str:
    return f"{config.agent_identity_prefix}-{role}"


def config_values(config: Config) -> dict[str, str]:
    """The values ``{{config:<key>}}`` may name."""
    named = config.as_json()
    values = {key: str(named[key]) for key in CONFIG_PLACEHOLDERS}
    tracker = values["tracker_project"]
    values["tracker_name"] = tracker.rsplit("/", 1)[-1]
    values["tracker_api_path"] = quote(tracker, safe="")
    return values


def _decode(path: Path, problems: list[str]) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"{path} is not UTF-8 (byte {exc.start}: {exc.reason})")
    except OSError as exc:
        problems.append(f"cannot read {path}: {exc.strerror or exc}")
    return None


def _strip_one_newline(text: str) -> str:
    for ending in ("\r\n", "\n"):
        if text.endswith(ending):
            return text[: -len(ending)]
    return text


def _carried(label: str, text: str, problems: list[str]) -> None:
    """A text and the oracle are inserted as they are, never rendered: refuse what would need
    rendering (a placeholder) or would confuse the next render (a marker)."""
    if _PLACEHOLDER_LIKE.search(text):
        problems.append(f"{label} carries a placeholder; texts are inserted as they are")
    if _ORACLE_MARK in text:
        problems.append(f"{label} carries a liveness-oracle marker")


def read_templates(templates: Path, problems: list[str]) -> dict[str, str]:
    sources = {}
    for role in ROLES:
        path = templates / f"{role}.md"
        if not path.is_file():
            problems.append(f"the template {path} is missing; reinstall pairgate")
            continue
        source = _decode(path, problems)
        if source is not None:
            sources[role] = source
    return sources


def texts_named(sources: Mapping[str, str]) -> set[str]:
    return {
        m.group(2)
        for source in sources.values()
        for m in _OPENING.finditer(source)
        if m.group(1) == "text" and _TEXT_NAME.fullmatch(m.group(2))
    }


def read_texts(text_dir: Path, wanted: set[str], problems: list[str]) -> dict[str, str]:
    """The deployment's texts: exactly one ``<name>.md`` per ``{{text:<name>}}``, nothing else."""
    if not text_dir.is_dir():
        problems.append(f"the text directory {text_dir} (agent_text_dir) is not a directory")
        return {}
    texts: dict[str, str] = {}
    found: set[str] = set()
    for entry in sorted(text_dir.iterdir()):
        match = _TEXT_FILE.fullmatch(entry.name)
        if not entry.is_file() or not match:
            problems.append(f"{entry} is not a <name>.md file; the text directory holds only those")
        elif match.group(1) not in wanted:
            problems.append(f"{entry} is named by no template ({{{{text:{match.group(1)}}}}})")
        else:
            found.add(match.group(1))
            text = _decode(entry, problems)
            if text is not None:
                _carried(f"the text {entry}", text, problems)
                texts[match.group(1)] = _strip_one_newline(text)
    for name in sorted(wanted - found):
        problems.append(f"the text {text_dir / (name + '.md')} is missing ({{{{text:{name}}}}})")
    return texts


def read_oracle(path: Path, problems: list[str]) -> str | None:
    """The deployment's liveness oracle. There is no default: missing or empty refuses."""
    if not path.is_file():
        problems.append(f"the liveness oracle {path} (liveness_oracle_file) does not exist")
        return None
    oracle = _decode(path, problems)
    if oracle is None:
        return None
    if not oracle.strip():
        problems.append(f"the liveness oracle {path} is empty")
        return None
    _carried(f"the liveness oracle {path}", oracle, problems)
    return _strip_one_newline(oracle)


def _fill(
    role: str,
    source: str,
    values: Mapping[str, str],
    texts: Mapping[str, str],
    config: Config,
    problems: list[str],
) -> str:
    where = f"agents/{role}.md"

    def one(match: re.Match[str]) -> str:
        kind, name = match.group(1), match.group(2)
        if kind is None:
            near = source[match.start() : match.start() + 40].splitlines()[0]
            problems.append(f"{where}: '{{{{' opens no placeholder: {near!r}")
        elif kind == "agent" and name in ROLES:
            return deployed_name(config, name)
        elif kind == "agent":
            problems.append(f"{where}: unknown placeholder role {{{{agent:{name}}}}}")
        elif kind == "config" and name in values:
            return values[name]
        elif kind == "config":
            problems.append(f"{where}: unknown placeholder key {{{{config:{name}}}}}")
        elif kind == "text" and not _TEXT_NAME.fullmatch(name):
            problems.append(f"{where}: {{{{text:{name}}}}} is not a text name (a-z, 0-9, -)")
        elif kind == "text":
            return texts.get(name, "")  # a missing text is reported by read_texts
        else:
            problems.append(f"{where}: unknown placeholder kind {{{{{kind}:{name}}}}}")
        return match.group(0)

    return _OPENING.sub(one, source)


def _oracle_span(role: str, source: str, problems: list[str]) -> tuple[int, int] | None:
    """Where the oracle goes in the finder (between its markers), checking every template's
    markers: exactly one of each, begin before end, in the finder and nowhere else."""
    mentions = source.count(_ORACLE_MARK)
    begin, end = source.count(ORACLE_BEGIN), source.count(ORACLE_END)
    if role != ORACLE_ROLE:
        if mentions:
            problems.append(
                f"agents/{role}.md carries a liveness-oracle marker; only the finder may"
            )
        return None
    if begin != 1 or end != 1 or mentions != 2:
        problems.append(
            f"agents/{role}.md must carry {ORACLE_BEGIN} and {ORACLE_END} exactly once each "
            f"(found {begin} and {end}, and {mentions} mentions of {_ORACLE_MARK})"
        )
        return None
    start, stop = source.index(ORACLE_BEGIN) + len(ORACLE_BEGIN), source.index(ORACLE_END)
    if start > stop:
        problems.append(f"agents/{role}.md: the oracle's end marker comes before its begin")
        return None
    return start, stop


def _check_front_matter(role: str, rendered: str, expected: str, problems: list[str]) -> None:
    match = _FRONT_MATTER.match(rendered)
    try:
        front = yaml_io.load(match.group(1)) if match else None
    except yaml_io.YAMLError as exc:
        problems.append(f"agents/{role}.md: its front matter is not YAML ({exc})")
        return
    name = front.get("name") if isinstance(front, dict) else None
    if name != expected:
        problems.append(
            f"agents/{role}.md: the front-matter name: renders to {name!r}, not the deployed "
            f"name {expected!r} (write name: {{{{agent:{role}}}}})"
        )


def render(config: Config, templates: Path) -> dict[str, bytes]:
    """Every deployed file name and its bytes, or RenderError listing every problem."""
    problems: list[str] = []
    sources = read_templates(templates, problems)
    texts = read_texts(config.relative("agent_text_dir"), texts_named(sources), problems)
    oracle = read_oracle(config.relative("liveness_oracle_file"), problems)
    values = config_values(config)
    rendered: dict[str, bytes] = {}
    for role, source in sources.items():
        span = _oracle_span(role, source, problems)
        if span is not None:
            # Fill the parts around the oracle only: the oracle is carried, never rendered.
            eol = "\r\n" if source[span[0] :].startswith("\r\n") else "\n"
            head = _fill(role, source[: span[0]], values, texts, config, problems)
            tail = _fill(role, source[span[1] :], values, texts, config, problems)
            text = f"{head}{eol}{oracle or ''}{eol}{tail}"
        else:
            text = _fill(role, source, values, texts, config, problems)
        name = deployed_name(config, role)
        _check_front_matter(role, text, name, problems)
        rendered[f"{name}.md"] = text.encode("utf-8")
    if problems:
        raise RenderError(problems, cli=config.cli)
    return rendered
