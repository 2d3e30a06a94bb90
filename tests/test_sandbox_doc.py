"""docs/sandbox.md reads as one document: no paragraph that starts mid-sentence, one account of
the package's modules that names each of them, and the round's port and directory named once."""

from __future__ import annotations

import re

from tests.kit.names import ROOT

DOC = (ROOT / "docs" / "sandbox.md").read_text()


def paragraphs() -> list[str]:
    prose = re.sub(r"```.*?```", "", DOC, flags=re.S)
    return [p.strip() for p in prose.split("\n\n") if p.strip()]


def test_no_paragraph_starts_mid_sentence() -> None:
    assert [p[:60] for p in paragraphs() if p[0].islower()] == []


def test_inside_names_every_module_once() -> None:
    inside = DOC.split("\n## Inside\n", 1)[1].split("\n## ", 1)[0]
    described = [p for p in paragraphs() if p.startswith("`pairgate/sandbox/`")]
    assert len(described) == 1, "two accounts of the modules drift apart"
    named = set(re.findall(r"`([a-z_]+)(?:\.py)?`", inside))
    modules = {p.stem for p in (ROOT / "pairgate" / "sandbox").glob("*.py")} - {"__init__"}
    assert modules - named == set()


def test_the_round_names_its_port_and_directory_once_per_terminal() -> None:
    serve, play = (
        re.search(rf"<!-- round:{m} -->\n```sh\n(.*?)\n```", DOC, re.S).group(1)  # type: ignore[union-attr]
        for m in ("sandbox", "play")
    )
    for block in (serve, play):
        assert block.startswith("DIR=~/pairgate-sandbox PORT=8765  #")
        assert block.count("8765") == 1 and block.count("pairgate-sandbox") == 1
