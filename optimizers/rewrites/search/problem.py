"""The rewrite problem: the workload's statements (query id, SQL), the schema they read (table -> column ->
type), estimated rows per table, the (table, column) pairs declared NOT NULL, each predicate's estimated
selectivity, the e-graph's node budget per statement, the catalog's unique and foreign keys, the groups each
GROUP BY makes, and the SQL dialect (sqlglot's name: the target's ``connector.dialect``, passed in as data) in which
every statement is read, every rule checked (``rules.for_dialect``, ``left_out``) and every rewrite written. Statements
outside the rewriter's subset are kept, with the reason, in ``unsupported``; one that holds a SELECT inside the
subset (a derived table's, a CTE's, a UNION branch) is searched over that block (``Lowered.nested``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from advisor.core.domain import QueryRewrite
from optimizers.rewrites.search.corpus import generate
from optimizers.rewrites.sql.blocks import lower_block
from optimizers.rewrites.sql.lower import lower
from optimizers.rewrites.sql.lowered import Atom, Lowered
from optimizers.rewrites.sql.parsing import Unsupported
from optimizers.rewrites.rules import left_out
from optimizers.rewrites.rules.base import Facts
from optimizers.rewrites.search.egraph import Search
from optimizers.rewrites.sql.shell_operators import Groups


def default_selectivity(atom: Atom) -> float:
    """Without statistics: a join condition keeps 1 in 10,000 pairs, a filter a tenth of the rows."""
    return 1e-4 if len(atom.refs) > 1 else 0.1


def no_groups(keys: str) -> float | None:
    """Without statistics: no GROUP BY's groups are known (a grouping keeps a tenth of its rows)."""
    return None


@dataclass(frozen=True)
class RewriteProblem:
    statements: tuple[tuple[str, str], ...]
    schema: dict[str, dict[str, str]]
    rows: dict[str, float] = field(default_factory=dict)
    not_null: frozenset[tuple[str, str]] = frozenset()
    selectivity: Callable[[Atom], float] = default_selectivity
    node_budget: int = 5_000
    keys: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)  # unique keys by table
    foreign_keys: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...] = ()  # (table, cols, ref, ref cols)
    groups: Groups = no_groups  # a GROUP BY's groups over its whole input, where the statistics say
    dialect: str = field(kw_only=True)  # sqlglot's name of the statements' SQL dialect (``connector.dialect``)

    @cached_property
    def facts(self) -> Facts:
        """The catalog's facts the statement-level rules read."""
        return Facts(self.schema, self.not_null, self.keys, self.foreign_keys, dialect=self.dialect)

    @cached_property
    def left_out(self) -> dict[str, str]:
        """The rules left out because they do not hold in the problem's dialect, each with why (none in postgres)."""
        return left_out(self.dialect)

    @cached_property
    def _lowering(self) -> tuple[dict[str, Lowered], dict[str, str]]:
        """Each statement lowered once: (lowered by query id, why each outside the subset is left as written). A
        statement outside the subset that holds a block inside it (``lower_block``) is lowered as that block."""
        lowered, unsupported = {}, {}
        for qid, sql in self.statements:
            try:
                lowered[qid] = lower_block(sql, self.schema, dialect=self.dialect)
            except Unsupported as e:
                unsupported[qid] = str(e)
        return lowered, unsupported

    @property
    def lowered(self) -> dict[str, Lowered]:
        """The statements in the subset, lowered, by query id."""
        return self._lowering[0]

    @property
    def unsupported(self) -> dict[str, str]:
        """Why each statement outside the subset is left as written, by query id."""
        return self._lowering[1]

    def search(self, queryid: str) -> Search:
        """A fresh e-graph search over one lowered statement."""
        return self.search_of(self.lowered[queryid], self.rows)

    def search_of(self, lowered: Lowered, rows: dict[str, float]) -> Search:
        """A fresh search over a lowered statement (one of the problem's, or a training statement) under given
        row estimates (a learned strategy's training varies them)."""
        return Search(lowered, rows, self.selectivity, self.node_budget, not_null=self.not_null, keys=self.keys,
                      schema=self.schema, groups=self.groups)

    def training_statements(self, n: int, seed: int = 0) -> list[Lowered]:
        """Up to ``n`` statements generated from the problem's schema and keys (``corpus``), lowered."""
        out = []
        for sql in generate(self.schema, self.keys, self.foreign_keys, self.not_null, n=n, seed=seed):
            try:
                out.append(lower(sql, self.schema, dialect=self.dialect))
            except Unsupported:
                continue
        return out

    def cost(self, config) -> float:
        """The workload's estimated cost relative to the statements as written (1 per statement)."""
        rewritten = {c.queryid: c.estimated for c in config if isinstance(c, QueryRewrite)}
        return sum(rewritten.get(qid, 1.0) for qid, _ in self.statements)
