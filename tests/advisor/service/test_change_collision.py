"""Two approved recommendations whose changes collide cannot both be applied (issue 42, item 1), on both engines
against real servers, beyond one index name (``test_change_ownership``): one index definition on one table under
another name, and one setting. The second is refused, naming the first, and nothing is changed."""

from __future__ import annotations

import pytest

from advisor.core.domain import IndexChange, KnobChange
from advisor.core.errors import Conflict
from tests.advisor.service.test_change_ownership import MariaDB, db, recommend, service  # noqa: F401


def test_one_index_definition_under_another_name_collides_with_the_applied_one(db, service):
    first = recommend(service, db, (IndexChange(db.schema, "orders", ("customer_id",)),))
    second = recommend(service, db, (IndexChange(db.schema, "orders", ("customer_id",), name="orders_by_customer"),))
    service.apply(first.id)
    built = db.indexes()
    with pytest.raises(Conflict, match=f"collides with recommendation {first.id}"):
        service.apply(second.id)
    assert db.indexes() == built and "orders_by_customer" not in built  # no second copy of the index
    assert [service.recommendation(r.id).state for r in (first, second)] == ["applied", "approved"]
    assert any(a["action"] == "apply_refused" and a["detail"]["collides_with"] == first.id
               for a in service.audit_log(second.id))
    service.rollback(first.id)
    assert service.apply(second.id).state == "applied"  # once the first is gone, the second may go in
    service.rollback(second.id)


def test_two_recommendations_of_one_setting_cannot_both_be_applied(db, service):
    knob = "long_query_time" if isinstance(db, MariaDB) else "random_page_cost"
    first = recommend(service, db, (KnobChange(knob, "7"),))
    second = recommend(service, db, (KnobChange(knob, "9"),))
    service.apply(first.id)
    try:
        with pytest.raises(Conflict, match=f"collides with recommendation {first.id}"):
            service.apply(second.id)
        assert service.recommendation(second.id).state == "approved"
    finally:
        service.rollback(first.id)
