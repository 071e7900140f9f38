"""The engine seam holds in spirit, not only in the import graph: above ``connectors/`` no module compares an
engine with a name and no module names a SQL dialect where the connector's ``dialect`` should be passed down.

import-linter (pyproject.toml, contract ``drivers-in-connectors``) keeps the database drivers inside
``connectors/``; this test reads the code above it (advisor's own store aside) and refuses:
- a comparison with an engine's name (``engine == "postgres"``, ``x != "mariadb"``, ``in ("mysql", ...)``);
- a literal dialect given to sqlglot (``read="postgres"``, ``dialect="mysql"``, ``Tokenizer(dialect=...)``):
  a workload's own source dialect is named once as a module constant and passed by name.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ABOVE = ("advisor", "optimizers", "workloads", "web")
EXEMPT = ("advisor/storage/",)  # the advisor's own store may live in PostgreSQL: it is not a target
NAMES = {"postgres", "postgresql", "mariadb", "mysql"}
DIALECT_ARGS = {"dialect", "read", "write"}


def _modules():
    for top in ABOVE:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(EXEMPT):
                yield rel, ast.parse(path.read_text(), rel)


def _names_engine(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.lower() in NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_engine(e) for e in node.elts)
    return False


def test_no_module_above_connectors_compares_an_engine_with_a_name():
    found = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(_names_engine(n) for n in [node.left, *node.comparators]):
                found.append(f"{rel}:{node.lineno}")
    assert not found, f"engine names compared above connectors: {found}"


def test_no_module_above_connectors_names_a_dialect_literally():
    found = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                found += [f"{rel}:{node.lineno}" for kw in node.keywords
                          if kw.arg in DIALECT_ARGS and _names_engine(kw.value)]
    assert not found, f"literal dialects above connectors (pass connector.dialect down instead): {found}"


def test_the_scan_sees_a_comparison_and_a_literal_dialect():
    """The checks above are live: they find both shapes in a snippet."""
    snippet = ast.parse('if c.engine != "postgres":\n    sqlglot.parse_one(s, read="mysql")\n')
    assert any(isinstance(n, ast.Compare) and _names_engine(n.comparators[0]) for n in ast.walk(snippet))
    assert any(isinstance(n, ast.Call) and any(kw.arg == "read" and _names_engine(kw.value) for kw in n.keywords)
               for n in ast.walk(snippet))
