import pytest

from advisor.core.domain import Hardware, KnobChange
from advisor.core.errors import NotFound
from connectors.postgres import PostgresConnector
from optimizers import registry
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.space import KnobSpace

GB = 1024**3


def _problem(db, memory, cores=8, storage="ssd", kind="oltp"):
    hardware = Hardware(memory, cores, storage)
    connector = PostgresConnector(db)
    return KnobProblem(KnobSpace.build(connector.knob_catalog(), hardware, connector.knob_profile()), kind)


def test_rules_follow_hardware_and_stay_within_catalog_bounds(db):
    big = {c.name: c.value for c in registry.create("knobs", "rules", _problem(db, 64 * GB)).ask(1)[0]}
    assert big["shared_buffers"] == "16GB" and big["effective_cache_size"] == "48GB"
    assert big["random_page_cost"] == "1.1" and big["max_parallel_workers_per_gather"] == "4"
    assert big["maintenance_work_mem"] == "2GB" and "huge_pages" not in big  # already "try" by default
    opt = registry.create("knobs", "rules", _problem(db, 64 * 1024**2, cores=1, storage="hdd"))
    tiny = {c.name: c.value for c in opt.ask(1)[0]}
    assert tiny["shared_buffers"] == "16MB"
    assert "random_page_cost" not in tiny  # 4.0 is already the value
    assert set(opt.explain()) == set(tiny)


def test_every_registered_knob_optimizer_suggests_valid_changes(db):
    for cls in registry.available("knobs"):
        configs = cls(_problem(db, 8 * GB)).ask(1)
        assert configs and all(isinstance(c, KnobChange) for c in configs[0])


def test_unknown_optimizer_is_named():
    with pytest.raises(NotFound, match="no knobs optimizer named 'nope'"):
        registry.create("knobs", "nope", None)
