"""``Connector.column_keys``: a learned index's keys read from an integer column of the target, on every engine:
distinct, ascending, at most ``limit``, identifiers quoted by the driver (a table and a column whose names need
quoting); a missing column or a text column is one line naming the target, never a traceback."""

from __future__ import annotations

import uuid

import pytest

from advisor.core.errors import AdvisorError
from tests.conftest import run


@pytest.fixture
def pg_keys(pg):
    name = "keys_" + uuid.uuid4().hex[:8]
    dsn = pg.create_database(name)
    run(dsn, 'CREATE TABLE "Key Table" ("k-1" bigint, note text)',
        """INSERT INTO "Key Table" SELECT (x * 7) % 5003, 'n' || x FROM generate_series(1, 6000) x""",
        """INSERT INTO "Key Table" VALUES (NULL, 'none')""")
    return pg.connector(name)


def test_postgres_reads_distinct_sorted_keys_through_quoted_identifiers(pg_keys):
    keys = pg_keys.column_keys("Key Table", "k-1", 100_000)
    assert keys == sorted(set(keys)) and len(keys) == 5003 and keys[0] == 0 and keys[-1] == 5002
    assert pg_keys.column_keys("public.Key Table", "k-1", 10) == list(range(10))
    with pytest.raises(AdvisorError, match="does not exist"):
        pg_keys.column_keys("Key Table", "nope", 10)
    with pytest.raises(AdvisorError) as e:
        pg_keys.column_keys("Key Table", "note", 10)
    assert "\n" not in e.value.message


def test_mariadb_reads_distinct_sorted_keys_through_quoted_identifiers(maria):
    name = "keys_" + uuid.uuid4().hex[:8]
    maria.create_database(name)
    connector = maria.connector(name)
    connector.loader().run_script(["CREATE TABLE `Key Table` (`k-1` BIGINT, note TEXT)",
                          "INSERT INTO `Key Table` SELECT (seq * 7) % 5003, CONCAT('n', seq) FROM seq_1_to_6000",
                          "INSERT INTO `Key Table` VALUES (NULL, 'none')"])
    keys = connector.column_keys("Key Table", "k-1", 100_000)
    assert keys == sorted(set(keys)) and len(keys) == 5003 and keys[0] == 0
    assert connector.column_keys(f"{name}.Key Table", "k-1", 10) == list(range(10))
    with pytest.raises(AdvisorError, match="nope"):
        connector.column_keys("Key Table", "nope", 10)
