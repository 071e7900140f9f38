"""A shadow whose copy of the target fails says what pg_dump said went wrong (its ``pg_dump: error:`` lines), never
the tail of the query pg_dump echoes after it, nor a list's repr (issue 33, defect 7). pg_dump fails for real here:
the target is stopped while pg_dump waits on a table lock, or the target's role may not read a table."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid

import psycopg
import pytest

from advisor.core.errors import SandboxError
from advisor.storage.store import Store
from connectors import local
from connectors.factory import clone, connector
from connectors.postgres.sandbox import PostgresSandbox
from tests.conftest import FAST, run
from tests.connectors.test_orphans import ROOT, base, poll  # noqa: F401 - base is a fixture

# what pg_dump echoes after its error (the statement it ran), which the recorded error must not carry
ECHOED = ("Query was", "LOCK TABLE", "ACCESS SHARE", "['", "\n")


def test_a_target_stopped_during_pg_dump_fails_the_shadow_with_pg_dumps_own_error(base, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(base))  # where the shadow is made
    with PostgresSandbox("dump-target", settings=FAST) as target:
        dsn = target.create_database("shop", extensions=False)
        run(dsn, "CREATE TABLE orders (id int PRIMARY KEY, amount int)",
            "INSERT INTO orders SELECT i, i % 100 FROM generate_series(1, 1000) i")
        holder = psycopg.connect(dsn)  # pg_dump waits on this lock: a certain moment to stop the target
        holder.execute("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE")
        failed: list[BaseException] = []

        def copy():
            try:
                clone(connector(dsn)).close()
            except BaseException as e:  # noqa: BLE001 - the test reads it
                failed.append(e)

        thread = threading.Thread(target=copy, daemon=True)
        thread.start()
        with psycopg.connect(target.dsn(), autocommit=True) as watch:
            poll(lambda: watch.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg_dump' "
                                       "AND wait_event_type = 'Lock'").fetchone()[0] or not thread.is_alive(),
                 what="pg_dump waiting on the target's lock")
        assert thread.is_alive(), failed
        target.stop()  # a fast shutdown: the server ends pg_dump's session
        thread.join(300)
        with contextlib.suppress(psycopg.Error):
            holder.close()
    assert not thread.is_alive() and len(failed) == 1
    error = str(failed[0])
    assert isinstance(failed[0], SandboxError), error
    assert error.startswith("pg_dump of the target failed: pg_dump: error: query failed:"), error
    assert "terminating connection" in error or "server closed the connection" in error, error
    assert not any(part in error for part in ECHOED), error
    assert list(base.glob(local.PREFIX + "shadow-*")) == []  # the shadow was stopped and removed


@pytest.fixture
def reader(pg, db):
    """A role that can read the workload's table but not another table of the database: pg_dump, which locks every
    table, is refused. Its DSN, with a workload of its own observed."""
    role = "reader_" + uuid.uuid4().hex[:8]
    run(db, "CREATE TABLE items (id int PRIMARY KEY, price int)",
        "INSERT INTO items SELECT i, i % 97 FROM generate_series(1, 5000) i",
        "CREATE TABLE payroll (name text, salary int)", "REVOKE ALL ON payroll FROM PUBLIC",
        f"CREATE ROLE {role} LOGIN PASSWORD 'reader-pw-1'", f"GRANT SELECT ON items TO {role}",
        f"GRANT pg_read_all_stats TO {role}", "SELECT pg_stat_statements_reset()")
    dsn = pg.login_dsn(db.split("dbname=")[1].split()[0], role, "reader-pw-1")
    for i in range(5):
        run(dsn, f"SELECT count(*), sum(price) FROM items WHERE price < {i * 10}")
    yield dsn
    run(db, f"DROP OWNED BY {role}")
    run(pg.dsn(), f"DROP ROLE {role}")


def test_a_run_whose_pg_dump_is_refused_records_pg_dumps_error_not_its_query(reader, tmp_path):
    env = {**os.environ, "ADVISOR_STORE": str(tmp_path / "s.duckdb"), "ADVISOR_KEY_FILE": str(tmp_path / "k.key")}
    env.pop("ADVISOR_TARGET_DSN", None)
    res = subprocess.run([sys.executable, "-m", "advisor", "tune", "knobs", "--target", reader, "--register", "reader", "--optimizer",
                          "random", "--trials", "2", "--seeds", "0", "--repeats", "1", "--no-validate",
                          "--memory-gb", "2", "--cores", "2"], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    assert res.returncode == 1, res.stderr
    said = res.stderr.strip().splitlines()[-1]
    assert said.startswith("error: pg_dump of the target failed: pg_dump: error: query failed: ERROR: permission "
                           "denied for table payroll"), res.stderr
    assert "Traceback" not in res.stderr and not any(part in said for part in ECHOED), res.stderr
    with Store(tmp_path / "s.duckdb") as st:
        (stored,) = st.runs()
    assert stored["state"] == "failed", stored
    assert stored["error"] == said.removeprefix("error: "), json.dumps(stored, default=str)
