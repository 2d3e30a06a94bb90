"""pairgate deploy-hooks: the four files byte for byte and mode 0755 into a flat directory; --check
compares only those four; --list names them; refusals before any write; a failed write is a
PARTIAL install with no temporary file left behind. Exit 0 done / in line / listed, 1 drift,
2 cannot deploy."""

from __future__ import annotations

import resource
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.names import FIXTURE_CONFIG, ROOT
from tests.kit.run import PAIRGATE, clean_env, run_cli

FOUR = {
    "block-unapproved-merge.sh": ROOT / "hooks" / "block-unapproved-merge.sh",
    "ownership.py": ROOT / "pairgate" / "ownership.py",
    "validate-mr-carries-ownership-record.py": (
        ROOT / "validators" / "validate-mr-carries-ownership-record.py"
    ),
    "deployed_currency.py": ROOT / "pairgate" / "currency" / "deployed_currency.py",
}


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "hooks"
    path.mkdir()
    return path


def deploy(config_env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = run_cli(["deploy-hooks", *args], env=config_env)
    return result.code, result.out, result.err


def test_the_four_files_arrive_byte_for_byte_with_mode_0755(
    target: Path, config_env: dict[str, str]
) -> None:
    code, out, _ = deploy(config_env, "--target", str(target))
    assert code == 0
    assert sorted(p.name for p in target.iterdir()) == sorted(FOUR)
    for name, source in FOUR.items():
        assert (target / name).read_bytes() == source.read_bytes()
        assert stat.S_IMODE((target / name).stat().st_mode) == 0o755
        assert f"wrote: {target / name}" in out


def test_the_deployments_own_files_are_left_alone(target: Path, config_env: dict[str, str]) -> None:
    own = {"pairgate-config.json": b"{}", "_hooklib.sh": b"# theirs\n", "notes.txt": b"x"}
    for name, data in own.items():
        (target / name).write_bytes(data)
    assert deploy(config_env, "--target", str(target))[0] == 0
    assert {name: (target / name).read_bytes() for name in own} == own


def test_a_second_install_is_in_line_and_restores_a_lost_run_bit(
    target: Path, config_env: dict[str, str]
) -> None:
    deploy(config_env, "--target", str(target))
    (target / "ownership.py").chmod(0o644)
    code, out, _ = deploy(config_env, "--target", str(target))
    assert code == 0
    assert out.count("in line:") == 4
    assert stat.S_IMODE((target / "ownership.py").stat().st_mode) == 0o755


def test_check_is_in_line_after_an_install(target: Path, config_env: dict[str, str]) -> None:
    deploy(config_env, "--target", str(target))
    code, out, _ = deploy(config_env, "--target", str(target), "--check")
    assert (code, out) == (0, f"in line: the 4 deployed hook files in {target}\n")


def test_check_reports_a_missing_and_a_different_file_as_drift(
    target: Path, config_env: dict[str, str]
) -> None:
    deploy(config_env, "--target", str(target))
    (target / "deployed_currency.py").unlink()
    (target / "ownership.py").write_bytes(b"# an older copy\n")
    code, out, _ = deploy(config_env, "--target", str(target), "--check")
    assert code == 1
    assert f"missing: {target / 'deployed_currency.py'}" in out
    assert f"differs: {target / 'ownership.py'}" in out
    assert f"pairgate deploy-hooks --target {target}" in out
    assert not (target / "deployed_currency.py").exists()  # --check writes nothing


def test_check_ignores_the_mode_and_every_other_file(
    target: Path, config_env: dict[str, str]
) -> None:
    deploy(config_env, "--target", str(target))
    (target / "ownership.py").chmod(0o600)
    (target / "pairgate-config.json").write_text("{not json")
    (target / "a-directory").mkdir()
    (target / "a-link").symlink_to(target / "nowhere")
    assert deploy(config_env, "--target", str(target), "--check")[0] == 0


def test_check_on_an_empty_directory_is_drift(target: Path, config_env: dict[str, str]) -> None:
    code, out, _ = deploy(config_env, "--target", str(target), "--check")
    assert code == 1
    assert out.count("missing:") == 4


def test_list_names_each_file_and_its_source(config_env: dict[str, str]) -> None:
    code, out, _ = deploy(config_env, "--list")
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines()]
    assert {name: Path(path) for name, path in rows} == FOUR


def test_list_with_check_is_a_usage_error(config_env: dict[str, str]) -> None:
    code, _, err = deploy(config_env, "--list", "--check")
    assert code == 2
    assert "--check" in err


@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_a_target_that_is_not_a_directory_is_refused(
    tmp_path: Path, config_env: dict[str, str], kind: str
) -> None:
    target = tmp_path / "hooks"
    if kind == "a file":
        target.write_text("x")
    for extra in ([], ["--check"]):
        code, out, err = deploy(config_env, "--target", str(target), *extra)
        assert code == 2
        if kind == "missing":
            assert (
                f"the target {target} does not exist; create it first (mkdir -p {target}). "
                "Nothing was written." in err
            )
        else:
            assert f"the target {target} is not a directory. Nothing was written." in err
        assert out == ""


@pytest.mark.parametrize("kind", ["directory", "symlink"])
def test_a_destination_that_is_not_a_regular_file_is_refused_before_any_write(
    target: Path, config_env: dict[str, str], kind: str
) -> None:
    odd = target / "deployed_currency.py"  # the last file written: nothing before it may be
    if kind == "directory":
        odd.mkdir()
    else:
        (target / "elsewhere.py").write_text("x")
        odd.symlink_to(target / "elsewhere.py")
    code, _, err = deploy(config_env, "--target", str(target))
    assert code == 2
    assert f"{odd} exists and is not a regular file" in err
    assert sorted(p.name for p in target.iterdir()) == sorted(
        ["deployed_currency.py", *(["elsewhere.py"] if kind == "symlink" else [])]
    )


def test_a_failed_write_is_partial_and_leaves_no_temporary_file(target: Path) -> None:
    # A real write failure: a file-size limit that the hook script fits under and ownership.py
    # does not (Python ignores SIGXFSZ, so the write raises EFBIG).
    limit = (
        FOUR["block-unapproved-merge.sh"].stat().st_size + FOUR["ownership.py"].stat().st_size
    ) // 2

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run(
        [*PAIRGATE, "deploy-hooks", "--target", str(target)],
        env=clean_env(PYTHONPATH=str(ROOT), PAIRGATE_CONFIG=str(FIXTURE_CONFIG)),
        preexec_fn=small_files,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert f"PARTIAL install in {target}: writing ownership.py failed" in result.stderr
    assert "Already replaced: block-unapproved-merge.sh." in result.stderr
    assert (
        "Not written: ownership.py, validate-mr-carries-ownership-record.py, deployed_currency.py"
        in result.stderr
    )
    assert sorted(p.name for p in target.iterdir()) == ["block-unapproved-merge.sh"]


def test_a_missing_source_is_refused_before_any_write(target: Path, tmp_path: Path) -> None:
    # An installation without the record validator: a copy of the checkout that lacks it.
    install = tmp_path / "install"
    for part in ("pairgate", "hooks", "validators", "agents"):
        shutil.copytree(ROOT / part, install / part, ignore=shutil.ignore_patterns("__pycache__"))
    (install / "validators" / "validate-mr-carries-ownership-record.py").unlink()
    env = clean_env(PYTHONPATH=str(install), PAIRGATE_CONFIG=str(FIXTURE_CONFIG))
    for args in (["--target", str(target)], ["--target", str(target), "--check"], ["--list"]):
        result = subprocess.run(
            [*PAIRGATE, "deploy-hooks", *args],
            env=env,
            cwd=tmp_path,  # not the checkout, whose pairgate -m would find first
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 2, args
        assert "this installation lacks files it deploys" in result.stderr
        assert "validate-mr-carries-ownership-record.py" in result.stderr
    assert list(target.iterdir()) == []


def test_the_deployed_hook_runs_flat(target: Path, config_env: dict[str, str]) -> None:
    deploy(config_env, "--target", str(target))
    result = subprocess.run(
        [sys.executable, "-B", str(target / "ownership.py"), "check-config"],
        env=clean_env(PAIRGATE_CONFIG=str(FIXTURE_CONFIG)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_an_install_prints_the_line_that_names_the_hooks_python(
    tmp_path: Path, config_env: dict[str, str]
) -> None:
    target = tmp_path / "hooks"
    target.mkdir()
    code, out, _ = deploy(config_env, "--target", str(target))
    assert code == 0
    assert f"put this line in {target / '_hooklib.sh'}" in out
    # The interpreter the install ran under: the one that has pairgate and tree-sitter.
    assert out.rstrip("\n").splitlines()[-1] == f"hooklib_python={sys.executable}"


def test_list_needs_no_configuration() -> None:
    result = run_cli(["deploy-hooks", "--list"], env={})
    assert result.code == 0, result.err
    rows = [line.split("\t") for line in result.out.splitlines()]
    assert {name: Path(path) for name, path in rows} == FOUR


def test_a_hooklib_that_names_this_python_gets_no_advice(
    target: Path, config_env: dict[str, str]
) -> None:
    hooklib = target / "_hooklib.sh"
    hooklib.write_text(f"# the deployment's own\nhooklib_python={shlex.quote(sys.executable)}\n")
    code, out, _ = deploy(config_env, "--target", str(target))
    assert code == 0
    assert out.rstrip("\n").splitlines()[-1] == (
        f"the hook's Python: {hooklib} names this installation's ({sys.executable})"
    )
    assert "put this line" not in out
    hooklib.write_text("hooklib_python=/opt/other/python3\n")
    code, out, _ = deploy(config_env, "--target", str(target))
    assert f"put this line in {hooklib} (it names /opt/other/python3 now) unless" in out
