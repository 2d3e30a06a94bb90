"""What a program reader may ask of the reading it is part of: the Reading protocol, the layers
it reads, and the shape of a row of the program table."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from pairgate.standalone.command_reader.words import (
    CommandReading,
    MergeFound,
    PushFound,
    Stdin,
    Word,
)

__all__ = ["GitAlias", "GlabAlias", "Layer", "ProgramReader", "Reading"]


class Layer:
    """One text the reader parses: the command itself, or a string a shell would run."""

    __slots__ = ("consumed", "dashes", "depth", "src")

    def __init__(self, src: bytes, depth: int) -> None:
        self.src = src
        self.depth = depth
        self.consumed: set[tuple[int, int]] = set()
        self.dashes: set[int] = set()  # where the parser dropped a `-` word

    def consume(self, words: Iterable[Word]) -> None:
        """These words are read for what they are (glab's own, or text re-read as a script):
        the mention check looks past them."""
        self.consumed.update(w.span for w in words if w.span)


# A glab alias `glab alias set` defines: (its expansion, None when built from expansions;
# whether it runs in a shell; the layer and span of the expansion's word).
GlabAlias = tuple[str | None, bool, Layer, tuple[int, int] | None]
# A git alias the command defines: the word that holds its text, and the layer it is in.
GitAlias = tuple[Word, Layer]


class Reading(Protocol):
    """One reading of one command, as a program reader (a row of PROGRAMS) sees it: the steps
    it may take and the state that outlives one program. reader.Reader is the one reading;
    the readers depend on this protocol only, so that the table can sit between them."""

    text: str  # the command as the hook received it
    files: dict[str, Stdin]  # what the command writes, by path (see words.file_key)
    script_runs: list[tuple[str | None, Layer]]  # scripts run by a path not written yet
    glab_names: set[str]  # names the command gives copies of glab (cp, ln)
    glab_aliases: dict[str, GlabAlias]
    git_aliases: dict[str, GitAlias]
    git_push_options: list[Word | None]  # push.pushOption set by `git config` earlier
    armed_push_read: bool  # a git push whose options arm auto-merge was read
    push_read: bool  # a git push (or send-pack) was read, whatever its options
    expanding: set[str]  # aliases being expanded now: none expands inside its own expansion

    def read(self, text: str, depth: int) -> None:
        """Re-read ``text`` as a script a shell runs, one layer deeper."""
        ...

    def run(
        self,
        argv: list[Word],
        env: dict[str, Word],
        layer: Layer,
        stdin: Stdin | None = None,
        open_args: bool = False,
    ) -> None:
        """Read one simple command: the program ``argv`` names, by its row of PROGRAMS."""
        ...

    def found_merge(self, merge: MergeFound) -> None:
        """The command would make this merge."""
        ...

    def found_push(self, push: PushFound) -> None:
        """The command would make this push, which arms auto-merge."""
        ...

    def unclear(self, why: str) -> None:
        """The hook cannot tell what this part of the command runs: the command blocks."""
        ...

    def alias(self, argv: list[Word]) -> None:
        """``alias name=text``: bash expands the name later in the command."""
        ...

    def output_of(self, node: Any, layer: Layer, stdin: Stdin | None) -> Stdin:
        """What a command's syntax node writes on its standard output, when the text says."""
        ...

    def write_file(self, path: str | None, text: Stdin, *, append: bool = False) -> None:
        """The command writes ``text`` to ``path`` (None: a path bash computes)."""
        ...

    def read_alone(self, text: str, depth: int) -> CommandReading:
        """What ``text`` would do as a later command of its own, which finds on disk what this
        one leaves there (its files, copies of glab, glab and git aliases) and nothing else."""
        ...


# A row of the program table: reads one program's arguments (the program's words, the
# command's assignments, the layer it stands in, its standard input, whether xargs appends more
# words) and tells the reading what it found.
ProgramReader = Callable[[Reading, list[Word], dict[str, Word], Layer, Stdin | None, bool], None]
