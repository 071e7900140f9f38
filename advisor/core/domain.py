"""Domain types shared by every package: plain frozen dataclasses, no behaviour beyond small helpers.

Units are in the field names or docstrings: ``*_ms`` milliseconds, ``*_bytes`` bytes. Knob values are kept as
the strings the engine accepts (``'256MB'``, ``'0.9'``, ``'on'``); the engine's unit grammar
(``advisor.core.knobvalues.UnitGrammar``) converts them, and a whole configuration of them is one value
(``advisor.core.knobconfig.KnobConfig``). A learned index's parameter values are typed (``LearnedIndexParam``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from advisor.core import measured as _measured


# --- observation -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatementStat:
    """Cumulative counters of one normalized statement, as the engine keeps them (PostgreSQL's
    pg_stat_statements, MariaDB's statement digests)."""

    queryid: str
    query: str
    calls: int
    total_ms: float
    rows: int


@dataclass(frozen=True)
class Statement:
    """One statement of a workload: normalized SQL and what it cost in the observed interval. ``merged``: the
    other queryids counted in it, the engine's entries for the same normalized text (pg_stat_statements gives one
    per type its parameters were bound as: ``$1`` as int4, int8, numeric ...); ``queryid`` is the busiest."""

    queryid: str
    sql: str
    calls: int
    total_ms: float
    rows: int = 0
    merged: tuple[str, ...] = ()

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.calls if self.calls else 0.0

    @property
    def is_write(self) -> bool:
        head = self.sql.lstrip().split(None, 1)[0].upper() if self.sql.strip() else ""
        return head in {"INSERT", "UPDATE", "DELETE", "MERGE"}


@dataclass(frozen=True)
class Workload:
    """Statements observed over an interval; a statement's weight is its number of calls."""

    statements: tuple[Statement, ...]
    interval_s: float | None = None

    @property
    def total_ms(self) -> float:
        return sum(s.total_ms for s in self.statements)

    @property
    def total_calls(self) -> int:
        return sum(s.calls for s in self.statements)

    def write_share(self) -> float:
        calls = self.total_calls
        return sum(s.calls for s in self.statements if s.is_write) / calls if calls else 0.0


@dataclass(frozen=True)
class KnobSpec:
    """One setting from the catalog (pg_settings). Bounds are in ``unit`` (e.g. ``8kB`` pages, ``ms``)."""

    name: str
    vartype: str  # bool | integer | real | string | enum
    unit: str | None
    setting: str  # current value, in ``unit``
    boot_value: str | None
    min_value: float | None
    max_value: float | None
    enum_values: tuple[str, ...] = ()
    context: str = "user"  # postmaster | sighup | superuser | user | ...
    category: str = ""
    description: str = ""
    source: str = "default"
    sourcefile: str | None = None
    # only the planner reads it (a cost constant, a method switch, a search limit): it changes a statement's time
    # only by changing its plan, which the engine's catalog says (``connectors``)
    plans_only: bool = False

    @property
    def needs_restart(self) -> bool:
        return self.context == "postmaster"

    @property
    def reload_only(self) -> bool:
        return self.context in {"sighup", "superuser", "user", "superuser-backend", "backend"}


@dataclass(frozen=True)
class TableInfo:
    schema: str
    name: str
    rows: float
    total_bytes: int
    seq_scan: int = 0
    idx_scan: int = 0
    inserts: int = 0
    updates: int = 0
    deletes: int = 0


@dataclass(frozen=True)
class ColumnStats:
    schema: str
    table: str
    column: str
    null_frac: float
    n_distinct: float
    avg_width: int
    correlation: float | None


@dataclass(frozen=True)
class IndexInfo:
    """An existing index as the engine's catalog describes it: ``definition`` is display text only (nobody reads
    it); the structure is in the fields. ``columns``: the key elements in order, each a column's name (unquoted)
    or, where ``expressions`` says so, an expression in the engine's SQL; ``options``: per key element, its
    operator class and ordering as the engine writes them ("" for none); ``include``: non-key columns stored in
    the leaves; ``predicate``: a partial index's condition in the engine's SQL ("" when it covers every row)."""

    schema: str
    table: str
    name: str
    definition: str
    size_bytes: int
    scans: int
    is_unique: bool
    is_primary: bool
    method: str = "btree"
    columns: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    predicate: str = ""
    expressions: tuple[bool, ...] = ()

    @property
    def plain(self) -> bool:
        """Whether every key element is a column and the index covers every row."""
        return bool(self.columns) and not any(self.expressions) and not self.predicate


@dataclass(frozen=True)
class Hardware:
    """What the tuned server runs on. ``storage`` is ``ssd`` | ``hdd`` | ``san``."""

    memory_bytes: int
    cores: int
    storage: str = "ssd"
    source: str = "detected"  # detected | given


@dataclass(frozen=True)
class Snapshot:
    """Everything observed of a database at one instant."""

    taken_at: float  # unix seconds
    server_version: str
    database: str
    statements: tuple[StatementStat, ...]
    metrics: dict[str, float]
    settings: tuple[KnobSpec, ...]
    tables: tuple[TableInfo, ...]
    columns: tuple[ColumnStats, ...]
    indexes: tuple[IndexInfo, ...]
    server: str = ""  # the engine and its version, for people: "PostgreSQL 15.6", "MariaDB 10.11.6" (the connector's)


# --- changes ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KnobChange:
    """A setting's new value. ``acts_through_plans``: the setting is one only the planner reads
    (``KnobSpec.plans_only``, set when the connector checks the change), so a read whose plan it leaves the same is
    not moved by it (validation times such a read once, as for an index); not part of the change's identity."""

    name: str
    value: str
    kind: str = field(default="knob", init=False)
    acts_through_plans: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class IndexChange:
    """A new index: key ``columns`` in order, optional ``include`` (non-key columns stored in the leaves, for
    index-only scans) and ``where`` (a partial index's predicate, SQL over the table's columns, rendered by the
    connector)."""

    # an index changes a read only through its plan: a read whose plan is the same with it is not timed twice
    # (``advisor.tuning.validation``); a write is always timed (it maintains the index)
    acts_through_plans: ClassVar[bool] = True
    schema: str
    table: str
    columns: tuple[str, ...]
    method: str = "btree"
    name: str | None = None
    kind: str = field(default="index", init=False)
    include: tuple[str, ...] = ()
    where: str | None = None

    def label(self) -> str:
        """``table(a, b) INCLUDE (c) WHERE ...``: what a DBA reads."""
        return (f"{self.table}({', '.join(self.columns)})"
                + (f" INCLUDE ({', '.join(self.include)})" if self.include else "")
                + (f" WHERE {self.where}" if self.where else ""))


@dataclass(frozen=True)
class DropIndexChange:
    """Dropping an existing index (unused, or covered by another): ``definition`` is its ``CREATE INDEX`` text,
    which is how it is put back; ``why`` says why it should go."""

    acts_through_plans: ClassVar[bool] = True  # as IndexChange's
    schema: str
    table: str
    name: str
    definition: str
    why: str = ""
    kind: str = field(default="drop_index", init=False)


@dataclass(frozen=True)
class QueryRewrite:
    """A statement rewritten: the SQL as observed and a faster one that returns the same rows, with the rules
    applied in order and the what-if estimate of its cost relative to the original's. Never applied to a
    database: it is handed to the statement's owners."""

    queryid: str
    original: str
    rewritten: str
    rules: tuple[str, ...] = ()
    estimated: float = 1.0  # the rewrite's estimated cost / the original's
    kind: str = field(default="query_rewrite", init=False)


@dataclass(frozen=True)
class LearnedIndexParam:
    """One parameter of a learned index set to a value, typed (``advisor.core.params.as_value``): a number (an int
    when whole), or a choice's word; stored as a JSON number (rows stored before hold its text, read back as the
    number). Handed over to the index's owners: never applied to a database."""

    name: str
    value: float | int | str
    kind: str = field(default="learned_index_param", init=False)


Change = KnobChange | IndexChange | DropIndexChange | QueryRewrite | LearnedIndexParam


@dataclass(frozen=True)
class Costed:
    """A what-if planner answer: a statement's total planner cost (cost units) and, per table name, the summed
    cost of its sequential scans (what an index could still remove)."""

    total: float
    seq_scans: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Applied:
    """What was done to a server and exactly how to undo it."""

    changes: tuple[Change, ...]
    apply_sql: tuple[str, ...]
    revert_sql: tuple[str, ...]
    needs_restart: bool
    restarted: bool = False


# --- measurement -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrialResult:
    """What one tuning trial measured: the objective (lower is better), or why there is none.

    ``ratios``: per statement, its time in this trial over its time in the run's baseline trial (the first), for
    a replayed workload's measured trials; a slowdown under the guard's absolute floor counts as 1.0. None when
    unknown (a pgbench run, an older stored trial). A search reads ``worst_ratio`` as an outcome constraint."""

    objective: float | None
    status: str = "measured"  # measured | failed | infeasible
    reason: str = ""
    ratios: dict[str, float] | None = None
    # what else the trial observed, for optimizers that learn from state (a learned index's throughput, p99,
    # memory and structure statistics); None when nothing
    metrics: dict[str, float] | None = None
    error: str = ""  # a failed trial's typed error (its class name: TargetUnreachable, TrialTimeout, ...)

    @property
    def worst_ratio(self) -> float | None:
        """The largest per-statement ratio (1.1 = one statement 10% slower than at baseline), or None."""
        return max(self.ratios.values()) if self.ratios else None


# what a measurement found (``advisor.core.measured``), re-exported: most packages import it from here
Evidence = _measured.Evidence
StatementEvidence = _measured.StatementEvidence


RecommendationState = Literal["proposed", "validated", "rejected", "approved", "applied", "rolled_back"]

# rolled_back -> approved: a rolled-back change approved again to be re-applied, while its evidence is fresh
# (``advisor.service.production.reapproval``); then applied, watched and rolled back as the first time
TRANSITIONS: dict[str, frozenset[str]] = {
    "proposed": frozenset({"validated", "rejected"}),
    "validated": frozenset({"approved", "rejected"}),
    "rejected": frozenset(),
    "approved": frozenset({"applied", "rejected"}),
    "applied": frozenset({"rolled_back"}),
    "rolled_back": frozenset({"approved"}),
}


def state_word(state: str | None) -> str:
    """A state (of a recommendation, a run, a watch) as people read it, on every face that shows one to people
    (the JSON and the API keep the identifier).

    >>> state_word("rolled_back"), state_word("validated"), state_word(None)
    ('rolled back', 'validated', '')
    """
    return (state or "").replace("_", " ")


@dataclass(frozen=True)
class Recommendation:
    id: str
    target_id: str
    kind: str  # knobs | indexes | rewrites | learned_index
    optimizer: str
    changes: tuple[Change, ...]
    apply_sql: tuple[str, ...]
    revert_sql: tuple[str, ...]
    needs_restart: bool
    state: str
    created_at: float
    evidence: Evidence | None = None
    note: str = ""
    details: dict = field(default_factory=dict)  # kind-specific facts (index sizes, statements helped, ...)
    run_id: str | None = None  # the tuning run that produced it
    applied: dict | None = None  # once applied to production: when, by whom, the SQL run and how to revert it
