"""One statement's e-graph and the moves a search strategy makes on it: run one rule once, read the graph's size
and the best cost so far, extract. A move that grows the graph past its node budget is undone (egglog has no
node limit of its own: ``push`` before, ``pop`` to undo). The strategies (capped saturation, random, greedy and
the learned one) only choose which rule to run next and when to stop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from egglog import EGraph

from optimizers.rewrites.algebra import Rel, analyse, priced
from optimizers.rewrites.lower import Lowered
from optimizers.rewrites.term import to_term
from optimizers.rewrites.rules import RULES, Rule



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
    fraction of rows an atom keeps (both from the target's statistics); ``node_budget``: e-nodes allowed."""

    lowered: Lowered
    rows: dict[str, float]
    selectivity: object
    node_budget: int = 5_000
    not_null: frozenset = frozenset()  # (table, column) pairs declared NOT NULL
    rules: tuple[Rule, ...] = RULES
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.egraph = EGraph()
        term, facts, expansions = to_term(self.lowered, self.rows, self.selectivity, self.not_null)
        self.root = self.egraph.let("root", term)
        self.egraph.register(*facts)
        self._analyse()
        self.initial_cost = self.cost()  # the statement as written
        if expansions:
            self.egraph.register(*expansions)
            self._analyse()
        self.forms: list[tuple[int, Rel]] = []  # (cost, extracted term) each time a step lowered the best cost

    def alternatives(self, n: int) -> list[tuple[int, Rel]]:
        """Up to ``n`` distinct cheaper forms, cheapest first: the best now, then the bests the search passed on
        the way (the pipeline re-ranks them by the planner's real cost)."""
        out: list[tuple[int, Rel]] = []
        for cost, term in sorted([self._extract(), *self.forms], key=lambda f: f[0]):
            if cost < self.initial_cost and all(str(term) != str(t) for _, t in out):
                out.append((cost, term))
        return out[:n]

    def _analyse(self) -> None:
        analyse(self.egraph)

    def nodes(self) -> int:
        """E-nodes of the algebra (analysis facts not counted)."""
        return sum(n for fn, n in self.egraph.all_function_sizes() if _is_node(fn))

    def cost(self) -> int:
        return self._extract()[0]

    def best(self) -> Rel:
        return self._extract()[1]

    def _extract(self) -> tuple[int, Rel]:
        with priced(self.egraph) as g:
            term, cost = g.extract(self.root, include_cost=True)
        return int(cost), term

    def run(self, rule: Rule) -> Step:
        """Run ``rule`` once over the whole graph, then the analyses; undone when past the node budget."""
        self.egraph.push()
        report = self.egraph.run(1, ruleset=rule.rules)
        matches = sum(report.num_matches_per_rule.values())
        self._analyse()
        nodes = self.nodes()
        if nodes > self.node_budget:
            self.egraph.pop()
            step = Step(rule.name, matches, self.nodes(), self.cost(), undone=True)
        else:
            cost, term = self._extract()
            step = Step(rule.name, matches, nodes, cost)
            if cost < min([self.initial_cost] + [c for c, _ in self.forms]):
                self.forms.append((cost, term))
        self.steps.append(step)
        return step


def _is_node(fn) -> bool:
    name = str(fn)
    return name.startswith(("Rel.", "Pred.", "·."))
