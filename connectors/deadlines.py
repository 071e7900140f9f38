"""How long the advisor waits for a target's answer, the same for every engine: every connection it opens to a
target (its own statements, sessions that replay a workload, the watcher's checks) gives up when a read or a write
gets no answer within a bound, so that a server that accepts connections but never answers (stopped, wedged) costs
one clear error line, ``hang(where, seconds)``, instead of a thread held forever.

- ``answer_s()``: the advisor's own statements (ADVISOR_TARGET_TIMEOUT_S);
- ``long_s()``: work that is long by nature: index builds (on production or a shadow), bulk loads, a session
  without a statement timeout (ADVISOR_TARGET_LONG_TIMEOUT_S);
- ``for_statement(timeout_ms)``: a session whose statements the server stops itself after ``timeout_ms``: that
  long plus a grace for the server's answer (``long_s()`` when there is no statement timeout).
"""

from __future__ import annotations

from advisor.core.errors import TargetUnreachable
from advisor.core.settings import get_settings

__all__ = ["answer_s", "for_statement", "hang", "long_s"]

GRACE_S = 30.0  # how long past its own statement timeout a server's answer may take (at most answer_s())


def answer_s() -> float:
    return max(0.1, float(get_settings().target_timeout_s))


def long_s() -> float:
    return max(answer_s(), float(get_settings().target_long_timeout_s))


def for_statement(timeout_ms: int | None) -> float:
    """The wait for an answer on a session whose statements stop after ``timeout_ms`` (0 or None: none)."""
    if not timeout_ms:
        return long_s()
    return max(answer_s(), timeout_ms / 1000.0 + min(GRACE_S, answer_s()))


SETTING = "ADVISOR_TARGET_TIMEOUT_S sets how long the advisor waits"
CONNECTING = "connect_timeout in the DSN sets how long connecting may take"


def hang(where: str, seconds: float, why: str = SETTING) -> TargetUnreachable:
    """The one line a target that stopped answering becomes (``why``: what sets the bound; ``CONNECTING`` for a
    server that accepted the connection and never greeted).

    >>> print(hang("db:3306/shop", 900.0))
    target db:3306/shop did not answer within 900 s (ADVISOR_TARGET_TIMEOUT_S sets how long the advisor waits)
    """
    return TargetUnreachable(f"target {where} did not answer within {seconds:g} s ({why})")
