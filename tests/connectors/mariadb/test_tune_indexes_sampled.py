"""The index pipeline on a MariaDB target larger than the sampling threshold (set tiny here): the what-if search
(candidates built IGNORED, toggled, EXPLAINed) runs on a sampled second shadow, its index sizes scaled to the full
tables, while validation builds the chosen index on the full shadow; the selective lookup on the big table still
gets its index, validated, and the sizes the search used match the built one's order of magnitude (unscaled, they
would be ~4x smaller). PostgreSQL's what-if builds nothing: its search never samples."""

from __future__ import annotations

import pytest

from advisor.core.domain import IndexChange
from advisor.storage.store import Store
from advisor.tuning.indexes import sampled
from advisor.tuning.indexes.pipeline import IndexPlan, tune_indexes
from advisor.tuning.observe import observe
from advisor.tuning.validation import ValidationOptions
from connectors import factory
from tests.connectors.mariadb.conftest import mrun

pytestmark = pytest.mark.slow  # about 40 s: two shadow servers, a dump, a sample and validation rounds

SCHEMA = ("CREATE TABLE customers (id int PRIMARY KEY, region int)",
          "CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL, total int, note varchar(20))",
          "INSERT INTO customers SELECT seq, seq % 10 FROM seq_1_to_5000",
          "INSERT INTO orders SELECT seq, 1 + seq % 5000, (seq * 13) % 100003, CONCAT('n', seq % 3) "
          "FROM seq_1_to_120000",
          "ANALYZE TABLE customers, orders")


def test_the_search_runs_on_a_sample_and_still_finds_the_index(mdb, tmp_path, monkeypatch):
    mrun(mdb, *SCHEMA)
    for k in range(20):
        mrun(mdb, f"SELECT id FROM orders WHERE total = {k * 2477}")
    target = factory.connector(mdb)
    assert target.index_facts().whatif_builds
    with Store(tmp_path / "s.duckdb") as store:
        obs = observe(store, target)
        monkeypatch.setenv("ADVISOR_WHATIF_SAMPLE_ABOVE_MB", "0.001")
        monkeypatch.setenv("ADVISOR_WHATIF_SAMPLE_MIN_ROWS", "10000")  # orders is sampled, customers copied whole
        monkeypatch.setenv("ADVISOR_WHATIF_SAMPLE_MB", str(obs.data_bytes / 4 / sampled.MB))  # a 25% sample
        plan = IndexPlan("extend", budget_mb=20, validation=ValidationOptions(rounds=3))
        res = tune_indexes(store, target, obs, plan, model_dir=tmp_path / "model")
    search = res.whatif["search"]
    assert search["on"] == "sampled shadow" and search["percent"] == pytest.approx(25, abs=0.01)
    assert [t.split(".")[1] for t in search["sampled_tables"]] == ["orders"]
    (table, full), = search["rows_full"].items()
    assert search["rows_sampled"][table] < full / 3
    assert search["sizes_scaled"] >= 1 and search["sized_bytes_scaled"] > 3 * search["sized_bytes_sample"]
    rec = res.recommendation
    assert rec is not None and rec.state == "validated", res.message
    assert [(c.table, c.columns) for c in rec.changes if isinstance(c, IndexChange)] == [("orders", ("total",))]
    made = next(ix for ix in rec.details["indexes"] if ix["kept"])
    assert 0.4 < made["estimated_bytes"] / made["built_bytes"] < 2.5  # scaled: on the sample alone, ~0.25


def test_below_the_threshold_the_search_stays_on_the_full_shadow(mdb, tmp_path):
    mrun(mdb, *SCHEMA[:2], "INSERT INTO orders SELECT seq, 1, seq, 'n' FROM seq_1_to_20000", "ANALYZE TABLE orders")
    for k in range(10):
        mrun(mdb, f"SELECT id FROM orders WHERE total = {k * 7}")
    target = factory.connector(mdb)
    with Store(tmp_path / "s.duckdb") as store:
        res = tune_indexes(store, target, observe(store, target), IndexPlan("extend", budget_mb=20, validation=None),
                           model_dir=tmp_path / "model")
    assert res.whatif["search"] == {"on": "full shadow"}


def test_postgres_search_never_samples(pg, monkeypatch):
    """HypoPG builds nothing: whatever the size, the search stays on the shadow it is given."""
    monkeypatch.setenv("ADVISOR_WHATIF_SAMPLE_ABOVE_MB", "0.001")
    monkeypatch.setenv("ADVISOR_WHATIF_SAMPLE_MB", "0.0001")
    connector = factory.connector(pg.create_database("sampled_never"))
    assert not connector.index_facts().whatif_builds
    with Store(":memory:") as store:
        obs = observe(store, connector)  # an empty database: the size given below is what would matter
    with sampled.search_on(connector, obs.snapshot, 10**12, None) as search:
        assert search.connector is connector and search.doc() == {"on": "full shadow"}
