"""API tokens and roles. A token is shown once when created; the store keeps only its SHA-256 hash.

Roles: ``viewer`` reads; ``operator`` also registers targets, starts runs, approves, applies and rolls back,
and manages schedules. Tokens are created and revoked by the admin command (``advisor tokens``), which needs
access to the store file, not a token.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from advisor.core.errors import Forbidden

ROLES = ("viewer", "operator")
TOKEN_PREFIX = "dba_"


@dataclass(frozen=True)
class Principal:
    """Who is acting: a token's name and role (``advisor`` and ``scheduler`` act for themselves)."""

    name: str
    role: str
    token_id: str | None = None

    @property
    def actor(self) -> str:
        return f"token:{self.name}" if self.token_id else self.name

    def require(self, role: str) -> None:
        if ROLES.index(self.role) < ROLES.index(role):
            raise Forbidden(f"this needs the {role} role; the token {self.name!r} is a {self.role}")


ADMIN = Principal("admin", "operator")  # the local admin command (it holds the store file)
SCHEDULER = Principal("scheduler", "operator")


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)
