"""The connector conformance suite: what every engine's core ``Connector`` role does the same, whatever the engine
(``tests/connectors/test_conformance.py`` runs it on each engine of ``connectors.factory.ENGINES`` and on the fake
third engine of ``tests/connectors/fake_engine``). Each check takes a connector to a database that ``load`` filled
(the table ``items``: 2000 rows, ``k`` with 50 values) and asserts through the protocol alone: no engine's names,
SQL written once in PostgreSQL's dialect and transpiled to the connector's ``dialect``."""

from __future__ import annotations

import sqlglot
import pytest

from advisor.core.domain import Costed, IndexChange, KnobSpec
from advisor.core.errors import AdvisorError, BadStatement, StatementFailed
from advisor.core.indexfacts import IndexFacts
from advisor.core.knobprofile import KnobProfile
from advisor.core.plans import Plan
from connectors import factory
from connectors.base import BindingSource, Connector, Session, WhatIf
from connectors.dialects import SQLGLOT

ROWS, KEYS = 2000, 50
ODD = "it's \"odd\""  # a table name every engine must quote


def sql(connector: Connector, text: str) -> str:
    """``text`` (PostgreSQL's dialect) in the connector's."""
    return sqlglot.transpile(text, read="postgres", write=connector.dialect)[0]


def load(connector: Connector) -> None:
    with connector.session() as s:
        s.run(sql(connector, "CREATE TABLE items (id integer PRIMARY KEY, k integer NOT NULL, v varchar(20))"))
        for start in range(0, ROWS, 250):
            s.run(sql(connector, "INSERT INTO items VALUES " + ", ".join(
                f"({i}, {i % KEYS}, 'v{i}')" for i in range(start, start + 250))))
        s.run(f"CREATE TABLE {connector.quote(ODD)} (a integer)")


def _items(connector: Connector) -> tuple[str, str]:
    return next(ref for ref in connector.table_columns() if ref[1] == "items")


def check_protocol(connector: Connector, engine: str, password: str) -> None:
    assert isinstance(connector, Connector) and connector.engine == engine
    assert connector.dialect in SQLGLOT and sqlglot.parse_one("SELECT 1", read=connector.dialect)
    assert password not in connector.display_name and password not in connector.target_name
    again = factory.connector(connector.dsn)  # the factory maps the DSN to the engine's connector
    assert type(again) is type(connector) and again.identity() == connector.identity()
    assert connector.identity()["engine"] == engine


def check_session(connector: Connector) -> None:
    query = sql(connector, "SELECT id, k FROM items WHERE id < 3 ORDER BY id")
    with connector.session(timeout_ms=30_000) as s:
        assert isinstance(s, Session)
        assert s.fetch(query) == (["id", "k"], [(0, 0), (1, 1), (2, 2)])
        with pytest.raises(StatementFailed):
            s.run("SELECT no_such_column FROM items")
        assert s.run(sql(connector, "DELETE FROM items"), rollback=True) is None  # rolled back
        assert s.run(sql(connector, "SELECT count(*) FROM items")) == [(ROWS,)]  # still usable, nothing lost
        assert s.run(f"SELECT count(*) FROM {connector.quote(ODD)}") == [(0,)]
    with pytest.raises(BadStatement):
        connector.check_sql("SELECT no_such_column FROM items")
    connector.check_sql(sql(connector, "DELETE FROM items WHERE id = 1"))  # parsed and analysed, never run
    with connector.session() as s:
        assert s.run(sql(connector, "SELECT count(*) FROM items")) == [(ROWS,)]


def check_catalog(connector: Connector) -> None:
    ref = _items(connector)
    assert connector.table_columns()[ref] == ("id", "k", "v")
    assert [c for c, _type, _not_null in connector.column_types()[ref]] == ["id", "k", "v"]
    assert ("id",) in connector.unique_keys()[ref]
    assert ref[0] == connector.default_schema()
    snap = connector.observe()
    assert any((t.schema, t.name) == ref and t.total_bytes > 0 for t in snap.tables) and snap.server
    catalog = connector.knob_catalog()
    assert catalog and all(isinstance(spec, KnobSpec) and spec.name == name for name, spec in catalog.items())
    assert isinstance(connector.knob_profile(), KnobProfile) and isinstance(connector.index_facts(), IndexFacts)


def check_plans(connector: Connector) -> None:
    lookup = sql(connector, f"SELECT v FROM items WHERE k = {KEYS // 2}")
    plan = connector.plan(lookup)
    assert isinstance(plan, Plan) and plan.cost > 0 and "items" in plan.full_scans()  # no index on k yet
    assert [p.shape() for p in connector.plans([lookup, lookup])] == [plan.shape()] * 2
    with pytest.raises(BadStatement):
        connector.plan("SELECT no_such_column FROM items")


def check_index_round_trip(connector: Connector) -> None:
    """An index made by ``apply`` is there by its name, sized and owned; ``revert`` removes it, leaving nothing."""
    schema, _table = _items(connector)
    ix = IndexChange(schema, "items", ("k",))
    name = connector.index_name(ix)
    planned = connector.plan_changes([ix])
    assert planned.apply_sql and planned.revert_sql and not planned.needs_restart
    applied = connector.apply([ix])
    try:
        assert name in {i.name for i in connector.observe().indexes}
        assert connector.index_sizes([ix])[ix] > 0
        [(key, identity)] = connector.ownership([ix])
        assert name in key and identity
        assert name in connector.plan(sql(connector, f"SELECT v FROM items WHERE k = {KEYS // 2}")).indexes
    finally:
        connector.revert(applied)
    assert connector.index_sizes([ix])[ix] is None and connector.ownership([ix])[0][1] is None
    assert name not in {i.name for i in connector.observe().indexes}


def check_whatif(connector: Connector) -> None:
    """A hypothetical index lowers the cost of a lookup it serves, and leaves nothing behind."""
    ref = _items(connector)
    ix = IndexChange(ref[0], "items", ("k",))
    lookup = sql(connector, f"SELECT v FROM items WHERE k = {KEYS // 2}")
    with connector.whatif() as w:
        assert isinstance(w, WhatIf)
        without, with_index = w.plan(lookup, [], frozenset({ref})), w.plan(lookup, [ix], frozenset({ref}))
        assert isinstance(with_index, Costed) and 0 < with_index.total < without.total
        assert w.index_size(ix) > 0
    assert connector.explain_cost(lookup, [ix]) < connector.explain_cost(lookup)
    assert connector.index_sizes([ix])[ix] is None


def check_binding(connector: Connector) -> None:
    with connector.binding_source() as b:
        assert isinstance(b, BindingSource)
        literal = b.literal("it's", "text")
    with connector.session() as s:
        assert s.run(f"SELECT {literal}") == [("it's",)]


def check_clone(connector: Connector) -> None:
    """A shadow of the database: the same rows, another database (its identity differs)."""
    with factory.clone(connector) as shadow:
        assert shadow.connector.engine == connector.engine
        with shadow.connector.session() as s:
            assert s.run(sql(connector, "SELECT count(*), sum(k) FROM items")) == [(ROWS, sum(i % KEYS for i in range(ROWS)))]
        assert shadow.connector.identity() != connector.identity()


CHECKS = (check_session, check_catalog, check_plans, check_index_round_trip, check_whatif, check_binding,
          check_clone)
__all__ = ["AdvisorError", "CHECKS", "check_protocol", "load"]
