"""The loaders' side of the PostgreSQL connector (connectors/postgres/loading.py), against a real server: scripts
in one session, COPY from CSV files and from rows (hostile names included), analyze with a statistics target,
the generator's statistics, server-side parameters and a client program's command line without its secret."""

from __future__ import annotations

from datetime import date

import pytest

from advisor.core.errors import AdvisorError, StatementFailed, StatementTimeout
from connectors.postgres import PostgresConnector
from tests.conftest import run, scalar

HOSTILE = 'odd "table"; name'


def test_a_script_runs_in_one_session_and_stops_at_the_first_failure(db):
    c = PostgresConnector(db)
    seen: list[tuple[int, str]] = []
    script = ["SELECT setseed(0.25)", "CREATE TABLE r AS SELECT random() AS x FROM generate_series(1, 3)"]
    c.loader().run_script(script, before=lambda i, s: seen.append((i, s)))
    assert seen == [(1, script[0]), (2, script[1])]
    first = [r[0] for r in c.session().run("SELECT x FROM r ORDER BY x")]
    c.loader().run_script(["DROP TABLE r", *script])  # the seed holds for the next statement of the same script
    assert [r[0] for r in c.session().run("SELECT x FROM r ORDER BY x")] == first
    with pytest.raises(StatementFailed, match="does not exist"):
        c.loader().run_script(["CREATE TABLE a (x int)", "INSERT INTO missing VALUES (1)", "CREATE TABLE b (x int)"])
    assert scalar(db, "SELECT to_regclass('a') IS NOT NULL AND to_regclass('b') IS NULL")


def test_rows_load_from_a_csv_file_and_from_values_into_hostile_names(db, tmp_path):
    c = PostgresConnector(db)
    run(db, f'CREATE TABLE {c.quote(HOSTILE)} ("the id" int, "it\'s" text, d date)')
    csv = tmp_path / "t.csv"
    csv.write_text('the id,it\'s,d\n1,"O\'Brien, ""Jr""",1998-01-02\n2,,\n')
    assert c.loader().load_rows(HOSTILE, None, csv) == 2
    assert c.loader().load_rows(HOSTILE, ["d", "the id"], [(date(2001, 2, 3), 3), (None, 4)]) == 2
    rows = c.session().run(f"SELECT * FROM {c.quote(HOSTILE)} ORDER BY 1")
    assert rows == [(1, 'O\'Brien, "Jr"', date(1998, 1, 2)), (2, None, None), (3, None, date(2001, 2, 3)),
                    (4, None, None)]
    with pytest.raises(StatementFailed, match="loading nowhere"):
        c.loader().load_rows("nowhere", None, [(1,)])


def test_analyze_with_a_target_and_the_statistics_the_generator_reads(db):
    c = PostgresConnector(db)
    run(db, "CREATE TABLE t (k int PRIMARY KEY, v text)",
        "INSERT INTO t SELECT i, 'v' || (i % 7) FROM generate_series(1, 5000) i")
    c.loader().analyze(["t"], statistics_target=10)
    stats = c.loader().column_statistics()
    null_frac, n_distinct, width, mcv, mcf, hist = stats[("public", "t", "k")]
    assert n_distinct == -1 and 2 <= len(hist) <= 11 and not mcv  # a unique column: a histogram of <= 10 buckets
    assert sorted(stats[("public", "t", "v")][3]) == [f"v{i}" for i in range(7)]
    assert c.loader().table_rows()[("public", "t")] == 5000
    c.loader().analyze()
    assert len(c.loader().column_statistics()[("public", "t", "k")][5]) > 11  # the default target: 100 buckets
    words = c.loader().reserved_words()
    assert {"select", "order", "user"} <= words and "orders" not in words


def test_statements_run_with_server_side_parameters_and_a_timeout(db):
    c = PostgresConnector(db)
    run(db, "CREATE TABLE t (k int, d date, s text)", "INSERT INTO t VALUES (1, '1998-01-02', '50%')",
        "SELECT pg_stat_statements_reset()")
    calls = [("SELECT k FROM t WHERE d >= $1::date AND s LIKE $2", ["1998-01-01", "50%"])] * 3
    assert c.loader().run_parameterized(calls) == 3
    assert scalar(db, "SELECT calls FROM pg_stat_statements WHERE query = "
                      "'SELECT k FROM t WHERE d >= $1::date AND s LIKE $2'") == 3
    with pytest.raises(StatementTimeout):
        c.loader().run_parameterized([("SELECT pg_sleep($1)", [5])], timeout_ms=100)


def test_vacuum_runs_on_named_tables(db):
    c = PostgresConnector(db)
    run(db, "CREATE TABLE t (k int)", "INSERT INTO t SELECT generate_series(1, 100)", "DELETE FROM t")
    c.loader().vacuum(["t"])
    assert scalar(db, "SELECT pg_relation_size('t')") == 0  # vacuum truncates the emptied table's pages
    with pytest.raises(StatementFailed, match="vacuuming"):
        c.loader().vacuum(["missing"])


def test_a_client_program_gets_the_password_in_its_environment_only(pg):
    c = PostgresConnector(f"host=127.0.0.1 port={pg.port} user=bob password=s3cret dbname=shop sslmode=disable")
    argv, env = c.loader().client_command("pgbench", ["--version"])
    assert argv[0].endswith("/pgbench") and argv[1] == "--version" and argv[-1] == "shop"
    assert "s3cret" not in " ".join(argv) and env["PGPASSWORD"] == "s3cret" and env["PGSSLMODE"] == "disable"
    with pytest.raises(AdvisorError, match="no_such_tool not found"):
        c.loader().client_command("no_such_tool", [])
