"""The default world (docs/sandbox.md lists it). Ids and tokens are fixed: tests, the suite's
configuration (tests/fixtures/pairgate-config.json) and ``--config-out`` rely on them."""

from __future__ import annotations

from typing import Any

from pairgate.sandbox import protection, repo
from pairgate.sandbox.model import World
from pairgate.sandbox.records import (
    DEVELOPER,
    MAINTAINER,
    REPORTER,
    Group,
    Issue,
    Options,
    Project,
    Token,
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
FIRST_IDS = {
    "issue": 501, "merge_request": 701, "pipeline": 901, "note": 1001, "job": 5001,
    "protected_branch": 301, "protected_access": 8001,
}  # fmt: skip


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
        for secret, scope in ((token(key), "api"), (read_token(key), "read_api")):
            name = secret.removesuffix("-token")
            world.tokens[secret] = Token(len(world.tokens) + 1, uid, name, [scope], CREATED)
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
    for kind, first_id in FIRST_IDS.items():
        world.counters[kind] = first_id
    for project in world.projects.values():  # GitLab's default: Maintainers push, Developers merge
        rule = protection.new_rule(world, project.default_branch, {"merge": DEVELOPER})
        project.protected_branches.append(rule)
    apply_switches(world)
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
    """The switches that stand for project settings seed every project: ``pipelines_must_succeed``
    its setting, ``developers_can_merge`` its default branch's merge access level. The API
    (PUT /projects/:id, the protected branches endpoints) changes one project's afterwards."""
    options = world.options
    for project in world.projects.values():
        succeeds = options.pipelines_must_succeed
        project.settings["only_allow_merge_if_pipeline_succeeds"] = succeeds
        rule = protection.rule_named(project, project.default_branch)
        if rule is not None:
            rule["merge_access_level"] = DEVELOPER if options.developers_can_merge else MAINTAINER


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
        # What a project's checkout holds of a sandbox deployment: the hooks, where
        # hooks_install_command puts them (pairgate's own source tree is no part of it).
        "deployed_paths": [".claude/hooks"],
        "generic_tracking_issue": 1,
        "liveness_oracle_file": "liveness-oracle.md",
        "cli_command": "pairgate",
        "renovate_bot_user_id": USERS["renovate_bot"][0],
        "renovate_branch_prefix": "renovate/",
        "renovate_exempt_namespaces": [GROUP_PATH],
        "cli_install_command": "pip install --upgrade pairgate",
        "hooks_install_command": "pairgate deploy-hooks --target .claude/hooks",
        "agent_text_dir": "agent-text",
        # A project's checkout has no operator card of its own: name pairgate's.
        "handoff_doc": "pairgate's operator card (docs/agent-handoff.md in pairgate's repository)",
        "ledger_author_user_ids": [USERS["agents"][0]],
    }
