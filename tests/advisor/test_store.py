import pytest

from advisor.core.domain import Evidence, IndexChange, KnobChange, Recommendation, StatementEvidence
from advisor.core.errors import InvalidTransition, NotFound, StoreError
from advisor.storage.store import SCHEMA_VERSION, Store


def _rec(rid="r1"):
    ev = Evidence(3, (10.0, 11.0, 10.5), (8.0, 8.5, 8.2), 0.2, (0.1, 0.3),
                  (StatementEvidence("q", "SELECT 1", 2.0, 5.0, 4.0, 0.8, (0.7, 0.9), False),), 0.02, 0.1)
    return Recommendation(rid, "t1", "knobs", "rules", (KnobChange("work_mem", "64MB"),
                          IndexChange("s", "t", ("a", "b"))), ("ALTER SYSTEM SET ...",), ("ALTER SYSTEM RESET ...",),
                          False, "proposed", 1.0, ev)


def test_round_trip_and_lifecycle(tmp_path):
    path = tmp_path / "a.duckdb"
    with Store(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        s.add_recommendation(_rec())
        s.transition("r1", "validated", "advisor")
    with Store(path) as s:
        rec = s.recommendation("r1")
        assert rec == Recommendation(**{**_rec().__dict__, "state": "validated"})
        with pytest.raises(InvalidTransition):
            s.transition("r1", "applied", "bob")  # must be approved first
        s.transition("r1", "approved", "alice")
        assert [a["action"] for a in s.audit_log("r1")] == ["recommend", "validated", "approved"]
        assert [r.id for r in s.recommendations(state="approved")] == ["r1"]
        with pytest.raises(NotFound):
            s.recommendation("nope")


def test_a_store_from_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "b.duckdb"
    with Store(path) as s:
        s.db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer"):
        Store(path)


def test_pages_past_any_table_are_empty_not_an_error(tmp_path):
    """Offsets and limits beyond DuckDB's BIGINT (a CLI user's --offset 99999999999999999999) give no rows."""
    with Store(tmp_path / "s.duckdb") as store:
        target = store.upsert_target("t", "postgres", "host=x")
        store.add_run("r1", target, "knobs", "hibo", {})
        assert [r["id"] for r in store.runs(limit=10**30)] == ["r1"]
        assert store.runs(offset=10**20) == [] and store.audit_log(offset=10**20) == []
        assert store.recommendations(offset=2**63) == [] and store.snapshots(target, offset=2**64) == []
