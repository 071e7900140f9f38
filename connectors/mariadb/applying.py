"""Applying and reverting changes on a MariaDB server for ``MariaDBConnector``: every change is checked and rendered
first (``plan_changes``); DDL is not transactional in MariaDB, so a failure midway reverts what was done statement
by statement; variables that need a restart go to the option file (when the connector can persist them) and are
set again after the restart."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pymysql

from advisor.core.domain import Applied, Change, DropIndexChange, IndexChange, KnobChange, KnobSpec
from advisor.core.errors import AdvisorError, AlreadyExists, BadStatement
from connectors import deadlines
from connectors.mariadb import changes as change_sql
from connectors.mariadb import snapshot
from connectors.mariadb.connection import TAG, error_code, error_text
from connectors.mariadb.session import GONE


class Host(Protocol):
    """What these functions use of the connector they serve (``MariaDBConnector`` is one): stated here, so this
    module never imports the connector that imports it."""

    _params: dict[str, Any]
    _restart: Callable[[], None] | None
    _persist: Callable[[dict[str, str]], None] | None

    def _guarded(self, fn: Callable[[pymysql.connections.Connection], Any], answer_s: float | None = None) -> Any: ...

    def knob_catalog(self) -> dict[str, KnobSpec]: ...


LOCK_WAIT_TIMEOUT = 1205  # ER_LOCK_WAIT_TIMEOUT
DUPLICATE_KEY_NAME = 1061  # ER_DUP_KEYNAME


def plan_changes(self: Host, changes: Sequence[Change], catalog: dict[str, KnobSpec] | None = None) -> Applied:
    """Check every change and render what applies and reverts it, without running anything."""
    catalog = catalog if catalog is not None else self.knob_catalog()
    existing = self._guarded(snapshot.index_columns) \
        if any(isinstance(c, DropIndexChange) for c in changes) else {}
    checked: list[Change] = []
    apply_sql: list[str] = []
    revert_sql: list[str] = []
    needs_restart = False
    for change in changes:
        if isinstance(change, KnobChange):
            change, forward, back, restart = change_sql.knob_sql(catalog, change)
            needs_restart |= restart
        elif isinstance(change, IndexChange):
            forward, back = change_sql.index_sql(change)
        elif isinstance(change, DropIndexChange):
            forward, back = change_sql.drop_sql(change, existing)
        else:
            raise BadStatement(f"the mariadb connector cannot apply a {type(change).__name__}")
        checked.append(change)
        apply_sql.append(forward)
        revert_sql.append(back)
    return Applied(tuple(checked), tuple(apply_sql), tuple(reversed(revert_sql)), needs_restart)


def apply(self: Host, changes: Sequence[Change], lock_timeout_s: float | None = None) -> Applied:
    """Apply the changes (all checked first); DDL is not transactional in MariaDB, so on a failure midway
    what was done is reverted statement by statement before the error is raised."""
    plan = plan_changes(self, changes)
    done: list[int] = []
    try:
        for i, stmt in enumerate(plan.apply_sql):
            _run(self, [stmt], lock_timeout_s)
            done.append(i)
    except AdvisorError:
        reverts = list(reversed(plan.revert_sql))  # back in apply order
        _run(self, [reverts[i] for i in reversed(done)], lock_timeout_s)
        raise
    restarted = _restart_if_needed(self, plan.needs_restart, plan.apply_sql, lock_timeout_s)
    return Applied(plan.changes, plan.apply_sql, plan.revert_sql, plan.needs_restart, restarted)


def revert(self: Host, applied: Applied, lock_timeout_s: float | None = None) -> None:
    _run(self, list(applied.revert_sql), lock_timeout_s)
    _restart_if_needed(self, applied.needs_restart, applied.revert_sql, lock_timeout_s)


def _restart_if_needed(self: Host, needed: bool, lines: Sequence[str] = (), lock_timeout_s: float | None = None) -> bool:
    """Restart when a change needs it and this connector can; a restart forgets what SET GLOBAL did, so the
    ``lines`` that set a variable run again after it."""
    if needed and self._restart is not None and self._persist is not None:
        self._restart()
        _run(self, [s for s in lines if s.startswith("SET GLOBAL ")], lock_timeout_s)
        return True
    return False


def _run(self: Host, statements: list[str], lock_timeout_s: float | None) -> None:
    """Run SQL lines; option-file lines are persisted (when this connector can) or left pending."""
    sql_lines = [s for s in statements if not s.startswith(change_sql.OPTION_FILE)]
    option_lines = [s.removeprefix(change_sql.OPTION_FILE) for s in statements if s not in sql_lines]
    if option_lines and self._persist is not None:
        self._persist(dict(line.split("=", 1) for line in option_lines))
    if not sql_lines:
        return

    def run(conn: pymysql.connections.Connection) -> None:
        with conn.cursor() as cur:
            if lock_timeout_s is not None:
                cur.execute(TAG + "SET SESSION lock_wait_timeout = %s", (max(1, round(lock_timeout_s)),))
            for stmt in sql_lines:
                try:
                    cur.execute(TAG + stmt)
                except pymysql.Error as e:
                    if error_code(e) in GONE or error_code(e) == LOCK_WAIT_TIMEOUT:
                        raise
                    if error_code(e) == DUPLICATE_KEY_NAME:
                        raise AlreadyExists(f"{stmt} was refused: an index of that name exists already, made by "
                                            "someone else; nothing was changed and nothing was dropped") from None
                    raise BadStatement(f"{error_text(e, self._params.get('password'))} (while running: "
                                       f"{stmt})") from None

    self._guarded(run, answer_s=deadlines.long_s())  # an index build on a large table takes long

# --- knobs (issue 30) ---
