"""API tokens and roles. A token is shown once when created; the store keeps only its SHA-256 hash.

Roles: ``viewer`` reads; ``operator`` also registers targets, starts runs, approves, applies and rolls back,
and manages schedules; ``admin`` also creates, lists and revokes tokens (over REST, or with ``advisor tokens``,
which acts as admin because it holds the store).

Failed logins (a token presented that is unknown or revoked) are audited and slowed down (``LoginThrottle``): a
token is checked first, a valid one is answered at once, and after a few failures in a window each further failure
from that client (with that token prefix) is answered later and later.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import secrets
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass

from advisor.core.errors import AdvisorError, Forbidden

ROLES = ("viewer", "operator", "admin")
TOKEN_PREFIX = "dba_"


def local_actor() -> str:
    """Who acts on the command line, as a run it starts records it (``started_by``): ``cli (user@host)``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name (a container's bare uid)
        user = f"uid {os.getuid()}"
    return f"cli ({user}@{socket.gethostname()})"


@dataclass(frozen=True)
class Principal:
    """Who is acting: a token's name and role (``advisor`` and ``scheduler`` act for themselves). ``local``: the
    command line's own user (``ADMIN``)."""

    name: str
    role: str
    token_id: str | None = None
    local: bool = False

    @property
    def actor(self) -> str:
        return f"token:{self.name}" if self.token_id else self.name

    @property
    def starter(self) -> str:
        """Who a run this principal starts was started by (a run's ``started_by``): a token's holder, a schedule,
        or for the command line its OS user and host (``local_actor``)."""
        return local_actor() if self.local else self.actor

    def require(self, role: str) -> None:
        if ROLES.index(self.role) < ROLES.index(role):
            raise Forbidden(f"this needs the {role} role; the token {self.name!r} is a {self.role}")

    @property
    def remote(self) -> bool:
        """Whether this is a token's holder (REST, the UI): someone other than the OS user the service runs as, who
        may not borrow that user's identity (``refuse_borrowed_identity``). The command line, the scheduler and
        the watcher act as that OS user."""
        return self.token_id is not None


def refuse_borrowed_identity(who: Principal, dsn: str) -> None:
    """AdvisorError when ``who`` is remote and ``dsn`` would log in by the service's own OS identity (a Unix socket
    with peer or socket authentication, a credential file of the service's: ``connectors.factory
    .uses_local_identity``): an operator without the database's password would borrow the server's. The DSN is
    never repeated."""
    from connectors import factory

    if who.remote and factory.uses_local_identity(dsn):
        raise AdvisorError("this DSN logs in by the advisor server's own OS identity (a Unix socket, or a credential "
                           "file of the server's), which is refused over the API and the web UI: give a host reached "
                           "over TCP with the database's user and password (the command line, run as that OS user, "
                           "may register such a target)")


ADMIN = Principal("admin", "admin", local=True)  # the local admin command (it holds the store file)
SCHEDULER = Principal("scheduler", "operator")


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class LoginThrottle:
    """Failed logins, counted within ``window_s``. Callers check a token first: a valid token is never held, only
    the answer to a failure is, for the wait that failure earned (``failed``).

    Failures are counted per (client address, the presented token's prefix), so a guesser at an address does not
    slow a different user's mistyped token there: the first ``free`` failures of such a pair cost nothing, each
    further one doubles the wait, from ``base_s`` up to ``max_delay_s``. They are also counted per address, with
    ``client_free`` failures free, so a guesser that varies the prefix of its guesses is held all the same. Only
    the first ``audited`` failures of an address's burst are audited one by one, then every hundredth (with the
    count), so a flood cannot fill the audit log.

    >>> t = LoginThrottle(free=2, base_s=0.5, max_delay_s=4, client_free=4)
    >>> [t.failed("10.0.0.1", f"dba_gues{i}", now=0)[0] for i in range(6)]
    [0.0, 0.0, 0.5, 1.0, 2.0, 4.0]
    >>> t.delay("10.0.0.1", "dba_guesZ", now=1), t.delay("10.0.0.2", "dba_guesZ", now=1)
    (4.0, 0.0)
    >>> t.delay("10.0.0.1", "dba_other", now=1), t.delay("10.0.0.1", "dba_guesZ", now=10_000)
    (1.0, 0.0)
    """

    def __init__(self, free: int = 5, base_s: float = 0.25, max_delay_s: float = 10.0, window_s: float = 900.0,
                 audited: int = 20, client_free: int = 50):
        self.free, self.base_s, self.max_delay_s, self.window_s, self.audited, self.client_free = \
            free, base_s, max_delay_s, window_s, audited, client_free
        self._pairs: dict[tuple[str, str], deque[float]] = {}
        self._clients: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def prefix(secret: str | None) -> str:
        """A short hash of the token's first 4 characters after ``dba_`` (never kept in clear)."""
        head = (secret or "").removeprefix(TOKEN_PREFIX)[:4]
        return hashlib.sha256(head.encode()).hexdigest()[:12]

    def _recent(self, table: dict, key, now: float) -> deque[float]:
        q = table.setdefault(key, deque())
        while q and q[0] < now - self.window_s:
            q.popleft()
        return q

    def _wait(self, n: int, free: int) -> float:
        return 0.0 if n <= free else min(self.base_s * 2 ** min(n - free - 1, 64), self.max_delay_s)

    def _waits(self, pair: int, client: int) -> float:
        return max(self._wait(pair, self.free), self._wait(client, self.client_free))

    def failed(self, client: str, secret: str | None, now: float | None = None) -> tuple[float, bool]:
        """Record a failed login of ``secret`` from ``client``: (how long to hold its answer, whether to audit it)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            for table in (self._pairs, self._clients):
                if len(table) > 10_000:
                    table.clear()
            pair = self._recent(self._pairs, (client, self.prefix(secret)), now)
            pair.append(now)
            mine = self._recent(self._clients, client, now)
            mine.append(now)
            n = len(mine)
            return self._waits(len(pair), n), n <= self.audited or n % 100 == 0

    def delay(self, client: str, secret: str | None, now: float | None = None) -> float:
        """How long the answer to a failed login of ``secret`` from ``client`` is held, after the failures recorded
        so far (the latest included). A valid token's answer is never held."""
        now = time.monotonic() if now is None else now
        with self._lock:
            return self._waits(len(self._recent(self._pairs, (client, self.prefix(secret)), now)),
                               len(self._recent(self._clients, client, now)))
