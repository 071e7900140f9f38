"""Drawing a validated workload: which family each statement is, its constants from real rows, and a check that
it runs (within a time limit, returning at most so many rows) before it is kept; one that fails is drawn again.

Determinism: statement ``i`` is drawn from ``random.Random("gen:<seed>:<i>:<attempt>")``, so the same database (the
same data and the same statistics: ANALYZE samples large tables) and seed give the same statements, whatever the
other statements drew. The database is only read: every statement runs under a statement timeout in a transaction
that is rolled back. Statements are drawn in the catalog's ``SOURCE_DIALECT`` and kept in the target's dialect
(transpiled; the same text on PostgreSQL).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from advisor.core.errors import BadStatement
from advisor.core.progress import Say
from connectors.base import TAG, Connector, Session
from workloads.statements.target import loader_connector
from workloads.statements.binding import BoundStatement
from workloads.datasets.synthetic import families, rewrite_shapes, rewrites
from workloads.datasets.synthetic.catalog import SOURCE_DIALECT, Schema, Table, read_schema
from workloads.datasets.synthetic.draw import Ctx, Row, literal
from workloads.datasets.sqlsource import to_dialect

INDEX_FAMILIES = tuple(families.BUILDERS)
REWRITE_FAMILIES = tuple(rewrites.BUILDERS) + tuple(rewrite_shapes.BUILDERS)
FAMILIES = INDEX_FAMILIES + REWRITE_FAMILIES
BUILDERS = {**families.BUILDERS, **rewrites.BUILDERS, **rewrite_shapes.BUILDERS}
# calls in an observed interval are drawn as BASE_CALLS x a Pareto variate: lookups are frequent, reports rare
BASE_CALLS = {"lookup": 40, "composite": 20, "prefix": 10, "date_range": 10, "join": 5, "aggregate": 2}
REWRITE_CALLS = 3
MAX_CALLS = 1000


@dataclass(frozen=True)
class Generated:
    """One generated statement: ``queryid`` ``gen.s<seed>.<family>.<i>``; ``weight`` its calls in an observed
    interval; ``rows`` what it returned when validated; ``ms`` how long that took (not compared)."""

    queryid: str
    family: str
    sql: str
    weight: float
    rows: int
    ms: float = field(default=0.0, compare=False)

    def bound(self) -> BoundStatement:
        """As the pipelines and benches take statements (literal constants: ``normalized`` is the text itself)."""
        return BoundStatement(self.queryid, self.sql, self.sql, self.weight, "literal", False, float(self.rows))


def plan_families(n: int, seed: int, chosen: Sequence[str], weights: dict[str, float] | None = None) -> list[str]:
    """The family of each of ``n`` statements: every chosen family once (in a seeded order) while ``n`` allows,
    then drawn by ``weights`` (equal by default).

    >>> plan_families(3, 0, ("lookup", "join")) == plan_families(3, 0, ("lookup", "join"))
    True
    >>> sorted(plan_families(2, 5, ("lookup", "join")))
    ['join', 'lookup']
    """
    rng = random.Random(f"gen:{seed}:families")
    first = list(chosen)
    rng.shuffle(first)
    w = [(weights or {}).get(f, 1.0) for f in chosen]
    return (first + rng.choices(list(chosen), weights=w, k=max(0, n - len(first))))[:n]


class LiveRows:
    """A ``RowSource`` over a session: one real row of a table, found through an indexed column where it can
    be (the narrowest unique key's first column, matched with a value from its histogram), ordered so the same
    data gives the same row. ``dialect``: the session's (the query is written in ``SOURCE_DIALECT``)."""

    def __init__(self, session: Session, schema: Schema, dialect: str):
        self.session, self.schema, self.dialect = session, schema, dialect

    def __call__(self, t: Table, columns: Sequence[str], rng: random.Random,
                 match: dict[str, str] | None = None) -> Row | None:
        if not columns:
            return {}
        if not match:
            anchor = self._anchor(t)
            if anchor is None:
                return None
            value = rng.choice([v for v in anchor.histogram if literal(anchor, v) is not None] or [None])
            if value is None:
                return None
            match = {anchor.name: value}
        where = [f"{self.schema.ident(c)} = {literal(t.column(c), v)}" for c, v in match.items()
                 if literal(t.column(c), v) is not None]
        if not where:
            return None
        cols = list(dict.fromkeys(columns))
        what = ", ".join(f"CAST({self.schema.ident(c)} AS text)" for c in cols)
        order = ", ".join(self.schema.ident(c) for c in cols)
        query = f"SELECT {what} FROM {self.schema.ref(t)} WHERE {' AND '.join(where)} ORDER BY {order} LIMIT 1"
        try:
            found = self.session.run(TAG + to_dialect(query, SOURCE_DIALECT, self.dialect), rollback=True)
        except Exception:  # noqa: BLE001 - a timeout or a value the column refuses: no row, draws from statistics
            return None
        return dict(zip(cols, found[0])) if found else None

    def _anchor(self, t: Table):
        keyed = [t.column(k[0]) for k in t.keys if t.column(k[0]).histogram]
        if keyed:
            return max(keyed, key=lambda c: c.distinct(t.rows))
        cols = [c for c in t.columns if c.histogram and c.kind != "other"]
        return max(cols, key=lambda c: c.distinct(t.rows)) if cols else None


def _check(connector: Connector, session: Session, text: str, max_rows: int) -> tuple[int, float] | None:
    """Rows returned and milliseconds, or None when it fails, times out or returns more than ``max_rows``."""
    try:
        if connector.plan(text).rows > 50 * max_rows:
            return None
        started = time.perf_counter()
        rows = len(session.run(text, rollback=True) or ())
        ms = (time.perf_counter() - started) * 1000
    except Exception:  # noqa: BLE001 - an error or a timeout: the statement is drawn again
        return None
    return (rows, ms) if rows <= max_rows else None


def generate(target: Connector, n: int = 40, seed: int = 0, families: Iterable[str] = FAMILIES, *,
             weights: dict[str, float] | None = None, timeout_ms: int = 5_000, max_rows: int = 10_000,
             attempts: int = 8, schema: Schema | None = None, say: Say | None = None) -> list[Generated]:
    """``n`` statements over the database at ``target`` (its connector; ANALYZE it first), each of one of
    ``families`` (``INDEX_FAMILIES``, ``REWRITE_FAMILIES`` or any of ``FAMILIES``), every one run once: it finished
    within ``timeout_ms`` and returned at most ``max_rows`` rows. For the first half of its ``attempts`` a
    statement must also return a row. A statement no attempt makes valid is left out (the list is then shorter,
    as for a family the schema cannot give, such as joins without any edge)."""
    chosen = tuple(families)
    unknown = [f for f in chosen if f not in BUILDERS]
    if unknown or not chosen:
        raise ValueError(f"unknown families {unknown}: expected some of {', '.join(FAMILIES)}")
    connector = loader_connector(target)
    schema = schema or read_schema(connector)
    report = say or (lambda _msg: None)
    out: list[Generated] = []
    with connector.session(int(timeout_ms)) as session:
        rows = LiveRows(session, schema, connector.dialect)
        for i, family in enumerate(plan_families(n, seed, chosen, weights)):
            for attempt in range(attempts):
                rng = random.Random(f"gen:{seed}:{i}:{attempt}")
                text = _in_dialect(BUILDERS[family](Ctx(schema, rng, rows)), connector.dialect)
                checked = _check(connector, session, text, max_rows) if text else None
                if checked is None or (checked[0] == 0 and attempt < attempts // 2):
                    continue
                calls = min(MAX_CALLS, max(1, round(BASE_CALLS.get(family, REWRITE_CALLS) * rng.paretovariate(1.5))))
                out.append(Generated(f"gen.s{seed}.{family}.{i}", family, text, float(calls), checked[0], checked[1]))
                break
            else:
                report(f"no valid {family} statement for #{i} after {attempts} attempts")
    return out


def _in_dialect(text: str | None, dialect: str) -> str | None:
    """A drawn statement in the target's dialect; None when it cannot be written there (drawn again)."""
    try:
        return to_dialect(text, SOURCE_DIALECT, dialect) if text else None
    except BadStatement:  # sqlglot could not read or write it
        return None


def statements(target: Connector, n: int = 40, seed: int = 0, families: Iterable[str] = FAMILIES,
               **options) -> list[BoundStatement]:
    """``generate``'s statements as ``BoundStatement`` (literal constants, weight = calls)."""
    return [g.bound() for g in generate(target, n, seed, families, **options)]


def rewrite_cases(generated: Iterable[Generated]) -> list[tuple[str, str, str]]:
    """(name, what it exercises, SQL), the shape of ``workloads.datasets.rewrite_suite.SUITE``."""
    return [(g.queryid, f"generated {g.family.replace('_', ' ')}", g.sql) for g in generated]


def drive(target: Connector, generated: Iterable[Generated], rounds: int = 1, timeout_ms: int = 60_000,
          max_calls: int = 20, on_error: Callable[[Generated, Exception], None] | None = None) -> int:
    """Run each statement ``min(weight, max_calls)`` times per round (filling the engine's statement statistics
    as an application would, in proportion to its calls up to a cap); returns the executions that finished."""
    connector = loader_connector(target)
    ran = 0
    with connector.session(int(timeout_ms)) as session:
        for _ in range(rounds):
            for g in generated:
                for _ in range(max(1, min(int(g.weight), max_calls))):
                    try:
                        session.run(g.sql)
                        ran += 1
                    except Exception as e:  # noqa: BLE001 - reported, the rest still runs
                        if on_error:
                            on_error(g, e)
    return ran
