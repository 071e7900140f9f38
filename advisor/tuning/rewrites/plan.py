"""The rewrite kind's plan: how many of the heaviest statements to rewrite, or the SQL to rewrite instead, each
stated once (``plan.option``).

>>> RewritesPlan().max_statements
20
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.tuning.plan import RunPlan, option

SQL_MAX = 200_000  # characters of a rewrite run's SQL (its statements: ``rewrites.given.MAX_STATEMENTS``)


@dataclass(frozen=True)
class RewritesPlan(RunPlan):
    kind: str = "rewrites"
    max_statements: int = option(20, "how many of the workload's heaviest statements to rewrite", (1, 1000),
                                 "Statements", form=True)
    sql: str | None = option(None, "the statements to rewrite, constants written in, separated by ; (default: the "
                             "observed workload's heaviest; at most 200,000 characters and 1,000 statements)",
                             label="SQL", form=True, multiline=True, max_length=SQL_MAX)
