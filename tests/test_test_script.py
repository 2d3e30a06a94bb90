"""scripts/test says on stdout what it installs and where before it installs it, so a user who
runs it knows what changed on the machine and in which Python."""

from __future__ import annotations

import re

from tests.kit.names import ROOT

SCRIPT = (ROOT / "scripts" / "test").read_text()
# A command that installs (not a message naming one): apt-get, npm, and the editable install.
INSTALLS = re.compile(
    r"^\s*(apt-get update -qq && apt-get install|npm install|python3 -m pip install .*-e )"
)


def test_every_install_is_announced_first() -> None:
    lines = SCRIPT.splitlines()
    installs = [n for n, line in enumerate(lines) if INSTALLS.search(line)]
    assert len(installs) == 5  # rsync, curl, postgresql, gitlab-ci-local, this checkout
    for n in installs:
        before = "\n".join(lines[max(0, n - 4) : n])
        assert 'say "installing' in before, lines[n]


def test_the_editable_install_names_the_python_it_changes() -> None:
    assert (
        'say "installing this checkout, editable, with its test dependencies, into" \\\n'
        "  \"$(python3 -c 'import sys; print(sys.prefix)') (a pairgate installed there is "
        'replaced by this" \\\n'
    ) in SCRIPT
