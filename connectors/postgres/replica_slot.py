"""A warm replica's replication slot on its PostgreSQL target: the link recorded at build (no password) and the
slot dropped at removal."""

from __future__ import annotations

import time

import psycopg

from connectors.postgres.connection import TAG

LINK_KEYS = ("host", "hostaddr", "port", "user", "dbname", "sslmode")  # the target's link as recorded: no password


def drop_slot(link: dict[str, str], slot: str) -> bool:
    """Whether ``slot`` is gone from the target (dropped now, or never there); a slot still in use by a sender that
    has not yet noticed its replica stopped is waited for a few seconds."""
    try:
        with psycopg.connect(**link, autocommit=True, connect_timeout=10) as conn:
            for _ in range(100):
                row = conn.execute(TAG + "SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                                   [slot]).fetchone()
                if row is None:
                    return True
                if not row[0]:
                    conn.execute(TAG + "SELECT pg_drop_replication_slot(%s)", [slot])
                    return True
                time.sleep(0.1)
    except psycopg.Error:
        pass  # the target is gone or refuses: its slot is the DBA's to drop (remove says how)
    return False
