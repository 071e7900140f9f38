"""SQL for applying and reverting changes on PostgreSQL. Every identifier goes through psycopg.sql."""

from __future__ import annotations

import hashlib
import re

import sqlglot
from psycopg import sql
from sqlglot import exp
from sqlglot.errors import SqlglotError

from advisor.core.domain import DropIndexChange, IndexChange, KnobChange, KnobSpec
from advisor.core.errors import BadStatement

INDEX_METHODS = frozenset({"btree", "hash", "gin", "gist", "brin", "spgist"})
MAX_IDENTIFIER = 63


def index_name(change: IndexChange) -> str:
    """A deterministic name of at most 63 bytes: ``<table>_<cols>_advisor_idx``, hashed when too long. A variant
    with INCLUDE columns or a predicate has a hash of them in its name (it is another index than the plain one).
    """
    if change.name:
        return change.name
    variant = ""
    if change.include or change.where is not None:
        variant = "_" + hashlib.sha1(repr((change.include, change.where)).encode()).hexdigest()[:8]
    raw = f"{change.table}_{'_'.join(change.columns)}{variant}_advisor_idx"
    clean = re.sub(r"[^A-Za-z0-9_]", "_", raw).lower()
    if len(clean.encode()) <= MAX_IDENTIFIER:
        return clean
    digest = hashlib.sha1(raw.encode()).hexdigest()[:8]
    return clean[: MAX_IDENTIFIER - 9] + "_" + digest


def index_ddl(change: IndexChange, *, concurrently: bool = True, named: bool = True) -> sql.Composed:
    if change.method not in INDEX_METHODS:
        raise BadStatement(f"unknown index method {change.method!r}; use one of {', '.join(sorted(INDEX_METHODS))}")
    if not change.columns:
        raise BadStatement(f"index on {change.schema}.{change.table} names no column")
    parts = [sql.SQL("CREATE INDEX")]
    if concurrently:
        parts.append(sql.SQL("CONCURRENTLY"))
    if named:
        parts.append(sql.Identifier(index_name(change)))
    parts += [
        sql.SQL("ON"), sql.Identifier(change.schema, change.table), sql.SQL("USING"), sql.SQL(change.method),
        sql.SQL("({})").format(sql.SQL(", ").join(sql.Identifier(c) for c in change.columns)),
    ]
    if change.include:
        parts.append(sql.SQL("INCLUDE ({})").format(sql.SQL(", ").join(sql.Identifier(c) for c in change.include)))
    if change.where is not None:
        parts += [sql.SQL("WHERE"), index_predicate(change.where, change.table)]
    return sql.SQL(" ").join(parts)


_COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_ARGS = {"this", "expression", "negate", "table", "db", "catalog", "is_string"}
_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?")


def index_predicate(where: str, table: str) -> sql.Composed:
    """A partial index's predicate, re-generated from its parse: columns of ``table`` (bare or qualified by its
    name), literals, comparisons, IS [NOT] NULL/TRUE/FALSE, AND, OR, NOT. Anything else is a ``BadStatement``.

    >>> print(index_predicate("a >= 3 AND NOT (t.b IS NULL)", "t").as_string(None))
    (("a" >= 3) AND ("b" IS NOT NULL))
    """
    try:
        tree = sqlglot.parse_one(where, dialect="postgres")
    except SqlglotError as e:
        raise BadStatement(f"cannot parse the index predicate {where!r}: {str(e).splitlines()[0]}") from None
    return _predicate(tree, table, where)


def _predicate(node: exp.Expression, table: str, where: str) -> sql.Composed:
    def sub(n: exp.Expression) -> sql.Composed:
        return _predicate(n, table, where)

    extra = {k for k, v in node.args.items() if v not in (None, False)} - _ARGS
    if extra:  # a node that means more than its operands (a quantifier, an escape, a collation ...)
        raise BadStatement(f"the index predicate {where!r} has {node.sql(dialect='postgres')[:80]}, which "
                           f"an index predicate here may not have ({', '.join(sorted(extra))})")

    if isinstance(node, exp.Paren):
        return sub(node.this)
    if isinstance(node, (exp.And, exp.Or)):
        op = "AND" if isinstance(node, exp.And) else "OR"
        return sql.SQL("({} " + op + " {})").format(sub(node.this), sub(node.expression))
    if isinstance(node, exp.Not):
        inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
        if isinstance(inner, exp.Is) and not inner.args.get("negate"):
            return sql.SQL("({} IS NOT {})").format(sub(inner.this), _is_operand(inner.expression, where))
        return sql.SQL("(NOT {})").format(sub(node.this))
    if isinstance(node, exp.Is):
        op = "IS NOT" if node.args.get("negate") else "IS"
        return sql.SQL("({} " + op + " {})").format(sub(node.this), _is_operand(node.expression, where))
    if type(node) in _COMPARISONS:
        return sql.SQL("({} " + _COMPARISONS[type(node)] + " {})").format(sub(node.this), sub(node.expression))
    if isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier):
        if node.args.get("db") or node.args.get("catalog") or node.table not in ("", table):
            raise BadStatement(f"the index predicate {where!r} names a column of another table: {node.sql()}")
        return sql.Composed([sql.Identifier(node.name)])
    if isinstance(node, exp.Literal):
        if node.is_string:
            return sql.Composed([sql.Literal(node.this)])
        if _NUMBER.fullmatch(node.this):
            return sql.Composed([sql.SQL(node.this)])
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return sql.SQL("-{}").format(sub(node.this))
    if isinstance(node, (exp.Boolean, exp.Null)):
        return _is_operand(node, where)
    raise BadStatement(f"the index predicate {where!r} may only compare the table's columns with literals "
                       f"(AND, OR, NOT, IS [NOT] NULL); not: {node.sql(dialect='postgres')[:80]}")


def _is_operand(node: exp.Expression, where: str) -> sql.SQL:
    if isinstance(node, exp.Null):
        return sql.SQL("NULL")
    if isinstance(node, exp.Boolean):
        return sql.SQL("TRUE" if node.this else "FALSE")
    raise BadStatement(f"the index predicate {where!r} has IS with something else than NULL, TRUE or FALSE")


def index_drop(change: IndexChange, *, concurrently: bool = True) -> sql.Composed:
    return sql.SQL("DROP INDEX {}IF EXISTS {}").format(
        sql.SQL("CONCURRENTLY " if concurrently else ""), sql.Identifier(change.schema, index_name(change)))


def drop_existing(change: DropIndexChange, *, concurrently: bool = True) -> sql.Composed:
    """Dropping an existing index (``DropIndexChange``)."""
    return sql.SQL("DROP INDEX {}IF EXISTS {}").format(
        sql.SQL("CONCURRENTLY " if concurrently else ""), sql.Identifier(change.schema, change.name))


_CREATE_INDEX = re.compile(r"\s*CREATE\s+(UNIQUE\s+)?INDEX\s+(?!CONCURRENTLY\b)", re.IGNORECASE)


def restore_existing(change: DropIndexChange, *, concurrently: bool = True) -> sql.SQL:
    """What puts a dropped index back: its ``definition`` (``pg_get_indexdef``), checked to be one CREATE INDEX
    of that name on that table, built CONCURRENTLY."""
    text = change.definition.strip().rstrip(";").strip()
    try:
        tree = sqlglot.parse_one(text, dialect="postgres")
    except SqlglotError as e:
        raise BadStatement(f"cannot parse the definition of index {change.name}: {str(e).splitlines()[0]}") from None
    index = tree.this if isinstance(tree, exp.Create) and str(tree.args.get("kind")).upper() == "INDEX" else None
    target = index.args.get("table") if isinstance(index, exp.Index) else None
    m = _CREATE_INDEX.match(text)
    if not (isinstance(target, exp.Table) and m and index.name == change.name and target.name == change.table
            and (target.db or "public") == change.schema and not target.args.get("catalog")):
        raise BadStatement(f"the definition of index {change.name} is not a CREATE INDEX {change.name} on "
                           f"{change.schema}.{change.table}: {text[:120]}")
    if concurrently:
        text = text[:m.end()] + "CONCURRENTLY " + text[m.end():]
    return sql.SQL(text)  # type: ignore[arg-type]  # the catalog's own definition, checked above


def knob_set(change: KnobChange) -> sql.Composed:
    return sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(change.name), sql.Literal(change.value))


def knob_restore(spec: KnobSpec) -> sql.Composed:
    """What puts ``spec`` back where it is now: its value in postgresql.auto.conf, or a RESET."""
    if spec.sourcefile and spec.sourcefile.endswith("postgresql.auto.conf"):
        # a bare number is read in the knob's own unit (pages for shared_buffers, kB for work_mem)
        return sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(spec.name), sql.Literal(spec.setting))
    return sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(spec.name))
