"""The release artefact: check-wheel, the content hash and the version a build gets."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.kit.gitrepos import git
from tests.kit.names import ROOT

CHECK_WHEEL = ROOT / "scripts" / "check-wheel.py"
CONTENT_HASH = ROOT / "scripts" / "content-hash.sh"
RELEASE = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["metadata"][
    "hooks"
]["custom"]["release-version"]

# A source tree with one of everything, and what does not ship beside it.
SOURCE = {
    "pairgate/__init__.py": ("", 0o644),
    "pairgate/commands/ledger.py": ("", 0o644),
    "validators/validate-mr-approval-at-head.py": ("#!/usr/bin/env python3\n", 0o755),
    "hooks/block-unapproved-merge.sh": ("#!/usr/bin/env bash\n", 0o755),
    "hooks/_hooklib.sh": ("#!/usr/bin/env bash\n", 0o755),
    "agents/lead.md": ("# lead\n", 0o644),
    "templates/mr-ownership-gate/template.yml": ("spec:\n", 0o644),
    "templates/mr-ownership-gate/README.md": ("# mr-ownership-gate\n", 0o644),
    "tests/test_cli.py": ("", 0o644),
    "docs/agent-handoff.md": ("", 0o644),
}


def run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def make_source(tmp: Path) -> Path:
    source = tmp / "source"
    for name, (text, mode) in SOURCE.items():
        path = source / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
    return source


def make_wheel(
    tmp: Path, source: Path, *, drop: str = "", add: str = "", modes: dict[str, int] | None = None
) -> Path:
    """A wheel laid out as the build lays it out, from ``source``, doctored as asked."""
    wheel = tmp / "pairgate-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        members = {
            (n if n.startswith("pairgate/") else f"pairgate/{n}"): mode
            for n, (_, mode) in SOURCE.items()
            if n.split("/")[0] in ("pairgate", "validators", "hooks", "agents")
        }
        members["pairgate/components/mr-ownership-gate.yml"] = 0o644
        members["pairgate-1.0.dist-info/METADATA"] = 0o644
        members.update({add: 0o644} if add else {})
        members.update(modes or {})
        for member, mode in members.items():
            if member == drop:
                continue
            info = zipfile.ZipInfo(member)
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, "")
    return wheel


def check_wheel(wheel: Path, source: Path) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, str(CHECK_WHEEL), str(wheel), "--source", str(source)])


def test_a_sound_wheel_passes(tmp_path: Path) -> None:
    source = make_source(tmp_path)
    result = check_wheel(make_wheel(tmp_path, source), source)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.endswith(": ok\n")


def test_a_wheel_missing_a_hook_fails_naming_it(tmp_path: Path) -> None:
    source = make_source(tmp_path)
    wheel = make_wheel(tmp_path, source, drop="pairgate/hooks/block-unapproved-merge.sh")
    result = check_wheel(wheel, source)
    assert result.returncode == 1
    assert result.stderr == (
        f"{wheel}: missing pairgate/hooks/block-unapproved-merge.sh "
        "(from hooks/block-unapproved-merge.sh)\n"
    )


@pytest.mark.parametrize(
    ("member", "why"),
    [
        ("tests/test_cli.py", "it is outside the pairgate package"),
        ("pairgate/tests/test_cli.py", "the wheel ships no tests"),
        ("pairgate/test_gate.py", "the wheel ships no tests"),
        ("pairgate/conftest.py", "the wheel ships no tests"),
        ("docs/agent-handoff.md", "it is outside the pairgate package"),
        ("pairgate/docs/agent-handoff.md", "the wheel ships no docs"),
        ("pairgate/examples/pairgate-config.json", "the wheel ships no examples"),
        ("pairgate/templates/mr-ownership-gate/template.yml", "the wheel ships no templates"),
        ("pairgate/__pycache__/main.cpython-311.pyc", "the wheel ships no __pycache__"),
    ],
)
def test_a_wheel_carrying_a_test_doc_or_template_fails(
    tmp_path: Path, member: str, why: str
) -> None:
    source = make_source(tmp_path)
    wheel = make_wheel(tmp_path, source, add=member)
    result = check_wheel(wheel, source)
    assert result.returncode == 1
    assert result.stderr == f"{wheel}: carries {member}: {why}\n"


@pytest.mark.parametrize(
    "member", ["pairgate/hooks/_hooklib.sh", "pairgate/validators/validate-mr-approval-at-head.py"]
)
def test_a_hook_or_validator_without_its_run_bit_fails(tmp_path: Path, member: str) -> None:
    source = make_source(tmp_path)
    wheel = make_wheel(tmp_path, source, modes={member: 0o644})
    result = check_wheel(wheel, source)
    assert result.returncode == 1
    assert result.stderr == f"{wheel}: {member} has mode 0644; it is run by path and must be 0755\n"


def test_a_wheel_missing_a_components_template_fails_naming_it(tmp_path: Path) -> None:
    # deploy-pipeline renders the tracker-held pipeline from it; the component's README and
    # any other file beside its template do not ship.
    source = make_source(tmp_path)
    wheel = make_wheel(tmp_path, source, drop="pairgate/components/mr-ownership-gate.yml")
    result = check_wheel(wheel, source)
    assert result.returncode == 1
    assert result.stderr == (
        f"{wheel}: missing pairgate/components/mr-ownership-gate.yml "
        "(from templates/mr-ownership-gate/template.yml)\n"
    )


def test_what_is_required_follows_the_source_tree(tmp_path: Path) -> None:
    source = make_source(tmp_path)
    wheel = make_wheel(tmp_path, source)
    (source / "agents" / "review.md").write_text("# review\n")
    result = check_wheel(wheel, source)
    assert result.returncode == 1
    assert "missing pairgate/agents/review.md (from agents/review.md)" in result.stderr


def test_an_unreadable_wheel_exits_2(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.whl"
    bogus.write_text("not a zip")
    assert check_wheel(bogus, make_source(tmp_path)).returncode == 2


# --- the content hash and the version ---------------------------------------------------------

SHIPPED = ("pyproject.toml", "hatch_build.py", "README.md", "LICENSE", "scripts/content-hash.sh")


def copy_project(dest: Path) -> Path:
    """What a build needs from this checkout, without tests, docs or caches."""
    for name in SHIPPED:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for tree in ("pairgate", "validators", "hooks", "agents"):
        shutil.copytree(ROOT / tree, dest / tree, ignore=ignore)
    for template in ROOT.glob("templates/*/template.yml"):  # the components the wheel carries
        (dest / template.relative_to(ROOT)).parent.mkdir(parents=True)
        shutil.copy2(template, dest / template.relative_to(ROOT))
    return dest


def content_hash(project: Path) -> str:
    result = run(["bash", str(project / "scripts" / "content-hash.sh")])
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_content_hash_ignores_mtimes_and_sees_bytes_and_run_bits(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    first = content_hash(project)
    assert len(first) == 12 and all(c in "0123456789abcdef" for c in first)
    os.utime(project / "pairgate" / "main.py", (0, 0))
    assert content_hash(project) == first
    (project / "agents" / "extra.md").write_text("x")
    assert content_hash(project) != first
    (project / "agents" / "extra.md").unlink()
    (project / "pairgate" / "main.py").chmod(0o755)
    assert content_hash(project) != first
    (project / "pairgate" / "main.py").chmod(0o644)
    assert content_hash(project) == first


def test_the_content_hash_is_the_same_in_a_checkout_and_out_of_one(tmp_path: Path) -> None:
    plain = copy_project(tmp_path / "plain")
    checkout = copy_project(tmp_path / "checkout")
    git(checkout, "init", "-q")
    assert content_hash(checkout) == content_hash(plain)


@pytest.mark.parametrize("checkout", [False, True], ids=["plain", "checkout"])
def test_a_symlinked_file_counts_as_the_file_the_wheel_ships(
    tmp_path: Path, checkout: bool
) -> None:
    # hatchling ships a symlink to a file as its target's bytes, so the hash must see them: else
    # two different payloads would share a version.
    linked = copy_project(tmp_path / "linked")
    copied = copy_project(tmp_path / "copied")
    if checkout:
        git(linked, "init", "-q")
        git(copied, "init", "-q")
    before = content_hash(linked)
    (linked / "pairgate" / "extra.py").symlink_to("main.py")
    shutil.copy2(copied / "pairgate" / "main.py", copied / "pairgate" / "extra.py")
    assert content_hash(linked) == content_hash(copied) != before


def build(project: Path, out: Path) -> str:
    result = run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), "."],
        cwd=project,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = out.glob("*.whl")
    return wheel.name.split("-")[1]


@pytest.mark.slow
def test_a_build_is_versioned_by_its_content_unless_it_is_the_tagged_release(
    tmp_path: Path,
) -> None:
    pytest.importorskip("hatchling")
    pytest.importorskip("build")
    project = copy_project(tmp_path / "p")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "Release")
    assert build(project, tmp_path / "untagged") == f"{RELEASE}+{content_hash(project)}"

    git(project, "tag", f"v{RELEASE}")
    assert build(project, tmp_path / "tagged") == RELEASE

    # The tag is there, but what ships differs from it: not the release.
    (project / "pairgate" / "main.py").write_text("# edited\n", encoding="utf-8")
    edited = build(project, tmp_path / "edited")
    assert edited == f"{RELEASE}+{content_hash(project)}"
    assert edited.split("+")[1] != content_hash(copy_project(tmp_path / "fresh"))


def test_every_component_is_in_the_wheel_and_in_the_version_hash() -> None:
    """A new templates/<name>/template.yml must ship (pyproject's force-include) and count in
    the content hash (hatch_build.py): a component missed by either is a wheel check failure
    only the release build would show."""
    import tomllib

    components = sorted(
        p.relative_to(ROOT).as_posix() for p in ROOT.glob("templates/*/template.yml")
    )
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    included = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    for component in components:
        name = component.split("/")[1]
        assert included.get(component) == f"pairgate/components/{name}.yml", component
        assert f'"{component}"' in (ROOT / "hatch_build.py").read_text(), component
