"""Shadows of a MariaDB target by mariadb-dump: a whole copy, a sampled copy of large tables, the target's tuned
settings carried over, a failed dump said in one line without the password, and no password on a command line."""

from __future__ import annotations

import subprocess

import pytest

from advisor.core.errors import SandboxError
from connectors import factory
from tests.connectors.mariadb.conftest import mrows, mrun

SECRET = "sh4d0w-Pa55"


@pytest.fixture
def target(maria, mdb):
    mrun(mdb, "CREATE TABLE small (id int PRIMARY KEY, note varchar(20))",
         "CREATE TABLE `-dash we``ird` (id int PRIMARY KEY)", "INSERT INTO `-dash we``ird` VALUES (7)",
         "CREATE TABLE big (id int PRIMARY KEY, v int, KEY big_v (v))",
         "INSERT INTO small VALUES (1, 'it''s'), (2, 'b`q')",
         "INSERT INTO big SELECT seq, seq % 13 FROM seq_1_to_5000", "ANALYZE TABLE big")
    maria.add_login("shadow_reader", SECRET)
    return mdb.replace("mariadb://advisor@", f"mariadb://shadow_reader:{SECRET}@")


def test_a_whole_copy_has_the_same_rows_indexes_and_settings(target, monkeypatch):
    source = factory.connector(target)
    source.reset_statement_stats()
    seen: list[list[str]] = []
    real = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda args, **kw: seen.append(args) or real(args, **kw))
    says: list[str] = []
    with factory.clone(factory.connector(target), extra_settings={"sort_buffer_size": "1M"}, say=says.append) as sh:
        # the dump's reads of the target (whole tables, its savepoints, variables, catalogs) are no workload there
        assert [s.query for s in source.observe().statements] == []
        assert sh.connector.engine == "mariadb" and sh.dsn != target
        assert sh.connector.observe().statements == ()  # the load is no workload
        assert mrows(sh.dsn, "SELECT * FROM small ORDER BY id") == [(1, "it's"), (2, "b`q")]
        assert mrows(sh.dsn, "SELECT COUNT(*), SUM(v) FROM big") == mrows(target, "SELECT COUNT(*), SUM(v) FROM big")
        assert {i.name for i in sh.connector.observe().indexes if i.table == "big"} == {"PRIMARY", "big_v"}
        assert mrows(sh.dsn, "SELECT @@sort_buffer_size, @@innodb_flush_method") == [(1048576, "fsync")]
    assert seen and not any(SECRET in " ".join(map(str, args)) for args in seen)
    assert any("mariadb-dump" in line for line in says)


def test_a_sampled_copy_keeps_a_share_of_the_large_tables_only(target):
    with factory.clone(factory.connector(target), sample_percent=20, sample_min_rows=1000) as sh:
        assert mrows(sh.dsn, "SELECT COUNT(*) FROM small") == [(2,)]
        assert mrows(sh.dsn, "SELECT id FROM `-dash we``ird`") == [(7,)]  # a table name that looks like an option
        kept = mrows(sh.dsn, "SELECT COUNT(*) FROM big")[0][0]
        assert 500 < kept < 1500


def test_a_dump_that_fails_says_why_in_one_line_without_the_password(mdb, target):
    mrun(mdb, "CREATE TABLE gone (id int)", "CREATE VIEW v_gone AS SELECT id FROM gone", "DROP TABLE gone")
    with pytest.raises(SandboxError, match="mariadb-dump failed: .*v_gone") as e:
        factory.clone(factory.connector(target))
    assert SECRET not in str(e.value) and "\n" not in str(e.value)
