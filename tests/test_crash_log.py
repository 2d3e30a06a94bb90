"""An unexpected error (a bug, not a PairgateError) leaves its traceback in the crash log under
pairgate's state directory, and the program says where, with the exit code it always had: the
pairgate command line, ``python3 ownership.py`` and the CI validators here, run as deployed;
the merge hook in test_merge_hook.py. And when the log cannot be written, the traceback goes to
stderr, after the error itself."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pairgate.standalone.errors import Context, Refusal, report, state_dir
from tests.kit.names import FIXTURE_CONFIG, ROOT

VALIDATORS = (
    "validate-mr-carries-ownership-record",
    "validate-mr-approval-at-head",
    "validate-mr-merge-check",
)
DEV_FULL = Path("/dev/full")  # every write to it fails: No space left on device
needs_dev_full = pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full here")


def log_of(state: Path) -> Path:
    return state / "pairgate" / "pairgate.log"


def run(
    args: list[str],
    state: Path,
    *,
    cwd: Path,
    stdin: bytes = b"",
    full_stdout: bool = False,
    **env: str,
) -> tuple[int, str]:
    """A program with a clean environment whose state directory is ``state``: exit code and
    stderr. ``full_stdout``: its stdout is /dev/full, unbuffered, so its first print fails."""
    run_env = {
        "PATH": os.environ["PATH"],
        "HOME": str(state.parent),
        "XDG_STATE_HOME": str(state),
        **env,
    }
    with open(DEV_FULL if full_stdout else os.devnull, "wb") as out:
        done = subprocess.run(
            args, input=stdin, stdout=out, stderr=subprocess.PIPE, env=run_env, cwd=cwd, timeout=60
        )
    return done.returncode, done.stderr.decode()


def flat(tmp_path: Path, *files: Path) -> Path:
    """The files copied into an empty directory, as a deployment holds them."""
    directory = tmp_path / "flat"
    directory.mkdir()
    for file in (ROOT / "pairgate" / "ownership.py", *files):
        shutil.copy(file, directory)
    return directory


@needs_dev_full
def test_the_command_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    code, err = run(
        [sys.executable, "-m", "pairgate", "--version"],
        state,
        cwd=tmp_path,
        full_stdout=True,
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    assert code == 2
    log = log_of(state)
    assert err == (
        "pairgate: internal error: OSError: [Errno 28] No space left on device\n"
        f"pairgate: the traceback is in {log}\n"
    )
    text = log.read_text(encoding="utf-8")
    assert "program: pairgate\n" in text
    assert "Traceback (most recent call last):" in text
    assert f'"{ROOT / "pairgate" / "main.py"}"' in text  # the frame that printed
    assert text.endswith("OSError: [Errno 28] No space left on device\n")
    assert oct(log.stat().st_mode & 0o777) == oct(0o600)


@needs_dev_full
def test_ownership_py_run_flat(tmp_path: Path) -> None:
    directory = flat(tmp_path)
    state = tmp_path / "state"
    code, err = run(
        [sys.executable, "-B", "ownership.py", "check-config"],
        state,
        cwd=directory,
        full_stdout=True,
        PAIRGATE_CONFIG=str(FIXTURE_CONFIG),
        PYTHONUNBUFFERED="1",
    )
    assert code == 2
    log = log_of(state)
    assert err == (
        "pairgate: internal error: OSError: [Errno 28] No space left on device\n"
        f"pairgate: the traceback is in {log}\n"
    )
    text = log.read_text(encoding="utf-8")
    assert "program: python3 ownership.py\n" in text
    assert f'"{directory / "ownership.py"}", line' in text
    assert "in standalone_main" in text
    assert text.endswith("OSError: [Errno 28] No space left on device\n")


@pytest.mark.parametrize("name", VALIDATORS)
def test_a_validator_run_flat(tmp_path: Path, name: str) -> None:
    """Tokens on stdin that are not UTF-8: the read fails inside the validator (strict decoding,
    pinned so the locale of the machine plays no part), which fails closed as before."""
    directory = flat(tmp_path, ROOT / "validators" / f"{name}.py")
    state = tmp_path / "state"
    code, err = run(
        [sys.executable, "-B", f"{name}.py", "--tokens-on-stdin"],
        state,
        cwd=directory,
        stdin=b"\xff\xfe job token\nread token\n",
        PAIRGATE_CONFIG=str(FIXTURE_CONFIG),
        PYTHONIOENCODING="utf-8:strict",
    )
    assert code == 2
    log = log_of(state)
    assert err.splitlines() == [
        f"{name}: could not decide; this job fails closed.",
        "pairgate: internal error: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in "
        "position 0: invalid start byte",
        f"pairgate: the traceback is in {log}",
    ]
    text = log.read_text(encoding="utf-8")
    assert f"program: {name}\n" in text
    assert "in validator_main" in text and "in _tokens" in text
    assert "UnicodeDecodeError" in text.splitlines()[-1]


def crashed() -> KeyError:
    """A real exception, raised and caught, so it carries a traceback."""
    try:
        {}["no such key"]
    except KeyError as exc:
        return exc
    raise AssertionError("unreachable")


def reported(error: BaseException, env: dict[str, str]) -> tuple[int, str]:
    err = io.StringIO()
    code = report(error, Context(env=env, now=lambda: 1767225600.0, stderr=err))
    return int(code), err.getvalue()


def test_the_log_says_when_what_and_where(tmp_path: Path) -> None:
    state = tmp_path / "state"
    code, err = reported(crashed(), {"XDG_STATE_HOME": str(state)})
    assert code == 2
    assert err == (
        "pairgate: internal error: KeyError: 'no such key'\n"
        f"pairgate: the traceback is in {log_of(state)}\n"
    )
    text = log_of(state).read_text(encoding="utf-8")
    assert text.startswith("pairgate crash log: the last unexpected error")
    assert "when: 2026-01-01T00:00:00Z\n" in text
    assert f"argv: {sys.argv!r}\n" in text
    assert f"python: {sys.version.split()[0]} ({sys.executable})" in text
    assert "in crashed\n" in text and text.endswith("KeyError: 'no such key'\n")
    assert [p.name for p in log_of(state).parent.iterdir()] == ["pairgate.log"]  # no temp left


def test_a_second_crash_replaces_the_first_log(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    reported(crashed(), env)
    reported(ValueError("the second"), env)
    text = log_of(tmp_path / "state").read_text(encoding="utf-8")
    assert "no such key" not in text and text.endswith("ValueError: the second\n")


def test_an_expected_error_writes_no_log(tmp_path: Path) -> None:
    code, err = reported(Refusal("refused: why, and what to run"), {"HOME": str(tmp_path)})
    assert (code, err) == (1, "refused: why, and what to run\n")
    assert not (tmp_path / ".local").exists()


def test_an_unwritable_log_leaves_the_traceback_on_stderr_after_the_error(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("a file where the state directory would be")
    code, err = reported(crashed(), {"XDG_STATE_HOME": str(tmp_path / "state")})
    assert code == 2
    first, second, *trace = err.splitlines()
    assert first == "pairgate: internal error: KeyError: 'no such key'"
    assert second.startswith(
        f"pairgate: could not write the traceback to {log_of(tmp_path / 'state')} ("
    )
    assert second.endswith("), so here it is:")
    assert trace[0] == "Traceback (most recent call last):"
    assert trace[-1] == "KeyError: 'no such key'"


@pytest.mark.parametrize(
    "env",
    [{}, {"XDG_STATE_HOME": "relative/state"}, {"HOME": "/nonexistent/home"}],
    ids=["no-home", "relative-xdg-and-no-home", "a-home-that-is-not-there"],
)
def test_with_no_state_directory_the_traceback_goes_to_stderr(env: dict[str, str]) -> None:
    """And no home directory is ever made for the log."""
    assert state_dir(env) is None
    code, err = reported(crashed(), env)
    assert code == 2
    first, second, *trace = err.splitlines()
    assert first == "pairgate: internal error: KeyError: 'no such key'"
    assert second == (
        "pairgate: could not write the traceback to a crash log (OSError: no state directory: "
        "set XDG_STATE_HOME, or HOME to a directory), so here it is:"
    )
    assert trace[-1] == "KeyError: 'no such key'"
    assert not Path("/nonexistent").exists()
