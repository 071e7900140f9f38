"""A lowered statement's parts, one family of types that refer to each other (so they live in one module):
``Lowered``, a SELECT taken apart (``optimizers.rewrites.sql.lower``); its conditions, ``Atom`` (a subquery's
condition holds that subquery lowered: ``optimizers.rewrites.sql.predicates`` reads them off the syntax tree); its
views, ``View`` and the ``Shape`` of their rows (``optimizers.rewrites.sql.derived``); the subqueries of its shell,
``ShellSubquery`` (``optimizers.rewrites.sql.subqueries``); and where a block of a larger statement sits,
``Nested`` (``optimizers.rewrites.sql.blocks``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from optimizers.rewrites.sql.parsing import parse

Schema = dict[str, dict[str, str]]  # table -> column -> type
VIEW = ""  # the table name of a FROM item that is a view (a derived table: ``Lowered.views``)


@dataclass(frozen=True)
class Lowered:
    """A lowered SELECT: its tables as (table, alias), join steps, WHERE atoms, and the shell (the original
    statement with FROM, JOINs and WHERE to be replaced). ``nested``: set when the SELECT is a block of a larger
    statement (``lower_block``); emission puts the block back into it. ``dialect``: the sqlglot dialect it was
    read in, and in which every SQL text it holds (and its rewrites) is written."""

    tables: tuple[tuple[str, str], ...]
    joins: tuple[tuple[str, str, tuple[Atom, ...]], ...]  # (alias, "inner" | "left", ON atoms), FROM order
    atoms: tuple[Atom, ...]
    shell: exp.Select
    nested: Nested | None = None
    views: tuple[View, ...] = ()  # the FROM items that are views (their table is ``VIEW``)
    setop: tuple[str, Lowered, Lowered] | None = None  # a set operation's keyword and branches (no tables then)
    inlined: tuple[str, ...] = ()  # the CTEs written as derived tables (``optimizers.rewrites.sql.ctes``)
    qualified: exp.Select | None = None  # the statement's shell with its columns qualified, names as written
    subqueries: tuple[ShellSubquery, ...] = ()  # those of its select list, HAVING, ORDER BY (``subqueries``)
    dialect: str = field(kw_only=True)  # sqlglot's name of the SQL dialect (the target's ``connector.dialect``)

    @property
    def aliases(self) -> frozenset[str]:
        return frozenset(a for _, a in self.tables)

    def selects(self) -> list[Lowered]:
        """The SELECTs whose conditions sit in this one's term as its own: its views' queries and a set
        operation's branches (a condition's subquery is not one: it becomes a semi- or anti-join's side)."""
        return [v.query for v in self.views] + list(self.setop[1:] if self.setop else ())

    def parts(self) -> list[Lowered]:
        """The SELECTs lowered inside this one: ``selects()``, its conditions' subqueries and its shell's."""
        return self.selects() + [a.sub for a in self.atoms if a.sub is not None] + [s.sub for s in self.subqueries]

    def base_tables(self) -> set[str]:
        """The base tables this SELECT reads, its parts' included."""
        return {t for t, _ in self.tables if t != VIEW}.union(*(p.base_tables() for p in self.parts()))

    def every_alias(self) -> set[str]:
        """The aliases of this SELECT and of its parts."""
        return set(self.aliases).union(*(p.every_alias() for p in self.parts()))


@dataclass(frozen=True)
class Atom:
    """One predicate of the core: its SQL (qualified columns), the aliases it reads and those whose NULLs it
    rejects, and its kind (``plain``, ``exists``, ``not_exists``, ``not_in`` or ``scalar``, with the subquery's
    core)."""

    sql: str
    refs: frozenset[str]
    rejects: frozenset[str]
    kind: str = "plain"
    sub: Lowered | None = None
    detail: tuple = ()  # a scalar comparison's (op, outer SQL, the subquery's select SQL, its select expression)
    equals: tuple[tuple[str, frozenset[str]], ...] = ()  # ("alias.column", aliases of the other side) of an a = b
    nonnull: frozenset[str] = frozenset()  # columns ("alias.column") whose NULL makes the atom not true


@dataclass(frozen=True)
class Shape:
    """What a view's shell says about its rows (see the module)."""

    keys: tuple[str, ...]
    pushable: tuple[tuple[str, str], ...]
    grouped: bool = False  # rows that compare equal are merged (GROUP BY, DISTINCT): see ``push``


@dataclass(frozen=True)
class View:
    """A view of a lowered statement: its query lowered (``query``), its
    alias, how it is written (its FROM / WHERE are replaced at emission), its ``Shape``, its output columns' names,
    and the filters above it that may move into it (the outer atom's SQL -> the atom it becomes inside)."""

    query: Lowered
    alias: str
    written: str
    shape: Shape
    columns: tuple[str, ...]
    unordered: bool = False  # the query around it keeps no order of its rows (``reads_order``)
    pushes: tuple[tuple[str, Atom], ...] = ()


@dataclass(frozen=True)
class ShellSubquery:
    """One subquery of a SELECT's shell: its place (``index`` among ``candidates``, in ``clause``: ``select``,
    ``having`` or ``order``), its ``kind`` (``scalar``, ``exists`` or ``in``; a NOT around it stays where it is),
    its SQL as the shell holds it, its query lowered (``sub``), the select expression of a scalar or IN subquery
    (``value``, over the lowered aliases), the expression left of IN (``left``), and the outer aliases the subquery
    reads (``outer``: none, it is uncorrelated and PostgreSQL runs it once)."""

    index: int
    clause: str
    kind: str
    sql: str
    sub: Lowered
    value: exp.Expression | None = None
    left: exp.Expression | None = None
    outer: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Nested:
    """Where a lowered SELECT sits in a statement outside the subset: the statement as written, the block's place
    (its index among the statement's SELECTs, in ``find_all`` order), what it is (a derived table's, a CTE's query
    or a set operation's branch), why the whole statement is outside the subset, and the dialect it is written in."""

    statement: str
    index: int
    what: str
    why: str
    dialect: str

    def tables(self) -> set[str]:
        """The names of the tables the whole statement reads (a CTE's name included: a caller keeps those its
        schema has)."""
        return {".".join(p.name for p in t.parts) for t in parse(self.statement, dialect=self.dialect).find_all(exp.Table)}

    def splice(self, block_sql: str) -> str:
        """The statement with the block's SELECT replaced by ``block_sql``."""
        tree = parse(self.statement, dialect=self.dialect)
        list(tree.find_all(exp.Select))[self.index].replace(parse(block_sql, dialect=self.dialect))
        return tree.sql(dialect=self.dialect)
