"""Workload SQL written once in its SOURCE_DIALECT: the same text on PostgreSQL, and writable in MySQL's dialect
(what the MariaDB connector will be given) for the loaders' DDL; what sqlglot cannot write is a clear error."""

from __future__ import annotations

import pytest

from advisor.core.errors import BadStatement
from workloads.datasets import edge_data, job, tpcds, tpch
from workloads.datasets.sqlsource import all_to_dialect, identifier, script, to_dialect
from workloads.datasets.tpcds.schema import DDL as TPCDS_DDL
from workloads.datasets.tpch.schema import DDL, PRIMARY_KEYS


def test_the_same_dialect_leaves_the_text_as_it_is():
    statements = script(DDL) + script(PRIMARY_KEYS) + [t.sql for t in job.TEMPLATES]
    assert all_to_dialect(statements, tpch.SOURCE_DIALECT, "postgres") == statements


def test_the_loaders_ddl_is_written_in_mysql():
    ddl = all_to_dialect(script(DDL) + script(PRIMARY_KEYS), tpch.SOURCE_DIALECT, "mysql")
    assert len(ddl) == 16 and "DECIMAL(15, 2)" in ddl[2] and ddl[-1].startswith("ALTER TABLE lineitem ADD PRIMARY KEY")
    made = [to_dialect(f"CREATE TABLE {identifier(t)} ({body})", tpcds.data.SOURCE_DIALECT, "mysql")
            for t, body in TPCDS_DDL.items()]
    assert all(m.startswith("CREATE TABLE `") for m in made)
    assert to_dialect(f"DROP TABLE IF EXISTS {identifier('a`b')} CASCADE", edge_data.SOURCE_DIALECT,
                      "mysql") == "DROP TABLE IF EXISTS `a``b` CASCADE"


def test_what_cannot_be_written_is_one_clear_line():
    with pytest.raises(BadStatement, match="cannot write in mysql's SQL: SELECT \\(") as e:
        to_dialect("SELECT (", "postgres", "mysql")
    assert "\n" not in str(e.value)
