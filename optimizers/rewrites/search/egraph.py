"""One statement's e-graph and the moves a search strategy makes on it: run one rule once, read the graph's size
and the best cost so far, extract. A move that grows the graph past its node budget is undone (egglog has no
node limit of its own: ``push`` before, ``pop`` to undo). The strategies (capped saturation, random, greedy and
the learned one) only choose which rule to run next and when to stop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from egglog import EGraph

from optimizers.rewrites.algebra.analyses import analyse, priced
from optimizers.rewrites.algebra.terms import Rel
from optimizers.rewrites.sql.lowered import Lowered
from optimizers.rewrites.search.term import to_term
from optimizers.rewrites.rules import Rule, for_dialect



@dataclass
class Step:
    rule: str
    matches: int
    nodes: int
    cost: int
    undone: bool = False


@dataclass
class Search:
    """The e-graph of one lowered statement. ``rows``: estimated rows per table; ``selectivity(atom)``: the
    fraction of rows an atom keeps (both from the target's statistics); ``node_budget``: e-nodes allowed; ``rules``:
    those the strategies choose from (by default the rules that hold in the statement's dialect)."""

    lowered: Lowered
    rows: dict[str, float]
    selectivity: object
    node_budget: int = 5_000
    not_null: frozenset = frozenset()  # (table, column) pairs declared NOT NULL
    keys: dict = field(default_factory=dict)  # unique keys by table
    schema: dict = field(default_factory=dict)  # columns by table (the scans' output columns)
    # a GROUP BY's keys -> its groups, where known (``optimizers.rewrites.sql.shell_operators.Groups``)
    groups: object = None
    rules: tuple[Rule, ...] | None = None
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.rules is None:
            self.rules = for_dialect(self.lowered.dialect)
        self.egraph = EGraph()
        term, facts, expansions = to_term(self.lowered, self.rows, self.selectivity, self.not_null, self.keys,
                                          self.schema, self.groups)
        self.root = self.egraph.let("root", term)
        self.egraph.register(*facts)
        self._analyse()
        self.initial_cost = self._extract()[0]  # the statement as written
        if expansions:
            self.egraph.register(*expansions)
            self._analyse()
        self.forms: list[tuple[int, Rel]] = []  # (cost, extracted term) each time a step lowered the best cost
        self._now = (self._count_nodes(), *self._extract())  # (nodes, cost, best term) of the graph as it is

    def alternatives(self, n: int) -> list[tuple[int, Rel]]:
        """Up to ``n`` distinct cheaper forms, cheapest first: the best now, then the bests the search passed on
        the way (the pipeline re-ranks them by the planner's real cost)."""
        out: list[tuple[int, Rel]] = []
        for cost, term in sorted([(self.cost(), self.best()), *self.forms], key=lambda f: f[0]):
            if cost < self.initial_cost and all(str(term) != str(t) for _, t in out):
                out.append((cost, term))
        return out[:n]

    def _analyse(self) -> None:
        analyse(self.egraph)

    def nodes(self) -> int:
        """E-nodes of the algebra (analysis facts not counted)."""
        return self._now[0]

    def cost(self) -> int:
        """The cheapest form's estimated cost."""
        return self._now[1]

    def best(self) -> Rel:
        return self._now[2]

    def _count_nodes(self) -> int:
        return sum(n for fn, n in self.egraph.all_function_sizes() if _is_node(fn))

    def _extract(self) -> tuple[int, Rel]:
        with priced(self.egraph) as g:
            term, cost = g.extract(self.root, include_cost=True)
        return int(cost), term

    def run(self, rule: Rule) -> Step:
        """Run ``rule`` once over the whole graph, then the analyses; undone when past the node budget. A rule
        that changes nothing costs one match pass (no analysis, no extraction)."""
        self.egraph.push()
        report = self.egraph.run(rule.rules * rule.repeat)
        matches = sum(report.num_matches_per_rule.values())
        if not report.updated:
            self.egraph.pop()
            step = Step(rule.name, matches, self.nodes(), self.cost())
        else:
            self._analyse()
            nodes = self._count_nodes()
            if nodes > self.node_budget:
                self.egraph.pop()
                step = Step(rule.name, matches, self.nodes(), self.cost(), undone=True)
            else:
                cost, term = self._extract()
                self._now = (nodes, cost, term)
                step = Step(rule.name, matches, nodes, cost)
                if cost < min([self.initial_cost] + [c for c, _ in self.forms]):
                    self.forms.append((cost, term))
        self.steps.append(step)
        return step

    def trial(self, rule: Rule) -> Step:
        """What running ``rule`` now would do, undone afterwards (the graph, the steps and the forms as before)."""
        now, forms, steps = self._now, list(self.forms), len(self.steps)
        self.egraph.push()
        try:
            return self.run(rule)
        finally:
            self.egraph.pop()
            self._now, self.forms = now, forms
            del self.steps[steps:]


def _is_node(fn) -> bool:
    name = str(fn)
    return name.startswith(("Rel.", "Pred.", "·."))
