"""A rollback after routine maintenance of the table still takes the change's own index away (issue 42, item 2):
the revert-time check tells the index the apply built from another one by what it is (its definition under its
name), not by an internal id that a table rebuild (MariaDB ``OPTIMIZE TABLE``, which recreates an InnoDB table) or
``REINDEX INDEX CONCURRENTLY`` (PostgreSQL builds a new index and swaps it in) gives anew."""

from __future__ import annotations

from advisor.core.domain import IndexChange
from connectors import factory
from tests.advisor.service.test_change_ownership import MariaDB, db, recommend, service  # noqa: F401


def test_a_rollback_after_the_table_was_rebuilt_drops_the_index_its_apply_built(db, service):
    change = IndexChange(db.schema, "orders", ("customer_id",))
    rec = recommend(service, db, (change,))
    before = db.indexes()
    service.apply(rec.id)
    name = next(k for k, _ in factory.connector(db.dsn).ownership((change,))).rsplit(".", 1)[-1]
    assert name in db.indexes()
    if isinstance(db, MariaDB):
        db.sql("OPTIMIZE TABLE orders")
    else:
        db.sql(f'REINDEX INDEX CONCURRENTLY "{name}"')
    after = service.rollback(rec.id)
    assert after.state == "rolled_back"
    assert db.indexes() == before, after.note  # the change's index is gone
    assert not any(a["action"] == "rollback_left_alone" for a in service.audit_log(rec.id))
