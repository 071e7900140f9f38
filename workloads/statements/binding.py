"""Binding normalized statements (``$1, $2 ...``) to constants so they can be replayed and EXPLAINed, on any engine.

What the engine knows comes from its connector's ``BindingSource`` (``connectors.base``: on PostgreSQL
pg_qualstats, PREPARE and pg_stats); which source wins, and how values are drawn, is decided here. In order of
preference:
1. the statement has no parameters: it runs as it is;
2. the engine kept an example of the statement with its real constants (one whole real call): its parameters are
   bound jointly;
3. the example's parameters were bound by the driver (the example still has ``$n``, but its own constants, like
   the ``6`` in ``$2::date + 6``): the constants the engine saw for them in real calls;
4. parameter types from the engine, values drawn jointly from the columns' statistics (``workloads.statements.sampling``:
   casts and date arithmetic understood, a range's bounds drawn together), type defaults elsewhere (LIMIT 100).

A statement gets several bindings (``SAMPLES``): the best one as ``sql`` (replayed and validated) and the others as
``samples`` (other real constants, statistics draws at other quantiles), whose what-if costs are averaged with it.
A statement that ran once, with that whole call as the engine's example, gets that one binding: there is no other
call to represent (and a big join costs a third of the planner calls). The source names "qualstats" (an engine's
example or real constants), "statistics" and "literal" are kept as they were.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from advisor.core.domain import Statement, Workload
from advisor.core.errors import BadStatement
from advisor.core.sqltext import shorten
from connectors.base import BindingSource, Connector
from workloads.statements.sampling import ParamUse, analyze, draw, mark, pair_real_values, same_span

_PARAM = re.compile(r"\$(\d+)")
SAMPLES = 3  # bindings per statement: the primary one and two more whose what-if costs are averaged with it


@dataclass(frozen=True)
class BoundStatement:
    queryid: str
    normalized: str
    sql: str  # executable: every parameter replaced by a constant
    weight: float  # calls in the observed interval
    source: str  # literal | qualstats | statistics
    is_write: bool
    rows_per_call: float = 1.0  # rows returned or written per call in the observed interval
    samples: tuple[str, ...] = ()  # more executable bindings of the statement (what-if costs average over all)
    mean_ms: float = 0.0  # observed time per call (0: not observed), what an index advisor weighs its costs by


def substitute(text: str, value_for: Callable[[int], str]) -> str:
    """Replace each ``$n`` outside quotes (strings, quoted names in double quotes or MySQL's backticks) and
    comments with ``value_for(n)`` (already rendered SQL).

    >>> substitute("SELECT `it's $1`, '$2' FROM t WHERE a = $1", lambda k: f"<{k}>")
    "SELECT `it's $1`, '$2' FROM t WHERE a = <1>"
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":  # a string, or a quoted name (MySQL quotes names in backticks)
            j = i + 1
            while j < n:
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(text[i:j])
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(text[i:j])
            i = j
        elif ch == "$" and (m := _PARAM.match(text, i)) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            out.append(value_for(int(m.group(1))))
            i = m.end()
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def parameters(text: str) -> list[int]:
    found: set[int] = set()
    substitute(text, lambda k: found.add(k) or "")
    return sorted(found)


def _bound_value(values: dict[int, str]) -> Callable[[int], str]:
    def value_for(k: int) -> str:
        if k not in values:
            raise BadStatement(f"no value bound for ${k}")
        return values[k]

    return value_for


class Binder:
    """Binds statements of one database, through its connector's ``BindingSource`` (one connection: use the
    binder as a context manager). Statements are read in the connector's SQL dialect."""

    def __init__(self, connector: Connector, samples: int = SAMPLES):
        self.connector = connector
        self.dialect = connector.dialect
        self.source: BindingSource | None = None
        self.samples = max(1, samples)
        self._types: dict[str, list[str]] = {}
        self._uses: dict[str, dict[int, ParamUse]] = {}
        self._stats: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def __enter__(self) -> "Binder":
        self.source = self.connector.binding_source()
        return self

    def __exit__(self, *exc) -> None:
        if self.source is not None:
            self.source.close()

    def bind(self, statement: Statement) -> BoundStatement:
        params = parameters(statement.sql)
        if not params:
            return self._bound(statement, statement.sql, "literal")
        queryid, example = self.source.example(statement)
        if example is not None and not parameters(example):  # one whole real call: first, then statistics draws
            if statement.calls <= 1:  # the only call there was: nothing else to represent
                return self._bound(statement, example, "qualstats")
            try:
                drawn = [self._draw(statement.sql, params, i, {}) for i in range(self.samples - 1)]
            except BadStatement:  # e.g. ``date $1``: the normalized text does not prepare; the example alone
                drawn = []
            return self._bound(statement, example, "qualstats", drawn)
        # an example whose parameters were bound by the driver (extended protocol) keeps the statement's own
        # constants; the constants the engine kept fill in what real calls used for its parameters
        if example is not None:
            try:
                real = self.source.real_constants(queryid, example)
                texts = [self._draw(example, parameters(example), i, real) for i in range(self.samples)]
                return self._bound(statement, texts[0], "qualstats" if real else "statistics", texts[1:])
            except BadStatement:
                pass  # the normalized statement then
        texts = [self._draw(statement.sql, params, i, {}) for i in range(self.samples)]
        return self._bound(statement, texts[0], "statistics", texts[1:])

    def _draw(self, text: str, params: list[int], i: int, real: dict[int, list[str]]) -> str:
        """The i-th binding of ``text``: real constants where known, joint statistics draws, type defaults."""
        uses = self._uses.get(text)
        if uses is None:
            uses = self._uses[text] = analyze(substitute(text, mark), self.dialect)
        types = self._types.get(text)
        if types is None:
            amounts = {k: u.cast for k, u in uses.items() if u.side == "amount" and u.cast}
            types = self._types[text] = self.source.parameter_types(text, max(params, default=0), amounts)
        values = {k: v if re.fullmatch(r"\(.*\)", v) else f"({v})"
                  for k, v in pair_real_values(uses, real, i).items()}
        drawn = draw(uses, {key: self._column_stats(key) for key in {(u.table, u.column) for u in uses.values()
                                                                      if u.column}}, i)
        for k, partners in same_span(uses).items():  # a real low bound fixes its high bound too (and back)
            known = next((values[j] for j in partners if j in values), None)
            if k not in values and known is not None:
                values[k] = known
        for k in params:
            if k in values:
                continue
            type_name = types[k - 1] if k - 1 < len(types) else "unknown"
            value = drawn.get(k)
            if value is None:
                value = self.source.default_value(type_name) or (
                    self.source.default_value(uses[k].cast) if k in uses else None)
            if value is None:
                raise BadStatement(f"cannot bind ${k} of type {type_name} in: {shorten(text, 100)}")
            values[k] = self.source.literal(value, type_name)
        return substitute(text, _bound_value(values))

    def _bound(self, st: Statement, text: str, source: str, samples: list[str] = ()) -> BoundStatement:
        more = tuple(dict.fromkeys(t for t in samples if t != text))  # distinct, the primary left out
        return BoundStatement(st.queryid, st.sql, text, float(st.calls), source, st.is_write,
                              st.rows / st.calls if st.calls else 1.0, more, st.mean_ms)

    def _column_stats(self, key: tuple[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The histogram bounds and most common values of ``table.column`` (any table's when table is ''), asked
        of the engine once per column."""
        found = self._stats.get(key)
        if found is None:
            found = self._stats[key] = self.source.column_values(*key)
        return found


def bind_workload(connector: Connector, workload: Workload) -> tuple[list[BoundStatement], list[tuple[Statement, str]]]:
    """Bound statements, and the statements that could not be bound with the reason."""
    bound: list[BoundStatement] = []
    skipped: list[tuple[Statement, str]] = []
    with Binder(connector) as binder:
        for st in workload.statements:
            try:
                bound.append(binder.bind(st))
            except BadStatement as e:
                skipped.append((st, str(e)))
    return bound, skipped
