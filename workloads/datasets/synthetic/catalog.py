"""What the workload generator knows of a database: tables, columns with their types and statistics, unique keys,
and the edges statements join along (declared foreign keys, and ones inferred from key names where none is declared).

``read_schema`` reads it through the connector (its column statistics, row estimates, key words, keys and foreign
keys); the rest is pure: column kinds, distinct counts, roles and edge inference work on the dataclasses alone.
Identifiers are written for the generator's ``SOURCE_DIALECT`` (standard SQL quoting).

>>> kind_of("numeric(7,2)"), kind_of("character(25)"), kind_of("timestamp without time zone"), kind_of("jsonb")
('num', 'text', 'ts', 'other')
>>> kind_of("int(11)"), kind_of("bigint(20) unsigned"), kind_of("decimal(15,2)"), kind_of("datetime")
('int', 'int', 'num', 'ts')
>>> Column("c", "integer", n_distinct=-0.5).distinct(1000), Column("c", "integer", n_distinct=7).distinct(1000)
(500.0, 7.0)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from connectors.base import Connector
from workloads.statements.target import loader_connector
from workloads.datasets.sqlsource import identifier

SOURCE_DIALECT = "postgres"  # the dialect generated statements are written in (transpiled to the target's)

# type names as PostgreSQL's format_type and MySQL's COLUMN_TYPE write them (sizes and "unsigned" left out)
_KINDS = (("int", ("smallint", "integer", "bigint", "int", "tinyint", "mediumint")),
          ("num", ("numeric", "real", "double precision", "decimal", "double", "float")),
          ("text", ("text", "character varying", "character", "varchar", "char", "bpchar", "tinytext", "mediumtext",
                    "longtext")),
          ("date", ("date",)), ("ts", ("timestamp without time zone", "timestamp", "datetime")),
          ("tstz", ("timestamp with time zone",)), ("bool", ("boolean",)))
_SIMPLE = re.compile(r"^[a-z_][a-z0-9_$]*$")
_BAD_VALUES = {"infinity", "-infinity", "nan"}
RANGE_KINDS = ("int", "num", "date", "ts", "tstz")
DATE_KINDS = ("date", "ts", "tstz")


def kind_of(sql_type: str) -> str:
    """The generator's kind of a SQL type (as PostgreSQL's ``format_type`` or MySQL's COLUMN_TYPE writes it): int, num, text, date, ts, tstz, bool or
    other (never filtered on)."""
    if sql_type.endswith("]"):
        return "other"
    base = re.sub(r"\(.*\)|\s+(?:unsigned|zerofill)\b", "", sql_type).strip()
    return next((k for k, names in _KINDS if base in names), "other")


@dataclass(frozen=True)
class Column:
    """A column with its planner statistics (values as text, as the statistics view gives them)."""

    name: str
    type: str
    not_null: bool = False
    null_frac: float = 0.0
    n_distinct: float = 0.0  # > 0 a count, < 0 minus a fraction of the rows, 0 unknown (pg_stats' convention)
    mcv: tuple[str, ...] = ()  # most common values
    mcf: tuple[float, ...] = ()  # their frequencies (fractions of the rows)
    histogram: tuple[str, ...] = ()  # bounds of equal-population buckets over the rest of the values
    avg_width: int = 0  # bytes

    @property
    def kind(self) -> str:
        return kind_of(self.type)

    @property
    def is_char(self) -> bool:
        """Blank-padded (``character(n)``): its values are compared without trailing blanks."""
        return self.type.startswith("character(") or self.type == "character"

    def distinct(self, rows: float) -> float:
        """Estimated distinct values among ``rows`` rows."""
        return float(-self.n_distinct * rows if self.n_distinct < 0 else self.n_distinct)

    def values(self) -> tuple[str, ...]:
        """Real values the statistics name (histogram bounds, then most common values), special values left out."""
        return tuple(v for v in self.histogram + self.mcv if v is not None and v.strip().lower() not in _BAD_VALUES)


@dataclass(frozen=True)
class Table:
    schema: str
    name: str
    rows: float  # the planner's estimate
    columns: tuple[Column, ...]
    keys: tuple[tuple[str, ...], ...] = ()  # unique keys (primary key and unique indexes), narrowest first

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    @property
    def qualified(self) -> str:
        """The name statements and edges use: ``name`` in the public schema, ``schema.name`` elsewhere."""
        return self.name if self.schema == "public" else f"{self.schema}.{self.name}"

    def is_key(self, column: str) -> bool:
        """Whether ``column`` alone is a unique key."""
        return (column,) in self.keys


@dataclass(frozen=True)
class Edge:
    """``child.columns`` reference ``parent.parent_columns`` (tables by ``Table.qualified``); ``declared`` when a
    foreign key says so, not when inferred from names."""

    child: str
    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]
    declared: bool = True


@dataclass(frozen=True)
class Schema:
    tables: tuple[Table, ...]
    edges: tuple[Edge, ...] = ()
    reserved: frozenset[str] = frozenset()  # key words that cannot be a bare identifier

    def table(self, qualified: str) -> Table:
        return next(t for t in self.tables if t.qualified == qualified)

    def ident(self, name: str) -> str:
        """``name`` as SQL: bare when it is a plain lower-case word, else quoted.

        >>> s = Schema((), reserved=frozenset({"order"}))
        >>> s.ident("o_total"), s.ident("order"), s.ident("Id")
        ('o_total', '"order"', '"Id"')
        """
        if _SIMPLE.match(name) and name not in self.reserved:
            return name
        return identifier(name)

    def ref(self, table: Table) -> str:
        """The table as SQL (schema-qualified outside public)."""
        name = self.ident(table.name)
        return name if table.schema == "public" else f"{self.ident(table.schema)}.{name}"


def infer_edges(tables: tuple[Table, ...], declared: tuple[Edge, ...] = ()) -> tuple[Edge, ...]:
    """Edges implied by names where no foreign key is declared: a column whose name ends with a one-column key's
    name after its table prefix (``l_orderkey`` -> ``o_orderkey``, ``ss_sold_date_sk`` -> ``d_date_sk``), or is
    ``<table>_<key>`` (``customer_id`` -> ``customer.id``), of the same kind; a column that would reference two
    tables is left out.

    >>> cols = lambda *names: tuple(Column(n, "integer") for n in names)
    >>> o = Table("public", "orders", 10, cols("o_orderkey", "o_custkey"), (("o_orderkey",),))
    >>> c = Table("public", "customer", 5, cols("c_custkey", "c_name"), (("c_custkey",),))
    >>> l = Table("public", "lineitem", 40, cols("l_orderkey", "l_linenumber"), (("l_orderkey", "l_linenumber"),))
    >>> [(e.child, e.columns[0], e.parent) for e in infer_edges((o, c, l))]
    [('orders', 'o_custkey', 'customer'), ('lineitem', 'l_orderkey', 'orders')]
    """
    covered = {(e.child, e.columns) for e in declared}
    parents: list[tuple[Table, str, set[str]]] = []
    for p in tables:
        for key in p.keys:
            if len(key) != 1 or p.column(key[0]).kind not in ("int", "text"):
                continue
            k = key[0]
            names = {f"{p.name}_{k}"}
            if "_" in k and len(stem := k.split("_", 1)[1]) >= 4:
                names.add("_" + stem)
            parents.append((p, k, names))
    out: list[Edge] = []
    for child in tables:
        for col in child.columns:
            if (child.qualified, (col.name,)) in covered or child.is_key(col.name):
                continue
            hits = [(p, k) for p, k, names in parents if p is not child and p.column(k).kind == col.kind
                    and any(col.name == n or (n.startswith("_") and col.name.endswith(n)) for n in names)]
            if len(hits) == 1:
                p, k = hits[0]
                out.append(Edge(child.qualified, (col.name,), p.qualified, (k,), declared=False))
    return tuple(out)


# --- reading a live database ---------------------------------------------------------------------------------

def read_schema(target: Connector) -> Schema:
    """The tables of the database at ``target`` (its connector) with their columns' statistics (run ANALYZE
    first: a table without statistics gives no constants), keys and edges, in a stable order."""
    connector = loader_connector(target)
    types = connector.column_types()
    keys = connector.unique_keys()
    loader = connector.loader()
    stats, rows, reserved = loader.column_statistics(), loader.table_rows(), loader.reserved_words()
    tables: list[Table] = []
    for (schema, name), cols in sorted(types.items()):
        columns = []
        for col, typ, not_null in cols:
            null_frac, n_distinct, width, mcv, mcf, hist = stats.get((schema, name, col), (0, 0, 0, None, None, None))
            columns.append(Column(col, typ, not_null, float(null_frac or 0), float(n_distinct or 0),
                                  tuple(mcv or ()), tuple(mcf or ()), tuple(hist or ()), int(width or 0)))
        tkeys = tuple(sorted(set(keys.get((schema, name), ())), key=lambda k: (len(k), k)))
        tables.append(Table(schema, name, rows.get((schema, name), 0.0), tuple(columns), tkeys))
    names = {(t.schema, t.name): t.qualified for t in tables}
    declared = []
    for schema, child, cols, parent, pcols in sorted(connector.foreign_keys()):
        ref = names.get((schema, parent)) or next((q for (_, n), q in names.items() if n == parent), None)
        if (schema, child) in names and ref:
            declared.append(Edge(names[(schema, child)], tuple(cols), ref, tuple(pcols)))
    edges = tuple(declared) + infer_edges(tuple(tables), tuple(declared))
    return Schema(tuple(tables), edges, reserved)
