"""The settings catalog from pg_settings: type, unit, bounds, enum values and how a change takes effect."""

from __future__ import annotations

import psycopg

from advisor.core.domain import KnobSpec
from connectors.postgres.connection import TAG

CATALOG_SQL = TAG + """
SELECT name, vartype, unit, setting, boot_val, min_val, max_val, enumvals, context, category, short_desc,
       source, sourcefile
FROM pg_settings ORDER BY name"""


# the categories of settings only the planner reads and that move a statement only by its plan: its cost
# constants and method switches, less JIT's and the parallel costs and sizes (a JIT-compiled plan, or one with more
# workers, runs differently under the same plan shape). Not the search limits (join_collapse_limit, geqo_*) nor the
# other planner options (plan_cache_mode, constraint_exclusion, default_statistics_target): they are tuned for the
# planner's own time, which a statement's time includes, often with the same plan
PLANNER_CATEGORIES = ("Query Tuning / Planner Cost Constants", "Query Tuning / Planner Method Configuration")


def plans_only(name: str, category: str) -> bool:
    """Whether only the planner reads the setting, so it changes a statement's time only through its plan.

    >>> plans_only("random_page_cost", "Query Tuning / Planner Cost Constants"), plans_only("jit_above_cost",
    ...     "Query Tuning / Planner Cost Constants"), plans_only("work_mem", "Resource Usage / Memory")
    (True, False, False)
    >>> plans_only("join_collapse_limit", "Query Tuning / Other Planner Options")  # the planner's own time
    False
    """
    return category.startswith(PLANNER_CATEGORIES) and not name.startswith(("jit", "parallel_", "min_parallel_"))


def read_catalog(conn: psycopg.Connection) -> dict[str, KnobSpec]:
    out: dict[str, KnobSpec] = {}
    for (name, vartype, unit, setting, boot, lo, hi, enums, context, category, desc, source,
         sourcefile) in conn.execute(CATALOG_SQL):
        out[name] = KnobSpec(
            name=name, vartype=vartype, unit=unit, setting=setting, boot_value=boot,
            min_value=float(lo) if lo is not None else None, max_value=float(hi) if hi is not None else None,
            enum_values=tuple(enums or ()), context=context, category=category, description=desc,
            source=source, sourcefile=sourcefile, plans_only=plans_only(name, category or ""),
        )
    return out
