"""The rewrite optimizers' base: a plugin's ``_search(search)`` drives one statement's e-graph (which rule runs
next, when to stop); the base lowers each statement of the problem, extracts the cheapest form, writes it back as
SQL and proposes a ``QueryRewrite`` where it differs from the statement as written and is estimated cheaper.
``ask`` (the one contract) checks for every plugin that each rewrite is of a statement of the problem, once, and
changes its text; ``explain`` says per statement why it was left alone."""

from __future__ import annotations

from abc import abstractmethod

from advisor.core.domain import QueryRewrite
from optimizers.base import Config, ContractViolation, Optimizer
from optimizers.rewrites.emit import expanded, to_sql
from optimizers.rewrites.problem import RewriteProblem
from optimizers.rewrites.search import Search
from optimizers.rewrites.strategies import Result


class RewriteOptimizer(Optimizer[RewriteProblem]):
    kind = "rewrites"

    def _ask(self, n: int, current: Config | None) -> list[Config]:
        problem = self.problem
        self._why: dict[str, str] = dict(problem.unsupported)
        out: list[QueryRewrite] = []
        for qid, sql in problem.statements:
            if qid not in problem.lowered:
                continue
            search = problem.search(qid)
            result = self._search(search)
            best = search.best()
            rewritten = to_sql(best, problem.lowered[qid])
            if result.cost >= result.initial_cost:
                self._why[qid] = "no rule found a cheaper form (estimated)"
                continue
            rules = tuple(dict.fromkeys(expanded(best, problem.lowered[qid]) + result.rules))
            out.append(QueryRewrite(qid, sql, rewritten, rules, result.cost / max(result.initial_cost, 1)))
        return [tuple(out)]

    def _check(self, config: Config) -> None:
        known = dict(self.problem.statements)
        seen = set()
        for change in config:
            if change.queryid not in known or change.original != known[change.queryid]:
                raise ContractViolation(f"{self.name} rewrote a statement the problem does not hold")
            if change.queryid in seen or change.rewritten == change.original:
                raise ContractViolation(f"{self.name} rewrote statement {change.queryid} twice or not at all")
            seen.add(change.queryid)

    def explain(self) -> dict[str, str]:
        return dict(getattr(self, "_why", {}))

    @abstractmethod
    def _search(self, search: Search) -> Result:
        """Run rules on ``search`` (its node budget is kept by ``Search.run``) and say what was done."""
