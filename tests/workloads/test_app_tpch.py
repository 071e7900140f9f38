"""The application workload over TPC-H: every template runs, driven with server-side parameters it fills
pg_stat_statements with the ``$n::date`` shapes, and the literal copies run too."""

import psycopg

from connectors import factory
from workloads.datasets import app_tpch


def test_app_templates_run_as_parameters_and_as_literals(tpch_dsn):
    with psycopg.connect(tpch_dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")
    ran = app_tpch.drive(factory.connector(tpch_dsn), rounds=2, seed=3, scale=0.01)
    assert ran == 2 * len(app_tpch.TEMPLATES)
    with psycopg.connect(tpch_dsn, autocommit=True) as conn:
        texts = [r[0] for r in conn.execute("SELECT query FROM pg_stat_statements WHERE calls >= 2")]
        assert any("BETWEEN $1::date AND $2::date + $3" in t for t in texts)
        assert any("o_orderdate >= $1::date AND o_clerk = $2" in t for t in texts)
        for st in app_tpch.statements(seed=5, scale=0.01, per_template=2):
            for text in (st.sql, *st.samples):
                conn.execute(text).fetchall()
    assert len(app_tpch.statements(per_template=3)[0].samples) == 2


def test_app_constants_vary_and_hit_data(tpch_dsn):
    first, other = app_tpch.statements(1, 0.01), app_tpch.statements(2, 0.01)
    assert sum(a.sql != b.sql for a, b in zip(first, other)) >= 12
    with psycopg.connect(tpch_dsn, autocommit=True) as conn:
        point = next(s for s in first if s.queryid == "app.order")
        assert conn.execute(point.sql).fetchone() is not None  # order keys are drawn from the sparse key space
