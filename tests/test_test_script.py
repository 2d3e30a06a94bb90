"""scripts/test says on stdout what it installs and where before it installs it, so a user who
runs it knows what changed on the machine and in which Python."""

from __future__ import annotations

import re

from tests.kit.names import ROOT

SCRIPT = (ROOT / "scripts" / "test").read_text()
# A command that installs (not a message naming one): apt-get, npm, the suite's virtual
# environment and the editable install into it.
INSTALLS = re.compile(
    r"^\s*(apt-get update -qq && apt-get install|npm install|python3 -m venv --without-pip \"\$venv"
    r"|python3 -m pip --python \"\$venv/bin/python3\" install)"
)


def test_every_install_is_announced_first() -> None:
    lines = SCRIPT.splitlines()
    installs = [n for n, line in enumerate(lines) if INSTALLS.search(line)]
    # rsync, bubblewrap, curl, postgresql, gitlab-ci-local, the environment, this checkout
    assert len(installs) == 7
    for n in installs:
        before = "\n".join(lines[max(0, n - 4) : n])
        assert 'say "installing' in before or 'say "creating' in before, lines[n]


def test_the_suite_installs_into_an_environment_of_its_own_never_the_machines_python() -> None:
    assert (
        'say "installing this checkout, editable, with its test dependencies, into $venv"' in SCRIPT
    )
    assert "venv=.cache/test-venv\n" in SCRIPT
    installs = [
        line
        for line in SCRIPT.splitlines()
        if re.search(r"pip\b.* install", line) and not line.lstrip().startswith(("#", "say"))
    ]
    # the checkout into the suite's environment, the built wheel into a clean one
    assert [line.split(" install")[0].strip() for line in installs] == [
        'python3 -m pip --python "$venv/bin/python3"',
        '"$host_python" -m pip --python "$work/venv/bin/python"',
    ]
    # and everything after the install runs the environment's python3
    assert SCRIPT.index('export PATH="$PWD/$venv/bin:$PATH"') < SCRIPT.index("-m pytest")
