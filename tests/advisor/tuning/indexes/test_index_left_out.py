"""Issue 42 item 11: a statement an index run cannot parse or plan is left out with its reason at every step
(candidates, what-if planning, validation, the recommendation's why-not), and the run goes on. One bulk INSERT
through PyMySQL's ``executemany`` leaves a digest text that performance_schema truncated (``...``): the candidate
step left it out, then the validation planned and replayed it and failed the run."""

from __future__ import annotations

import uuid

from advisor.core.domain import Snapshot
from advisor.service.service import AdvisorService
from advisor.storage.store import open_store
from advisor.tuning.indexes.problem import build_problem
from advisor.tuning import kinds
from connectors import factory
from tests.connectors.mariadb.conftest import _conn, mrun
from workloads.statements.binding import BoundStatement

PLAN = {"kind": "indexes", "optimizer": "extend", "budget_mb": 50, "rounds": 3}


def _left_out(result, fragment: str) -> dict:
    """The explain row of the statement whose text holds ``fragment``, after checking that it is left out and
    that the recommendation's per-statement why-not (its stored explanation) says so with the same reason."""
    row = next(r for r in result.explain if fragment in r["statement"])
    assert row["status"] == "not parsed" and row["why"].startswith("left out of index selection: "), row
    rec = result.recommendation
    assert rec is not None, result.message
    stored = next(r for r in rec.details["explain"] if r["queryid"] == row["queryid"])
    assert stored["why"] == row["why"], stored
    return row


def test_a_bulk_insert_and_an_unplannable_statement_do_not_fail_a_mariadb_index_run(maria, tmp_path):
    dsn = maria.create_database("bulk_" + uuid.uuid4().hex[:8])
    mrun(dsn, "CREATE TABLE t (id INT PRIMARY KEY, a INT, pad VARCHAR(40))",
         "INSERT INTO t SELECT seq, seq % 100, md5(seq) FROM seq_1_to_20000",
         "CREATE TABLE log (id INT PRIMARY KEY, v INT)",
         "TRUNCATE performance_schema.events_statements_summary_by_digest")
    with _conn(dsn) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO log (id, v) VALUES (%s, %s)", [(i, i) for i in range(60_000)])
        for i in range(100):
            cur.execute("SELECT id, a FROM t WHERE pad = %s", (f"{i:032x}",))
        for i in range(20):  # parses, but the server has no such function: it fails, and cannot be planned
            try:
                cur.execute("SELECT id FROM t WHERE no_such_function(pad) = %s", (str(i),))
            except Exception:  # noqa: BLE001 - the application's error; the digest records the statement anyway
                pass
    lines: list[str] = []
    service = AdvisorService(open_store(tmp_path / "s.duckdb"), say=lines.append)
    result = service.tune("indexes", dsn, kinds.parse_plan(PLAN), by_hand=True)
    bulk = _left_out(result, "INSERT INTO `log`")
    assert bulk["why"].startswith("left out of index selection: cannot parse"), bulk
    assert bulk["sql"].endswith("..."), bulk["sql"][-40:]  # performance_schema's truncated digest text
    unplanned = _left_out(result, "no_such_function")
    assert "cannot plan" in unplanned["why"] and "no_such_function" in unplanned["why"], unplanned
    lookup = next(r for r in result.explain if "`pad` = $1" in r["statement"])
    assert lookup["status"] != "not parsed" and lookup["candidates"], lookup
    assert [c.columns for c in result.chosen] == [("pad",)]
    assert any(line.startswith("validating 1 index(es)") for line in lines)  # validation ran, without them


def test_an_unparseable_statement_is_left_out_of_a_postgres_index_run(pg, tmp_path):
    """PostgreSQL plans ``COLLATION FOR``, sqlglot does not parse it: left out with the parser's reason, and the
    run goes on (validation replays what was selected from)."""
    dsn = pg.create_database("unparsed_" + uuid.uuid4().hex[:8])
    with factory.connect(dsn) as conn:
        conn.execute("CREATE TABLE u (id int PRIMARY KEY, a int, pad text)")
        conn.execute("INSERT INTO u SELECT x, x % 100, md5(x::text) FROM generate_series(1, 20000) x")
        conn.execute("ANALYZE")
        conn.execute("SELECT pg_stat_statements_reset()")
        for i in range(100):
            conn.execute("SELECT id, a FROM u WHERE pad = %s", [f"{i:032x}"])
            conn.execute("SELECT COLLATION FOR (pad) FROM u WHERE a = %s", [i])
    service = AdvisorService(open_store(tmp_path / "s.duckdb"))
    result = service.tune("indexes", dsn, kinds.parse_plan(PLAN), by_hand=True)
    row = _left_out(result, "COLLATION FOR")
    assert "cannot parse" in row["why"], row
    assert [c.columns for c in result.chosen] == [("pad",)]


def test_a_statement_the_server_cannot_plan_is_left_out_of_the_problem(pg):
    """The what-if step on PostgreSQL (HypoPG): a statement sqlglot parses but the server refuses to plan is left
    out with the server's reason, and the others make the problem."""
    dsn = pg.create_database("unplanned_" + uuid.uuid4().hex[:8])
    with factory.connect(dsn) as conn:
        conn.execute("CREATE TABLE u (id int PRIMARY KEY, a int, pad text)")
        conn.execute("INSERT INTO u SELECT x, x % 100, md5(x::text) FROM generate_series(1, 20000) x")
        conn.execute("ANALYZE")
    connector = factory.connector(dsn)
    snapshot: Snapshot = connector.observe()
    good = BoundStatement("q1", "SELECT id FROM u WHERE pad = $1", "SELECT id FROM u WHERE pad = 'x'", 100.0,
                          "literal", False)
    bad = BoundStatement("q2", "SELECT id FROM u WHERE no_such_function(pad) = $1",
                         "SELECT id FROM u WHERE no_such_function(pad) = 'x'", 100.0, "literal", False)
    skipped: list[tuple[str, str]] = []
    problem, session = build_problem(connector, snapshot, [good, bad], 50 * 2**20, skipped=skipped)
    with session:
        assert [q.queryid for q in problem.queries] == ["q1"]
        assert [qid for qid, _ in skipped] == ["q2"] and "cannot plan" in skipped[0][1]
        assert "no_such_function" in skipped[0][1]
        assert problem.candidates and all(c.index.columns == ("pad",) for c in problem.candidates)
