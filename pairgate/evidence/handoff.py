"""What an offer does with evidence: check it against the offered SHA, show it in the note, and
read the patches back out of a note for a re-run. Pure.

The patches block is written so that the note writer's own rewrites leave it alone: a line that
starts (after blanks) with ``/`` (a quick action) or ``<`` (an HTML comment, a marker) gets one
more backslash in front, which ``patches_from_block`` takes off again, so every patch comes back
byte for byte and its SHA-256 can be checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pairgate.evidence.patches import patch_sha256
from pairgate.evidence.schema import check_evidence, digest_problem
from pairgate.evidence.surface import SELF_REPORTED, isolation_words

_GUARDED = re.compile(r"^([ \t]*)(\\*)(?=[/<])", re.MULTILINE)
_UNGUARDED = re.compile(r"^([ \t]*)\\(\\*)(?=[/<])", re.MULTILINE)
_ENTRY = re.compile(
    r"^Mutant (\d+), SHA-256 `([0-9a-f]{64})`(, no newline at its end)?:\n\n"
    r"(`{4,})diff\n(.*?)\n\4\n",
    re.MULTILINE | re.DOTALL,
)
_TESTS_SHOWN = 3


def verify_for_handoff(doc: object, *, sha: str) -> list[str]:
    """Why this evidence does not support an offer of ``sha``; empty when it does."""
    problem = check_evidence(doc)
    if problem:
        return [f"the evidence is not an evidence document (pairgate-evidence): {problem}"]
    assert isinstance(doc, Mapping)
    problems = []
    digest = digest_problem(doc)
    if digest:
        problems.append(f"the evidence: {digest}")
    if doc["sha"] != sha.strip().lower():
        problems.append(f"the evidence was run at {doc['sha']}, not at the offered {sha}")
    baseline = doc["baseline"]
    if baseline["outcome"] != "passed":
        problems.append(f"its baseline did not pass: {baseline['detail']}")
    if doc["weak"]:
        problems.append(
            "the evidence is weak: the exit-code rule judged it (the runner reports no failing "
            "test), so nothing shows that a test judged any mutant; run the tests with pytest"
        )
    for m in doc["mutants"]:
        if m["verdict"] != "killed":
            problems.append(
                f"mutant {m['index']} ({m['name']}) was not killed: {m['verdict']}, {m['reason']}"
            )
        if m["sensitive_files"]:
            files = ", ".join(m["sensitive_files"])
            problems.append(
                f"mutant {m['index']} ({m['name']}) edits files that judge the change ({files}): "
                "a mutant changes the code under test, not the tests or their configuration"
            )
    return problems


def _cell(text: str) -> str:
    """Plain text safe in a markdown table cell: no HTML, no markup, no column break."""
    text = " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|~#])", r"\\\1", text) or "-"


def _code(text: str) -> str:
    """A code span of free text (outside a table): nothing in it renders, not even HTML."""
    line = " ".join(text.split())
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", line)), default=0) + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{ticks}{pad}{line}{pad}{ticks}"


def _tests(mutant: Mapping[str, Any], command: str) -> str:
    names = list(mutant["killed_by"])
    if not names:
        return command if mutant["verdict"] == "killed" else "-"
    shown = ", ".join(names[:_TESTS_SHOWN])
    return shown + (f" and {len(names) - _TESTS_SHOWN} more" if len(names) > _TESTS_SHOWN else "")


def note_table(doc: Mapping[str, Any]) -> str:
    """The evidence in a note: a summary line, the table (mutant, files, test, verdict), and
    the files that judge the change which it changed."""
    mutants = doc["mutants"]
    killed = sum(m["verdict"] == "killed" for m in mutants)
    baseline = doc["baseline"]
    iso = baseline["isolation"]
    head = (
        f"Mutation evidence at `{doc['sha']}`: {killed} of {len(mutants)} mutants killed; the "
        f"baseline {'passed' if baseline['outcome'] == 'passed' else 'did not pass'} "
        f"({_code(doc['command'])}, {iso['mode']}, network {iso['network']}). "
        f"Digest `{doc['digest']}`: {SELF_REPORTED}."
    )
    weaker = isolation_words(iso["mode"], iso["network"])
    if weaker:
        head += f" **Weaker isolation**: {weaker}."
    rows = ["| # | mutant | files | test | verdict |", "| --- | --- | --- | --- | --- |"]
    for m in mutants:
        files = ", ".join(m["patch"]["files"])
        rows.append(
            f"| {m['index']} | {_cell(m['name'])} | {_cell(files)} | "
            f"{_cell(_tests(m, doc['command']))} | {m['verdict']} |"
        )
    changes = doc["sensitive_changes"]
    if changes["base"] is None:
        judged = f"Files that judge the change were not compared: {changes['base_source']}."
    elif changes["files"]:
        listed = ", ".join(_cell(f["path"]) for f in changes["files"])
        judged = (
            f"**This change edits files that judge it** (since `{changes['base']}`, "
            f"{changes['base_source']}): {listed}."
        )
    else:
        judged = f"No file that judges the change was changed since `{changes['base']}`."
    parts = [head, "\n".join(rows), judged]
    runs = [baseline] + [m["run"] for m in mutants if m["run"] is not None]
    odd = sorted({p for r in runs for p in r["unexpected_changes"]})
    if odd:
        shown = ", ".join(_cell(p) for p in odd[:_TESTS_SHOWN])
        more = f" and {len(odd) - _TESTS_SHOWN} more" if len(odd) > _TESTS_SHOWN else ""
        parts.append(f"The runs changed files of the clone no pattern allows: {shown}{more}.")
    return "\n\n".join(parts)


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(4, longest + 1)


def patches_block(doc: Mapping[str, Any]) -> str:
    """Every mutant's patch, collapsed (``<details>``), each headed by its index and SHA-256."""
    parts = [f"<details><summary>The mutants' patches ({len(doc['mutants'])})</summary>", ""]
    for m in doc["mutants"]:
        text = m["patch"]["text"]
        bare = not text.endswith("\n")
        body = _GUARDED.sub(lambda g: f"{g.group(1)}\\{g.group(2)}", text if bare else text[:-1])
        fence = _fence(text)
        parts += [
            f"Mutant {m['index']}, SHA-256 `{m['patch']['sha256']}`"
            + (", no newline at its end" if bare else "")
            + ":",
            "",
            f"{fence}diff\n{body}\n{fence}",
            "",
        ]
    parts.append("</details>")
    return "\n".join(parts)


def patches_from_block(note: str) -> dict[int, tuple[str, str]]:
    """{index: (recorded SHA-256, patch text)} read back from a note holding ``patches_block``.
    The caller compares each text's hash with the recorded one (``patch_matches``)."""
    found: dict[int, tuple[str, str]] = {}
    for match in _ENTRY.finditer(note):
        index, digest, bare, _, body = match.groups()
        text = _UNGUARDED.sub(lambda g: f"{g.group(1)}{g.group(2)}", body)
        found.setdefault(int(index), (digest, text if bare else text + "\n"))
    return found


def patch_matches(recorded_sha256: str, text: str) -> bool:
    return patch_sha256(text) == recorded_sha256
