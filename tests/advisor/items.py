"""What the knob-trial tests share: a shadow of their own (a sandbox with a small ``items`` table, whose connector
can restart it), statements bound as they are, and a knob space of only the knobs that change without a restart."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.core.domain import Hardware
from connectors.base import Shadow
from connectors.postgres.sandbox import PostgresSandbox
from optimizers.knobs.space import KnobSpace, SpaceOptions
from tests.conftest import run
from workloads.statements.binding import BoundStatement

HW = Hardware(8 * 1024**3, 4, "ssd")
ROWS = 2000


def stmt(key: str, sql: str) -> BoundStatement:
    return BoundStatement(key, sql, sql, 1.0, "literal", False)


def items_shadow(name: str) -> Iterator[Shadow]:
    """A started sandbox ``name`` with table items (ROWS rows), as a shadow; stopped afterwards (a fixture body)."""
    sandbox = PostgresSandbox(name, settings={"fsync": "off"}).start()
    try:
        dsn = sandbox.create_database("shop", extensions=False)
        run(dsn, "CREATE TABLE items (id int PRIMARY KEY, k int NOT NULL, v int NOT NULL)",
            f"INSERT INTO items SELECT g, g % 10, g FROM generate_series(1, {ROWS}) g", "ANALYZE items")
        yield Shadow.of(sandbox, "shop")
    finally:
        sandbox.stop()


def cheap_space(shadow: Shadow, keep=("work_mem", "random_page_cost", "jit", "effective_io_concurrency")) -> KnobSpace:
    """Knobs that change without a restart: every other default knob excluded."""
    catalog = shadow.connector.knob_catalog()
    profile = shadow.connector.knob_profile()
    exclude = tuple(n for n in profile.ranges(HW) if n in catalog and n not in keep)
    space = KnobSpace.build(catalog, HW, profile, SpaceOptions(exclude=exclude))
    assert sorted(space.names) == sorted(keep) and not space.restart_mask().any()
    return space


def alex_balanced(n: int):
    """The learned-index harness of the validation and pick tests: ALEX over ``n`` uniform keys on a balanced mix
    (the pipeline's operations per round)."""
    from advisor.tuning.learned_index.pipeline import operations
    from advisor.tuning.learned_index.target import HarnessTarget
    from connectors import factory
    from workloads.datasets.learned import keysets, mixes

    keys = keysets.synthetic("uniform", n, 0)
    mix = mixes.parse_mix("balanced")
    initial, stream = mixes.workload(keys, mix, operations(n, mix.insert), 0)
    return HarnessTarget(factory.learned_index("alex"), initial, [stream])
