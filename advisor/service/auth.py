"""API tokens and roles. A token is shown once when created; the store keeps only its SHA-256 hash.

Roles: ``viewer`` reads; ``operator`` also registers targets, starts runs, approves, applies and rolls back,
and manages schedules; ``admin`` also creates, lists and revokes tokens (over REST, or with ``advisor tokens``,
which acts as admin because it holds the store).

Failed logins (a token presented that is unknown or revoked) are audited and slowed down per client
(``LoginThrottle``): after a few failures in a window, each further attempt from that client waits longer.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass

from advisor.core.errors import Forbidden

ROLES = ("viewer", "operator", "admin")
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


ADMIN = Principal("admin", "admin")  # the local admin command (it holds the store file)
SCHEDULER = Principal("scheduler", "operator")


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class LoginThrottle:
    """Failed logins per client (an address) within ``window_s``: the first ``free`` cost nothing; each further
    one doubles the wait before the client's next attempt is answered, up to ``max_delay_s``. Only the first
    ``audited`` failures of a burst are audited one by one, then every hundredth (with the count), so a flood
    cannot fill the audit log.

    >>> t = LoginThrottle(free=2, base_s=0.5, max_delay_s=4)
    >>> [t.failed("10.0.0.1", now=0)[0] for _ in range(6)]
    [0.0, 0.0, 0.5, 1.0, 2.0, 4.0]
    >>> t.delay("10.0.0.1", now=1), t.delay("10.0.0.2", now=1), t.delay("10.0.0.1", now=10_000)
    (4.0, 0.0, 0.0)
    """

    def __init__(self, free: int = 5, base_s: float = 0.25, max_delay_s: float = 10.0, window_s: float = 900.0,
                 audited: int = 20):
        self.free, self.base_s, self.max_delay_s, self.window_s, self.audited = \
            free, base_s, max_delay_s, window_s, audited
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, client: str, now: float) -> deque[float]:
        q = self._failures.setdefault(client, deque())
        while q and q[0] < now - self.window_s:
            q.popleft()
        return q

    def _wait(self, n: int) -> float:
        return 0.0 if n <= self.free else min(self.base_s * 2 ** (n - self.free - 1), self.max_delay_s)

    def failed(self, client: str, now: float | None = None) -> tuple[float, bool]:
        """Record a failure: (the wait the client now faces, whether to audit this one)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if len(self._failures) > 10_000:
                self._failures.clear()
            q = self._recent(client, now)
            q.append(now)
            n = len(q)
        return self._wait(n), n <= self.audited or n % 100 == 0

    def delay(self, client: str, now: float | None = None) -> float:
        """How long the client's next attempt waits before it is answered."""
        now = time.monotonic() if now is None else now
        with self._lock:
            return self._wait(len(self._recent(client, now)))
