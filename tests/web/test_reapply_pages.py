"""A rollback is not final over REST and on the pages (issue 44, item 9), against a real PostgreSQL server:
``POST /api/recommendations/{id}/apply`` re-applies a rolled-back recommendation in one step (its index back,
audited), which rolls back again; the pages show states as words ("rolled back"), never identifiers."""

from __future__ import annotations

import uuid

from advisor.core.domain import IndexChange
from tests.advisor.service.test_change_ownership import Postgres, recommend
from tests.web.test_rewrite_pages import log_in


def test_apply_again_over_rest_and_the_badges_read_as_words(app_client, tokens, pg, monkeypatch):
    client, service = app_client
    op = tokens["operator"]
    db = Postgres(pg, "reapply_" + uuid.uuid4().hex[:8])
    service.add_target("shop", db.dsn)
    rec = recommend(service, db, (IndexChange(db.schema, "orders", ("customer_id",)),))
    before = db.indexes()
    for step, state in (("apply", "applied"), ("rollback", "rolled_back"), ("apply", "applied"),
                        ("rollback", "rolled_back")):
        r = client.post(f"/api/recommendations/{rec.id}/{step}", headers=op)
        assert r.status_code == 200 and r.json()["state"] == state, r.text
        assert (db.indexes() == before) is (state == "rolled_back")
    actions = [a["action"] for a in service.audit_log(rec.id)]
    assert actions[-4:] == ["rolled_back", "approved", "applied", "rolled_back"]

    csrf = log_in(client, op)
    page = client.get(f"/recommendations/{rec.id}").text
    assert 'id="state">rolled back</span>' in page and "rolled_back" not in page.replace("s-rolled_back", "")
    assert ">rolled back</span>" in client.get("/recommendations").text
    assert 'id="apply"' in page and ">Apply again</button>" in page  # the UI's button: the same one step
    r = client.post(f"/recommendations/{rec.id}/apply", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303 and service.recommendation(rec.id).state == "applied" and db.indexes() != before
    r = client.post(f"/recommendations/{rec.id}/rollback", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303 and db.indexes() == before
    assert '<span class="muted">rolled back →</span>' in client.get(f"/recommendations/{rec.id}").text

    monkeypatch.setenv("ADVISOR_REAPPLY_MAX_AGE_DAYS", "0")  # its evidence is old now: one line, nothing changed
    r = client.post(f"/api/recommendations/{rec.id}/apply", headers=op)
    assert r.status_code == 409 and "tune the target again for a fresh validation" in r.json()["message"], r.text
    assert db.indexes() == before
