"""Building an index-selection problem from an observed workload on a server with what-if indexes (the
connector's ``whatif()``): the schema, the statements' column uses (read in the connector's dialect, unqualified
tables in its default schema), candidates, index maintenance on written tables, and the cached what-if coster.

Index maintenance model: the planner gives an INSERT/UPDATE/DELETE the same cost whatever indexes exist, so
each index on a table written by the workload adds ``rows written x entry_cost`` cost units (one index entry per
written row: a descent whose pages are mostly cached, and a dirtied leaf page that is written later), the engine's
figure from ``Connector.index_facts`` (its cost units are the engine's own). Candidates the engine cannot build
(INCLUDE or partial indexes where it has none, more key columns than it allows) are left out.

Planning is what an index search spends its time on (an EXPLAIN of an 8-table join under hypothetical indexes:
~7 ms, thousands of them), so where the engine's what-if sessions are independent of each other (``independent``:
HypoPG's hypothetical indexes live in one backend each), the coster gets one session per core, up to
``MAX_SESSIONS``, and plans a batch across them (``CachedWhatIf.prefetch``); the costs are the same.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import replace

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from advisor.core.domain import IndexChange, IndexInfo, Snapshot
from advisor.core.errors import AdvisorError, BadStatement
from connectors.base import Connector, WhatIf
from optimizers.indexes.candidates import column_uses, generate, statement_shapes
from optimizers.indexes.costing import CachedWhatIf
from optimizers.indexes.problem import ColumnUse, IndexProblem, Query, time_scales
from optimizers.indexes.sizing import CalibratedSizes, SizeModel
from workloads.statements.binding import BoundStatement

MAX_SESSIONS = 8  # what-if sessions at most (one per core): a batch of planner calls is spread over them


def index_columns(info: IndexInfo) -> IndexChange | None:
    """The plain-column index an existing one is (its key columns, ordering options aside); None for expression,
    partial and INCLUDE indexes."""
    if not info.plain or info.include:
        return None
    return IndexChange(info.schema, info.table, tuple(info.columns), info.method, info.name)


def build_problem(connector: Connector, snapshot: Snapshot, statements: Sequence[BoundStatement],
                  budget_bytes: int, *, max_width: int = 3, min_rows: float = 1000,
                  skipped: list[tuple[str, str]] | None = None,
                  sizes: SizeModel | None = None, by_time: bool = True,
                  sessions: int | None = None, wrap=None) -> tuple[IndexProblem, WhatIf]:
    """The problem for ``statements`` on the database behind ``connector`` (which must support what-if
    indexes: HypoPG for PostgreSQL; a shadow for MariaDB, which builds them); ``budget_bytes`` in bytes. Statements
    that sqlglot cannot parse or the server cannot plan (``_plannable``) are left out and listed in ``skipped`` as
    (queryid, why). ``sizes`` corrects the what-if index sizes (built vs estimated sizes seen before, see
    ``advisor.tuning.indexes.sizing``). With ``by_time``, each statement's cost weighs its calls
    times its observed time per cost unit (``_time_weighted``; statements observed without a time weigh their
    calls). ``wrap`` (a planner -> a planner) sits between the session and the size model: on a sampled shadow it
    scales sizes to the full tables (``advisor.tuning.indexes.sampled``). Returns the what-if session too: close it
    when done."""
    schema = connector.table_columns()
    dialect, home, facts = connector.dialect, connector.default_schema(), connector.index_facts()
    rows = {(t.schema, t.name): t.rows for t in snapshot.tables}
    uses: dict[str, list[ColumnUse]] = {}
    shapes: dict[str, dict] = {}  # per statement: the columns it reads per table and its constant predicates
    queries: list[Query] = []
    trees: dict[str, exp.Expression | None] = {}
    skipped = skipped if skipped is not None else []
    for st in statements:
        try:
            found = column_uses(st.sql, schema, dialect=dialect, default_schema=home)
        except BadStatement as e:
            skipped.append((st.queryid, str(e)))
            continue
        tree = trees[st.queryid] = _parse(st.sql, dialect)
        tables = frozenset(u.table for u in found) | _tables_of(tree, schema, home)
        uses[st.queryid] = found
        try:  # the normalized text: only constants written in the statement make a partial index
            shapes[st.queryid] = statement_shapes(st.normalized, schema, dialect=dialect, default_schema=home)
        except BadStatement:
            pass
        queries.append(Query(st.queryid, st.sql, st.weight, tables, st.samples))
    session = _Sessions(connector, default_sessions() if sessions is None else sessions)
    main = session.main if wrap is None else wrap(session.main)
    planner = main if sizes is None else CalibratedSizes(main, sizes)
    whatif = CachedWhatIf(planner, helpers=session.helpers)
    try:
        queries = _plannable(queries, whatif, skipped)
    except BaseException:
        session.close()
        raise
    kept = {q.queryid for q in queries}
    uses = {qid: us for qid, us in uses.items() if qid in kept}
    shapes = {qid: sh for qid, sh in shapes.items() if qid in kept}
    written: dict[tuple[str, str], float] = {}
    for st in statements:
        if st.is_write and st.queryid in kept:
            for table in _written(trees[st.queryid], home, schema):
                written[table] = written.get(table, 0.0) + st.weight * max(1.0, st.rows_per_call)
    plain = [(info, index_columns(info)) for info in snapshot.indexes]
    existing = [i for _, i in plain if i is not None]
    unique = [((i.schema, i.table), i.columns) for info, i in plain if i is not None and info.is_unique]
    big = [t for t, n in rows.items() if n >= min_rows]
    candidates = tuple(c for c in generate(uses, max_width=min(max_width, facts.max_key_columns), existing=existing,
                                           tables=big, shapes=shapes, unique=unique)
                       if facts.allows(c.index.include, c.index.where))
    expect = getattr(session.main, "expect", None)  # MariaDB builds the candidates at once when first needed
    if expect is not None:
        expect(c.index for c in candidates)
    maintenance = tuple((t, rows_written * facts.entry_cost) for t, rows_written in sorted(written.items()))
    if by_time:
        try:
            queries = _time_weighted(queries, whatif, {st.queryid: st for st in statements})
        except BaseException:
            session.close()
            raise
    problem = IndexProblem(tuple(queries), candidates, int(budget_bytes), whatif,
                           tuple((qid, u) for qid, us in uses.items() for u in us), maintenance,
                           small=tuple((t, n) for t, n in rows.items() if n < min_rows),
                           existing=tuple(((i.schema, i.table), i.columns, i.name or "") for i in existing))
    return problem, session


def reopen(problem: IndexProblem, connector: Connector, sizes: SizeModel | None = None,
           sessions: int | None = None, wrap=None) -> WhatIf:
    """Fresh what-if sessions on ``connector`` under ``problem``'s cached coster (its cache kept: only what it has
    not costed is planned), for a second search after the first session was closed (validation builds indexes for
    real, which a MariaDB what-if session's own built indexes must not meet); ``wrap`` as ``build_problem``'s.
    Returns the session: close it."""
    session = _Sessions(connector, default_sessions() if sessions is None else sessions)
    whatif = problem.whatif
    main = session.main if wrap is None else wrap(session.main)
    whatif.planner = main if sizes is None else CalibratedSizes(main, sizes)  # type: ignore[attr-defined]
    whatif.helpers = tuple(session.helpers)  # type: ignore[attr-defined]
    return session


def _plannable(queries: list[Query], whatif: CachedWhatIf, skipped: list[tuple[str, str]]) -> list[Query]:
    """The queries the server plans as they are (each planned once with no new index, a cost every optimizer
    needs); one it refuses (a text the statistics truncated, a table gone) is left out, with the server's reason in
    ``skipped``, and the others go on."""
    out = []
    whatif.prefetch((q, frozenset()) for q in queries)
    for q in queries:
        try:
            whatif.cost(q, frozenset())
        except BadStatement as e:
            skipped.append((q.queryid, str(e)))  # the engine's words: "cannot plan statement: ..."
            continue
        out.append(q)
    return out


def default_sessions() -> int:
    """One what-if session per core this process may run on, at most ``MAX_SESSIONS``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        cores = os.cpu_count() or 1
    return max(1, min(MAX_SESSIONS, cores))


class _Sessions:
    """The what-if sessions of one problem: ``main`` and, where the engine's sessions are ``independent``, up to
    ``count - 1`` ``helpers``; closing it closes all. Reads any other attribute from ``main``."""

    def __init__(self, connector: Connector, count: int):
        self.main = connector.whatif()
        self.helpers: list = []
        try:
            if getattr(self.main, "independent", False):
                for _ in range(max(0, count - 1)):
                    try:
                        self.helpers.append(connector.whatif())
                    except (AdvisorError, OSError):  # e.g. no connection slot left: plan on those open
                        break
        except BaseException:
            self.close()
            raise

    def __getattr__(self, name: str):
        if name == "main":  # not made (yet)
            raise AttributeError(name)
        return getattr(self.main, name)

    def __enter__(self) -> "_Sessions":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for one in [*self.helpers, self.main]:
            with contextlib.suppress(Exception):
                one.close()
        self.helpers.clear()


def _time_weighted(queries: list[Query], whatif: CachedWhatIf, bound: dict[str, BoundStatement]) -> list[Query]:
    """The reads of ``queries`` weighed by where the observed time goes (``optimizers.indexes.problem.time_scales``):
    each one's calls times its observed ms per cost unit over the reads' (its cost with no new index is planned
    here, once: every optimizer needs it). Writes keep their calls: their time is mostly what the planner does
    not price (WAL, commits, lock waits), and their indexes' upkeep is costed apart, in cost units."""
    reads = [q for q in queries if not bound[q.queryid].is_write]
    base = {q.queryid: whatif.cost(q, frozenset()).total for q in reads}
    scales = time_scales(base, {q: bound[q].mean_ms for q in base}, {q: bound[q].weight for q in base})
    return [replace(q, weight=bound[q.queryid].weight * scales[q.queryid], scale=scales[q.queryid])
            if q.queryid in scales else q for q in queries]


def _parse(sql_text: str, dialect: str) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(sql_text, dialect=dialect)
    except SqlglotError:
        return None


def _tables_of(tree: exp.Expression | None, schema, home: str) -> frozenset[tuple[str, str]]:
    """Every table of ``schema`` the statement names (subqueries and CTEs included)."""
    if tree is None:
        return frozenset()
    return frozenset(key for t in tree.find_all(exp.Table) if (key := (t.db or home, t.name)) in schema)


def written_tables(sql_text: str, dialect: str, home: str, schema=None) -> list[tuple[str, str]]:
    """The (schema, table) an INSERT/UPDATE/DELETE (in sqlglot's ``dialect``; an unqualified table is in ``home``,
    the connector's default schema) writes (limited to ``schema``'s tables when given)."""
    return _written(_parse(sql_text, dialect), home, schema)


def _written(tree: exp.Expression | None, home: str, schema=None) -> list[tuple[str, str]]:
    if tree is None:
        return []
    target = tree.this if isinstance(tree, (exp.Insert, exp.Update, exp.Delete)) else None
    if isinstance(target, exp.Schema):
        target = target.this
    if isinstance(target, exp.Table):
        key = (target.db or home, target.name)
        return [key] if schema is None or key in schema else []
    return []
