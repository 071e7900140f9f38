"""The rewrite optimizers' base: a plugin's ``_search(search)`` drives one statement's e-graph (which rule runs
next, when to stop); the base lowers each statement of the problem, extracts the cheapest form, writes it back as
SQL and proposes a ``QueryRewrite`` where it differs from the statement as written and is estimated cheaper.
``ask`` (the one contract) checks for every plugin that each rewrite is of a statement of the problem, once, and
changes its text; ``explain`` says per statement why it was left alone, ``seconds`` how long its search and
extraction took."""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import TYPE_CHECKING

from advisor.core.domain import QueryRewrite
from optimizers.base import Config, ContractViolation, Optimizer

if TYPE_CHECKING:  # the e-graph's modules (egglog) load when a search first runs: listing optimizers needs none
    from optimizers.rewrites.search.egraph import Search
    from optimizers.rewrites.search.problem import RewriteProblem
    from optimizers.rewrites.search.strategies import Result


class RewriteOptimizer(Optimizer["RewriteProblem"]):
    kind = "rewrites"
    change_types = (QueryRewrite,)

    def _ask(self, n: int, current: Config | None, pending: tuple[Config, ...] = ()) -> list[Config]:
        """``n`` configs: the i-th holds each statement's i-th candidate, for the statements that have one: the
        distinct forms the search reached, cheapest (estimated) first, then the statement as written, each after the
        statement-level rules (``rules.statement``; an alternative rule adds its form beside); a statement outside
        the e-graph's subset gets the statement-level rules' forms alone."""
        from optimizers.rewrites.rules.shown import shown
        from optimizers.rewrites.rules.statement import variants
        from optimizers.rewrites.sql.emit import to_sql

        problem = self.problem
        self._why: dict[str, str] = dict(problem.unsupported)
        out: list[list[QueryRewrite]] = [[] for _ in range(n)]
        self.seconds: dict[str, float] = {}
        for qid, sql in problem.statements:
            if qid not in problem.lowered:  # outside the e-graph's subset: the statement-level rules alone
                for i, (variant, extra) in enumerate(v for v in variants(sql, problem.facts) if v[0] != sql):
                    if i < n:
                        out[i].append(QueryRewrite(qid, sql, variant, extra, 1.0))
                continue
            started = time.perf_counter()
            low = problem.lowered[qid]
            result, search = self.run_search(qid)
            forms = search.alternatives(n) if result.cost < result.initial_cost else []
            base = max(result.initial_cost, 1)
            written = [(to_sql(term, low), tuple(dict.fromkeys(shown(term, low) + result.rules)), cost / base)
                       for cost, term in forms] + [(sql, (), 1.0)]
            seen, candidates = {sql}, []
            for text, rules, estimated in written:  # each form, then the statement as written, after the
                for variant, extra in variants(text, problem.facts):  # statement-level rules
                    if variant not in seen:
                        seen.add(variant)
                        candidates.append(QueryRewrite(qid, sql, variant, rules + extra, estimated))
            if not candidates:
                self._why[qid] = "no rule found a cheaper form (estimated)" + _where(low)
            for i, change in enumerate(candidates[:n]):
                out[i].append(change)
            self.seconds[qid] = time.perf_counter() - started
        while len(out) > 1 and not out[-1]:
            out.pop()
        return [tuple(c) for c in out]

    def report(self) -> dict:
        """``{"seconds": {queryid: s}, "rules_left_out": {rule: why}}``: how long each statement's search and
        extraction took, and the rules not used because they do not hold in the problem's dialect."""
        return {"seconds": dict(self.__dict__.get("seconds", {})),  # nothing before the first ask
                "rules_left_out": dict(self.problem.left_out)}

    def run_search(self, queryid: str) -> tuple[Result, Search]:
        """One statement's search as this strategy runs it: what it reached (cost, e-nodes, rules) and the graph."""
        search = self.problem.search(queryid)
        return self._search(search), search

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


def _where(low) -> str:
    """For a block of a larger statement (``Lowered.nested``): which block was searched, and why the rest was not."""
    if low.nested is None:
        return ""
    return f" in {low.nested.what}, the part searched (the rest is outside the subset: {low.nested.why})"
