"""The default world (docs/sandbox.md lists it). Ids and tokens are fixed: tests, the suite's
configuration (tests/fixtures/pairgate-config.json) and ``--config-out`` rely on them."""

from __future__ import annotations

from typing import Any

from pairgate.sandbox import repo
from pairgate.sandbox.model import World
from pairgate.sandbox.records import (
    DEVELOPER,
    MAINTAINER,
    REPORTER,
    Group,
    Issue,
    Options,
    Project,
    User,
)

# key in the ready line -> (id, username, display name, bot)
USERS: dict[str, tuple[int, str, str, bool]] = {
    "agents": (10, "agents", "Agents", False),
    "review_bot": (11, "review-bot", "Review Bot", False),
    "renovate_bot": (12, "renovate-bot", "Renovate Bot", True),
    "maintainer": (13, "maintainer", "Maintainer", False),
    "reporter": (14, "reporter", "Reporter", False),
}
GROUP_ID, GROUP_PATH = 100, "acme"
TRACKER_PROJECT = "acme/tracker"
TRACKING_ISSUE_TITLE = "Automation tracking issue"
CREATED = "2024-01-01T00:00:00.000Z"

# First ids per table: distinct ranges make an id passed where an iid belongs fail loudly.
FIRST_IDS = {"issue": 501, "merge_request": 701, "pipeline": 901, "note": 1001, "job": 5001}


def token(key: str) -> str:
    """The personal access token (scope api) of a default user."""
    return f"sandbox-{key.replace('_', '-')}-token"


def read_token(key: str) -> str:
    """A read_api token of the same user: GETs only, writes answer 403 insufficient_scope."""
    return f"sandbox-{key.replace('_', '-')}-read-token"


def build(options: Options | None = None) -> World:
    world = World(options=options or Options())
    for key, (uid, username, name, bot) in USERS.items():
        world.users[uid] = User(uid, username, name, bot=bot)
        world.tokens[token(key)] = [uid, "api"]
        world.tokens[read_token(key)] = [uid, "read_api"]
    ids = {key: spec[0] for key, spec in USERS.items()}
    acme_members = {ids[k]: DEVELOPER for k in ("agents", "review_bot", "renovate_bot")}
    acme_members |= {ids["maintainer"]: MAINTAINER, ids["reporter"]: REPORTER}
    world.groups[100] = Group(100, "acme", "Acme", acme_members)
    world.groups[101] = Group(101, "partner", "Partner", {ids["maintainer"]: MAINTAINER})
    world.groups[102] = Group(102, "outside", "Outside", {ids["maintainer"]: MAINTAINER})
    for pid, group_id, path, name in (
        (1, 100, "tracker", "Tracker"),
        (2, 100, "app", "App"),
        (3, 101, "shared-lib", "Shared Lib"),
        (4, 102, "app", "App"),
    ):
        project = Project(pid, path, name, group_id, CREATED)
        world.projects[pid] = project
        full = world.full_path(project)
        first = repo.make_commit(
            world,
            project,
            parents=[],
            tree={"README.md": f"# {full}\n"},
            message="Initial commit\n",
            author=None,
            date=CREATED.replace("Z", "+00:00"),
        )
        project.branches["main"] = first.id
    world.projects[3].shared_with[GROUP_ID] = DEVELOPER
    apply_switches(world)
    for kind, first_id in FIRST_IDS.items():
        world.counters[kind] = first_id
    now = world.stamp()
    issue_id = world.next_id("issue")
    tracker = world.projects[1]
    world.add_issue(
        Issue(
            issue_id,
            world.next_iid(tracker, "issue"),
            tracker.id,
            TRACKING_ISSUE_TITLE,
            "Work that no other issue owns is claimed here.",
            ids["maintainer"],
            now,
            now,
        )
    )
    return world


def apply_switches(world: World) -> None:
    """The switches that stand for project settings (``pipelines_must_succeed``) seed every
    project's setting; a PUT /projects/:id changes one project's afterwards."""
    for project in world.projects.values():
        succeeds = world.options.pipelines_must_succeed
        project.settings["only_allow_merge_if_pipeline_succeeds"] = succeeds


def ready_line(url: str, world: World) -> dict[str, Any]:
    """The JSON line ``pairgate sandbox`` prints when ready (docs/sandbox.md, "Running it")."""
    users = {}
    for key, (uid, _, _, _) in USERS.items():
        user = world.users[uid]
        users[key] = {
            "id": user.id,
            "username": user.username,
            "token": token(key),
            "read_token": read_token(key),
        }
    return {
        "url": url,
        "api_url": f"{url}/api/v4",
        "sandbox_api": f"{url}/-/sandbox",
        "group": {"id": GROUP_ID, "path": GROUP_PATH},
        "tracker_project": TRACKER_PROJECT,
        "projects": [
            {"id": p.id, "path_with_namespace": world.full_path(p)}
            for p in sorted(world.projects.values(), key=lambda p: p.id)
        ],
        "users": users,
    }


def pairgate_config(world: World, *, env_prefix: str = "PAIRGATE_SANDBOX") -> dict[str, Any]:
    """A complete pairgate configuration for the default world (every ownership.CONFIG_KEYS)."""
    return {
        "tracker_project": TRACKER_PROJECT,
        "group_path": GROUP_PATH,
        "group_id": str(GROUP_ID),
        "env_prefix": env_prefix,
        "agent_identity_prefix": GROUP_PATH,
        "review_bot_token_file": "review-bot-token",
        "deployed_paths": ["pairgate", "validators", "hooks"],
        "generic_tracking_issue": 1,
        "liveness_oracle_file": "liveness-oracle.md",
        "cli_command": "pairgate",
        "renovate_bot_user_id": USERS["renovate_bot"][0],
        "renovate_branch_prefix": "renovate/",
        "renovate_exempt_namespaces": [GROUP_PATH],
        "cli_install_command": "pip install --upgrade pairgate",
        "hooks_install_command": "pairgate deploy-hooks --target .claude/hooks",
        "agent_text_dir": "agent-text",
        "handoff_doc": "docs/agent-handoff.md",
        "ledger_author_user_ids": [USERS["agents"][0]],
    }
