"""MariaDB's ``EXPLAIN FORMAT=JSON`` turned into the neutral ``advisor.core.plans.Plan``.

MariaDB 10.11's JSON has no costs: a ``query_block`` holds ``nested_loop`` lists of ``table`` entries (with
``access_type``, ``key``, ``rows``, ``filtered``, ``using_index``), wrapped in ``filesort`` / ``temporary_table``
/ ``duplicates_removal`` / ``union_result`` / ``materialized`` / ``subqueries`` entries. The mapping:

- a ``table`` entry is a leaf node: ``access_type`` ALL is FULL_SCAN; with a ``key`` it is INDEX_ONLY when
  ``using_index`` is true, else INDEX_SCAN (a full index scan, access type ``index``, without ``using_index``
  reads the whole table through the index: FULL_SCAN); derived tables (``<subquery2>``, ``<derived3>``) read
  no table of the schema (no ``table`` name), their ``materialized`` query block is their child;
- ``table_name`` is the alias the statement gave the table: ``aliases`` (from the statement, read with sqlglot's
  mysql dialect) turns it back into the table's name;
- a node's rows: the table's ``rows`` times ``filtered``%; rows examined: that entry's ``rows`` times the rows
  coming out of the tables before it in the same nested loop (the loop's fan-out);
- a correlated subquery (in an ``expression_cache``) runs once per row of its block's nested loop: its rows
  examined count that many times (the cache's hits are not known before the run);
- the plan's cost is the optimizer's own total, ``Last_query_cost`` read on the same connection right after the
  EXPLAIN (MariaDB's cost units); where it is 0 (a UNION, a statement with a subquery) the rows examined stand in. Each table node gets the
  share of that total that its rows examined are of all rows examined, so ``Plan.full_scans()`` stays in the
  plan's units; the plan's rows are the top query block's output estimate.
"""

from __future__ import annotations

import json

from advisor.core.plans import FULL_SCAN, INDEX_ONLY, INDEX_SCAN, OTHER, Plan, PlanNode


def parse_json(text: str, max_repairs: int = 10_000) -> dict:
    r"""MariaDB's EXPLAIN JSON, read even where the server left a ``"`` or ``\`` of a name or condition
    unescaped inside a string (10.11 writes ``"used_key_parts": ["c"ol"]`` for a column named ``c"ol``): each
    quote that ends a string too early is escaped, a stray backslash doubled, a raw control character escaped.

    >>> parse_json('{"used_key_parts": ["c"ol `x`"], "rows": 1}')
    {'used_key_parts': ['c"ol `x`'], 'rows': 1}
    >>> parse_json(r'{"attached_condition": "t.b = \z", "n": "a' + chr(10) + 'b"}')
    {'attached_condition': 't.b = \\z', 'n': 'a\nb'}
    """
    for _ in range(max_repairs):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            if e.msg.startswith("Invalid \\escape"):
                text = text[:e.pos] + "\\" + text[e.pos:]
            elif e.msg.startswith("Invalid control character"):
                text = text[:e.pos] + json.dumps(text[e.pos])[1:-1] + text[e.pos + 1:]
            else:
                quote = text.rfind('"', 0, e.pos)
                if quote <= 0:
                    raise
                text = text[:quote] + "\\" + text[quote:]
    raise ValueError("EXPLAIN's JSON could not be read")


def aliases(statement: str) -> dict[str, str]:
    """Each table alias of ``statement`` and the table it names (empty when sqlglot cannot read it).

    >>> aliases("SELECT * FROM orders o JOIN customers AS c ON c.id = o.customer_id JOIN items ON 1 = 1")
    {'o': 'orders', 'c': 'customers', 'items': 'items'}
    """
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(statement, dialect="mysql")
    except sqlglot.errors.SqlglotError:
        return {}
    out: dict[str, str] = {}
    for table in tree.find_all(exp.Table) if tree is not None else ():
        if table.name:
            out.setdefault(table.alias_or_name, table.name)
    return out


WRAPPERS = ("filesort", "temporary_table", "duplicates_removal", "window_functions_computation",
            "having_condition", "ordering_operation", "grouping_operation")


def _table_node(entry: dict, outer_rows: float, examined: list[float]) -> tuple[PlanNode, float]:
    """One ``table`` entry: its node (cost still its rows examined) and the rows it passes on."""
    name = entry.get("table_name")
    access_type = str(entry.get("access_type", "")).upper()
    key = entry.get("key")
    if access_type == "ALL" or (access_type == "INDEX" and not entry.get("using_index")):
        access = FULL_SCAN
    elif key:
        access = INDEX_ONLY if entry.get("using_index") else INDEX_SCAN
    else:
        access = OTHER
    rows = float(entry.get("rows", 0) or 0)
    out = rows * float(entry.get("filtered", 100) or 100) / 100.0
    children: tuple[PlanNode, ...] = ()
    if isinstance(entry.get("materialized"), dict):
        children = tuple(_walk(entry["materialized"], examined))
    examined.append(outer_rows * rows)
    derived = not name or str(name).startswith("<")
    node = PlanNode(f"{access_type.lower() or 'table'} {name}", access if not derived else OTHER,
                    table=None if derived else str(name), index=str(key) if key and not derived else None,
                    rows=outer_rows * out, cost=outer_rows * rows, children=children)
    return node, out


def _loop(items: list, examined: list[float], runs: float = 1.0) -> tuple[list[PlanNode], float]:
    """The nodes of one nested loop run ``runs`` times, and the rows it passes on (all runs together)."""
    nodes, fan_out = [], runs
    for item in items:
        entry = item.get("table") if isinstance(item, dict) else None
        if entry is None and isinstance(item, dict) and isinstance(item.get("block-nl-join"), dict):
            entry = item["block-nl-join"].get("table")
        if isinstance(entry, dict):
            node, out = _table_node(entry, fan_out, examined)
            nodes.append(node)
            fan_out *= out
        elif isinstance(item, dict):
            nodes.extend(_walk(item, examined, runs))
    return nodes, fan_out


def _walk(obj: dict, examined: list[float], runs: float = 1.0) -> list[PlanNode]:
    """The nodes under one JSON object (a query block or any wrapper) run ``runs`` times. A correlated subquery
    (MariaDB wraps it in an ``expression_cache``) runs once per row of its block's nested loop (a cache hit
    aside), so its rows examined count that many times; an uncorrelated one runs once."""
    nodes: list[PlanNode] = []
    for key, value in obj.items():
        if key == "nested_loop" and isinstance(value, list):
            nodes.extend(_loop(value, examined, runs)[0])
        elif key == "table" and isinstance(value, dict):
            nodes.append(_table_node(value, runs, examined)[0])
        elif key == "query_block" and isinstance(value, dict):
            nodes.append(PlanNode("query block", OTHER, children=tuple(_walk(value, examined, runs))))
        elif key == "subqueries" and isinstance(value, list):
            per_row = _loop(obj["nested_loop"], [], runs)[1] if isinstance(obj.get("nested_loop"), list) else runs
            for item in value:
                if isinstance(item, dict):
                    nodes.extend(_walk(item, examined, per_row if "expression_cache" in item else runs))
        elif isinstance(value, dict):
            nodes.extend(_walk(value, examined, runs))
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    nodes.extend(_walk(item, examined, runs))
    return nodes


def _rows_out(block: dict) -> float:
    """The top query block's estimated rows out: its nested loop's fan-out (under any wrappers)."""
    for key in WRAPPERS:
        if isinstance(block.get(key), dict):
            return _rows_out(block[key])
    if isinstance(block.get("nested_loop"), list):
        return _loop(block["nested_loop"], [])[1]
    if isinstance(block.get("table"), dict):
        return _table_node(block["table"], 1.0, [])[1]
    return 0.0


def _scaled(node: PlanNode, factor: float, names: dict[str, str]) -> PlanNode:
    """``node`` with costs in the plan's units (a table node's own rows examined times ``factor`` plus its
    children's; a query block's, its children's) and its table's name for its alias."""
    children = tuple(_scaled(c, factor, names) for c in node.children)
    own = 0.0 if node.operation == "query block" else node.cost * factor
    table = names.get(node.table, node.table) if node.table else None
    return PlanNode(node.operation, node.access, table, node.index, node.rows, own + sum(c.cost for c in children),
                    children)


def to_plan(document: dict, last_query_cost: float, names: dict[str, str] | None = None) -> Plan:
    """The neutral plan of one EXPLAIN FORMAT=JSON document and the optimizer's ``Last_query_cost``; ``names``:
    the table of each alias (``aliases``).

    >>> doc = {"query_block": {"select_id": 1, "nested_loop": [
    ...     {"table": {"table_name": "u", "access_type": "ALL", "rows": 500, "filtered": 100}},
    ...     {"table": {"table_name": "t", "access_type": "eq_ref", "key": "PRIMARY", "rows": 1, "filtered": 50}}]}}
    >>> plan = to_plan(doc, 1000.0)
    >>> plan.cost, plan.rows, sorted(plan.indexes), plan.full_scans()
    (1000.0, 250.0, ['PRIMARY'], {'u': 500.0})

    A correlated subquery runs once per outer row (MariaDB's ``Last_query_cost`` is 0 then: rows examined count):

    >>> sub = {"table": {"table_name": "s", "access_type": "ALL", "rows": 300, "filtered": 10}}
    >>> doc = {"query_block": {"nested_loop": [{"table": {"table_name": "o", "access_type": "ALL", "rows": 200}}],
    ...        "subqueries": [{"expression_cache": {"query_block": {"nested_loop": [sub]}}}]}}
    >>> to_plan(doc, 0.0).cost, to_plan({**doc, "query_block": {**doc["query_block"],
    ...     "subqueries": [{"query_block": {"nested_loop": [sub]}}]}}, 0.0).cost  # correlated, uncorrelated
    (60200.0, 500.0)
    """
    examined: list[float] = []
    block = document.get("query_block", document)
    root = PlanNode("query block", OTHER, children=tuple(_walk(block, examined)))
    total_examined = sum(examined)
    cost = float(last_query_cost) if last_query_cost and last_query_cost > 0 else total_examined
    factor = cost / total_examined if total_examined else 0.0
    root = _scaled(root, factor, names or {})
    return Plan(cost=cost, rows=_rows_out(block), root=PlanNode(root.operation, OTHER, rows=_rows_out(block),
                                                                 cost=cost, children=root.children))
