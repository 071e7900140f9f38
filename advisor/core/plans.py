"""Query plans as engine-neutral structures: what every engine's connector turns its own EXPLAIN output into.

A ``Plan`` is a tree of ``PlanNode``; callers read costs, row estimates, the tables scanned whole and the
indexes used from it, never the engine's JSON. Costs are in the engine's own planner units (comparable within
one engine and one server only); rows are the planner's estimates.

>>> leaf = PlanNode("Seq Scan", FULL_SCAN, table="orders", rows=1000.0, cost=35.5)
>>> probe = PlanNode("Index Scan", INDEX_SCAN, table="items", index="items_order_idx", rows=4.0, cost=0.4)
>>> plan = Plan(cost=120.0, rows=4000.0, root=PlanNode("Nested Loop", OTHER, rows=4000.0, cost=120.0,
...                                                   children=(leaf, probe)))
>>> sorted(plan.indexes), plan.full_scans(), [n.operation for n in plan.nodes()]
(['items_order_idx'], {'orders': 35.5}, ['Nested Loop', 'Seq Scan', 'Index Scan'])
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

FULL_SCAN = "full_scan"  # every row of a table read (PostgreSQL's Seq Scan, MariaDB's access type ALL)
INDEX_SCAN = "index_scan"  # rows found through an index (and read from the table)
INDEX_ONLY = "index_only"  # answered from the index alone (PostgreSQL's Index Only Scan, MariaDB's "Using index")
OTHER = "other"  # joins, sorts, aggregates, anything that reads no table itself


@dataclass(frozen=True)
class PlanNode:
    """One operator. ``operation``: the engine's own name for it (for people); ``access``: how it reads
    ``table`` (FULL_SCAN, INDEX_SCAN, INDEX_ONLY, or OTHER when it reads none); ``rows``: estimated rows out;
    ``cost``: estimated total cost of this node and its children (planner units)."""

    operation: str
    access: str = OTHER
    table: str | None = None
    index: str | None = None
    rows: float = 0.0
    cost: float = 0.0
    children: tuple[PlanNode, ...] = ()


@dataclass(frozen=True)
class Plan:
    """A statement's plan: total estimated ``cost`` (planner units), estimated ``rows`` returned, the tree."""

    cost: float
    rows: float
    root: PlanNode

    def nodes(self) -> Iterator[PlanNode]:
        """Every node, depth first, parents before children."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    @property
    def indexes(self) -> frozenset[str]:
        """Names of the indexes the plan reads."""
        return frozenset(n.index for n in self.nodes() if n.index)

    def shape(self) -> str:
        """The plan without its estimates: each operator, the table it reads and the index it reads through,
        nested; two plans of one statement with the same shape run the same way.

        >>> Plan(1.0, 1.0, PlanNode("Hash Join", children=(PlanNode("Seq Scan", FULL_SCAN, table="a", cost=2.0),
        ...      PlanNode("Index Scan", INDEX_SCAN, table="b", index="b_x")))).shape()
        'Hash Join(Seq Scan on a, Index Scan on b using b_x)'
        """
        def text(n: PlanNode) -> str:
            out = n.operation + (f" on {n.table}" if n.table else "") + (f" using {n.index}" if n.index else "")
            return out + (f"({', '.join(text(c) for c in n.children)})" if n.children else "")
        return text(self.root)

    def full_scans(self) -> dict[str, float]:
        """Per table name, the summed cost of the nodes that read it whole (what an index could still remove)."""
        out: dict[str, float] = {}
        for n in self.nodes():
            if n.access == FULL_SCAN and n.table:
                out[n.table] = out.get(n.table, 0.0) + n.cost
        return out
