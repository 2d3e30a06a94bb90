"""Terminal output people like to read: aligned columns, colour only on a terminal (NO_COLOR
respected), relative ages. The board's commands build rows of cells; this module lays them out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from pairgate.standalone.ledger import stamp_epoch

# A cell is its text, or its text and a colour name (applied after padding, so escapes never
# count towards a column's width).
Cell = str | tuple[str, str | None]

_SGR = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "dim": "2", "bold": "1"}


def use_colour(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set to anything (no-color.org) or
    the terminal is dumb."""
    if env.get("NO_COLOR", "") != "" or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Style:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, name: str | None) -> str:
        if not (self.colour and name and text):
            return text
        return f"\033[{_SGR[name]}m{text}\033[0m"


def _text(cell: Cell) -> str:
    return cell if isinstance(cell, str) else cell[0]


def table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], style: Style) -> str:
    """Columns aligned to their widest cell, two spaces apart; the last column is not padded."""
    widths = [max(len(_text(c)) for c in column) for column in zip(headers, *rows, strict=True)]
    lines = []
    for row in [[(h, "bold") for h in headers], *rows]:
        cells = []
        for i, cell in enumerate(row):
            text, colour = (cell, None) if isinstance(cell, str) else cell
            padded = text if i == len(row) - 1 else text.ljust(widths[i])
            cells.append(style(padded, colour) if colour else padded)
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def epoch(stamp: str | None) -> float | None:
    """GitLab's ISO timestamp as epoch seconds; None when absent or unreadable."""
    return stamp_epoch(stamp) if stamp else None


def duration(seconds: float) -> str:
    """A short human duration: 45s, 12m, 3h 5m, 2d 4h."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h}h {m}m" if m else f"{h}h"
    d, h = divmod(s // 3600, 24)
    return f"{d}d {h}h" if h else f"{d}d"


def ago(stamp: str | None, now: float) -> str:
    """``12m ago``; ``?`` when the time is unknown."""
    start = epoch(stamp)
    return "?" if start is None else f"{duration(now - start)} ago"


def age_seconds(stamp: str | None, now: float) -> int | None:
    start = epoch(stamp)
    return None if start is None else max(0, int(now - start))


def iso(seconds: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC timestamp (the form --json uses)."""
    if seconds is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def short(sha: str | None) -> str:
    return sha[:8] if sha else "-"


def clip(text: str, width: int) -> str:
    """One line, at most ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def dump(document: Any, stream: TextIO) -> None:
    print(json.dumps(document, indent=2, sort_keys=False), file=stream)
