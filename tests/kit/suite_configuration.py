"""The suite's second configuration: every remedy spelled with cli_command, never "pairgate".

The modules in TWICE run each test twice: under tests/fixtures/pairgate-config.json
(cli_command ``pairgate``) and under pairgate-config-renamed.json, the same deployment whose
cli_command is ``acme-pg``. In the second run every in-process or program run of pairgate that
names the suite's configuration is pointed at the renamed one, and what it prints must not name
the program ``pairgate`` (``pairgate <word>`` or ``pairgate: ``; argparse's usage and error lines
excepted, as they come before any configuration is read): a name written into the code instead
of the configured one fails there. Then ``acme-pg`` is read back as ``pairgate``, so
the test's own expectations hold unchanged under both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path

from tests.kit.names import FIXTURE_CONFIG, FIXTURES

RENAMED_CONFIG = FIXTURES / "pairgate-config-renamed.json"
RENAMED_CLI = "acme-pg"
CONFIGURATIONS = ("pairgate", RENAMED_CLI)

# The refusal tests: every module whose tests run a command that can refuse.
TWICE = (
    "test_verb_*.py",
    "test_freeze.py",
    "test_sync.py",
    "test_identity.py",
    "test_constraints.py",
    "test_graph.py",
    "test_board.py",
    "test_board_records.py",
    "test_merge_check.py",
    "test_deploy_hooks.py",
    "test_deploy_agents.py",
    "test_cli.py",
    "test_evidence_round.py",
    "test_evidence_approve.py",
)

# The program named where the configured cli_command belongs: "pairgate claim ...",
# "pairgate: ...". Not a path, a file name (pairgate-config.json), a label (pairgate::frozen) or
# a variable.
HARD_CODED = re.compile(r"(?<![\w/.@-])pairgate(?=: |:\n| \S)")
# argparse's own lines: the parser is built before any configuration is read (--help and usage
# errors read none, by design), so it can only say "pairgate".
ARGPARSE = re.compile(r"usage: pairgate\b|pairgate(?: [\w-]+)?: error: ")
# Names ownership.py still spells out, which this branch may not edit (it is being split into
# modules): the GitLab client's error text. Each is a line to remove once the reader names the
# configured command.
NOT_YET = re.compile(r"pairgate: GitLab (?:GET|POST|PUT|DELETE) ")
_RENAMED = re.compile(rf"(?<![\w/.@-]){re.escape(RENAMED_CLI)}(?![\w-])")

_active = {"cli": "pairgate"}


def runs_twice(module_file: str) -> bool:
    return any(fnmatch(Path(module_file).name, pattern) for pattern in TWICE)


def activate(cli: str) -> None:
    _active["cli"] = cli


def config_path() -> Path:
    """The configuration the running test is under."""
    return RENAMED_CONFIG if _active["cli"] == RENAMED_CLI else FIXTURE_CONFIG


def swapped(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the suite's configuration swapped for the one the test is under."""
    out = dict(env)
    if out.get("PAIRGATE_CONFIG") == str(FIXTURE_CONFIG):
        out["PAIRGATE_CONFIG"] = str(config_path())
    return out


def read_back(env: Mapping[str, str], *streams: str) -> list[str]:
    """What a run under ``env`` printed, as the test expects it. Under the renamed
    configuration: fail on a hard-coded program name, then read ``acme-pg`` as ``pairgate``."""
    if env.get("PAIRGATE_CONFIG") != str(RENAMED_CONFIG):
        return list(streams)
    for text in streams:
        for line in text.splitlines():
            if HARD_CODED.search(NOT_YET.sub("", line)) and not ARGPARSE.match(line):
                raise AssertionError(
                    f"cli_command is {RENAMED_CLI!r}, yet the output names the program "
                    f"'pairgate': {line!r}"
                )
    return [_RENAMED.sub("pairgate", text) for text in streams]
