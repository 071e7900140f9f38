"""Applying and reverting changes on a PostgreSQL server for ``PostgresConnector``: the SQL is checked and rendered
first (``plan_changes``), run under a lock timeout, undone in reverse order when a step fails midway, and a knob
change is waited for until a new session sees it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

import psycopg
from psycopg import sql

from advisor.core.domain import Applied, Change, DropIndexChange, IndexChange, KnobChange, KnobSpec
from advisor.core.errors import AdvisorError, AlreadyExists, BadStatement, InvalidKnobValue, ProductionLocked, TargetUnreachable
from connectors import deadlines
from connectors.postgres import changes as change_sql
from connectors.postgres.knobs import UNITS


class Host(Protocol):
    """What these functions use of the connector they serve (``PostgresConnector`` is one): stated here, so this
    module never imports the connector that imports it."""

    _restart: Callable[[], None] | None

    def connect(self, autocommit: bool = True, answer_s: float | None = None) -> psycopg.Connection: ...

    def knob_catalog(self) -> dict[str, KnobSpec]: ...

    def plan_changes(self, changes: Sequence[Change], catalog: dict[str, KnobSpec] | None = None) -> Applied: ...


RELOAD = "SELECT pg_reload_conf()"


def plan_changes(self: Host, changes: Sequence[Change], catalog: dict[str, KnobSpec] | None = None) -> Applied:
    """Check every change and render the SQL that applies and reverts it, without running anything."""
    catalog = catalog if catalog is not None else self.knob_catalog()
    checked: list[Change] = []
    apply_sql: list[str] = []
    revert_sql: list[str] = []
    needs_restart = False
    with self.connect() as conn:
        for change in changes:
            if isinstance(change, KnobChange):
                change = UNITS.validate_change(catalog, change)
                spec = catalog[change.name]
                if spec.context == "internal":
                    raise InvalidKnobValue(f"{spec.name} is read-only (internal) and cannot be set")
                needs_restart |= spec.needs_restart
                apply_sql.append(change_sql.knob_set(change).as_string(conn))
                revert_sql.append(change_sql.knob_restore(spec).as_string(conn))
            elif isinstance(change, IndexChange):
                apply_sql.append(change_sql.index_ddl(change).as_string(conn))
                revert_sql.append(change_sql.index_drop(change).as_string(conn))
            elif isinstance(change, DropIndexChange):
                revert_sql.append(change_sql.restore_existing(change).as_string(conn))  # checks it first
                apply_sql.append(change_sql.drop_existing(change).as_string(conn))
            else:
                raise BadStatement(f"the postgres connector cannot apply a {type(change).__name__}")
            checked.append(change)
    reload = (RELOAD,) if any(isinstance(c, KnobChange) for c in checked) else ()
    # undo in reverse order; a reload (if any) comes last in both directions
    return Applied(tuple(checked), tuple(apply_sql) + reload, tuple(reversed(revert_sql)) + reload, needs_restart)


def apply(self: Host, changes: Sequence[Change], lock_timeout_s: float | None = None) -> Applied:
    """Apply the changes (all checked first); on a failure midway, undo what was done and raise."""
    plan = self.plan_changes(changes)
    done: list[str] = []
    loaded: object = None
    try:
        with self.connect(answer_s=deadlines.long_s()) as conn:  # an index build on a large table takes long
            _set_lock_timeout(conn, lock_timeout_s)
            loaded = _conf_loaded(conn) if RELOAD in plan.apply_sql else None
            for stmt in plan.apply_sql:
                try:
                    _run(conn, stmt, lock_timeout_s)
                except AlreadyExists:
                    raise  # nothing was built: what has the name is not ours to drop
                except AdvisorError:
                    _drop_if_index(self, plan, stmt, lock_timeout_s)
                    raise
                done.append(stmt)
    except AdvisorError:
        _undo_partial(self, plan, done, lock_timeout_s)
        raise
    restarted = False
    if plan.needs_restart and self._restart is not None:
        self._restart()
        restarted = True
    wait_visible(self, [c for c in plan.changes if isinstance(c, KnobChange)],
                 restart_pending=plan.needs_restart and not restarted, loaded_before=loaded)
    return Applied(plan.changes, plan.apply_sql, plan.revert_sql, plan.needs_restart, restarted)


def revert(self: Host, applied: Applied, lock_timeout_s: float | None = None) -> None:
    with self.connect(answer_s=deadlines.long_s()) as conn:
        _set_lock_timeout(conn, lock_timeout_s)
        loaded = _conf_loaded(conn) if RELOAD in applied.revert_sql else None
        for stmt in applied.revert_sql:
            _run(conn, stmt, lock_timeout_s)
    if applied.needs_restart and self._restart is not None:
        self._restart()
    if loaded is not None:
        _wait_loaded(self, loaded, 10.0)


def _drop_if_index(self: Host, plan: Applied, failed: str, lock_timeout_s: float | None) -> None:
    """A CREATE INDEX CONCURRENTLY that fails midway leaves an invalid index behind: drop it. Never called when
    the name was taken already (``AlreadyExists``): that index is someone else's."""
    i = plan.apply_sql.index(failed)
    change = plan.changes[i] if i < len(plan.changes) else None
    if not isinstance(change, IndexChange):
        return
    try:
        with self.connect() as conn:
            _set_lock_timeout(conn, lock_timeout_s)
            _run(conn, change_sql.index_drop(change).as_string(conn), lock_timeout_s)
    except AdvisorError as e:
        raise AdvisorError(f"creating index {change_sql.index_name(change)} failed and the invalid index it may "
                           f"have left could not be dropped ({e}); drop it by hand") from None


def _undo_partial(self: Host, plan: Applied, done: list[str], lock_timeout_s: float | None = None) -> None:
    """Revert the first ``len(done)`` changes of ``plan`` (those whose apply statement ran)."""
    reverts = [s for s in plan.revert_sql if s != RELOAD]
    n_done = sum(1 for s in done if s != RELOAD)
    if not n_done:
        return
    with self.connect() as conn:
        _set_lock_timeout(conn, lock_timeout_s)
        for stmt in reverts[len(reverts) - n_done:]:
            _run(conn, stmt, lock_timeout_s)
        if RELOAD in plan.revert_sql:
            conn.execute(RELOAD)


def wait_visible(self: Host, knobs: list[KnobChange], restart_pending: bool, timeout_s: float = 10.0,
                 loaded_before: object = None) -> None:
    """pg_reload_conf() only signals the postmaster: wait until a new session sees the new values. With
    ``loaded_before`` (``pg_conf_load_time()`` read before the reload), until a new session's configuration was
    loaded after it: then what it shows is what the server made of the values, whatever it calls them (``on`` is
    shown as ``pglz`` for wal_compression), and no value that is spelled otherwise holds a trial up."""
    if not knobs:
        return
    if loaded_before is not None:
        _wait_loaded(self, loaded_before, timeout_s)
        return
    deadline = time.monotonic() + timeout_s
    while True:
        catalog = self.knob_catalog()
        pending = [k for k in knobs if not (catalog[k.name].needs_restart and restart_pending)
                   and not UNITS.same_value(catalog[k.name], catalog[k.name].setting, k.value)]
        if not pending or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _conf_loaded(conn: psycopg.Connection) -> object:
    """When the server last loaded its configuration files (as a session started now sees it)."""
    return conn.execute("SELECT pg_conf_load_time()").fetchone()[0]


def _wait_loaded(self: Host, before: object, timeout_s: float) -> None:
    """Wait until a new session's configuration was loaded after ``before`` (the postmaster took the reload)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with self.connect() as conn:
            if _conf_loaded(conn) > before:
                return
        time.sleep(0.02)


def _set_lock_timeout(conn: psycopg.Connection, seconds: float | None) -> None:
    """Make this session give up waiting for a lock after ``seconds`` (None: the server's own setting)."""
    if seconds is not None:
        conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(f"{max(1, round(seconds * 1000))}ms")))


def _run(conn: psycopg.Connection, stmt: str, lock_timeout_s: float | None = None) -> None:
    try:
        conn.execute(sql.SQL(stmt))  # type: ignore[arg-type]  # rendered from sql.Composed above
    except psycopg.errors.LockNotAvailable:
        raise ProductionLocked(f"gave up after waiting {lock_timeout_s or 0:g}s for a lock that another session "
                               f"holds (while running: {stmt}); the change was not made: retry when the lock is "
                               "released, or raise ADVISOR_PRODUCTION_LOCK_TIMEOUT_S") from None
    except (psycopg.errors.DuplicateTable, psycopg.errors.DuplicateObject):
        raise AlreadyExists(f"{stmt} was refused: an object of that name exists already, made by someone else; "
                            "nothing was changed and nothing was dropped") from None
    except psycopg.OperationalError as e:
        raise TargetUnreachable(f"lost the connection while running {stmt}: {str(e).strip().splitlines()[0]}") \
            from None
    except psycopg.errors.Error as e:
        msg = (e.diag.message_primary or str(e)).strip()
        raise BadStatement(f"{msg} (while running: {stmt})") from None
