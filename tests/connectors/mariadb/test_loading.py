"""The loaders' side of the MariaDB connector (connectors/mariadb/loading.py) against a real MariaDB 10.11 server
(one sandbox for the module, a database per test): scripts in one session, rows from CSV files and from values
into hostile names, ANALYZE with JSON histograms and the generator's statistics, statements with their values as
drivers send them (digests with ``?``), sessions that name a query's columns, a client program's command line
without its secret, and TPC-H loaded at a tiny scale with its 22 queries transpiled to MySQL's SQL, generated
statements over it, and its application workload captured, bound and replayed."""

from __future__ import annotations

import itertools
import random
from datetime import date
from decimal import Decimal

import pytest

from advisor.core.errors import AdvisorError, StatementFailed, StatementTimeout
from connectors import factory
from tests.connectors.mariadb.conftest import mrows, mrun
from workloads.datasets import app_tpch, synthetic as generated, tpch
from workloads.statements.binding import bind_workload
from workloads.statements.capture import workload_delta
from workloads.datasets.synthetic import FAMILIES
from workloads.statements.replay import ReplayOptions, replay
from workloads.datasets.sqlsource import to_dialect

HOSTILE = 'odd `table`; 50% "name"'
_names = itertools.count()


@pytest.fixture(scope="module")
def server():
    with factory.sandbox("mariadb", "test-mload") as sandbox:
        yield sandbox


@pytest.fixture
def c(server):
    name = f"l{next(_names)}"
    connector = factory.connector(server.create_database(name))
    yield connector
    mrun(server.dsn(), f"DROP DATABASE IF EXISTS `{name}`")


def test_a_script_runs_in_one_session_and_stops_at_the_first_failure(c):
    seen: list[tuple[int, str]] = []
    script = ["SET @seed = 7", "CREATE TABLE r AS SELECT @seed AS x"]
    c.loader().run_script(script, before=lambda i, s: seen.append((i, s)))
    assert seen == [(1, script[0]), (2, script[1])]
    assert c.session().run("SELECT x FROM r") == [(7,)]  # the variable held for the next statement
    with pytest.raises(StatementFailed, match="doesn't exist"):
        c.loader().run_script(["CREATE TABLE a (x int)", "INSERT INTO missing VALUES (1)", "CREATE TABLE b (x int)"])
    assert sorted(t for (t,) in c.session().run("SHOW TABLES")) == ["a", "r"]


def test_rows_load_from_a_csv_file_and_from_values_into_hostile_names(c, tmp_path):
    c.loader().run_script([f"CREATE TABLE {c.quote(HOSTILE)} (`the id` int, `it's %s` text, d date)"])
    csv = tmp_path / "t.csv"
    csv.write_text('the id,it\'s %s,d\n1,"O\'Brien, ""Jr"" \\n",1998-01-02\n2,,\n3,"",\n')
    assert c.loader().load_rows(HOSTILE, None, csv) == 3
    assert c.loader().load_rows(HOSTILE, ["d", "the id"], [(date(2001, 2, 3), 4), (None, 5)]) == 2
    rows = c.session().run(f"SELECT * FROM {c.quote(HOSTILE)} ORDER BY 1")
    assert rows == [(1, 'O\'Brien, "Jr" \\n', date(1998, 1, 2)), (2, None, None), (3, "", None),
                    (4, None, date(2001, 2, 3)), (5, None, None)]  # unquoted empty: NULL; quoted empty: ''
    plain = tmp_path / "plain.csv"  # no "" in it: LOAD DATA reads it (a quoted comma and line end included)
    plain.write_text('the id,it\'s %s,d\n6,"a, b\nc",2002-03-04\n7,,\n')
    assert c.loader().load_rows(HOSTILE, None, plain) == 2
    assert c.session().run(f"SELECT * FROM {c.quote(HOSTILE)} WHERE `the id` > 5 ORDER BY 1") == [
        (6, "a, b\nc", date(2002, 3, 4)), (7, None, None)]
    bad = tmp_path / "bad.csv"
    bad.write_text("the id,it's %s,d\n8,x,2002-03-04\n9,y,not a date\n")
    with pytest.raises(StatementFailed, match="loading .*d"):  # the server's warning is the load's error
        c.loader().load_rows(HOSTILE, None, bad)
    assert c.session().run(f"SELECT count(*) FROM {c.quote(HOSTILE)} WHERE `the id` > 7") == [(0,)]
    c.loader().run_script([f"DELETE FROM {c.quote(HOSTILE)} WHERE `the id` > 5"])
    with pytest.raises(StatementFailed, match="loading nowhere"):
        c.loader().load_rows("nowhere", None, [(1,)])
    with pytest.raises(StatementFailed, match="loading"):  # a failure loads nothing (one transaction)
        c.loader().load_rows(HOSTILE, ["the id", "d"], [(6, date(2001, 1, 1)), (7, "not a date")])
    assert c.session().run(f"SELECT count(*) FROM {c.quote(HOSTILE)}") == [(5,)]


def test_analyze_keeps_json_histograms_and_the_statistics_the_generator_reads(c):
    c.loader().run_script(["CREATE TABLE t (k int PRIMARY KEY, v varchar(10), n int)",
                  "INSERT INTO t SELECT seq, CONCAT('v', seq % 7), IF(seq % 4 = 0, NULL, seq) FROM seq_1_to_5000"])
    c.loader().analyze(["t"], statistics_target=10)
    stats = c.loader().column_statistics()
    db = c.identity()["database"]
    null_frac, n_distinct, width, mcv, mcf, hist = stats[(db, "t", "k")]
    assert n_distinct == -1 and hist == ["1", "5000"] and mcv is None  # unique: no histogram, its min and max
    null_frac, n_distinct, width, mcv, mcf, hist = stats[(db, "t", "n")]
    assert null_frac == pytest.approx(0.25) and 3 <= len(hist) <= 11 and hist == sorted(hist, key=int)
    values = stats[(db, "t", "v")]
    assert set(values[3] or ()) | set(values[5]) <= {f"v{i}" for i in range(7)} and values[2] == 2
    assert 4000 <= c.loader().table_rows()[(db, "t")] <= 6000  # InnoDB's estimate
    c.loader().analyze()
    assert len(c.loader().column_statistics()[(db, "t", "n")][5]) > 11  # the default: 254 buckets
    c.loader().vacuum(["t"])  # nothing to do on InnoDB, and no error
    words = c.loader().reserved_words()
    assert {"select", "order", "key"} <= words and not {"orders", "user", "action"} & words


def test_statements_run_as_drivers_send_them_and_the_digest_has_placeholders(c):
    c.loader().run_script(["CREATE TABLE t (k int, d date, s varchar(10))", "INSERT INTO t VALUES (1, '1998-01-02', '50%')"])
    c.reset_statement_stats()
    calls = [("SELECT k FROM t WHERE d >= $1 AND s LIKE $2", ["1998-01-01", "50%"]),
             ("SELECT k FROM t WHERE d >= $1 AND s LIKE $2", [date(1997, 1, 1), "x'y"])]
    assert c.loader().run_parameterized(calls) == 2
    captured = {s.sql: s.calls for s in workload_delta(c.observe()).statements}
    assert captured == {"SELECT `k` FROM `t` WHERE `d` >= $1 AND `s` LIKE $2": 2}
    with pytest.raises(StatementTimeout):
        c.loader().run_parameterized([("SELECT SLEEP($1)", [5])], timeout_ms=100)
    with pytest.raises(StatementFailed, match="doesn't exist"):
        c.loader().run_parameterized([("SELECT * FROM missing WHERE a = $1", [1])])


def test_a_session_names_a_querys_columns_without_reading_rows(c):
    c.loader().run_script(["CREATE TABLE t (k int, v decimal(5,2))", "INSERT INTO t VALUES (1, 2.5), (2, NULL)"])
    with c.session(2000) as s:
        # SLEEP would run out the timeout if a row were read
        assert s.columns("SELECT count(*), k, k, SLEEP(5) AS z FROM t GROUP BY k") == ["count(*)", "k", "k", "z"]
        assert s.fetch("SELECT k, v AS `the v` FROM t ORDER BY k") == (["k", "the v"], [(1, Decimal("2.50")),
                                                                                      (2, None)])
        assert s.run("SELECT count(*) FROM t") == [(2,)]  # the session reads rows again afterwards
        with pytest.raises(StatementFailed, match="doesn't exist"):
            s.columns("SELECT * FROM missing")


def test_a_client_program_gets_the_password_in_its_environment_only(server):
    c = factory.connector(f"mariadb://bob:s3cret@127.0.0.1:{server.port}/shop")
    argv, env = c.loader().client_command("mariadb", ["--version"])
    assert argv[0].endswith("/mariadb") and argv[1] == "--no-defaults" and argv[-2:] == ["--version", "shop"]
    assert "s3cret" not in " ".join(argv) and env["MYSQL_PWD"] == "s3cret"
    with pytest.raises(AdvisorError, match="pgbench is not a MariaDB client program"):
        c.loader().client_command("pgbench", [])


@pytest.fixture(scope="module")
def tpch_c(server):
    connector = factory.connector(server.create_database("tpch"))
    counts = tpch.load(connector, scale=0.01)  # the smallest scale whose partsupp keys are unique
    return connector, counts


def test_tpch_loads_at_a_tiny_scale_and_its_22_queries_run_in_mysqls_sql(tpch_c, server):
    c, counts = tpch_c
    assert counts["nation"] == 25 and counts["region"] == 5 and counts["lineitem"] > 50_000
    assert mrows(server.dsn("tpch"), "SELECT count(*) FROM lineitem") == [(counts["lineitem"],)]
    assert mrows(server.dsn("tpch"), "SELECT count(*) FROM lineitem WHERE l_comment IS NULL OR l_comment = ''") \
        == [(0,)]
    assert c.loader().column_statistics()[("tpch", "orders", "o_orderdate")][5]  # analyzed: a histogram of dates
    rng = random.Random(7)
    results = {}
    with c.session(60_000) as s:
        for n in tpch.QUERY_NUMBERS:
            results[n] = s.run(to_dialect(tpch.query(n, rng, 0.01), tpch.SOURCE_DIALECT, c.dialect))
    assert all(rows is not None for rows in results.values())
    assert len(results[1]) == 4 and len(results[6]) == 1  # (returnflag, linestatus) groups; one revenue
    assert results[13] and sum(n for _count, n in results[13]) == counts["customer"]  # every customer counted


def test_generated_statements_over_tpch_run_on_mariadb(tpch_c, server):
    c, _ = tpch_c
    workload = generated.generate(c, 2 * len(FAMILIES), seed=3)
    assert workload == generated.generate(c, 2 * len(FAMILIES), seed=3)  # the same seed, the same statements
    assert {g.family for g in workload} == set(FAMILIES)  # set operations' ORDER BY 1 too, by the column's name
    with c.session(60_000) as s:
        assert [len(s.run(g.sql)) for g in workload] == [g.rows for g in workload]


def test_the_application_workload_over_tpch_is_captured_bound_and_replayed(tpch_c, server):
    c, _ = tpch_c
    c.reset_statement_stats()
    assert app_tpch.drive(c, rounds=2, scale=0.01) == 2 * len(app_tpch.TEMPLATES)  # $n kept, dates added as days
    workload = workload_delta(c.observe())
    assert len(workload.statements) == len(app_tpch.TEMPLATES) and all(s.calls == 2 for s in workload.statements)
    mrun(server.dsn("tpch"), "TRUNCATE TABLE performance_schema.events_statements_history_long")
    bound, skipped = bind_workload(c, workload)  # every constant of a digest is a parameter: drawn or defaulted
    assert not skipped and {b.source for b in bound} == {"statistics"}
    week = next(b.sql for b in bound if "BETWEEN" in b.sql and "DATE_ADD" in b.sql)
    low = week.split("BETWEEN CAST( '")[1][:10]
    assert low != "2000-01-01" and f"DATE_ADD( CAST( '{low}' AS DATE ) , INTERVAL 7 " in week  # a week from data
    result = replay(c, bound, ReplayOptions(warmup=0, statement_timeout_ms=30_000))
    assert not result.errors and len(result.samples) == len(bound)
