"""Capture, binding and replay of a MariaDB workload against a real MariaDB 10.11 server (one sandbox for the
module): statements run as drivers send them are captured from the digests with ``$n``; ``bind_workload`` binds
them with the whole calls the statement history kept (the advisor's own calls last), or, once the history has
forgotten them, with values drawn from mysql.column_stats' histograms or a sample of the column; ``replay`` runs
them with timeouts censored and writes rolled back."""

from __future__ import annotations

import pytest

from advisor.core.errors import StatementFailed, TargetUnreachable
from connectors import factory
from connectors.base import TAG
from connectors.mariadb.binding import MariaDBBindingSource
from tests.connectors.mariadb.conftest import mrows, mrun
from workloads.statements.binding import BoundStatement, bind_workload, parameters
from workloads.statements.capture import workload_delta
from workloads.statements.replay import ReplayOptions, replay

LOOKUP = "SELECT o_id, note FROM orders WHERE cust = $1 AND placed >= $2 ORDER BY o_id LIMIT $3"
SEGMENT = "SELECT count(*) FROM orders WHERE status IN ($1, $2)"
WRITE = "UPDATE orders SET note = $1 WHERE o_id = $2"
SLOW = "SELECT SLEEP($1) FROM orders WHERE o_id = $2"


@pytest.fixture(scope="module")
def shop():
    with factory.sandbox("mariadb", "test-mbind") as sandbox:
        connector = factory.connector(sandbox.create_database("shop"))
        connector.loader().run_script([
            "CREATE TABLE orders (o_id int PRIMARY KEY, cust int NOT NULL, placed date NOT NULL, "
            "status varchar(10) NOT NULL, note text)",
            "INSERT INTO orders SELECT seq, seq % 97, '2020-01-01' + INTERVAL (seq % 700) DAY, "
            "ELT(1 + seq % 3, 'open', 'paid', 'sent'), CONCAT('n', seq) FROM seq_1_to_3000",
            "CREATE TABLE `we``ird` (`the key` int, `it's` varchar(20))",
            "INSERT INTO `we``ird` SELECT seq, CONCAT('w', seq) FROM seq_1_to_50"])
        connector.loader().analyze(["orders"])  # `we``ird` keeps no statistics: its values are sampled
        yield sandbox, connector


def _captured(connector, calls):
    connector.reset_statement_stats()
    connector.loader().run_parameterized(calls)
    return workload_delta(connector.observe())


def test_whole_calls_from_the_statement_history_bind_the_captured_statements(shop):
    sandbox, c = shop
    workload = _captured(c, [(LOOKUP, [5, "2020-06-01", 3]), (LOOKUP, [7, "2021-01-01", 2]),
                             (SEGMENT, ["open", "sent"]), (WRITE, ["it's \\ new", 10])])
    texts = {s.sql for s in workload.statements}
    assert texts == {"SELECT `o_id` , `note` FROM `orders` WHERE `cust` = $1 AND `placed` >= $2 ORDER BY `o_id` "
                     "LIMIT $3", "SELECT COUNT( * ) FROM `orders` WHERE STATUS IN ($1)",
                     "UPDATE `orders` SET `note` = $1 WHERE `o_id` = $2"}
    with c.session() as s:  # the advisor's own call of the lookup (tagged) is no example of the application's
        s.run(TAG + "SELECT o_id, note FROM orders WHERE cust = 96 AND placed >= '2020-01-01' ORDER BY o_id LIMIT 1")
    bound, skipped = bind_workload(c, workload)
    assert not skipped and {b.source for b in bound} == {"qualstats"}
    by_text = {b.normalized: b for b in bound}
    lookup = next(b for t, b in by_text.items() if t.startswith("SELECT `o_id`"))
    assert lookup.sql == "SELECT o_id, note FROM orders WHERE cust = 7 AND placed >= '2021-01-01' ORDER BY o_id LIMIT 2"
    assert lookup.weight == 2 and len(lookup.samples) == 2 and all(not parameters(t) for t in lookup.samples)
    segment = next(b for t, b in by_text.items() if "COUNT" in t)
    assert segment.sql == "SELECT count(*) FROM orders WHERE status IN ('open', 'sent')"
    write = next(b for b in bound if b.is_write)
    assert write.sql == "UPDATE orders SET note = 'it\\'s \\\\ new' WHERE o_id = 10"
    with c.session() as s:
        for b in bound:
            for text in (b.sql, *b.samples):
                s.run(text, rollback=True)  # every binding runs


def test_values_are_drawn_from_the_statistics_once_the_history_forgot_the_calls(shop):
    sandbox, c = shop
    workload = _captured(c, [(LOOKUP, [5, "2020-06-01", 3]), (SEGMENT, ["open", "sent"]),
                             ("SELECT `it's` FROM `we``ird` WHERE `the key` > $1", [40])])
    mrun(sandbox.dsn("shop"), "TRUNCATE TABLE performance_schema.events_statements_history_long")
    bound, skipped = bind_workload(c, workload)
    assert not skipped and {b.source for b in bound} == {"statistics"}, [(b.source, b.sql) for b in bound]
    with MariaDBBindingSource(c.dsn) as source:
        dates, _ = source.column_values("orders", "placed")
    lookup = next(b for b in bound if b.normalized.startswith("SELECT `o_id`"))
    drawn = lookup.sql.split("`placed` >= '")[1].split("'")[0]
    assert drawn in dates and lookup.sql.endswith("LIMIT 100") and "`cust` = " in lookup.sql
    segment = next(b for b in bound if "COUNT" in b.normalized)
    assert segment.sql.split("IN (")[1].rstrip(")") in {"'open'", "'paid'", "'sent'"}
    weird = next(b for b in bound if "we``ird" in b.normalized)
    assert 1 <= int(weird.sql.rsplit("> ", 1)[1]) <= 50  # a sampled value of the column
    with c.session() as s:
        for b in bound:
            s.run(b.sql)


def test_the_binding_source_reads_types_values_and_renders_literals(shop):
    sandbox, c = shop
    with MariaDBBindingSource(c.dsn) as source:
        types = source.parameter_types("SELECT * FROM `orders` AS o WHERE o.`cust` = $1 AND `placed` BETWEEN $2 "
                                       "AND $3 AND `status` LIKE $4 AND $5 = 1 LIMIT $6", 6, {})
        assert types == ["int(11)", "date", "date", "varchar(10)", "unknown", "bigint"]
        # a column the catalog does not have (a derived table's, a TPC-H view's): its type is unknown
        assert source.parameter_types("SELECT * FROM (SELECT `cust` AS c FROM `orders`) AS d WHERE d.c = $1",
                                      1, {}) == ["unknown"]
        hist, common = source.column_values("orders", "status")
        assert set(common) == {"open", "paid", "sent"} and hist[0] == "open"
        sampled, _ = source.column_values("", "the key")  # no statistics: sampled values, sorted
        assert sampled[0] == "1" and sampled[-1] == "50" and [int(v) for v in sampled] == sorted(map(int, sampled))
        assert source.column_values("orders", "nothing") == ((), ())
        assert source.literal(" 42 ", "int(11)") == "42" and source.literal("42", "varchar(10)") == "'42'"
        assert source.literal("O'Brien \\", "unknown") == "'O\\'Brien \\\\'"
        assert source.default_value("decimal(15,2)") == "1" and source.default_value("date") == "2000-01-01"
        assert source.default_value("unknown") == "1" and source.default_value("geometry") is None


def test_replay_censors_timeouts_and_rolls_writes_back(shop):
    sandbox, c = shop
    workload = _captured(c, [(SLOW, [0.5, 1]), (WRITE, ["replayed", 11]), (LOOKUP, [5, "2020-06-01", 3])])
    bound, skipped = bind_workload(c, workload)
    assert not skipped and len(bound) == 3
    before = mrows(sandbox.dsn("shop"), "SELECT note FROM orders WHERE o_id = 11")
    result = replay(c, bound, ReplayOptions(repeats=2, warmup=0, statement_timeout_ms=200))
    slow = next(b for b in bound if "SLEEP" in b.normalized)
    assert result.timeouts == {slow.queryid: 2} and result.samples[slow.queryid] == [200.0, 200.0]
    assert not result.errors and all(len(result.samples[b.queryid]) == 2 for b in bound)
    assert mrows(sandbox.dsn("shop"), "SELECT note FROM orders WHERE o_id = 11") == before  # rolled back
    broken = BoundStatement("broken", "SELECT nothing FROM orders", "SELECT nothing FROM orders", 1.0, "literal",
                            False)
    result = replay(c, [broken], ReplayOptions(warmup=0))
    error = result.errors["broken"][0]
    assert isinstance(error, StatementFailed) and "Unknown column" in error.reason


def test_a_lost_connection_is_target_unreachable(shop):
    sandbox, c = shop
    source = MariaDBBindingSource(c.dsn)
    mrun(sandbox.dsn(), f"KILL {source.conn.thread_id()}")
    with pytest.raises(TargetUnreachable, match="binding parameters"):
        source.column_values("orders", "status")
    source.close()

