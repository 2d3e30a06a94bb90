"""deploy-agents: the golden renders, the placeholders, bytes, --check, and every refusal."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from pairgate.commands import deploy_agents
from pairgate.deployment.agent_templates import ORACLE_BEGIN, ORACLE_END, ROLES
from pairgate.deployment.file_set import ORACLE, starter_text
from pairgate.deployment.install import atomic_write, install
from pairgate.standalone.config import load_config
from pairgate.standalone.errors import Context, PairgateError, report
from tests.kit.names import FIXTURE_CONFIG, ROOT
from tests.kit.run import Result, run_cli

GOLDEN = ROOT / "tests" / "golden" / "agents"
EXAMPLE_CONFIG = ROOT / "examples" / "pairgate-config.json"
TEXTS = {"session": "Session text.\n", "testing": "Testing text.\n", "escalation": ""}


def deployment(
    tmp_path: Path,
    *,
    texts: dict[str, bytes | str] | None = None,
    oracle: bytes | str | None = "Reproduce it on main.\n",
) -> dict[str, str]:
    """A deployment in tmp_path: the suite's configuration, its texts and its oracle."""
    root = tmp_path / "deploy"
    (root / "agent-text").mkdir(parents=True)
    (root / "pairgate-config.json").write_text(FIXTURE_CONFIG.read_text())
    for name, body in (TEXTS if texts is None else texts).items():
        path = root / "agent-text" / name
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
    if oracle is not None:
        path = root / "liveness-oracle.md"
        path.write_bytes(oracle if isinstance(oracle, bytes) else oracle.encode())
    return {"PAIRGATE_CONFIG": str(root / "pairgate-config.json")}


def named(texts: dict[str, str]) -> dict[str, bytes | str]:
    return {f"{name}.md": body for name, body in texts.items()}


def deploy(env: dict[str, str], target: Path, *check: str) -> Result:
    return run_cli(["deploy-agents", "--target", str(target), *check], env=env)


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "agents-out"
    path.mkdir()
    return path


def minimal_templates(tmp_path: Path, **overrides: str) -> Path:
    """Four templates that render cleanly, with any role's text replaced."""
    folder = tmp_path / "templates"
    folder.mkdir(exist_ok=True)
    for role in ROLES:
        body = f"---\nname: {{{{agent:{role}}}}}\ndescription: d\n---\nbody {{{{text:t}}}}\n"
        if role == "finder":
            body += f"{ORACLE_BEGIN}\nplaceholder\n{ORACLE_END}\n"
        (folder / f"{role}.md").write_bytes(overrides.get(role, body).encode())
    return folder


def render_with(env: dict[str, str], templates: Path, target: Path, check: bool = False) -> Result:
    """Run deploy-agents over other templates, through the same translation to an exit code."""
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err)
    config = load_config(env)
    try:
        code = deploy_agents.deploy_from(
            templates, ctx=ctx, config=config, target=target, check=check
        )
    except Exception as exc:
        code = report(exc, ctx)
    return Result(int(code), out.getvalue(), err.getvalue())


# --- the renders ---------------------------------------------------------------------------


@pytest.mark.one_configuration  # the golden files are the suite configuration's render
def test_each_template_renders_to_its_golden_file(config_env: dict[str, str], target: Path) -> None:
    result = deploy(config_env, target)
    assert result.code == 0, result.err
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in GOLDEN.iterdir())
    for golden in GOLDEN.iterdir():
        assert (target / golden.name).read_bytes() == golden.read_bytes(), golden.name


@pytest.mark.one_configuration
def test_the_golden_files_are_in_line(config_env: dict[str, str]) -> None:
    result = deploy(config_env, GOLDEN, "--check")
    assert result.code == 0, result.out + result.err
    assert "in line: 4 agent definitions" in result.out


def test_the_example_deployment_renders_in_line_with_its_committed_agents() -> None:
    result = deploy(
        {"PAIRGATE_CONFIG": str(EXAMPLE_CONFIG)}, ROOT / "examples" / "agents", "--check"
    )
    assert result.code == 0, result.out + result.err


def test_the_example_agents_spell_every_command_with_cli_command() -> None:
    for path in (ROOT / "examples" / "agents").iterdir():
        text = path.read_text()
        assert "{{" not in text
        assert not re.search(r"\bpairgate (claim|handoff|accept|approve|merge-check|close)", text)
        assert f"name: {path.stem}\n" in text
    lead = (ROOT / "examples" / "agents" / "example-lead.md").read_text()
    assert "example-task merge-check --mr <iid> --mr-project <project>" in lead
    assert "--sha <approved head>" in lead


def test_placeholders_take_the_configured_and_computed_values() -> None:
    lead = (GOLDEN / "acme-lead.md").read_text()
    assert lead.startswith("---\nname: acme-lead\n")
    assert "projects/acme%2Ftracker/issues" in lead  # tracker_api_path
    assert "one tracker issue" in lead  # tracker_name
    assert "--to acme-review" in lead and "PAIRGATE_TEST_AGENT_ID" in lead


def test_the_oracle_goes_between_the_markers_which_stay() -> None:
    finder = (GOLDEN / "acme-finder.md").read_text()
    oracle = (FIXTURE_CONFIG.parent / "liveness-oracle.md").read_text()
    assert f"{ORACLE_BEGIN}\n{oracle}{ORACLE_END}\n" in finder
    assert finder.count(ORACLE_BEGIN) == finder.count(ORACLE_END) == 1


def test_one_trailing_newline_of_a_text_is_removed_and_an_empty_text_is_fine(
    tmp_path: Path, target: Path
) -> None:
    env = deployment(tmp_path, texts={"t.md": "two newlines\n\n"})
    templates = minimal_templates(tmp_path)
    assert render_with(env, templates, target).code == 0
    assert (target / "acme-lead.md").read_bytes().endswith(b"body two newlines\n\n")
    env = deployment(tmp_path / "empty", texts={"t.md": ""})
    assert render_with(env, templates, target).code == 0
    assert (target / "acme-lead.md").read_bytes().endswith(b"body \n")


def test_bytes_are_preserved_and_a_crlf_stays_a_crlf(tmp_path: Path, target: Path) -> None:
    env = deployment(tmp_path, texts={"t.md": "caf\u00e9\r\nline\r\n"}, oracle="oracle\r\n")
    finder = f"---\r\nname: {{{{agent:finder}}}}\r\n---\r\nx {{{{text:t}}}}\r\n{ORACLE_BEGIN}\r\n{ORACLE_END}\r\n"
    templates = minimal_templates(tmp_path, finder=finder)
    assert render_with(env, templates, target).code == 0
    expected = (
        f"---\r\nname: acme-finder\r\n---\r\nx caf\u00e9\r\nline\r\n"
        f"{ORACLE_BEGIN}\r\noracle\r\n{ORACLE_END}\r\n"
    ).encode()
    assert (target / "acme-finder.md").read_bytes() == expected


# --- --check and rewriting -----------------------------------------------------------------


def test_check_reports_missing_and_differing_files_and_writes_nothing(
    config_env: dict[str, str], target: Path
) -> None:
    assert deploy(config_env, target).code == 0
    (target / "acme-lead.md").unlink()
    (target / "acme-solo.md").write_bytes(b"edited\n")
    result = deploy(config_env, target, "--check")
    assert result.code == 1
    assert f"missing: {target / 'acme-lead.md'}" in result.out
    assert f"differs: {target / 'acme-solo.md'}" in result.out
    assert not (target / "acme-lead.md").exists()
    assert (target / "acme-solo.md").read_bytes() == b"edited\n"


def test_check_compares_bytes_so_a_changed_line_ending_is_drift(
    config_env: dict[str, str], target: Path
) -> None:
    assert deploy(config_env, target).code == 0
    path = target / "acme-review.md"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert deploy(config_env, target, "--check").code == 1


def test_a_second_deploy_leaves_files_in_line_untouched(
    config_env: dict[str, str], target: Path
) -> None:
    assert deploy(config_env, target).code == 0
    (target / "unrelated.md").write_text("someone else's agent\n")
    inodes = {p.name: p.stat().st_ino for p in target.iterdir()}
    result = deploy(config_env, target)
    assert result.code == 0
    assert result.out.count("in line:") == 4
    assert {p.name: p.stat().st_ino for p in target.iterdir()} == inodes


def test_a_failed_write_is_partial_and_names_what_it_had_replaced(target: Path) -> None:
    rendered = {f"acme-{role}.md": f"{role}\n".encode() for role in ROLES}
    calls: list[Path] = []

    def third_destination_turns_into_a_directory(dest: Path, data: bytes) -> None:
        calls.append(dest)
        if len(calls) == 3:
            dest.mkdir()  # someone else's change between the check and the write
        atomic_write(dest, data)

    with pytest.raises(PairgateError) as raised:
        install(
            "acme-pg deploy-agents",
            target,
            rendered,
            mode=0o644,
            again=f"acme-pg deploy-agents --target {target}",
            write=third_destination_turns_into_a_directory,
        )
    message = raised.value.message
    assert message.startswith(f"acme-pg deploy-agents: PARTIAL install in {target}: ")
    assert message.endswith(f"Fix the cause and run acme-pg deploy-agents --target {target} again.")
    assert "Already replaced: acme-lead.md, acme-review.md." in message
    assert "Not written: acme-solo.md, acme-finder.md." in message
    assert raised.value.exit_code == 2
    assert sorted(p.name for p in target.iterdir()) == [
        "acme-lead.md",
        "acme-review.md",
        "acme-solo.md",
    ]
    assert (target / "acme-lead.md").read_bytes() == b"lead\n"


# --- refusals: exit 2 and nothing written ----------------------------------------------------


def assert_refused(
    result: Result, target: Path, fragment: str, before: set[str] | None = None
) -> None:
    assert result.code == 2, result.out + result.err
    assert fragment in result.err, result.err
    assert {p.name for p in target.iterdir()} == (before or set())


@pytest.mark.parametrize(
    ("texts", "fragment"),
    [
        ({**named(TEXTS), "notes.txt": "x"}, "notes.txt is not a <name>.md file"),
        ({**named(TEXTS), "extra.md": "x"}, "extra.md is named by no template"),
        ({**named(TEXTS), ".hidden.md": "x"}, ".hidden.md is not a <name>.md file"),
        ({"session.md": "s", "testing.md": "t"}, "escalation.md is missing ({{text:escalation}})"),
        ({**named(TEXTS), "session.md": "run {{config:cli_command}}"}, "carries a placeholder"),
        ({**named(TEXTS), "session.md": "{{ agent:lead }}"}, "carries a placeholder"),
        ({**named(TEXTS), "testing.md": f"{ORACLE_END}\n"}, "carries a liveness-oracle marker"),
        ({**named(TEXTS), "testing.md": b"caf\xe9\n"}, "is not UTF-8"),
    ],
)
def test_a_bad_text_directory_refuses(
    tmp_path: Path, target: Path, texts: dict[str, bytes | str], fragment: str
) -> None:
    env = deployment(tmp_path, texts=texts)
    assert_refused(deploy(env, target), target, fragment)


def test_a_subdirectory_in_the_text_directory_refuses(tmp_path: Path, target: Path) -> None:
    env = deployment(tmp_path, texts=named(TEXTS))
    (Path(env["PAIRGATE_CONFIG"]).parent / "agent-text" / "drafts.md").mkdir()
    assert_refused(deploy(env, target), target, "drafts.md is not a <name>.md file")


def test_a_missing_text_directory_refuses(tmp_path: Path, target: Path) -> None:
    env = deployment(tmp_path, texts={})
    (Path(env["PAIRGATE_CONFIG"]).parent / "agent-text").rmdir()
    assert_refused(deploy(env, target), target, "(agent_text_dir) is not a directory")


@pytest.mark.parametrize(
    ("oracle", "fragment"),
    [
        (None, "(liveness_oracle_file) does not exist"),
        ("", "is empty"),
        (" \n\n", "is empty"),
        (f"{ORACLE_BEGIN}\nnested\n", "carries a liveness-oracle marker"),
        ("ask {{agent:lead}}\n", "carries a placeholder"),
        (b"\xff\xfe\n", "is not UTF-8"),
    ],
)
def test_a_bad_oracle_refuses(
    tmp_path: Path, target: Path, oracle: bytes | str | None, fragment: str
) -> None:
    env = deployment(tmp_path, texts=named(TEXTS), oracle=oracle)
    assert_refused(deploy(env, target), target, fragment)


FRONT = "---\nname: {{agent:lead}}\n---\n"


@pytest.mark.parametrize(
    ("role", "template", "fragment"),
    [
        ("lead", FRONT + "ask {{agent:boss}}\n", "unknown placeholder role {{agent:boss}}"),
        ("lead", FRONT + "{{config:group_id}}\n", "unknown placeholder key {{config:group_id}}"),
        ("lead", FRONT + "{{env:HOME}}\n", "unknown placeholder kind {{env:HOME}}"),
        ("lead", FRONT + "{{agent:lead}\n", "'{{' opens no placeholder"),
        ("lead", FRONT + "{{text:../etc}}\n", "is not a text name"),
        (
            "lead",
            "---\nname: acme-boss\n---\n",
            "renders to 'acme-boss', not the deployed name 'acme-lead'",
        ),
        ("lead", "no front matter\n", "renders to None"),
        ("lead", "---\nname: [unclosed\n---\n", "front matter is not YAML"),
        (
            "lead",
            FRONT + f"{ORACLE_BEGIN}\n{ORACLE_END}\n",
            "lead.md carries a liveness-oracle marker",
        ),
        ("finder", "---\nname: {{agent:finder}}\n---\n", "exactly once each (found 0 and 0"),
        (
            "finder",
            f"---\nname: {{{{agent:finder}}}}\n---\n{ORACLE_BEGIN}\n{ORACLE_END}\n{ORACLE_END}\n",
            "exactly once each (found 1 and 2",
        ),
        (
            "finder",
            f"---\nname: {{{{agent:finder}}}}\n---\n{ORACLE_END}\n{ORACLE_BEGIN}\n",
            "end marker comes before its begin",
        ),
        (
            "finder",
            f"---\nname: {{{{agent:finder}}}}\n---\n{ORACLE_BEGIN}\n{ORACLE_END}\n<!-- pairgate:liveness-oracle:begn -->\n",
            "3 mentions",
        ),
        ("solo", b"\xff".decode("latin-1"), "is not UTF-8"),
    ],
)
def test_a_bad_template_refuses(
    tmp_path: Path, target: Path, role: str, template: str, fragment: str
) -> None:
    env = deployment(tmp_path, texts={"t.md": "text"})
    templates = minimal_templates(tmp_path)
    body = template.encode("latin-1") if fragment == "is not UTF-8" else template.encode()
    (templates / f"{role}.md").write_bytes(body)
    assert_refused(render_with(env, templates, target), target, fragment)
    assert_refused(render_with(env, templates, target, check=True), target, fragment)


def test_a_missing_template_refuses(tmp_path: Path, target: Path) -> None:
    env = deployment(tmp_path, texts={"t.md": "text"})
    templates = minimal_templates(tmp_path)
    (templates / "review.md").unlink()
    assert_refused(render_with(env, templates, target), target, "review.md is missing")


def test_every_problem_is_listed_not_only_the_first(tmp_path: Path, target: Path) -> None:
    env = deployment(tmp_path, texts={**named(TEXTS), "extra.md": "x"}, oracle="")
    result = deploy(env, target)
    assert_refused(result, target, "extra.md is named by no template")
    assert "is empty" in result.err and "nothing was written" in result.err


def test_a_target_that_is_not_a_directory_refuses(
    config_env: dict[str, str], tmp_path: Path
) -> None:
    for target in (tmp_path / "absent", tmp_path / "a-file"):
        if target.name == "a-file":
            target.write_text("x")
        for check in ((), ("--check",)):
            result = deploy(config_env, target, *check)
            said = (
                f"does not exist; create it first (mkdir -p {target}). Nothing was written."
                if target.name == "absent"
                else "is not a directory. Nothing was written."
            )
            assert result.code == 2 and said in result.err
    assert not (tmp_path / "absent").exists() and (tmp_path / "a-file").read_text() == "x"


def test_a_destination_that_is_not_a_regular_file_refuses(
    config_env: dict[str, str], target: Path, tmp_path: Path
) -> None:
    (target / "acme-finder.md").mkdir()
    result = deploy(config_env, target)
    assert_refused(
        result, target, "acme-finder.md exists and is not a regular file", {"acme-finder.md"}
    )
    (target / "acme-finder.md").rmdir()
    real = tmp_path / "elsewhere.md"
    real.write_text("kept\n")
    (target / "acme-lead.md").symlink_to(real)
    assert_refused(
        deploy(config_env, target), target, "acme-lead.md exists and is not", {"acme-lead.md"}
    )
    assert real.read_text() == "kept\n"


def test_the_fixture_config_names_its_texts_relative_to_itself() -> None:
    values = json.loads(FIXTURE_CONFIG.read_text())
    assert (FIXTURE_CONFIG.parent / values["agent_text_dir"]).is_dir()
    assert (FIXTURE_CONFIG.parent / values["liveness_oracle_file"]).is_file()


def test_texts_still_as_init_wrote_them_are_named(tmp_path: Path, target: Path) -> None:
    texts = {
        **named(TEXTS),
        "session.md": starter_text("session"),
        "testing.md": starter_text("testing"),
    }
    env = deployment(tmp_path, texts=texts, oracle=ORACLE)
    result = deploy(env, target)
    assert result.code == 0, result.err
    root = tmp_path / "deploy"
    assert result.out.endswith(
        f"3 texts are still starters: {root / 'agent-text' / 'session.md'}, "
        f"{root / 'agent-text' / 'testing.md'}, {root / 'liveness-oracle.md'}. Write the "
        f"deployment's own words there, then run pairgate deploy-agents again.\n"
    )
    own = deploy(deployment(tmp_path / "own"), target)
    assert "starter" not in own.out
