"""AdvisorService's API tokens and web sessions: tokens are stored as SHA-256 hashes and shown once; a web session
is a random id (stored hashed) tied to a token, with a CSRF token for its forms. A mixin of
``advisor.service.service.AdvisorService``."""

from __future__ import annotations

import secrets

from advisor.service.auth import ADMIN, ROLES, LoginThrottle, Principal, hash_secret, new_secret
from advisor.core.errors import AdvisorError, Unauthorized
from advisor.core.settings import get_settings


class AccessMixin:
    # --- tokens and web sessions ----------------------------------------------------------------------------

    def create_token(self, name: str, role: str, who: Principal = ADMIN) -> tuple[dict, str]:
        """A new API token: its record and its secret, which is shown only now."""
        who.require("admin")
        if role not in ROLES:
            raise AdvisorError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        if not name.strip():
            raise AdvisorError("a token needs a name")
        secret = new_secret()
        token_id = self.store.add_token(name, role, hash_secret(secret), who.actor)
        self.store.audit(who.actor, "create_token", token_id, {"name": name, "role": role})
        return self.store.token_by_id(token_id), secret

    def revoke_token(self, ref: str, who: Principal = ADMIN) -> dict:
        """Revoke a token now: the next request that presents it is refused, in every process on the store."""
        who.require("admin")
        token = self.store.token(ref)
        self.store.revoke_token(token["id"])
        self.store.audit(who.actor, "revoke_token", token["id"], {"name": token["name"]})
        return self.store.token_by_id(token["id"])

    def tokens(self) -> list[dict]:
        return self.store.tokens()

    @property
    def throttle(self) -> LoginThrottle:
        """Failed logins per client and token prefix, for this service object (the server's one)."""
        found = self.__dict__.get("_throttle")
        if found is None:
            found = self.__dict__["_throttle"] = LoginThrottle()
        return found

    def login_delay(self, client: str, secret: str | None) -> float:
        """Seconds to hold the answer to a failed login of ``secret`` from ``client``, after the failures recorded
        so far (the latest included). Callers check the token first and hold only failures: never a valid token."""
        return self.throttle.delay(client, secret)

    def _login_failed(self, client: str, secret: str, reason: str, token_name: str | None = None) -> None:
        wait, audit = self.throttle.failed(client, secret)
        if audit:
            self.store.audit(f"client:{client}", "login_failed", token_name or "", {"reason": reason,
                                                                                  "wait_s": wait})

    def authenticate(self, secret: str | None, client: str = "local") -> Principal:
        """The principal of a valid token, at once; a failure is recorded (audited, and counted by the throttle:
        the caller then holds its answer for ``login_delay``)."""
        if not secret:
            raise Unauthorized("no API token: send 'Authorization: Bearer <token>'")
        key, version = hash_secret(secret), self.store.version  # revoking a token bumps the version
        cached = self._principals.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        token = self.store.token_by_hash(key)
        if token is None:
            self._login_failed(client, secret, "unknown token")
            raise Unauthorized("unknown API token")
        if token["revoked_at"] is not None:
            self._login_failed(client, secret, "revoked token", token["name"])
            raise Unauthorized(f"the API token {token['name']!r} was revoked")
        who = Principal(token["name"], token["role"], token["id"])
        if len(self._principals) > 1000:
            self._principals.clear()
        self._principals[key] = (version, who)
        return who

    def login(self, secret: str, client: str = "local") -> tuple[str, str]:
        """A web session for a valid token: (session id for the cookie, CSRF token for forms)."""
        who = self.authenticate(secret, client)
        session_id, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(24)
        self.store.add_session(hash_secret(session_id), who.token_id, csrf, get_settings().session_ttl_s)
        self.store.audit(who.actor, "login", who.token_id or "", {})
        return session_id, csrf

    def session(self, session_id: str | None) -> tuple[Principal, str]:
        """The principal and CSRF token of a live web session (its token still valid)."""
        found = self.store.session(hash_secret(session_id)) if session_id else None
        if found is None:
            raise Unauthorized("not logged in, or the session expired")
        token = self.store.token_by_id(found["token_id"])
        if token["revoked_at"] is not None:
            raise Unauthorized(f"the API token {token['name']!r} was revoked")
        return Principal(token["name"], token["role"], token["id"]), found["csrf"]

    def logout(self, session_id: str) -> None:
        self.store.drop_session(hash_secret(session_id))
