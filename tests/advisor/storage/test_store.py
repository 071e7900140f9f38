"""The store's behaviour, on both backends: a DuckDB file and a database on a real PostgreSQL server (the
session's sandbox). Tests of several processes sharing one store are in test_store_postgres.py."""

import uuid

import psycopg
import pytest

from advisor.core.domain import (Evidence, IndexChange, KnobChange, Recommendation, Snapshot, StatementEvidence,
                                 Workload)
from advisor.core.errors import InvalidTransition, NotFound, StoreError
from advisor.storage.store import SCHEMA_VERSION, Store

STORE_PASSWORD = "store-Pa55-never-shown"
STORE_LOGIN = "store_owner"  # a login of the session's server that must give STORE_PASSWORD


def pg_url(pg) -> str:
    """A fresh database on the session's server, as a store URL of the login ``STORE_LOGIN`` (the password must be
    given, and is kept out of every name and error)."""
    name = "store_" + uuid.uuid4().hex[:10]
    pg.create_database(name, extensions=False)
    pg.add_login(STORE_LOGIN, STORE_PASSWORD)
    return f"postgresql://{STORE_LOGIN}:{STORE_PASSWORD}@{pg.host}:{pg.port}/{name}"


def pg_schema_version(url: str) -> int:
    """The schema version written in the PostgreSQL database itself (proof that the store went there)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])


@pytest.fixture(params=["duckdb", "postgresql"])
def location(request, tmp_path):
    """Where a new store lives: a DuckDB file, or a fresh PostgreSQL database."""
    if request.param == "duckdb":
        yield str(tmp_path / "store.duckdb")
        return
    url = pg_url(request.getfixturevalue("pg"))
    yield url
    assert pg_schema_version(url) >= SCHEMA_VERSION


def _rec(rid="r1"):
    ev = Evidence(3, (10.0, 11.0, 10.5), (8.0, 8.5, 8.2), 0.2, (0.1, 0.3),
                  (StatementEvidence("q", "SELECT 1", 2.0, 5.0, 4.0, 0.8, (0.7, 0.9), False),), 0.02, 0.1)
    return Recommendation(rid, "t1", "knobs", "rules", (KnobChange("work_mem", "64MB"),
                          IndexChange("s", "t", ("a", "b"))), ("ALTER SYSTEM SET ...",), ("ALTER SYSTEM RESET ...",),
                          False, "proposed", 1.0, ev)


def test_round_trip_and_lifecycle(location):
    path = location
    with Store(path) as s:
        assert s.schema_version == SCHEMA_VERSION and STORE_PASSWORD not in s.path
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


def test_a_store_from_a_newer_version_is_refused(location):
    path = location
    with Store(path) as s:
        s.db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer") as err:
        Store(path)
    assert STORE_PASSWORD not in str(err.value)


def test_pages_past_any_table_are_empty_not_an_error(location):
    """Offsets and limits beyond DuckDB's BIGINT (a CLI user's --offset 99999999999999999999) give no rows."""
    with Store(location) as store:
        target = store.upsert_target("t", "postgres", "host=x")
        store.add_run("r1", target, "knobs", "hibo", {})
        assert [r["id"] for r in store.runs(limit=10**30)] == ["r1"]
        assert store.runs(offset=10**20) == [] and store.audit_log(offset=10**20) == []
        assert store.recommendations(offset=2**63) == [] and store.snapshots(target, offset=2**64) == []


def test_every_table_round_trips(location):
    """Each kind of row written and read back the same on both engines: JSON columns, NULLs, booleans, upserts,
    and the list summaries computed in SQL from JSON fields."""
    with Store(location) as s:
        tid = s.upsert_target("prod", "postgres", "host=x")
        assert s.upsert_target("prod", "postgres", "host=y") == tid and s.target_credentials(tid) is None
        snap = Snapshot(5.0, "16", "shop", (), {"tps": 1.5}, (), (), (), ())
        s.add_snapshot(tid, snap, Workload(()))
        assert s.target("prod")["last_summary"]["metrics"] == {"tps": 1.5} and s.count_snapshots(tid) == 1
        assert s.snapshots(tid)[0]["workload"] == {"statements": [], "interval_s": None}
        s.add_run("run1", tid, "knobs", "hibo", {"budget": 3})
        s.update_run("run1", state="done", result={"best_objective": 2.0, "baseline_objective": 4.0},
                      progress={"trial": 3})
        assert s.run("run1")["result"]["best_objective"] == 2.0 and s.count_runs(tid, "done") == 1
        s.add_trial(tid, "run1", "hibo", [KnobChange("work_mem", "8MB")], None, "ok", number=1, config={"a": 1},
                    objective=3.5)
        s.add_trial(tid, "run1", "hibo", [], None, "failed", "boom")
        assert [(t["number"], t["config"], t["objective"]) for t in s.trials("run1")] == \
            [(None, None, None), (1, {"a": 1}, 3.5)]
        s.cache_seeds("k", [{"x": 1}])
        s.cache_seeds("k", [{"x": 2}])
        assert s.cached_seeds("k") == [{"x": 2}] and s.cached_seeds("other") is None
        rec = Recommendation(**{**_rec().__dict__, "target_id": tid, "run_id": "run1",
                                "details": {"whatif": {"relative_cost": 0.25}}})
        s.add_recommendation(rec)
        summary, = s.recommendation_summaries(target_id=tid)
        assert (summary["target"], summary["changes"], summary["gain"], summary["gain_low"], summary["gain_high"],
                summary["relative_cost"], summary["best_objective"], summary["baseline_objective"]) == \
            ("prod", 2, 0.2, 0.1, 0.3, 0.25, 2.0, 4.0)
        assert s.recommendation("r1") == rec and s.count_recommendations(kind="knobs", run_id="run1") == 1
        token = s.add_token("ci", "viewer", "hash1", "admin")
        assert s.token_by_hash("hash1")["name"] == "ci" and s.token("ci")["revoked_at"] is None
        s.add_session("sess", token, "csrf", 60.0)
        assert s.session("sess")["csrf"] == "csrf"
        s.revoke_token(token)
        assert s.session("sess") is None and s.token(token)["revoked_at"] is not None
        sid = s.add_schedule(tid, "0 3 * * *", "UTC", {"kind": "knobs"}, "admin")
        s.schedule_fired(sid, 7.0)
        assert s.schedule(sid)["last_fire_at"] == 7.0 and s.schedules(tid)[0]["plan"] == {"kind": "knobs"}
        s.remove_target(tid)
        assert s.targets() == [] and s.schedules() == [] and s.audit_log("r1")[0]["detail"]["kind"] == "knobs"


def test_a_targets_replica_record_round_trips(location):
    """A target's replica record (issue 43): written while it builds, replaced when built, listed by target, and
    forgotten with the target."""
    with Store(location) as s:
        tid = s.upsert_target("prod", "postgres", "host=x")
        assert s.replica(tid) is None and s.replicas() == {}
        s.set_replica(tid, "postgres", "/home/a/replicas/x", "building", owner={"pid": 1, "host": "h"})
        s.replica_progress(tid, "base backup: 40%")
        assert (s.replica(tid)["state"], s.replica(tid)["progress"], s.replica(tid)["owner"]) == \
            ("building", "base backup: 40%", {"pid": 1, "host": "h"})
        s.set_replica(tid, "postgres", "/home/a/replicas/x", "ready", built_at=12.5)
        assert (s.replicas()[tid]["state"], s.replicas()[tid]["built_at"], s.replicas()[tid]["owner"]) == \
            ("ready", 12.5, None)
        s.remove_target(tid)
        assert s.replicas() == {}
