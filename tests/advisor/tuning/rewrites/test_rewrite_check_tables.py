"""The equivalence check's databases hold every table a statement reads anywhere (a subquery in the select list,
ORDER BY, a CASE or HAVING, a CTE, a UNION branch), so a statement whose select list holds a correlated aggregate
over another table is checked, not reported 'not equivalent'; and an original that fails on a check database is
an error of the check, reported as such."""

import uuid

import pytest

from advisor.tuning import kinds
from advisor.service.service import AdvisorService
from advisor.storage.store import Store
from advisor.tuning.rewrites import pipeline as rewrites
from advisor.tuning.rewrites.equivalence import check
from advisor.tuning.rewrites.tables import constraints, tables_named, tables_read
from connectors import factory
from optimizers.rewrites.search.problem import RewriteProblem
from tests.conftest import run

SCHEMA = {"customers": {"id": "integer", "name": "text"},
          "orders": {"id": "integer", "customer_id": "integer", "amount": "numeric"},
          "items": {"order_id": "integer", "qty": "integer"}}
NOT_NULL = frozenset({("customers", "id"), ("orders", "id"), ("orders", "customer_id")})
KEYS = {"customers": (("id",),), "orders": (("id",),)}

SELECT_LIST = ("SELECT c.id, (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) FROM customers c "
               "WHERE c.id < 100")
DECORRELATED = ("SELECT c.id, COALESCE(d.n, 0) AS count FROM customers c LEFT JOIN (SELECT o.customer_id, "
                "count(*) AS n FROM orders o GROUP BY o.customer_id) AS d ON d.customer_id = c.id WHERE c.id < 100")

READS = {  # statement -> the tables outside its FROM list that it reads too
    "select list": (SELECT_LIST, {"orders"}),
    "order by": ("SELECT c.id FROM customers c WHERE c.id < 100 "
                 "ORDER BY (SELECT max(o.amount) FROM orders o WHERE o.customer_id = c.id)", {"orders"}),
    "case": ("SELECT c.id, CASE WHEN EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) THEN 1 ELSE 0 END "
             "AS has FROM customers c", {"orders"}),
    "having": ("SELECT c.name, count(*) FROM customers c GROUP BY c.name "
               "HAVING count(*) > (SELECT count(*) FROM orders)", {"orders"}),
    "cte": ("WITH big AS (SELECT o.customer_id FROM orders o WHERE o.amount > 5) "
            "SELECT c.id FROM customers c WHERE c.id IN (SELECT customer_id FROM big)", {"orders"}),
    "materialized cte": ("WITH big AS MATERIALIZED (SELECT o.customer_id FROM orders o WHERE o.amount > 5) "
                         "SELECT c.id FROM customers c WHERE c.id IN (SELECT customer_id FROM big)", {"orders"}),
    "union": ("SELECT c.id FROM customers c UNION SELECT i.order_id FROM items i", {"items"}),
    "select list of a union branch": ("SELECT c.id FROM customers c UNION "
                                      "SELECT (SELECT max(i.qty) FROM items i WHERE i.order_id = o.id) FROM orders o",
                                      {"orders", "items"}),
}


@pytest.mark.parametrize("name", list(READS))
def test_the_check_databases_hold_every_table_the_statement_reads(name):
    sql, also = READS[name]
    problem = RewriteProblem((("q", sql),), SCHEMA, dialect="postgres")
    assert "q" in problem.lowered, problem.unsupported  # a statement the pipeline would check
    assert set(tables_read(problem, "q")) == {"customers"} | also
    assert "big" not in tables_read(problem, "q")  # a CTE's name is not a table of the schema


def test_tables_are_named_as_postgres_looks_them_up():
    """Unquoted names fold to lower case, a quoted one keeps its case, the schema is dropped; a CTE's name is
    kept only where a table has it (its body reads the table)."""
    assert tables_named('SELECT 1 FROM Customers, public.ORDERS, "Items", generate_series(1, 3) g',
                        dialect="postgres") == {"customers", "orders", "Items"}
    assert tables_named("WITH orders AS (SELECT * FROM orders) SELECT * FROM orders", dialect="postgres") == {"orders"}
    assert tables_named("SELEC oops", dialect="postgres") == set()


@pytest.fixture
def shop(pg):
    dsn = pg.create_database("shop_" + uuid.uuid4().hex[:8])
    run(dsn, "CREATE TABLE customers (id int PRIMARY KEY, name text)",
        "CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL, amount numeric)",
        "CREATE TABLE items (order_id int, qty int)",
        "INSERT INTO customers SELECT x, 'n' || x FROM generate_series(1, 300) x",
        "INSERT INTO orders SELECT x, x % 150 + 1, x % 13 FROM generate_series(1, 3000) x", "ANALYZE")
    return dsn


def test_select_list_subquery_tables_are_in_the_check_databases(db, shop):
    """A correlated aggregate over another table in the select list, and its decorrelated form: equivalent on
    every edge-case database and the shadow (the table the subquery reads was missing from the check databases,
    so the original failed there and the right rewrite was reported 'not equivalent')."""
    problem = RewriteProblem((("q", SELECT_LIST),), SCHEMA, not_null=NOT_NULL, keys=KEYS, dialect="postgres")
    tables = tables_read(problem, "q")
    verdict = check(factory.connector(db), tables, SELECT_LIST, DECORRELATED, not_null=NOT_NULL, shadow=factory.connector(shop),
                    **constraints(problem, tables))
    assert verdict.error is None and verdict.equivalent, verdict.error or verdict.mismatch
    assert verdict.checked[-1] == "the shadow" and "nulls" in verdict.checked


FACT = ("SELECT c.id, (SELECT count(*) FROM r WHERE r.cid = c.id) AS returned FROM c "
        "WHERE c.score > (SELECT 2 * avg(o.amount) FROM o WHERE o.cid = c.id)")


@pytest.fixture
def facts(db):
    run(db, "CREATE TABLE c (id int PRIMARY KEY, score numeric NOT NULL, name text)",
        "CREATE TABLE o (id int PRIMARY KEY, cid int NOT NULL, amount numeric)",
        "CREATE TABLE r (id int PRIMARY KEY, cid int NOT NULL, qty int)",
        "INSERT INTO c SELECT x, x % 97, 'n' || x FROM generate_series(1, 2000) x",
        "INSERT INTO o SELECT x, x % 2000 + 1, x % 13 FROM generate_series(1, 20000) x",
        "INSERT INTO r SELECT x, x % 1000 + 1, x % 5 FROM generate_series(1, 5000) x", "ANALYZE")
    return db


def test_a_select_list_aggregate_over_another_fact_table_does_not_block_a_rewrite(facts):
    """The issue's shape: the select list holds a correlated aggregate over another fact table (r) while the
    WHERE clause's subquery is decorrelated; the rewrite is checked on databases that hold r, and kept."""
    result = AdvisorService(Store(":memory:")).tune("rewrites", facts, kinds.plan_of("rewrites", optimizer="greedy", validate=False, sql=FACT))
    (o,) = result.statements
    assert o.rewritten is not None and o.equivalent, o.reason
    assert "decorrelate_scalar_aggregate" in o.rules and "nulls" in o.checked_on


def test_an_original_that_fails_on_a_check_database_is_an_error_of_the_check(db):
    verdict = check(factory.connector(db), {"customers": SCHEMA["customers"]}, SELECT_LIST, DECORRELATED, not_null=NOT_NULL)
    assert not verdict.equivalent and verdict.mismatch is None
    assert verdict.error.startswith("the equivalence check could not run the original on a check database (")
    assert 'relation "orders" does not exist' in verdict.error


def test_the_pipeline_reports_an_original_failing_on_a_check_database_as_not_checked(facts, monkeypatch):
    """With a table left out of the check databases (as the old ``_tables_read`` left r out), the original fails
    there: the statement's answer says the equivalence was not checked, and no candidate is called not
    equivalent."""
    monkeypatch.setattr(rewrites, "tables_read", lambda problem, queryid: {
        t: cols for t, cols in problem.schema.items() if t in ("c", "o")})
    (o,) = AdvisorService(Store(":memory:")).tune("rewrites", facts, kinds.plan_of("rewrites", optimizer="greedy", validate=False, sql=FACT)).statements
    assert o.rewritten is None and o.equivalent is None
    assert o.reason.startswith("equivalence not checked: the equivalence check could not run the original on a "
                               "check database ("), o.reason
    assert 'relation "r" does not exist' in o.reason
    assert not any(r["why"].startswith("not equivalent") for r in o.rejected)
