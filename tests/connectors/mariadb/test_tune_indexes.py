"""The whole index pipeline on a MariaDB target (as ``advisor tune indexes --target mariadb://...`` runs it): the
workload from the target's statement digests, a shadow copied by mariadb-dump, what-if costs from IGNORED indexes
built on the shadow, the optimizer's choice validated by real executions there, and the drops from MariaDB's own
index usage counts. A selective statement gets its index recommended and validated; an unused index is dropped;
the index behind a foreign key, which the workload never reads, is never proposed; the target is left as it was."""

from __future__ import annotations

import pytest

from advisor.core.domain import DropIndexChange, IndexChange
from advisor.storage.store import Store
from advisor.tuning.indexes.pipeline import IndexPlan, tune_indexes
from advisor.tuning.observe import observe
from advisor.tuning.validation import ValidationOptions
from connectors import factory
from tests.connectors.mariadb.conftest import mrows, mrun

pytestmark = pytest.mark.slow  # about 30 s: a shadow server, a dump and three validation rounds

SCHEMA = ("CREATE TABLE customers (id int PRIMARY KEY, region int)",
          "CREATE TABLE `or ders` (id int PRIMARY KEY, customer_id int NOT NULL, total int, note varchar(20), "
          "CONSTRAINT fk_c FOREIGN KEY (customer_id) REFERENCES customers (id))",
          "CREATE INDEX spare ON `or ders` (note)",
          "INSERT INTO customers SELECT seq, seq % 10 FROM seq_1_to_5000",
          "INSERT INTO `or ders` SELECT seq, 1 + seq % 5000, (seq * 13) % 100003, CONCAT('n', seq % 3) "
          "FROM seq_1_to_60000",
          "ANALYZE TABLE customers, `or ders`")


def test_tune_indexes_on_a_mariadb_target_recommends_validates_and_drops(mdb, tmp_path):
    mrun(mdb, *SCHEMA)
    for k in range(20):
        mrun(mdb, f"SELECT id FROM `or ders` WHERE total = {k * 2477}")
    target = factory.connector(mdb)
    before = mrows(mdb, "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
                        "ORDER BY 1")
    with Store(tmp_path / "s.duckdb") as store:
        plan = IndexPlan("extend", budget_mb=20, validation=ValidationOptions(rounds=3))
        res = tune_indexes(store, target, observe(store, target), plan, model_dir=tmp_path / "model")
    rec = res.recommendation
    assert rec is not None and rec.state == "validated", res.message
    new = [c for c in rec.changes if isinstance(c, IndexChange)]
    assert [(c.table, c.columns) for c in new] == [("or ders", ("total",))]
    assert [c.name for c in rec.changes if isinstance(c, DropIndexChange)] == ["spare"]  # fk_c stays
    created = [ix for ix in rec.details["indexes"] if ix["kept"]]
    assert created[0]["built_bytes"] >= 16384 and created[0]["estimated_bytes"] == created[0]["built_bytes"]
    assert res.whatif["relative_cost"] < 0.5
    assert "ALTER TABLE `" in " ".join(rec.apply_sql) and "ADD INDEX" in " ".join(rec.apply_sql)
    after = mrows(mdb, "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
                       "ORDER BY 1")
    assert after == before  # the target is only read
