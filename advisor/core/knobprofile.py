"""An engine's knob facts as data (``KnobProfile``): which knobs are worth tuning and their default search ranges
for a machine, the knobs that trade durability or describe the server, the memory model a configuration must fit
in RAM, the orderings between knobs, the engine's rule-of-thumb seeds and workload rules, and the words a
prompt uses for the engine. An engine supplies its profile through ``Connector.knob_profile()`` (PostgreSQL's is
in ``connectors/postgres/knobs.py``) with its unit grammar (``advisor.core.knobvalues.UnitGrammar``); the knob
space, the seeders and the LLM prompt read only this, never an engine's knob names.

Units: memory ranges and sizes in bytes, others in the catalog's own unit; rule values likewise (bytes for
``memory``).

>>> m = MemoryModel(global_buffers=("pool",), per_connection=("sort", "join"), shrink=("sort",),
...                 wording="the pool + {connections} connections' buffers")
>>> m.formula(10)
'pool + 10 active connections x (sort + join)'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from advisor.core.domain import Hardware, KnobSpec
from advisor.core.knobvalues import UnitGrammar


@dataclass(frozen=True)
class Range:
    """A knob's default search range, in bytes for memory knobs and catalog units otherwise, from hardware."""

    low: float
    high: float
    scale: str = "linear"  # linear | log | log1p
    special: float | None = None  # a value with its own meaning (e.g. -1 = auto)


@dataclass(frozen=True)
class Ordering:
    """Two knobs (of the same unit) whose values must keep an order: ``low`` <= ``high``; ``rule`` names the
    violation, ``why`` says what happens otherwise."""

    low: str
    high: str
    rule: str
    why: str = ""


@dataclass(frozen=True)
class MemoryModel:
    """What a configuration may claim at peak, in bytes: the global buffers once, plus each active connection's
    buffers (summed) times the multipliers, plus background workers times their buffer.

    - ``multipliers``: (knob, add, at_least): a factor ``add + max(value, at_least)`` (``at_least`` when the server
      has no such knob); e.g. ``("max_parallel_workers_per_gather", 1, 0)`` is one process plus its workers.
    - ``background``: (count knob, count when absent, buffer knobs): the first of the buffer knobs set above 0.
    - ``auto``: knob -> (of knob, fraction, at most bytes): a memory knob set below 0 means this share of another.
    - ``least``: groups of per-connection knobs of which only the smallest is claimed (MariaDB's in-memory
      temporary table grows to the smaller of ``tmp_table_size`` and ``max_heap_table_size``).
    - ``shrink``: the knobs ``repair`` lowers, in order, until the configuration fits.
    - ``wording``: the sum in words for a message, ``{connections}`` replaced by the connection count."""

    global_buffers: tuple[str, ...]
    per_connection: tuple[str, ...]
    shrink: tuple[str, ...]
    wording: str
    multipliers: tuple[tuple[str, float, float], ...] = ()
    background: tuple[tuple[str, float, tuple[str, ...]], ...] = ()
    auto: Mapping[str, tuple[str, float, float]] = field(default_factory=dict)
    least: tuple[tuple[str, ...], ...] = ()

    def formula(self, connections: int) -> str:
        """The sum by knob name, as a prompt states it."""
        terms = [*self.per_connection, *(f"min({', '.join(group)})" for group in self.least)]
        per = " + ".join(terms)
        per = f"({per})" if len(terms) > 1 else per
        factors = "".join(f" x {m}" if not add else f" x ({add:g} + {m})" for m, add, _ in self.multipliers)
        parts = [*self.global_buffers, f"{connections} active connections x {per}{factors}"]
        parts += [f"{count} x {buffers[-1]}" for count, _, buffers in self.background]
        return " + ".join(parts)

    def footprint(self, value: Callable[[str, float], float], connections: int) -> float:
        """Bytes at peak, ``value(name, fallback)`` reading a knob (bytes for memory knobs, ``fallback`` when the
        server has no such knob)."""
        shared = sum(max(value(n, 0.0), 0.0) for n in self.global_buffers)
        per = sum(value(n, 0.0) for n in self.per_connection)
        per += sum(min(value(n, 0.0) for n in group) for group in self.least)
        for name, add, at_least in self.multipliers:
            per *= add + max(value(name, at_least), at_least)
        background = 0.0
        for count, absent, buffers in self.background:
            size = next((v for v in (value(b, -1.0) for b in buffers) if v > 0), 0.0)
            background += value(count, absent) * size
        return shared + connections * per + background


@dataclass(frozen=True)
class WorkloadFeatures:
    """What a knob seeder needs to know about a workload, as a few numbers (``optimizers.knobs.features``
    extracts them): shares of calls or time, the widest join, mean time (ms), data size (bytes), its kind, and
    the server's own counters as the snapshot read them (``metrics``: lower-cased name -> value, cumulative since
    the server started; empty when unknown), which an engine's workload rules may read by their names."""

    statements: int
    calls: int
    read_share: float  # of calls
    join_share: float  # of time, statements that join
    aggregate_share: float  # of time, statements with GROUP BY / aggregates / DISTINCT
    sort_share: float  # of time, statements with ORDER BY or window functions
    max_relations: int  # the most relations one statement reads (tables and subqueries)
    mean_ms: float
    data_bytes: int
    kind: str = "mixed"
    metrics: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


# hardware rules: (hardware, workload kind, max connections) -> name -> (value, family, reason), where family is
# "memory" (value in bytes), "" (a plain number in the catalog's unit) or "literal" (the value is the text to set)
HardwareRules = Callable[[Hardware, str, int], dict[str, tuple[Any, str, str]]]
# workload rules: (catalog, hardware, features) -> (name -> value as text or number, reasons)
WorkloadRules = Callable[[Mapping[str, KnobSpec], Hardware, WorkloadFeatures], tuple[dict[str, object], list[str]]]


@dataclass(frozen=True)
class KnobProfile:
    """One engine's knob facts (see the module's docstring). ``ranges``: the knobs worth tuning in order of
    importance with their ranges for a machine; ``durability``: knobs that trade durability for speed, searched
    only when the user opts in, with their ranges; ``unsafe``: knobs that change what the database returns,
    checks, keeps or can recover (name -> what they risk), searched only when named in ``include`` together
    with ``allow_unsafe``; ``not_tunable``: knobs never searched; ``connections``: the
    knob that bounds connections and its value when absent; ``units``: how values are read and written;
    ``engine``: the product's name in messages and
    prompts; ``catalog_source`` / ``statistics_source``: where the catalog and the workload were read."""

    engine: str
    ranges: Callable[[Hardware], dict[str, Range]]
    durability: Mapping[str, Range]
    not_tunable: frozenset[str]
    memory: MemoryModel
    hardware_rules: HardwareRules
    workload_rules: WorkloadRules
    units: UnitGrammar
    connections: tuple[str, int]
    orderings: tuple[Ordering, ...] = ()
    rules_name: str = "hardware rules"
    catalog_source: str = "the server's settings"
    statistics_source: str = "statement statistics"
    skipped_choices: frozenset[str] = frozenset()  # enum values a search never picks unless current
    unsafe: Mapping[str, str] = field(default_factory=dict)
    # the settings that keep each statement on one core (PostgreSQL's parallel query off; none where a statement
    # never spreads): a bench that measures trials side by side sets them and leaves them out of the space
    single_core: Mapping[str, str] = field(default_factory=dict)

    def never_auto_applied(self, names) -> list[str]:
        """Those of ``names`` that no schedule applies by itself: the unsafe and the durability knobs."""
        return [n for n in names if n in self.unsafe or n in self.durability]

    def max_connections(self, catalog: Mapping[str, KnobSpec]) -> int:
        """The connection count the server allows (its catalog's value), or the engine's default."""
        name, absent = self.connections
        return int(float(catalog[name].setting)) if name in catalog else absent
