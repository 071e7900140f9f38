"""The store's tables (each schema version's migration, applied in order) and the helpers its modules share:
new ids, and the decorator that bumps the store's version after a write that lists show."""

from __future__ import annotations

import functools

from advisor.core.inputs import new_id

SCHEMA_VERSION = 11

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE targets (id VARCHAR PRIMARY KEY, name VARCHAR UNIQUE NOT NULL, engine VARCHAR NOT NULL,
        dsn VARCHAR NOT NULL, created_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE snapshots (id VARCHAR PRIMARY KEY, target_id VARCHAR NOT NULL, taken_at DOUBLE PRECISION NOT NULL,
        workload JSON NOT NULL, summary JSON NOT NULL);
    CREATE TABLE trials (id VARCHAR PRIMARY KEY, target_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL,
        optimizer VARCHAR NOT NULL, changes JSON NOT NULL, evidence JSON, status VARCHAR NOT NULL,
        reason VARCHAR, created_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE recommendations (id VARCHAR PRIMARY KEY, target_id VARCHAR NOT NULL, kind VARCHAR NOT NULL,
        optimizer VARCHAR NOT NULL, changes JSON NOT NULL, apply_sql JSON NOT NULL, revert_sql JSON NOT NULL,
        needs_restart BOOLEAN NOT NULL, state VARCHAR NOT NULL, evidence JSON, note VARCHAR NOT NULL,
        created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE audit_log (id VARCHAR PRIMARY KEY, happened_at DOUBLE PRECISION NOT NULL, actor VARCHAR NOT NULL,
        action VARCHAR NOT NULL, subject VARCHAR NOT NULL, detail JSON NOT NULL);
    """,
    2: """
    ALTER TABLE trials ADD COLUMN number INTEGER;
    ALTER TABLE trials ADD COLUMN config JSON;
    ALTER TABLE trials ADD COLUMN objective DOUBLE PRECISION;
    ALTER TABLE trials ADD COLUMN source VARCHAR;
    ALTER TABLE trials ADD COLUMN duration_s DOUBLE PRECISION;
    CREATE TABLE tuning_runs (id VARCHAR PRIMARY KEY, target_id VARCHAR NOT NULL, kind VARCHAR NOT NULL,
        optimizer VARCHAR NOT NULL, options JSON NOT NULL, state VARCHAR NOT NULL, optimizer_state JSON,
        result JSON, created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE seed_cache (key VARCHAR PRIMARY KEY, seeds JSON NOT NULL, created_at DOUBLE PRECISION NOT NULL);
    """,
    3: """
    ALTER TABLE recommendations ADD COLUMN details JSON;
    """,
    4: """
    ALTER TABLE targets ADD COLUMN credentials VARCHAR;
    ALTER TABLE recommendations ADD COLUMN run_id VARCHAR;
    ALTER TABLE recommendations ADD COLUMN applied JSON;
    ALTER TABLE tuning_runs ADD COLUMN progress JSON;
    ALTER TABLE tuning_runs ADD COLUMN error VARCHAR;
    ALTER TABLE tuning_runs ADD COLUMN started_by VARCHAR;
    ALTER TABLE tuning_runs ADD COLUMN schedule_id VARCHAR;
    CREATE TABLE api_tokens (id VARCHAR PRIMARY KEY, name VARCHAR UNIQUE NOT NULL, role VARCHAR NOT NULL,
        secret_hash VARCHAR UNIQUE NOT NULL, created_at DOUBLE PRECISION NOT NULL, revoked_at DOUBLE PRECISION,
        created_by VARCHAR);
    CREATE TABLE web_sessions (id_hash VARCHAR PRIMARY KEY, token_id VARCHAR NOT NULL, csrf VARCHAR NOT NULL,
        created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE schedules (id VARCHAR PRIMARY KEY, target_id VARCHAR NOT NULL, cron VARCHAR NOT NULL,
        timezone VARCHAR NOT NULL, plan JSON NOT NULL, created_at DOUBLE PRECISION NOT NULL, created_by VARCHAR,
        last_fire_at DOUBLE PRECISION, removed_at DOUBLE PRECISION);
    """,
    5: """
    ALTER TABLE targets ADD COLUMN identity JSON;
    ALTER TABLE recommendations ADD COLUMN claim VARCHAR;
    ALTER TABLE recommendations ADD COLUMN claimed_at DOUBLE PRECISION;
    ALTER TABLE tuning_runs ADD COLUMN owner JSON;
    """,
    6: """
    ALTER TABLE targets ADD COLUMN hardware JSON;
    """,
    7: """
    ALTER TABLE trials ADD COLUMN statements JSON;
    """,
    8: """
    CREATE TABLE replicas (target_id VARCHAR PRIMARY KEY, engine VARCHAR NOT NULL, directory VARCHAR NOT NULL,
        state VARCHAR NOT NULL, built_at DOUBLE PRECISION, progress VARCHAR, owner JSON,
        updated_at DOUBLE PRECISION NOT NULL);
    """,
    9: """
    ALTER TABLE trials ADD COLUMN error VARCHAR;
    """,
    10: """
    ALTER TABLE trials ADD COLUMN metrics JSON;
    """,
    11: """
    ALTER TABLE targets ADD COLUMN tags JSON;
    ALTER TABLE schedules ADD COLUMN fleet VARCHAR;
    ALTER TABLE tuning_runs ADD COLUMN job_id VARCHAR;
    """,
}


def changes_lists(method):
    """Bump ``Store.version`` after the write, so a cached list is never newer than what it shows."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        finally:
            self._bump()

    return wrapper


def page(limit: int | None, offset: int) -> tuple[int, int]:
    """LIMIT and OFFSET values DuckDB takes (BIGINT): none means all; an offset past any table means no rows.

    >>> page(None, 10**20)
    (4611686018427387904, 4611686018427387904)
    """
    cap = 2**62
    return (cap if limit is None else min(max(int(limit), 0), cap)), min(max(int(offset), 0), cap)
