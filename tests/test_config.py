"""The configuration: PAIRGATE_CONFIG or the file beside ownership.py, exactly CONFIG_KEYS."""

from __future__ import annotations

import functools
import json
import operator
import re
import shutil
import typing
from pathlib import Path
from typing import Any

import pytest

from pairgate.standalone.config import (
    CONFIG_KEYS,
    CONFIG_SCHEMA,
    OPTIONAL_CONFIG_KEYS,
    OPTIONAL_DEFAULTS,
    Config,
    load_config,
)
from tests.kit.names import FIXTURE_CONFIG, ROOT
from tests.kit.run import PAIRGATE, run_cli, run_program


def fixture_values() -> dict:
    return json.loads(FIXTURE_CONFIG.read_text())


def write_config(tmp_path: Path, values: dict, name: str = "cfg.json") -> dict[str, str]:
    path = tmp_path / name
    path.write_text(json.dumps(values))
    return {"PAIRGATE_CONFIG": str(path)}


def test_fixture_and_example_configurations_load() -> None:
    for path in (FIXTURE_CONFIG, ROOT / "examples" / "pairgate-config.json"):
        config = load_config({"PAIRGATE_CONFIG": str(path)})
        written = json.loads(path.read_text())
        # The fixture leaves the optional review_author_user_ids out (the suite's deployment
        # rests on names and sessions); the example sets it. An absent key reads as its default.
        absent = set(CONFIG_KEYS) - set(written)
        assert absent <= ({"review_author_user_ids"} if path == FIXTURE_CONFIG else set())
        assert config.as_json() == {**written, **{key: [] for key in absent}}


def test_config_keys_are_the_seventeen_of_the_specification_plus_ledger_and_review_authors() -> (
    None
):
    assert len(CONFIG_KEYS) == 19
    assert "ledger_author_user_ids" in CONFIG_KEYS
    assert "review_author_user_ids" in CONFIG_KEYS
    assert set(CONFIG_SCHEMA["properties"]) == set(CONFIG_KEYS)


_JSON_SCALARS: dict[str, Any] = {"string": str, "integer": int, "null": type(None)}


def python_type(schema: dict[str, Any]) -> Any:
    """The Python type a value of this schema has in a Config (an array is a tuple)."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    types = [
        tuple[python_type(schema["items"]), ...] if kind == "array" else _JSON_SCALARS[kind]
        for kind in kinds
    ]
    return functools.reduce(operator.or_, types)


def test_the_schema_and_the_config_class_hold_the_same_keys_types_and_order() -> None:
    hints = typing.get_type_hints(Config)
    keys = [name for name in Config._fields if name != "path"]
    properties = CONFIG_SCHEMA["properties"]
    assert list(properties) == keys == list(CONFIG_KEYS)
    for key, schema in properties.items():
        assert hints[key] == python_type(schema), key
    assert set(keys) > OPTIONAL_CONFIG_KEYS
    for key, absent in OPTIONAL_DEFAULTS.items():  # what an absent key reads as: its own type
        assert isinstance(absent, typing.get_origin(hints[key]) or hints[key]), key
    assert hints["path"] == Path


def test_the_readme_lists_the_keys_in_the_classs_order() -> None:
    section = (ROOT / "README.md").read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE) == list(CONFIG_KEYS)


def test_config_has_no_item_access() -> None:
    # config.tracker_project, never config["tracker_project"]: a misspelt key is an
    # AttributeError that mypy reports, not a KeyError at run time.
    config = load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    with pytest.raises(TypeError):
        config["tracker_project"]


def test_no_configuration_is_a_missing_configuration_error() -> None:
    # With no PAIRGATE_CONFIG the file beside ownership.py is read; the checkout has none.
    assert not (ROOT / "pairgate" / "pairgate-config.json").exists()
    result = run_cli(["claim", "1", "--role", "lead"], env={})
    assert result.code == 2
    assert "missing configuration" in result.err
    assert "pairgate-config.json" in result.err


def test_a_set_variable_never_falls_through_to_the_file_beside(tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(ROOT / "pairgate" / "ownership.py", flat)
    shutil.copy(FIXTURE_CONFIG, flat / "pairgate-config.json")
    result = run_program(
        ["python3", "-B", str(flat / "ownership.py"), "check-config"],
        env={"PAIRGATE_CONFIG": "/nonexistent"},
    )
    assert result.code == 2
    assert "PAIRGATE_CONFIG=/nonexistent does not exist" in result.err


def test_status_with_a_nonexistent_named_file_exits_2() -> None:
    result = run_cli(["status", "1"], env={"PAIRGATE_CONFIG": "/nonexistent"})
    assert result.code == 2
    assert "missing configuration: PAIRGATE_CONFIG=/nonexistent" in result.err


def test_empty_variable_is_an_error_not_the_file_beside() -> None:
    result = run_cli(["status", "1"], env={"PAIRGATE_CONFIG": " "})
    assert result.code == 2
    assert "PAIRGATE_CONFIG is set but empty" in result.err


def test_ownership_py_alone_in_an_empty_directory_loads_the_file_beside_it(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pairgate" / "ownership.py", tmp_path)
    shutil.copy(FIXTURE_CONFIG, tmp_path / "pairgate-config.json")
    result = run_program(["python3", "-B", "ownership.py", "check-config"], cwd=tmp_path)
    assert result.code == 0, result.err
    assert f"configuration OK: {tmp_path / 'pairgate-config.json'}" in result.out


def test_ownership_py_alone_without_a_file_beside_it_is_missing(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pairgate" / "ownership.py", tmp_path)
    result = run_program(["python3", "-B", "ownership.py", "check-config"], cwd=tmp_path)
    assert result.code == 2
    assert "missing configuration" in result.err


def test_ownership_py_imports_nothing_from_the_package() -> None:
    source = (ROOT / "pairgate" / "ownership.py").read_text()
    assert "import pairgate" not in source
    assert "from pairgate" not in source


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON (line 1"),
        ("[1, 2]", "not a JSON object"),
        ("", "not JSON"),
    ],
)
def test_malformed_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "cfg.json"
    path.write_text(content)
    result = run_cli(["status", "1"], env={"PAIRGATE_CONFIG": str(path)})
    assert result.code == 2
    assert str(path) in result.err
    assert message in result.err


def test_unreadable_file(tmp_path: Path) -> None:
    result = run_cli(["status", "1"], env={"PAIRGATE_CONFIG": str(tmp_path)})  # a directory
    assert result.code == 2
    assert "cannot read the configuration" in result.err


def test_one_extra_key_exits_2_naming_it(tmp_path: Path) -> None:
    env = write_config(tmp_path, {**fixture_values(), "colour": "blue"})
    result = run_cli(["status", "1"], env=env)
    assert result.code == 2
    assert "unknown key 'colour'" in result.err
    assert env["PAIRGATE_CONFIG"] in result.err


@pytest.mark.parametrize("key", sorted(set(CONFIG_KEYS) - OPTIONAL_CONFIG_KEYS))
def test_each_missing_key_exits_2_naming_it(tmp_path: Path, key: str) -> None:
    values = fixture_values()
    del values[key]
    result = run_cli(["status", "1"], env=write_config(tmp_path, values))
    assert result.code == 2
    assert f"missing key {key!r}" in result.err


def test_renovate_exempt_namespaces_may_be_absent_and_then_exempts_nothing(tmp_path: Path) -> None:
    values = fixture_values()
    del values["renovate_exempt_namespaces"]
    config = load_config(write_config(tmp_path, values))
    assert config.renovate_exempt_namespaces == ()


def test_the_optional_keys_are_exactly_the_two_that_may_be_absent() -> None:
    assert {"renovate_exempt_namespaces", "review_author_user_ids"} == OPTIONAL_CONFIG_KEYS


@pytest.mark.parametrize("value", [None, []])
def test_review_author_user_ids_absent_or_empty_is_names_and_sessions(
    tmp_path: Path, value: list[int] | None
) -> None:
    values = fixture_values()
    if value is not None:
        values["review_author_user_ids"] = value
    config = load_config(write_config(tmp_path, values))
    assert (config.review_author_user_ids, config.account_bound) == ((), False)
    bound = load_config(write_config(tmp_path, {**values, "review_author_user_ids": [11]}))
    assert (bound.review_author_user_ids, bound.account_bound) == ((11,), True)
    assert bound.record_author_ids == {10, 11}  # the review account's notes are ledger notes


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("tracker_project", "tracker"),
        ("tracker_project", 5),
        ("group_path", ""),
        ("group_id", 100),
        ("group_id", "10a"),
        ("env_prefix", "pairgate"),
        ("env_prefix", "1ABC"),
        ("env_prefix", "A-B"),
        ("agent_identity_prefix", "Acme"),
        ("review_bot_token_file", ""),
        ("deployed_paths", []),
        ("deployed_paths", "pairgate"),
        ("generic_tracking_issue", "7"),
        ("generic_tracking_issue", 0),
        ("liveness_oracle_file", "/etc/oracle.md"),
        ("cli_command", "Pairgate"),
        ("cli_command", "-pairgate"),
        ("cli_command", "pair gate"),
        ("renovate_bot_user_id", "12"),
        ("renovate_bot_user_id", True),
        ("renovate_branch_prefix", ""),
        ("renovate_exempt_namespaces", "acme"),
        ("cli_install_command", "  "),
        ("hooks_install_command", None),
        ("agent_text_dir", "/abs/texts"),
        ("handoff_doc", ""),
        ("ledger_author_user_ids", []),
        ("ledger_author_user_ids", ["10"]),
        ("ledger_author_user_ids", [10, 10]),
        ("review_author_user_ids", 11),
        ("review_author_user_ids", ["11"]),
        ("review_author_user_ids", [11, 11]),
        ("review_author_user_ids", [0]),
    ],
)
def test_each_wrong_type_or_grammar_exits_2_naming_the_key(
    tmp_path: Path, key: str, value: object
) -> None:
    result = run_cli(["status", "1"], env=write_config(tmp_path, {**fixture_values(), key: value}))
    assert result.code == 2
    assert f"key {key!r}" in result.err


def test_tracker_project_must_be_inside_group_path(tmp_path: Path) -> None:
    env = write_config(tmp_path, {**fixture_values(), "tracker_project": "other/tracker"})
    result = run_cli(["status", "1"], env=env)
    assert result.code == 2
    assert "key 'tracker_project'" in result.err
    assert "not a project in group_path 'acme'" in result.err


def test_group_prefix_is_matched_on_a_path_segment(tmp_path: Path) -> None:
    env = write_config(tmp_path, {**fixture_values(), "tracker_project": "acme-evil/tracker"})
    assert run_cli(["status", "1"], env=env).code == 2


def test_relative_paths_resolve_against_the_configuration_file(tmp_path: Path) -> None:
    env = write_config(tmp_path, fixture_values())
    config = load_config(env)
    assert config.relative("agent_text_dir") == tmp_path / "agent-text"
    assert config.env_name("AGENT_ID") == "PAIRGATE_TEST_AGENT_ID"


def test_the_program_form_reports_the_same_error() -> None:
    result = run_program([*PAIRGATE, "claim", "1", "--role", "lead"])
    assert result.code == 2
    assert "missing configuration" in result.err


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("cli_command", "pairgate\n", "is not a whole match; expected lower case letters"),
        ("env_prefix", "PAIRGATE_TEST\n", "is not a whole match"),
        ("handoff_doc", "docs/x.md\ninclude: evil.yml", "holds a control character"),
        ("renovate_exempt_namespaces", ["acme\n"], "is not a whole match"),
        ("hooks_install_command", "pairgate deploy-hooks\x1b[2J", "holds a control character"),
    ],
)
def test_a_value_matches_whole_and_is_one_line(
    tmp_path: Path, key: str, value: object, says: str
) -> None:
    """A JSON Schema pattern is a search, and Python's ``$`` matches before a final newline:
    the configuration's own rule holds every value whole (fullmatch) and on one line."""
    result = run_cli(["status", "1"], env=write_config(tmp_path, {**fixture_values(), key: value}))
    assert result.code == 2
    assert f"key {key!r}: " in result.err and says in result.err
