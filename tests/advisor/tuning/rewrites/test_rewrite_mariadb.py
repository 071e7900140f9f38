"""Rewrites on a MariaDB target, through the same pipeline as on PostgreSQL: equivalence by execution on MariaDB
(edge-case databases loaded into a scratch database of the server, and the shadow) accepts an equivalent rewrite
and rejects one that is not; a rewrite run recommends a faster, equivalent, decorrelated form of a correlated
subquery, written in the mysql dialect, and says which rule families it left out for MySQL's semantics.

The statement shape: MariaDB's optimizer does not decorrelate a scalar subquery compared in WHERE; it runs it once
per outer row (its expression cache helps only where the correlation key repeats). With an index on the
correlation column (InnoDB indexes every foreign key) each run is a short lookup and the correlated form is fine,
so the subquery here reads ``shipments`` by ``order_id``, which has no index, and every ``orders`` row has its own
key: each run scans ``shipments``; decorrelated, one grouping pass does.

ONE MariaDB sandbox serves the module (``connectors.factory.sandbox("mariadb", ...)``)."""

import random

import pytest

from advisor.service.service import AdvisorService
from advisor.storage.store import Store
from advisor.tuning import kinds
from advisor.tuning.rewrites.equivalence import check
from connectors import factory

CORRELATED = ("SELECT o.id, o.amount FROM orders AS o WHERE o.amount > "
              "(SELECT 20 * AVG(s.weight) FROM shipments AS s WHERE s.order_id = o.id)")
COUNTED = "SELECT c.id FROM customers AS c WHERE 2 > (SELECT COUNT(*) FROM orders AS o WHERE o.customer_id = c.id)"
RIGHT = ("SELECT c.id FROM customers AS c LEFT JOIN (SELECT o.customer_id AS k1, COUNT(*) AS v FROM orders AS o "
         "GROUP BY o.customer_id) AS d ON d.k1 = c.id WHERE 2 > COALESCE(d.v, 0)")
COUNT_BUG = ("SELECT c.id FROM customers AS c JOIN (SELECT o.customer_id AS k1, COUNT(*) AS v FROM orders AS o "
             "GROUP BY o.customer_id) AS d ON d.k1 = c.id WHERE 2 > d.v")
# 'a' = 'A' is TRUE under MariaDB's default collation; sqlglot's constant folding makes it FALSE
FOLDED = ("SELECT c.id FROM customers AS c WHERE c.name = 'cust7' AND 'a' = 'A'",
          "SELECT c.id FROM customers AS c WHERE FALSE")


@pytest.fixture(scope="module")
def maria():
    with factory.sandbox("mariadb", "test-rw-maria") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def shop(maria):
    dsn = maria.create_database("shop")
    c = factory.connector(dsn)
    c.loader().run_script([
        "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, credit DECIMAL(10,2))",
        "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(10,2) NOT NULL, "
        "CONSTRAINT fk_customer FOREIGN KEY (customer_id) REFERENCES customers (id))",
        "CREATE TABLE shipments (id INT PRIMARY KEY, order_id INT NOT NULL, weight INT NOT NULL)"])
    rng = random.Random(5)
    c.loader().load_rows("customers", None, [(i, f"Cust{i}", round(rng.uniform(0, 900), 2)) for i in range(1, 401)])
    c.loader().load_rows("orders", None, [(i, rng.randint(1, 400), round(rng.uniform(1, 1000), 2)) for i in range(1, 1201)])
    c.loader().load_rows("shipments", None, [(i, rng.randint(1, 1200), rng.randint(1, 50)) for i in range(1, 2401)])
    c.loader().analyze()
    return dsn


@pytest.fixture(scope="module")
def schema(shop):
    types = factory.connector(shop).column_types()
    return ({t: {col: typ for col, typ, _ in cols} for (_, t), cols in types.items()},
            frozenset((t, col) for (_, t), cols in types.items() for col, _, nn in cols if nn))


def test_equivalence_by_execution_on_mariadb_accepts_an_equivalent_rewrite(maria, shop, schema):
    tables, not_null = schema
    scratch = maria.create_database("edges_ok")
    verdict = check(factory.connector(scratch), tables, COUNTED, RIGHT, not_null=not_null, shadow=factory.connector(shop))
    assert verdict.equivalent, verdict.mismatch or verdict.error
    assert "nulls" in verdict.checked and verdict.checked[-1] == "the shadow"


@pytest.mark.parametrize("name,original,wrong", [("count_bug", COUNTED, COUNT_BUG), ("folded", *FOLDED)])
def test_equivalence_by_execution_on_mariadb_rejects_a_rewrite_that_is_not(maria, shop, schema, name, original, wrong):
    tables, not_null = schema
    scratch = maria.create_database(f"edges_{name}")
    verdict = check(factory.connector(scratch), tables, original, wrong, not_null=not_null, shadow=factory.connector(shop))
    assert not verdict.equivalent and verdict.error is None and "missing" in verdict.mismatch


def test_a_rewrite_run_on_mariadb_recommends_a_faster_decorrelated_form(shop):
    service = AdvisorService(Store(":memory:"))
    result = service.tune("rewrites", shop, kinds.plan_of("rewrites", optimizer="greedy", rounds=2, sql=CORRELATED))
    (o,) = result.statements
    assert o.rewritten is not None, o.reason
    assert "decorrelate_scalar_aggregate" in o.rules and "GROUP BY s.order_id" in o.rewritten
    assert '"' not in o.rewritten  # written in the mysql dialect
    assert o.equivalent and o.checked_on[-1] == "the shadow"
    assert o.ci[0] > 1 and o.ci[0] <= o.speedup <= o.ci[1]  # measurably faster on the MariaDB shadow
    rec = result.recommendation
    assert rec.kind == "rewrites" and rec.state == "validated" and rec.changes[0].rewritten == o.rewritten
    # the why-not: one line per rule family left out in MySQL's semantics, with its reason
    left = {d["change"]: d["why"] for d in result.dropped if d["change"].startswith("rules ")}
    assert set(left) == {"rules filter_into_view, semi_join_to_join_on_key", "rules simplify_predicates"}
    assert "collation" in left["rules filter_into_view, semi_join_to_join_on_key"]
    assert "'a' = 'A'" in left["rules simplify_predicates"]
