"""Personal access tokens: ``GET /personal_access_tokens/self`` and ``.../:id`` (the caller's
own tokens), and the sandbox-only ``POST /-/sandbox/tokens`` that issues one."""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox.access import API, current_user
from pairgate.sandbox.httpd import Request, unauthorized
from pairgate.sandbox.model import World
from pairgate.sandbox.records import Token, User

SCOPES = ("api", "read_api")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def entity(world: World, token: Token) -> dict[str, Any]:
    """GitLab's PersonalAccessToken entity (personal_access_tokens.md)."""
    expired = bool(token.expires_at) and str(token.expires_at) <= world.stamp()[:10]
    return {
        "id": token.id,
        "name": token.name,
        "revoked": token.revoked,
        "created_at": token.created_at,
        "description": token.description,
        "scopes": list(token.scopes),
        "user_id": token.user_id,
        "last_used_at": token.last_used_at,
        "active": not token.revoked and not expired,
        "expires_at": token.expires_at,
    }


def issue(world: World, user: User, spec: dict[str, Any]) -> tuple[str, Token]:
    """A new token for ``user`` from ``{scopes, name, expires_at, revoked, description}``;
    raises ValueError on bad input."""
    scopes = spec.get("scopes", ["api"])
    if not isinstance(scopes, list) or not scopes or not set(scopes) <= set(SCOPES):
        raise ValueError(f"scopes must be a non-empty list of {', '.join(SCOPES)}")
    expires = spec.get("expires_at")
    if expires is not None and not (isinstance(expires, str) and _DATE.match(expires)):
        raise ValueError("expires_at must be a date, YYYY-MM-DD, or null")
    token_id = max((t.id for t in world.tokens.values()), default=0) + 1
    secret = f"sandbox-token-{token_id}"
    token = Token(
        token_id,
        user.id,
        str(spec.get("name") or secret),
        [str(s) for s in scopes],
        world.stamp(),
        expires_at=expires,
        revoked=bool(spec.get("revoked", False)),
        description=spec.get("description"),
    )
    world.tokens[secret] = token
    return secret, token


@API.route("GET", "/personal_access_tokens/self")
def get_self(req: Request) -> Any:
    current_user(req)
    if req.token is None:  # a job token, or none: no personal access token to describe
        raise unauthorized()
    return entity(req.world, req.token)


@API.route("GET", "/personal_access_tokens/{token_id}")
def get_token(req: Request, token_id: str) -> Any:
    """One of the caller's own tokens; any other id is 401 (no admins here)."""
    user = current_user(req)
    found = next(
        (t for t in req.world.tokens.values() if str(t.id) == token_id and t.user_id == user.id),
        None,
    )
    if found is None:
        raise unauthorized()
    return entity(req.world, found)
