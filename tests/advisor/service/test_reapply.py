"""A rollback is not final (issue 44, item 9), against a real PostgreSQL server: a rolled-back recommendation is
applied again in one step (``apply``) while its evidence is fresh: approved again and applied, audited, watched,
its index really back, and rolled back again; evidence older than ``ADVISOR_REAPPLY_MAX_AGE_DAYS`` or contradicted
by its watch is refused in one line that says what to do, and nothing is changed. States read as words."""

from __future__ import annotations

import dataclasses
import time

import pytest

from advisor.core.domain import IndexChange, state_word
from advisor.core.errors import InvalidTransition
from advisor.service.production import reapproval
from advisor.service.service import AdvisorService
from advisor.storage.store import Store
from tests.advisor.service.test_change_ownership import Postgres, recommend

_n = iter(range(10_000))


@pytest.fixture
def db(pg):
    return Postgres(pg, f"reapply{next(_n)}")


@pytest.fixture
def service(tmp_path, monkeypatch, db):
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    s = AdvisorService(Store(str(tmp_path / "advisor.duckdb")))
    s.add_target("shop", db.dsn)
    yield s
    s.store.close()


def test_apply_roll_back_apply_again_and_roll_back_again(db, service):
    change = IndexChange(db.schema, "orders", ("customer_id",))
    rec = recommend(service, db, (change,))
    before = db.indexes()
    applied = service.apply(rec.id)
    made = db.indexes() - before
    assert applied.state == "applied" and len(made) == 1
    assert service.rollback(rec.id).state == "rolled_back" and db.indexes() == before

    again = service.apply(rec.id)  # one step: approved again (its evidence is fresh), then applied
    assert again.state == "applied" and db.indexes() - before == made  # the very index is back
    assert again.applied["watch"]["state"] == "watching"  # watched as the first time
    assert service.rollback(rec.id, why="second thoughts").state == "rolled_back" and db.indexes() == before

    steps = [(a["action"], a["detail"].get("from")) for a in service.audit_log(rec.id)
             if a["action"] in ("validated", "approved", "applied", "rolled_back")]
    assert steps == [("validated", "proposed"), ("approved", "validated"), ("applied", "approved"),
                     ("rolled_back", "applied"), ("approved", "rolled_back"), ("applied", "approved"),
                     ("rolled_back", "applied")]
    reapproved = [a for a in service.audit_log(rec.id) if a["detail"].get("from") == "rolled_back"]
    assert "approved again to re-apply it after its rollback" in reapproved[0]["detail"]["note"]

    # or in two steps, as the first time: approve (again), then apply
    assert service.approve(rec.id, note="once more").state == "approved"
    assert service.apply(rec.id).state == "applied" and db.indexes() - before == made
    assert service.rollback(rec.id).state == "rolled_back" and db.indexes() == before
    notes = [a["detail"]["note"] for a in service.audit_log(rec.id) if a["detail"].get("from") == "rolled_back"]
    assert len(notes) == 2 and notes[1].startswith("once more; approved again to re-apply it")


def test_old_evidence_is_not_applied_again(db, service, monkeypatch):
    change = IndexChange(db.schema, "orders", ("customer_id",))
    rec = recommend(service, db, (change,))
    before = db.indexes()
    service.apply(rec.id)
    service.rollback(rec.id)
    monkeypatch.setenv("ADVISOR_REAPPLY_MAX_AGE_DAYS", "0")  # any evidence is old now
    with pytest.raises(InvalidTransition) as e:
        service.apply(rec.id)
    assert str(e.value).startswith(f"recommendation {rec.id} was rolled back and its evidence is 0.0 days old, older "
                                   "than 0 day(s) (ADVISOR_REAPPLY_MAX_AGE_DAYS): tune the target again")
    assert service.recommendation(rec.id).state == "rolled_back" and db.indexes() == before
    assert not [a for a in service.audit_log(rec.id) if a["detail"].get("from") == "rolled_back"]


def test_a_change_its_watch_rolled_back_is_not_applied_again():
    """Production found it slower: the shadow's evidence no longer stands, however fresh."""
    from advisor.core.domain import Recommendation

    rec = Recommendation("r1", "t", "indexes", "ia2", (), (), (), False, "rolled_back", time.time())
    assert reapproval(rec, 7).startswith("approved again")
    watched = dataclasses.replace(rec, applied={"watch": {"state": "rolled_back"}})
    with pytest.raises(InvalidTransition, match="rolled back by its watch .* tune the target again"):
        reapproval(watched, 7)


def test_states_read_as_words():
    assert [state_word(s) for s in ("rolled_back", "applied", "validated")] == ["rolled back", "applied",
                                                                                  "validated"]


def test_a_re_apply_that_is_refused_says_the_recommendation_stays_approved(db, service):
    """The one step approves again first; when the apply is then refused (here: an index of the same name was
    made on the target meanwhile, and a change touches only what it created), the line says the approval stands."""
    change = IndexChange(db.schema, "orders", ("customer_id",))
    rec = recommend(service, db, (change,))
    before = db.indexes()
    service.apply(rec.id)
    (name,) = db.indexes() - before
    service.rollback(rec.id)
    db.sql(f'CREATE INDEX "{name.split(".")[-1]}" ON orders (customer_id)')  # someone else's, same name
    with pytest.raises(Exception, match="it was approved again for this apply and stays approved"):
        service.apply(rec.id)
    assert service.recommendation(rec.id).state == "approved"
