"""PostgreSQL's EXPLAIN (FORMAT JSON) as the engine-neutral ``advisor.core.plans.Plan``.

>>> plan = to_plan({"Plan": {"Node Type": "Nested Loop", "Total Cost": 120.0, "Plan Rows": 40, "Plans": [
...     {"Node Type": "Seq Scan", "Relation Name": "orders", "Total Cost": 35.5, "Plan Rows": 10},
...     {"Node Type": "Bitmap Heap Scan", "Relation Name": "items", "Total Cost": 8.0, "Plan Rows": 4, "Plans": [
...         {"Node Type": "Bitmap Index Scan", "Index Name": "items_o", "Total Cost": 1.0, "Plan Rows": 4}]}]}})
>>> plan.cost, plan.rows, sorted(plan.indexes), plan.full_scans()
(120.0, 40.0, ['items_o'], {'orders': 35.5})
"""

from __future__ import annotations

from advisor.core.plans import FULL_SCAN, INDEX_ONLY, INDEX_SCAN, OTHER, Plan, PlanNode

_ACCESS = {"Seq Scan": FULL_SCAN, "Parallel Seq Scan": FULL_SCAN, "Index Scan": INDEX_SCAN,
           "Index Only Scan": INDEX_ONLY, "Bitmap Index Scan": INDEX_SCAN, "Bitmap Heap Scan": INDEX_SCAN}


def _node(raw: dict) -> PlanNode:
    access = _ACCESS.get(raw.get("Node Type", ""), OTHER)
    if raw.get("Node Type") == "Bitmap Heap Scan":
        access = OTHER  # the table read of a bitmap scan: its index is the child's; the table is not read whole
    return PlanNode(operation=raw.get("Node Type", "?"), access=access, table=raw.get("Relation Name"),
                    index=raw.get("Index Name"), rows=float(raw.get("Plan Rows", 0.0)),
                    cost=float(raw.get("Total Cost", 0.0)),
                    children=tuple(_node(child) for child in raw.get("Plans", ())))


def to_plan(explained: dict) -> Plan:
    """One statement's JSON plan (the element of EXPLAIN's array, with its ``Plan`` key) as a neutral Plan."""
    root = _node(explained.get("Plan", explained))
    return Plan(cost=root.cost, rows=root.rows, root=root)
