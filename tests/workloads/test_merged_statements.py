"""One normalized statement called with parameters of different types is one statement of the observed workload:
pg_stat_statements keeps an entry (a queryid) per parameter type, the workload sums them under the busiest one
and lists the others, binding and replay still work, and ``advisor observe`` says so."""

import json
from decimal import Decimal

import psycopg
import pytest

from connectors.postgres import PostgresConnector
from tests.conftest import run
from tests.advisor.cli.test_cli import advisor
from workloads.statements.binding import bind_workload
from workloads.statements.capture import workload_delta
from workloads.statements.replay import ReplayOptions, replay
from connectors import factory

LOOKUP = "SELECT total FROM orders WHERE id = $1"


@pytest.fixture
def typed_calls(db):
    """``LOOKUP`` called 4 times with an int, 3 times with a numeric and twice with a bigint-sized int; another
    statement twice (it stays apart)."""
    run(db, "CREATE TABLE orders (id bigint PRIMARY KEY, total numeric)",
        "INSERT INTO orders SELECT x, x * 2 FROM generate_series(1, 2000) x", "ANALYZE orders")
    c = PostgresConnector(db)
    c.reset_statement_stats()
    sql = LOOKUP.replace("$1", "%s")
    with psycopg.connect(db, autocommit=True, prepare_threshold=None) as conn:
        for v in (1, 2, 3, 4):
            conn.execute(sql, (v,)).fetchall()
        for v in (5, 6, 7):
            conn.execute(sql, (Decimal(v),)).fetchall()
        for v in (2**40, 2**41):
            conn.execute(sql, (v,)).fetchall()
        for _ in range(2):
            conn.execute("SELECT count(*) FROM orders WHERE total > 100").fetchall()
    return db


def test_entries_of_one_text_are_one_statement_with_summed_counters(typed_calls):
    c = PostgresConnector(typed_calls)
    snap = c.observe()
    entries = [s for s in snap.statements if s.query == LOOKUP]
    assert len({s.queryid for s in entries}) == 3, entries  # the premise: one queryid per parameter type
    workload = workload_delta(snap)
    [lookup] = [s for s in workload.statements if s.sql == LOOKUP]
    busiest = max(entries, key=lambda s: s.calls)
    assert lookup.calls == 9 == sum(s.calls for s in entries) and busiest.calls == 4
    assert lookup.queryid == busiest.queryid
    assert sorted(lookup.merged) == sorted(s.queryid for s in entries if s is not busiest)
    assert lookup.total_ms == pytest.approx(sum(s.total_ms for s in entries))
    assert lookup.rows == 7 == sum(s.rows for s in entries)  # ids 2**40 and 2**41 find no row
    [other] = [s for s in workload.statements if "count(*)" in s.sql]
    assert other.calls == 2 and other.merged == ()  # another text stays apart
    bound, skipped = bind_workload(c, workload)  # the kept queryid still binds (from pg_qualstats' example)
    assert not skipped
    [b] = [b for b in bound if b.queryid == lookup.queryid]
    assert "$" not in b.sql and b.source in {"qualstats", "statistics"}
    again = replay(factory.connector(typed_calls), bound, ReplayOptions(warmup=0))
    assert not again.errors and set(again.samples) == {lookup.queryid, other.queryid}


def test_a_delta_between_snapshots_merges_too(typed_calls):
    c = PostgresConnector(typed_calls)
    before = c.observe()
    with psycopg.connect(typed_calls, autocommit=True, prepare_threshold=None) as conn:
        conn.execute(LOOKUP.replace("$1", "%s"), (Decimal(9),)).fetchall()
        conn.execute(LOOKUP.replace("$1", "%s"), (10,)).fetchall()
    [lookup] = [s for s in workload_delta(c.observe(), before).statements if s.sql == LOOKUP]
    assert lookup.calls == 2 and len(lookup.merged) == 1  # only the entries that ran in the interval


def test_observe_names_the_merge_and_gives_the_mean_per_call(typed_calls, tmp_path):
    store = tmp_path / "s.duckdb"
    res = advisor("observe", "--target", typed_calls, "--json", store=store)
    assert res.returncode == 0, res.stderr
    listed = [s for s in json.loads(res.stdout)["workload"]["statements"] if s["sql"] == LOOKUP]
    assert len(listed) == 1
    [st] = listed
    assert st["calls"] == 9 and len(st["merged"]) == 2 and st["queryid"] not in st["merged"]
    assert st["mean_ms"] == pytest.approx(st["total_ms"] / 9)
    text = advisor("observe", "--target", typed_calls, store=store, env={"COLUMNS": "80"})
    assert text.returncode == 0, text.stderr
    assert text.stdout.count("orders WHERE id = $1") == 2  # once in the table, once in the line on the merge
    assert "one statement, 3 statement-statistics entries" in text.stdout
