"""Dialect keys of our own (``connectors.dialects``): a connector's ``dialect`` is ``postgres`` or ``mariadb`` (and
``mysql`` is MySQL's, for when it is supported), mapped in one place to the sqlglot dialect it is read as, so that a
rewrite rule can hold in MySQL and not in MariaDB, or the other way round."""

from __future__ import annotations

import random

import sqlglot

from connectors import factory
from connectors.dialects import SQLGLOT, sqlglot_name
from optimizers.rewrites.rules import left_out
from optimizers.rewrites.rules.base import Dialects
from workloads.datasets import tpch


def _dialect(engine: str) -> str:
    return factory.ENGINES[engine].connector.dialect


def test_every_engine_has_a_key_of_its_own_that_maps_to_a_sqlglot_dialect():
    keys = {engine: _dialect(engine) for engine in factory.ENGINES}
    assert keys == {"postgres": "postgres", "mariadb": "mariadb"}
    assert set(SQLGLOT) == {"postgres", "mariadb", "mysql"}
    assert sqlglot_name("mariadb") == sqlglot_name("mysql") == "mysql" and sqlglot_name("postgres") == "postgres"


def test_sqlglot_reads_and_writes_a_key_exactly_as_the_dialect_it_maps_to():
    rng = random.Random(7)
    for n in range(1, 23):  # the 22 TPC-H statements, written in MariaDB's dialect by the key and by sqlglot's name
        text = tpch.query(n, rng, 0.01)
        by_key = sqlglot.transpile(text, read=tpch.SOURCE_DIALECT, write=_dialect("mariadb"))
        by_name = sqlglot.transpile(text, read=tpch.SOURCE_DIALECT, write=sqlglot_name("mariadb"))
        assert by_key == by_name, n
        assert [e.sql(dialect=_dialect("mariadb")) for e in sqlglot.parse(by_key[0], read=_dialect("mariadb"))] \
            == [e.sql(dialect="mysql") for e in sqlglot.parse(by_name[0], read="mysql")]


def test_a_rule_can_differ_between_mariadb_and_mysql():
    """Rules key on our dialect keys, not on sqlglot's name, which MariaDB and MySQL share."""
    mariadb = _dialect("mariadb")
    only_mysql = Dialects(refused=(("mysql", "MySQL's own semantics"),))
    assert only_mysql.why_not("mysql") == "MySQL's own semantics" and only_mysql.why_not(mariadb) is None
    # today's rules: what MariaDB leaves out is what MySQL does (strings compare under the collation in both)
    assert left_out(mariadb).keys() == left_out("mysql").keys() and left_out(mariadb) and not left_out("postgres")
    assert all(why.startswith(f"not valid in {mariadb}: ") for why in left_out(mariadb).values())
