"""What every part of the command reader shares: the layers it reads, and the state of one
reading, which the reader's mixins (programs, glab, git) and the reader itself act on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pairgate.standalone.command_reader.words import MergeFound, PushFound, _Stdin, _Word


@dataclass
class _Layer:
    """One text the reader parses: the command itself, or a string a shell would run."""

    src: bytes
    depth: int
    consumed: set[tuple[int, int]] = field(default_factory=set)
    dashes: set[int] = field(default_factory=set)  # where the parser dropped a `-` word


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _ReaderBase:
    """The state of one reading (set by _Reader.__init__) and the reader's own steps the mixins
    call; the mixins and _Reader share one instance."""

    merges: list[MergeFound]
    pushes: list[PushFound]
    unknown: list[str]
    mentions: list[str]
    aliases: dict[str, str]
    expanding: set[str]
    glab_aliases: dict[str, tuple[str | None, bool, _Layer, tuple[int, int] | None]]
    glab_names: set[str]
    git_aliases: dict[str, tuple[_Word, _Layer]]
    git_push_options: list[_Word | None]
    files: dict[str, _Stdin]
    script_runs: list[tuple[str | None, _Layer]]
    layers: list[tuple[_Layer, Any]]
    unnamed_writes: bool
    level: int
    over_budget: bool
    simple_commands: int
    text: str

    # The reader's own steps, which the mixins call: each is defined once, on _Reader or on the
    # mixin named, and these declarations only tell the type checker that they are there.
    def read(self, text: str, depth: int = 0) -> None:
        raise NotImplementedError  # _Reader

    def _alias(self, argv: list[_Word]) -> None:
        raise NotImplementedError  # _Reader

    def _expand_alias(self, argv: list[_Word], layer: _Layer) -> None:
        raise NotImplementedError  # _Reader

    def _write_file(self, path: str | None, text: _Stdin, *, append: bool = False) -> None:
        raise NotImplementedError  # _Reader

    def _output_of(self, node: Any, layer: _Layer, stdin: _Stdin | None) -> _Stdin:
        raise NotImplementedError  # _Reader

    def _unclear(self, argv: list[_Word], what: str) -> None:
        raise NotImplementedError  # _ProgramReading

    def _consume(self, layer: _Layer, words: list[_Word]) -> None:
        raise NotImplementedError  # _GlabReading

    def _glab(
        self,
        argv: list[_Word],
        env: dict[str, _Word],
        layer: _Layer,
        open_args: bool,
        *,
        expanded: bool = False,
    ) -> None:
        raise NotImplementedError  # _GlabReading
