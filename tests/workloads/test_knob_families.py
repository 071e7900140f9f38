"""The knob bench's multi-knob statements (``workloads.datasets.knob_families``) over TPC-H on both engines: long
join chains along the schema's edges and groupings by many-valued pairs, each run once when drawn; the same seed
gives the same statements, and they run again in the engine's dialect."""

import re

import pytest
import sqlglot

from connectors import factory
from workloads.datasets import knob_families

ENGINES = ("tpch_dsn", "maria_tpch")


@pytest.mark.parametrize("fixture", ENGINES)
def test_chains_and_groupings_are_drawn_run_and_repeat_with_the_seed(fixture, request):
    connector = factory.connector(request.getfixturevalue(fixture))
    drawn = knob_families.draw(connector, 4, seed=2, timeout_ms=300_000)
    assert [g.family for g in drawn] == ["chain", "groups", "chain", "groups"]
    assert all(re.fullmatch(r"knob\.s2\.(chain|groups)\.\d", g.queryid) for g in drawn)
    for g in drawn:
        if g.family == "chain":  # more relations than PostgreSQL's join_collapse_limit, joined explicitly
            assert g.sql.count(" JOIN ") >= knob_families.MIN_RELATIONS - 1 and g.rows == 1
        sqlglot.parse_one(g.sql, read=connector.dialect)
    again = knob_families.draw(connector, 4, seed=2, timeout_ms=300_000)
    assert [g.sql for g in again] == [g.sql for g in drawn]
    with connector.session(300_000) as session:
        assert [len(session.run(g.sql)) for g in drawn] == [g.rows for g in drawn]


def test_a_schema_without_edges_gives_no_chain():
    from random import Random

    from workloads.datasets.synthetic.catalog import Column, Schema, Table
    from workloads.datasets.synthetic.draw import Ctx, stats_row

    t = Table("public", "t", 1000.0, (Column("id", "integer", n_distinct=-1, histogram=("1", "500", "1000")),),
              (("id",),))
    assert knob_families.chain(Ctx(Schema((t,)), Random(0), stats_row)) is None
