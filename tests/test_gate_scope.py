"""The merge gate's pure verdicts: citations, scope, the Renovate exemption, the roster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pairgate.standalone.config import Config, load_config
from pairgate.standalone.errors import ConfigError
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.scope import (
    AutomationFamily,
    Scope,
    cited_issues,
    decide_scope,
    load_automation_families,
    renovate_exemption_gaps,
    roster_path,
)
from tests.kit.names import FIXTURE_CONFIG, FIXTURES, TRACKER, mr_facts


@pytest.fixture
def config() -> Config:
    return load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})


def cites(text: str, mr_project: str = "acme/app") -> tuple[int, ...]:
    return cited_issues(text, mr_project=mr_project, tracker=TRACKER)


@pytest.mark.parametrize(
    ("text", "project", "expected"),
    [
        ("Related to acme/tracker#12", "acme/app", (12,)),
        ("Related to #12", "acme/tracker", (12,)),
        ("Related to #12", "acme/app", ()),  # that is acme/app's own issue 12
        ("https://gitlab.example.com/acme/tracker/-/issues/7", "acme/app", (7,)),
        ("see https://gitlab.example.com/acme/tracker/issues/7#note_3", "acme/app", (7,)),
        ("https://gitlab.example.com/acme/tracker/-/work_items/8", "acme/app", (8,)),
        ("ACME/Tracker#4", "acme/app", (4,)),  # GitLab paths are case-insensitive
        ("bigacme/tracker#3 and acme/tracker-old#5", "acme/app", ()),
        ("acme/tracker/sub#3", "acme/app", ()),
        ("https://gitlab.example.com/x/acme/tracker/-/issues/9", "acme/app", ()),
        ("acme/tracker#12abc and #12", "acme/app", ()),
        ("&#39;quoted&#39; and ##5", "acme/tracker", ()),
        ("acme/tracker!5 is an MR, acme/tracker#0 is nothing", "acme/app", ()),
        ("acme/tracker#3, acme/tracker#2, again acme/tracker#3", "acme/app", (3, 2)),
        ("#5 in the tracker, acme/tracker#6 too", "acme/tracker", (5, 6)),
        ("Fixes #5.\n\nPart of (#6)", "acme/tracker", (5, 6)),
    ],
)
def test_citations(text: str, project: str, expected: tuple[int, ...]) -> None:
    assert cites(text, project) == expected


RENOVATE_MR = mr_facts(  # a Renovate merge request, bound to no diff
    iid=3,
    title="Bump requests",
    description="",
    author_id=12,
    source_branch="renovate/requests-2.x",
    labels=("dependencies", "renovate"),
    target_branch="",
    base_sha=None,
    start_sha=None,
)


def scope(mr: MergeRequestFacts, config: Config, **kw: object) -> Scope:
    cited = kw.pop("cited", ())
    in_group = kw.pop("in_group", True)
    families = kw.pop("families", ())
    return decide_scope(
        mr,
        cited=cited,
        in_group=in_group,
        config=config,
        families=families,  # type: ignore[arg-type]
    )


def test_renovate_with_all_four_conditions_is_exempt(config: Config) -> None:
    assert renovate_exemption_gaps(RENOVATE_MR, config) == []
    assert scope(RENOVATE_MR, config).code == "renovate"


@pytest.mark.parametrize(
    ("change", "gap"),
    [
        ({"labels": ("dependencies",)}, "label"),
        ({"author_id": 10}, "author is user id 10"),
        ({"source_branch": "renovatebot/x"}, "source branch"),
        ({"project": "partner/shared-lib"}, "in none of renovate_exempt_namespaces ['acme']"),
    ],
)
def test_renovate_missing_any_one_condition_stays_in_scope(
    config: Config, change: dict[str, object], gap: str
) -> None:
    mr = RENOVATE_MR._replace(**change)  # type: ignore[arg-type]
    gaps = renovate_exemption_gaps(mr, config)
    assert len(gaps) == 1 and gap in gaps[0]
    result = scope(mr, config)
    assert result.in_scope and result.code == "in-scope"
    if "labels" not in change:
        assert gap in result.detail  # the label was there, so the detail says why it counts


def test_renovate_namespace_must_be_followed_by_a_slash(config: Config) -> None:
    assert scope(RENOVATE_MR._replace(project="acme-evil/app"), config, in_group=True).in_scope
    assert scope(RENOVATE_MR._replace(project="acme/sub/app"), config).code == "renovate"


def test_a_configuration_without_the_namespaces_key_exempts_nothing(
    config: Config, tmp_path: Path
) -> None:
    assert not scope(RENOVATE_MR, config).in_scope  # the fixture's namespaces exempt it
    values = json.loads(FIXTURE_CONFIG.read_text())
    del values["renovate_exempt_namespaces"]
    (tmp_path / "older.json").write_text(json.dumps(values))
    older = load_config({"PAIRGATE_CONFIG": str(tmp_path / "older.json")})
    assert scope(RENOVATE_MR, older).in_scope


def test_outside_the_group_is_not_gated_and_comes_first(config: Config) -> None:
    result = scope(RENOVATE_MR._replace(project="outside/app"), config, in_group=False, cited=(5,))
    assert (result.in_scope, result.code) == (False, "outside-group")


def test_generic_issue_only_is_out_of_scope_but_not_with_another(
    config: Config,
) -> None:
    plain = RENOVATE_MR._replace(labels=())
    assert scope(plain, config, cited=(1,)).code == "generic-issue-only"
    assert scope(plain, config, cited=(1, 5)).in_scope
    assert scope(plain, config, cited=()).in_scope


@pytest.mark.parametrize(
    ("author", "expected"),
    [
        (12, "generic-issue-only"),  # renovate_bot_user_id
        (13, "generic-issue-only"),  # a roster family's author, on any branch
        (10, "in-scope"),  # the agents' account: work, with no issue of its own
        (14, "in-scope"),  # anyone else
    ],
)
def test_the_generic_issue_exempts_automation_accounts_only(
    config: Config, author: int, expected: str
) -> None:
    mr = RENOVATE_MR._replace(labels=(), author_id=author, source_branch="chore")
    found = scope(mr, config, cited=(1,), families=(FAMILY,))
    assert found.code == expected
    if expected == "in-scope":
        assert found.detail.endswith(
            "not an automation account: no family of the roster is authored by it"
        )


def test_generic_issue_null_means_none(config: Config) -> None:
    none = config._replace(generic_tracking_issue=None)
    assert scope(RENOVATE_MR._replace(labels=()), none, cited=(1,)).in_scope


FAMILY = AutomationFamily("nightly", author_id=13, branch_prefix="automation/n/", cites_issue=None)
CITING = AutomationFamily("mirror", author_id=13, branch_prefix="automation/m/", cites_issue=9)


@pytest.mark.parametrize(
    ("author", "branch", "cited", "expected"),
    [
        (13, "automation/n/2026-01-01", (), "automation"),
        (13, "automation/m/x", (9,), "automation"),
        (14, "automation/n/x", (), "in-scope"),  # another author
        (13, "automation/nx", (), "in-scope"),  # prefix, not a look-alike
        (13, "automation/n/x", (4,), "in-scope"),  # it cites real work
        (13, "automation/m/x", (9, 4), "in-scope"),  # the family's issue and another
        (13, "automation/m/x", (), "in-scope"),  # the family's issue is missing
        (13, "automation/m/x", (1, 9), "automation"),  # the generic issue beside it
    ],
)
def test_automation_families(
    config: Config,
    author: int,
    branch: str,
    cited: tuple[int, ...],
    expected: str,
) -> None:
    mr = RENOVATE_MR._replace(author_id=author, source_branch=branch, labels=())
    assert scope(mr, config, cited=cited, families=(FAMILY, CITING)).code == expected


def test_the_shipped_rosters_load() -> None:
    root = Path(__file__).resolve().parent.parent
    assert [
        f.name for f in load_automation_families(root / "examples" / "automation_mr_families.py")
    ] == [
        "nightly-lockfiles",
        "schema-mirror",
    ]
    fixture = load_automation_families(FIXTURES / "automation_mr_families.py")
    assert fixture[0] == AutomationFamily("nightly-lockfiles", 13, "automation/lockfiles/", None)


def test_the_roster_is_found_beside_the_configuration(config: Config) -> None:
    assert roster_path(config) == FIXTURES / "automation_mr_families.py"
    assert roster_path(config, Path("/x/r.py")) == Path("/x/r.py")
    assert load_automation_families(None) == ()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("import os\nFAMILIES = []\n", "line 1: the file holds one assignment"),
        ("FAMILIES = [dict(name='x')]\n", "must be a literal"),
        ("FAMILIES = []\nFAMILIES = []\n", "line 2"),
        ("OTHER = []\n", "line 1"),
        ('"""doc only"""\n', "no FAMILIES"),
        ("FAMILIES = [\n", "line"),
        ("FAMILIES = {}\n", "is not of type 'array'"),
        (
            "FAMILIES = [{'name': 'x', 'author_id': '12', 'branch_prefix': 'b/', 'cites_issue': None}]",
            "FAMILIES/0/author_id",
        ),
        ("FAMILIES = [{'name': 'x', 'author_id': 1, 'branch_prefix': 'b/'}]", "cites_issue"),
        (
            "FAMILIES = [{'name': 'x', 'author_id': 1, 'branch_prefix': 'b/', 'cites_issue': None, 'labels': []}]",
            "labels",
        ),
        (
            "FAMILIES = [{'name': 'x', 'author_id': 1, 'branch_prefix': '', 'cites_issue': None}]",
            "branch_prefix",
        ),
        (
            "F = 1\n",
            "line 1",
        ),
        (
            "FAMILIES = ["
            + ", ".join(
                repr({"name": "x", "author_id": 1, "branch_prefix": p, "cites_issue": None})
                for p in ("a/", "b/")
            )
            + "]",
            "'x' is named twice",
        ),
    ],
)
def test_a_malformed_roster_is_a_configuration_error(
    tmp_path: Path, source: str, message: str
) -> None:
    roster = tmp_path / "automation_mr_families.py"
    roster.write_text(source, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_automation_families(roster)
    assert message in caught.value.message and str(roster) in caught.value.message


def test_the_roster_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    roster = tmp_path / "automation_mr_families.py"
    roster.write_text(f"open({str(marker)!r}, 'w')\nFAMILIES = []\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        load_automation_families(roster)
    assert not marker.exists()
