"""Binding normalized statements (``$1, $2 ...``) to constants so they can be replayed and EXPLAINed on PG 15.

In order of preference:
1. the statement has no parameters: it runs as it is;
2. pg_qualstats kept an example of the statement with its real constants (``pg_qualstats_example_query``): one
   whole real call, so its parameters are bound jointly;
3. the example's parameters were bound by the driver (extended protocol: the example still has ``$n``, but its own
   constants, like the ``6`` in ``$2::date + 6``): the constants pg_qualstats saw for them in real calls;
4. parameter types from PREPARE, values drawn jointly from the columns' statistics (``workloads.sampling``: casts
   and date arithmetic understood, a range's bounds drawn together), type defaults elsewhere (LIMIT 100).

A statement gets several bindings (``SAMPLES``): the best one as ``sql`` (replayed and validated) and the others as
``samples`` (other real constants, statistics draws at other quantiles), whose what-if costs are averaged with it.
A statement that ran once, with that whole call as pg_qualstats' example, gets that one binding: there is no other
call to represent (and a big join costs a third of the planner calls).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from psycopg import sql

from advisor.core.domain import Statement, Workload
from advisor.core.errors import BadStatement
from advisor.core.sqltext import shorten
from connectors.base import TAG, Connector
from workloads.sampling import ParamUse, analyze, draw, mark, pair_real_values, same_span

NUMERIC_TYPES = {"smallint", "integer", "bigint", "numeric", "real", "double precision", "oid"}
TYPE_DEFAULTS = {"date": "2000-01-01", "interval": "1 day", "boolean": "true", "text": "",
                 "character varying": "", "character": "", "timestamp without time zone": "2000-01-01 00:00:00",
                 "timestamp with time zone": "2000-01-01 00:00:00+00"}
_PARAM = re.compile(r"\$(\d+)")
# what may stand before the statement in the text pg_qualstats keeps as its example (the queryid is the inner
# statement's), after leading blanks and comments: EXPLAIN with its options (a list that starts with an option's
# name, not a parenthesised query), PREPARE name (types) AS, DECLARE name ... CURSOR FOR
_LEAD = re.compile(r"\s+|/\*(?:[^*]|\*(?!/))*\*/|--[^\n]*(?:\n|\Z)")
_WRAPPER = re.compile(r"""(?:
      EXPLAIN\b\s*(?:\(\s*(?!(?:SELECT|WITH|VALUES|TABLE)\b)[A-Za-z](?:[^()']|'[^']*')*\)\s*)?
      (?:(?:ANALYZE|ANALYSE|VERBOSE)\b\s*)*
    | PREPARE\s+(?:"[^"]+"|\w+)\s*(?:\((?:[^()]|\([^()]*\))*\)\s*)?AS\b\s*
    | DECLARE\s+(?:"[^"]+"|\w+)\s+(?:(?:BINARY|ASENSITIVE|INSENSITIVE|NO\s+SCROLL|SCROLL)\s+)*CURSOR\s+
      (?:WITH(?:OUT)?\s+HOLD\s+)?FOR\b\s*)""", re.IGNORECASE | re.VERBOSE)
AMOUNT_TYPES = {"date": "integer", "timestamp": "interval", "timestamptz": "interval"}  # date + int, ts + interval
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
    """Replace each ``$n`` outside quotes and comments with ``value_for(n)`` (already rendered SQL)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
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


def unwrap(text: str) -> str:
    """The statement inside an example's text: an EXPLAIN, PREPARE ... AS or DECLARE ... CURSOR FOR around it
    removed (a statement a DBA once EXPLAINed, or a driver ran through a cursor, keeps that text as its example).

    >>> unwrap("EXPLAIN (FORMAT JSON, COSTS off) SELECT 1")
    'SELECT 1'
    >>> unwrap("/* app */ explain analyze verbose SELECT * FROM t WHERE a = 2")
    'SELECT * FROM t WHERE a = 2'
    >>> unwrap('PREPARE "p1" (int, date) AS SELECT * FROM t WHERE a = $1')
    'SELECT * FROM t WHERE a = $1'
    >>> unwrap("DECLARE c1 NO SCROLL CURSOR WITH HOLD FOR SELECT a FROM t")
    'SELECT a FROM t'
    >>> unwrap("SELECT explain FROM prepare")
    'SELECT explain FROM prepare'
    >>> unwrap("EXPLAIN (SELECT 1)"), unwrap("EXPLAIN"), unwrap('PREPARE p (numeric(10,2)) AS SELECT $1')
    ('(SELECT 1)', 'EXPLAIN', 'SELECT $1')
    >>> unwrap(" " * 40 + "SELECT 1") == " " * 40 + "SELECT 1"  # blanks before an unwrapped statement stay
    True
    """
    at = 0
    while (lead := _LEAD.match(text, at)) and lead.end() > at:
        at = lead.end()
    match = _WRAPPER.match(text, at)
    rest = text[match.end():] if match else ""
    return rest if rest.strip() else text


def _bound_value(values: dict[int, str]) -> Callable[[int], str]:
    def value_for(k: int) -> str:
        if k not in values:
            raise BadStatement(f"no value bound for ${k}")
        return values[k]

    return value_for


def render(value: str, pg_type: str) -> str:
    """A constant as SQL: bare for numbers, a quoted literal (typed by context) otherwise."""
    if pg_type in NUMERIC_TYPES and re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", value.strip()):
        return value.strip()
    return sql.Literal(value).as_string(None)


class Binder:
    """Binds statements of one database. Holds one connection; use as a context manager."""

    def __init__(self, connector: Connector, samples: int = SAMPLES):
        self.connector = connector
        self.conn: psycopg.Connection | None = None
        self._qualstats = False
        self.samples = max(1, samples)
        self._types: dict[str, list[str]] = {}
        self._uses: dict[str, dict[int, ParamUse]] = {}
        self._stats: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def __enter__(self) -> "Binder":
        self._qualstats = self.connector.has_extension("pg_qualstats")
        self.conn = self.connector.connect()
        return self

    def __exit__(self, *exc) -> None:
        if self.conn is not None:
            self.conn.close()

    def bind(self, statement: Statement) -> BoundStatement:
        params = parameters(statement.sql)
        if not params:
            return self._bound(statement, statement.sql, "literal")
        queryid, example = self._example(statement)
        if example is not None and not parameters(example):  # one whole real call: first, then statistics draws
            if statement.calls <= 1:  # the only call there was: nothing else to represent
                return self._bound(statement, example, "qualstats")
            try:
                drawn = [self._draw(statement.sql, params, i, {}) for i in range(self.samples - 1)]
            except BadStatement:  # e.g. ``date $1``: the normalized text does not prepare; the example alone
                drawn = []
            return self._bound(statement, example, "qualstats", drawn)
        # an example whose parameters were bound by the driver (extended protocol) keeps the statement's own
        # constants; pg_qualstats' constants fill in what real calls used for its parameters
        if example is not None:
            try:
                real = self._real_constants(queryid, example)
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
            uses = self._uses[text] = analyze(substitute(text, mark))
        types = self._types.get(text)
        if types is None:
            hints = {k: AMOUNT_TYPES[u.cast] for k, u in uses.items() if u.side == "amount" and u.cast in AMOUNT_TYPES}
            types = self._types[text] = self._parameter_types(text, max(params, default=0), hints)
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
            pg_type = types[k - 1] if k - 1 < len(types) else "unknown"
            value = drawn.get(k)
            if value is None:
                value = _type_default(pg_type) or (_type_default(uses[k].cast) if k in uses else None)
            if value is None:
                raise BadStatement(f"cannot bind ${k} of type {pg_type} in: {shorten(text, 100)}")
            values[k] = render(value, pg_type)
        return substitute(text, _bound_value(values))

    def _bound(self, st: Statement, text: str, source: str, samples: list[str] = ()) -> BoundStatement:
        more = tuple(dict.fromkeys(t for t in samples if t != text))  # distinct, the primary left out
        return BoundStatement(st.queryid, st.sql, text, float(st.calls), source, st.is_write,
                              st.rows / st.calls if st.calls else 1.0, more, st.mean_ms)

    def _example(self, statement: Statement) -> tuple[str, str | None]:
        """pg_qualstats' example call of ``statement`` and the queryid it is kept under: the statement's own, else
        that of an entry merged into it (the same text with parameters bound as other types)."""
        if not self._qualstats:
            return statement.queryid, None
        for queryid in (statement.queryid, *statement.merged):
            row = self.conn.execute(TAG + "SELECT pg_qualstats_example_query(%s::bigint)", (queryid,)).fetchone()
            if row and row[0] and row[0].strip():
                return queryid, unwrap(row[0])
        return statement.queryid, None

    def _parameter_types(self, text: str, count: int, hints: dict[int, str] | None = None) -> list[str]:
        """The types PostgreSQL infers for the parameters; where it cannot (``$2::date + $4``: date + unknown is
        ambiguous), it is asked again with the ``hints`` (parameter -> type) declared."""
        name = "advisor_bind"
        prepare = sql.SQL("PREPARE {} AS ").format(sql.Identifier(name)) + sql.SQL(text)  # type: ignore[arg-type]
        try:
            self.connector.execute_one(self.conn.cursor(), prepare)
        except psycopg.errors.Error as e:
            if not hints:
                raise BadStatement(f"cannot prepare statement: {(e.diag.message_primary or str(e)).strip()}") from None
            declared = sql.SQL(", ").join(sql.SQL(hints.get(k, "unknown")) for k in range(1, count + 1))
            head = sql.SQL("PREPARE {} ({}) AS ").format(sql.Identifier(name), declared)
            prepare = head + sql.SQL(text)  # type: ignore[arg-type]
            try:
                self.connector.execute_one(self.conn.cursor(), prepare)
            except psycopg.errors.Error as e2:
                msg = (e2.diag.message_primary or str(e2)).strip()
                raise BadStatement(f"cannot prepare statement: {msg}") from None
        try:
            row = self.conn.execute(TAG + "SELECT parameter_types::text[] FROM pg_prepared_statements WHERE name = %s",
                                    (name,)).fetchone()
            return list(row[0]) if row else []
        finally:
            # only our own: DEALLOCATE ALL would also drop the statements psycopg prepares for its repeated queries
            self.conn.execute(sql.SQL("DEALLOCATE {}").format(sql.Identifier(name)))

    def _real_constants(self, queryid: str, template: str) -> dict[int, list[str]]:
        """Per parameter of ``template`` (pg_qualstats' example), the constants real calls used for it (as SQL),
        most frequent first: pg_qualstats keeps each qual's constants with their position in the example."""
        rows = self.conn.execute(
            TAG + """
            SELECT constant_position, constvalue FROM pg_qualstats()
            WHERE queryid = %s::bigint AND constant_position IS NOT NULL AND constvalue IS NOT NULL
            GROUP BY 1, 2 ORDER BY sum(occurences) DESC, 2""", (queryid,)).fetchall()
        out: dict[int, list[str]] = {}
        for position, value in rows:
            m = _PARAM.match(template, int(position))
            if m and value not in out.setdefault(int(m.group(1)), []):
                out[int(m.group(1))].append(value)
        return {k: v for k, v in out.items() if v}

    def _column_stats(self, key: tuple[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The histogram bounds and most common values of ``table.column`` (any table's when table is '')."""
        found = self._stats.get(key)
        if found is not None:
            return found
        table, column = key
        row = self.conn.execute(
            TAG + """
            SELECT histogram_bounds::text::text[], most_common_vals::text::text[]
            FROM pg_stats WHERE attname = %s AND (tablename = %s OR %s = '')
            ORDER BY (tablename = %s) DESC, schemaname = 'public' DESC LIMIT 1""",
            (column, table, table, table)).fetchone()
        found = self._stats[key] = (tuple(row[0] or ()), tuple(row[1] or ())) if row else ((), ())
        return found


def _type_default(pg_type: str) -> str | None:
    if pg_type in NUMERIC_TYPES:
        return "1"
    base = re.sub(r"\(.*\)", "", pg_type).strip()
    return TYPE_DEFAULTS.get(base)


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
