"""deploy-pipeline's gate files and its publish: --gate-out writes what this pairgate carries,
--publish commits the pipeline and the gate files in one commit through the Commits API (each
update guarded by the last_commit_id read), --publish --check names each file that differs, and
the flags that could steer the gate are refused."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pairgate.commands.deploy_pipeline import publish_files
from pairgate.deployment.gate_files import VALIDATORS, gate_files
from pairgate.resources import package_file, resource_dir
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.errors import Context, PairgateError
from tests.kit.names import FIXTURE_CONFIG
from tests.kit.run import Result, run_cli, suite_config

DIGEST = "registry.example.com/ci/python-gate@sha256:" + "ab" * 32
PIPELINE = "gate/pipeline.yml"
FILES = [PIPELINE, "gate/ownership.py", "gate/pairgate-config.json",
         "gate/automation_mr_families.py", *(f"gate/{v}" for v in VALIDATORS)]  # fmt: skip


def flags(sandbox: RunningSandbox, image: str = DIGEST) -> list[str]:
    return ["--image", image, "--runner-tag", "gate", "--read-token-variable", "GATE_READ",
            "--gate-dir", "gate", "--gitlab-url", sandbox.url]  # fmt: skip


def env(sandbox: RunningSandbox, token: str = "maintainer") -> dict[str, str]:
    found = {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}
    if token:
        found["PAIRGATE_TEST_DEPLOY_TOKEN"] = sandbox.token(token)
    return found


def deploy(sandbox: RunningSandbox, *extra: str, token: str = "maintainer", **kw: Any) -> Result:
    return run_cli(["deploy-pipeline", *extra, *flags(sandbox, **kw)], env(sandbox, token))


def tracker_file(sandbox: RunningSandbox, path: str) -> bytes | None:
    found = sandbox.request(
        "GET", f"/projects/1/repository/files/{path.replace('/', '%2F')}?ref=main", "maintainer"
    )
    return base64.b64decode(found.json()["content"]) if found.ok else None


def commits(sandbox: RunningSandbox) -> list[dict[str, Any]]:
    return list(sandbox.api("GET", "/projects/1/repository/commits?ref_name=main&per_page=100"))


# -- --gate-out ------------------------------------------------------------------------------


def test_gate_out_writes_the_files_this_pairgate_carries(tmp_path: Path) -> None:
    out = tmp_path / "gate"
    out.mkdir()
    argv = ["deploy-pipeline", "--gate-out", str(out), "--image", DIGEST, "--runner-tag", "t",
            "--read-token-variable", "V", "--gate-dir", "gate", "--gitlab-url",
            "https://gitlab.example.com"]  # fmt: skip
    result = run_cli(argv, {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    assert result.code == 0, result.err
    assert sorted(p.name for p in out.iterdir()) == sorted(Path(f).name for f in FILES[1:])
    assert (out / "ownership.py").read_bytes() == package_file("ownership.py").read_bytes()
    for name in VALIDATORS:
        assert (out / name).read_bytes() == (resource_dir("validators") / name).read_bytes()
    assert (out / "pairgate-config.json").read_bytes() == FIXTURE_CONFIG.read_bytes()
    roster = FIXTURE_CONFIG.parent / "automation_mr_families.py"
    assert (out / "automation_mr_families.py").read_bytes() == roster.read_bytes()
    again = run_cli([*argv, "--check"], {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    assert again.code == 0 and again.out.startswith("in line: ")
    (out / "ownership.py").write_text("# edited\n")
    drift = run_cli([*argv, "--check"], {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    assert drift.code == 1 and f"differs: {out / 'ownership.py'}" in drift.out


# -- --publish ---------------------------------------------------------------------------------


def test_publish_commits_every_file_in_one_commit_and_prints_the_setting(
    sandbox: RunningSandbox,
) -> None:
    before = len(commits(sandbox))
    result = deploy(sandbox, "--publish", PIPELINE)
    assert result.code == 0, result.err
    assert len(commits(sandbox)) == before + 1  # one commit, every file in it
    assert [line.split(": ")[1] for line in result.out.splitlines()[: len(FILES)]] == FILES
    assert "gate/pipeline.yml@acme/tracker" in result.out.splitlines()[-1]
    wanted = gate_files(suite_config(), "gate")
    for path, data in wanted.items():
        assert tracker_file(sandbox, path) == data, path
    check = deploy(sandbox, "--publish", PIPELINE, "--check")
    assert check.code == 0 and check.out.startswith("in line: 7 files on acme/tracker main")
    again = deploy(sandbox, "--publish", PIPELINE)
    assert again.code == 0 and "nothing to commit" in again.out
    assert len(commits(sandbox)) == before + 1


def test_publish_check_names_each_differing_file_and_writes_nothing(
    sandbox: RunningSandbox,
) -> None:
    before = len(commits(sandbox))
    empty = deploy(sandbox, "--publish", PIPELINE, "--check")
    assert empty.code == 1
    assert [ln.split()[1] for ln in empty.out.splitlines() if ln.startswith("missing:")] == FILES
    assert len(commits(sandbox)) == before
    assert deploy(sandbox, "--publish", PIPELINE).code == 0
    sandbox.commit("main", {"gate/ownership.py": "# replaced\n"}, project="acme/tracker")
    one = deploy(sandbox, "--publish", PIPELINE, "--check")
    assert one.code == 1
    assert [ln for ln in one.out.splitlines() if ln.startswith(("missing", "differs"))] == [
        f"differs: gate/ownership.py (acme/tracker main at {commits(sandbox)[0]['id'][:12]})"
    ]
    other_image = deploy(sandbox, "--publish", PIPELINE, "--check", image=DIGEST[:-2] + "cd")
    assert other_image.code == 1 and "differs: gate/pipeline.yml" in other_image.out


def test_publish_without_the_deploy_token_or_by_a_developer_is_refused(
    sandbox: RunningSandbox,
) -> None:
    result = deploy(sandbox, "--publish", PIPELINE, token="")
    assert result.code == 2
    assert "set PAIRGATE_TEST_DEPLOY_TOKEN to a token of a Maintainer of acme/tracker" in result.err
    developer = deploy(sandbox, "--publish", PIPELINE, token="agents")
    assert developer.code == 2
    assert "acme/tracker refused the commit" in developer.err
    assert "You are not allowed to push into this branch" in developer.err
    assert tracker_file(sandbox, PIPELINE) is None


def _run(sandbox: RunningSandbox, between: Callable[[], None]) -> tuple[int, str]:
    out = io.StringIO()
    ctx = Context(env=env(sandbox), stdout=out, stderr=io.StringIO())
    config = suite_config()
    wanted = gate_files(config, "gate")
    code = publish_files(ctx, config, sandbox.url, wanted, check=False, between=between)
    return code, out.getvalue()


def test_a_file_changed_between_the_read_and_the_commit_is_refused(
    sandbox: RunningSandbox,
) -> None:
    assert deploy(sandbox, "--publish", PIPELINE).code == 0
    sandbox.commit("main", {"gate/ownership.py": "# old\n"}, project="acme/tracker")
    head = commits(sandbox)[0]["id"]

    def someone_edits_it() -> None:
        sandbox.commit("main", {"gate/ownership.py": "# theirs\n"}, project="acme/tracker")

    with pytest.raises(PairgateError) as refused:
        _run(sandbox, someone_edits_it)
    assert "The file has changed since you started editing it: gate/ownership.py" in str(
        refused.value
    )
    assert f"read at {head[:12]}" in str(refused.value) and "Nothing was published" in str(
        refused.value
    )
    assert tracker_file(sandbox, "gate/ownership.py") == b"# theirs\n"


def test_a_branch_that_moved_through_other_files_is_reported(sandbox: RunningSandbox) -> None:
    assert deploy(sandbox, "--publish", PIPELINE).code == 0
    sandbox.commit("main", {"gate/ownership.py": "# old\n"}, project="acme/tracker")

    def someone_commits_elsewhere() -> None:
        sandbox.commit("main", {"README.md": "moved\n"}, project="acme/tracker")

    code, out = _run(sandbox, someone_commits_elsewhere)
    assert code == 1
    assert "updated: gate/ownership.py" in out
    assert "moved between the read" in out and "commits landed that this run did not see" in out
    assert tracker_file(sandbox, "gate/ownership.py") == package_file("ownership.py").read_bytes()


# -- the flags ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--image", "$CI_REGISTRY_IMAGE/gate:latest", "names a variable"),
        ("--image", "python:3.12\ninclude: x", "is not one line of printable text"),
        ("--image", "py${X}thon", "names a variable"),
        ("--runner-tag", "gate\ninclude: evil.yml", "is not one line of printable text"),
        ("--read-token-variable", "V\x1b[2J", "is not one line of printable text"),
        ("--gate-dir", "../gate", "is not a path in the tracker repository"),
        ("--gitlab-url", "https://gitlab.example.com\n", "is not one line of printable text"),
        ("--publish", "../x.yml", "is not a YAML file's path in the tracker repository"),
        ("--publish", "x.yml\ny.yml", "is not a YAML file's path in the tracker repository"),
        ("--target", "p.yml\n", "is not one line of printable text"),
        ("--gate-out", "g\x00", "is not one line of printable text"),
    ],
)
def test_a_value_that_could_steer_the_gate_is_refused(
    sandbox: RunningSandbox, flag: str, value: str, says: str
) -> None:
    argv = flags(sandbox)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
        argv += ["--publish", PIPELINE]
    else:
        argv += [flag, value]
    result = run_cli(["deploy-pipeline", *argv], env(sandbox))
    assert result.code == 2, result.out
    assert f"pairgate deploy-pipeline: {flag} {value!r} {says}" in result.err
    assert result.err.rstrip().endswith("Nothing was written.")
    assert tracker_file(sandbox, PIPELINE) is None


def test_an_image_without_a_digest_is_written_with_a_warning_saying_why(
    sandbox: RunningSandbox,
) -> None:
    result = deploy(sandbox, "--publish", PIPELINE, image="registry.example.com/gate:3.12")
    assert result.code == 0
    assert "warning: --image registry.example.com/gate:3.12 is not pinned by digest" in result.err
    assert "whoever can push that tag" in result.err
    assert deploy(sandbox, "--publish", PIPELINE, "--check").code == 1
    pinned = deploy(sandbox, "--publish", PIPELINE)
    assert pinned.code == 0 and "warning" not in pinned.err


def test_it_needs_somewhere_to_put_the_gate(sandbox: RunningSandbox) -> None:
    result = run_cli(["deploy-pipeline", *flags(sandbox)], env(sandbox))
    assert result.code == 2 and "say where the gate goes: --target FILE" in result.err
