import json
import os
import subprocess
import sys

import pytest

from connectors.sandbox import free_port
from tests.conftest import run


def advisor(*args, store):
    env = {**os.environ, "ADVISOR_STORE": str(store)}
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture
def busy_db(db):
    run(db, "CREATE TABLE t (id int PRIMARY KEY, g int)", "INSERT INTO t SELECT x, x % 10 FROM generate_series(1, 20000) x",
        "ANALYZE t")
    for k in range(3):
        run(db, f"SELECT g, count(*) FROM t WHERE id > {k * 100} GROUP BY g ORDER BY g")
    return db


def test_observe_json_is_one_document(busy_db, tmp_path):
    res = advisor("observe", "--target", busy_db, "--json", store=tmp_path / "s.duckdb")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["database"].startswith("t_") and doc["workload"]["statements"]
    st = next(s for s in doc["workload"]["statements"] if "GROUP BY" in s["sql"])
    assert st["calls"] == 3 and "$1" in st["sql"]


def test_tune_knobs_json_and_recommendations(busy_db, tmp_path):
    store = tmp_path / "s.duckdb"
    res = advisor("tune", "knobs", "--target", busy_db, "--optimizer", "rules", "--rounds", "2",
                  "--memory-gb", "4", "--cores", "2", "--json", store=store)
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)["recommendation"]
    assert rec["state"] in {"validated", "rejected"} and rec["evidence"]["rounds"] == 2
    assert any(s.startswith('ALTER SYSTEM SET "shared_buffers"') for s in rec["apply_sql"])
    assert rec["revert_sql"][-1] == "SELECT pg_reload_conf()"
    listed = json.loads(advisor("recommendations", "--json", store=store).stdout)["recommendations"]
    assert [r["id"] for r in listed] == [rec["id"]]


@pytest.mark.parametrize("args, message", [
    (["observe", "--target", "host=127.0.0.1 port 1"], "invalid DSN"),
    (["observe", "--target", f"host=127.0.0.1 port={free_port()} user=postgres"], "cannot connect"),
    (["observe", "--bogus"], "No such option"),
    (["tune", "knobs", "--target", "host=x", "--optimizer", "nope", "--no-validate"], "no knobs optimizer named"),
])
def test_errors_are_one_line_without_traceback(args, message, tmp_path):
    res = advisor(*args, store=tmp_path / "s.duckdb")
    assert res.returncode != 0 and res.stdout == ""
    errors = [ln for ln in res.stderr.strip().splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and res.stderr.strip().endswith(errors[0]) and message in errors[0]
    assert "Traceback" not in res.stderr


def test_missing_extension_is_a_clear_error(pg, tmp_path):
    dsn = pg.create_database("bare", extensions=False)
    res = advisor("observe", "--target", dsn, "--json", store=tmp_path / "s.duckdb")
    assert res.returncode == 1 and "pg_stat_statements" in res.stderr and res.stdout == ""
