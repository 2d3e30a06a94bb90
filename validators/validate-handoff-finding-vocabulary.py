#!/usr/bin/env python3
"""The findings-vocabulary guard: a finding carries one of three markers, spelled and used as the
protocol defines them (OBSERVED:, ASKS:, BLOCKS:), and a relay never promotes one.

    validate-handoff-finding-vocabulary.py FILE...               commit messages, reason files, md
    validate-handoff-finding-vocabulary.py --root DIR [FILE...]  also the protocol document and
                                                                 the agent templates, and their
                                                                 agreement

Every problem is printed as ``path:line: reason`` (``path: reason`` when it concerns the whole
file). Exit 0 clean, 1 problems found, 2 usage error or unreadable input.

What it enforces, in every file it checks (docs/agent-handoff-reference.md says why):

1. A line that starts (after quote, list and emphasis prefixes) with a look-alike of a marker
   (``Observed:``, ``ASK:``, ``Blocker:``, ``MUST FIX:``, ``OBSERVED -``, ``**BLOCKS**:`` ...)
   is flagged: only the exact capitals-and-colon spellings are markers.
2. A marker at the start of a line must be followed by the finding itself.
3. A relay quotes the finding with its author's marker (``> OBSERVED: ...``). The relayer's
   paragraph right after the quote may not be stronger than the quoted marker: no stronger
   marker, and no demand ("fix this", "must change", "before merging", ...).

With ``--root``, it also checks the protocol document (``docs/agent-handoff.md`` under the root)
and the agent templates (``agents/*.md`` beside this file's directory, in a checkout and in the
wheel alike) by the rules above, and that they agree: each defines every marker on a line of its
own, and every definition line is identical to the protocol document's.

Standalone: the standard library only, so it runs flat, by path, anywhere.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MARKERS = ("OBSERVED:", "ASKS:", "BLOCKS:")  # in order of strength
STRENGTH = {marker: level for level, marker in enumerate(MARKERS)}
PROTOCOL_DOC = Path("docs/agent-handoff.md")
AGENTS_DIR = Path(__file__).resolve().parent.parent / "agents"

# Quote markers, list bullets and opening emphasis in front of a line's first word.
_QUOTE = re.compile(r"\s*((?:>\s*)*)")
_BULLET = re.compile(r"(?:[-*+]|\d+[.)])\s+")
_CANONICAL = re.compile(r"(OBSERVED|ASKS|BLOCKS):(?:\*\*|__|`)?(?=\s|$)")
# A marker's family, in any case, with any separator: what a careless hand writes instead.
_LOOKALIKE = re.compile(
    r"(?P<word>observed|observation|asks?|block(?:s|er|ers|ing)?|must[ -]?fix)\b"
    r"(?P<close>[*_`\]]*)\s*(?P<sep>:|[-–—](?=\s|$))",
    re.IGNORECASE,
)
# Demands that make a relay stronger than what it quotes, by the strength they add.
_ASKING = (
    r"fix (?:this|it|that)|please fix|should (?:be )?fix(?:ed)?|needs? (?:fixing|a fix|to be fixed)"
    r"|change (?:this|it|that)|please change|should (?:be )?change(?:d)?|needs? to change"
    r"|please address|address (?:this|it)"
)
_BLOCKING = (
    r"must (?:be )?(?:fix(?:ed)?|change(?:d)?)|ha(?:s|ve) to (?:be )?(?:fix(?:ed)?|change(?:d)?)"
    r"|blocker|blocking|blocks the merge|before (?:the |we |you )?merg\w*"
    r"|(?:do not|don't|must not|cannot|can't) merge|mandatory"
)
_DEMANDS = {
    1: re.compile(rf"\b(?:{_ASKING})\b", re.IGNORECASE),
    2: re.compile(rf"\b(?:{_BLOCKING})\b", re.IGNORECASE),
}
# git's "everything below is ignored" line in a verbose commit message.
_SCISSORS = re.compile(r"# -+ >8 -+")


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.reason}"
            if self.line
            else f"{self.path}: {self.reason}"
        )


@dataclass(frozen=True)
class Line:
    number: int
    quoted: bool
    head: str  # the line after quote, list and emphasis prefixes
    blank: bool
    heading: bool


def parse(text: str) -> list[Line]:
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if _SCISSORS.fullmatch(raw.strip()):
            break
        quote = _QUOTE.match(raw)
        assert quote is not None  # every pattern part is optional
        rest = raw[quote.end() :]
        bullet = _BULLET.match(rest)
        rest = rest[bullet.end() if bullet else 0 :]
        rest = rest[len(rest) - len(rest.lstrip("*_`[")) :]
        lines.append(
            Line(
                number=number,
                quoted=bool(quote.group(1)),
                head=rest,
                blank=not raw.strip(),
                heading=raw.lstrip().startswith("#"),
            )
        )
    return lines


def marker_of(line: Line) -> str | None:
    match = _CANONICAL.match(line.head)
    return f"{match.group(1)}:" if match else None


def check_lines(path: str, lines: Sequence[Line]) -> Iterator[Problem]:
    for line in lines:
        canonical = _CANONICAL.match(line.head)
        if canonical:
            if not line.head[canonical.end() :].strip():
                yield Problem(path, line.number, f"{canonical.group(1)}: with no finding after it")
            continue
        lookalike = _LOOKALIKE.match(line.head)
        if lookalike:
            yield Problem(
                path,
                line.number,
                f"look-alike marker {lookalike.group(0).strip()!r}: write OBSERVED: (recorded, "
                f"licenses no change), ASKS: (a change wanted) or BLOCKS: (must change before "
                f"the merge), exactly so",
            )
    yield from check_relays(path, lines)


def check_relays(path: str, lines: Sequence[Line]) -> Iterator[Problem]:
    """The paragraph after a quoted finding is the relayer's; it may not outrank the quote."""
    i = 0
    while i < len(lines):
        if not lines[i].quoted:
            i += 1
            continue
        quoted = []
        while i < len(lines) and lines[i].quoted:
            marker = marker_of(lines[i])
            if marker:
                quoted.append((STRENGTH[marker], marker, lines[i].number))
            i += 1
        if not quoted:
            continue
        level, marker, at = max(quoted)
        while i < len(lines) and lines[i].blank:
            i += 1
        while i < len(lines) and not (lines[i].blank or lines[i].quoted or lines[i].heading):
            yield from _promotion(path, lines[i], level, marker, at)
            i += 1


def _promotion(path: str, line: Line, level: int, quoted: str, at: int) -> Iterator[Problem]:
    own = marker_of(line)
    if own and STRENGTH[own] > level:
        yield Problem(
            path,
            line.number,
            f"a relay promotes the {quoted} quoted on line {at} to {own}; keep its author's "
            f"marker, and write a finding of your own apart from the quote",
        )
        return
    for strength in (2, 1):
        demand = _DEMANDS[strength].search(line.head) if strength > level else None
        if demand:
            yield Problem(
                path,
                line.number,
                f"a relay promotes the {quoted} quoted on line {at}: {demand.group(0)!r} adds a "
                f"demand its author never wrote; keep its author's marker, and write a finding "
                f"of your own apart from the quote",
            )
            return


def definitions(text: str) -> dict[str, tuple[int, str]]:
    """Each marker's definition: the first unquoted, unbulleted line that starts with it."""
    found: dict[str, tuple[int, str]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        for marker in MARKERS:
            if stripped.startswith(marker + " ") and marker not in found:
                found[marker] = (number, stripped)
    return found


def check_agreement(doc: tuple[str, str], agents: Sequence[tuple[str, str]]) -> Iterator[Problem]:
    doc_path, doc_text = doc
    reference = definitions(doc_text)
    for marker in MARKERS:
        if marker not in reference:
            yield Problem(
                doc_path, None, f"defines no {marker} (a line of its own starting with it)"
            )
    for path, text in agents:
        defined = definitions(text)
        for marker, (doc_line, doc_definition) in reference.items():
            if marker not in defined:
                yield Problem(path, None, f"defines no {marker}; {doc_path}:{doc_line} defines it")
            elif defined[marker][1] != doc_definition:
                yield Problem(
                    path,
                    defined[marker][0],
                    f"defines {marker} differently from {doc_path}:{doc_line} ({doc_definition!r})",
                )


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="validate-handoff-finding-vocabulary",
        description="Check that findings carry OBSERVED:, ASKS: or BLOCKS:, spelled and used as "
        "the protocol defines, and that a relay never promotes one.",
    )
    parser.add_argument(
        "--root",
        type=Path,
        help=f"also check {PROTOCOL_DOC} under this directory against the agent templates",
    )
    parser.add_argument("files", nargs="*", type=Path, help="files to check")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if args.root is None and not args.files:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: name files to check, or --root", file=sys.stderr)
        return 2

    sources: list[tuple[str, str]] = []
    agents: list[tuple[str, str]] = []
    try:
        if args.root is not None:
            doc = (str(args.root / PROTOCOL_DOC), read(args.root / PROTOCOL_DOC))
            templates = sorted(AGENTS_DIR.glob("*.md"))
            if not templates:
                raise OSError(f"no agent templates in {AGENTS_DIR}")
            agents = [(str(p), read(p)) for p in templates]
            sources += [doc, *agents]
        sources += [(str(p), read(p)) for p in args.files]
    except OSError as exc:
        print(f"{parser.prog}: cannot read: {exc}", file=sys.stderr)
        return 2

    problems = [
        p
        for path, text in sources
        for p in sorted(check_lines(path, parse(text)), key=lambda p: p.line or 0)
    ]
    if args.root is not None:
        problems += check_agreement(sources[0], agents)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
