"""No import cycles inside any package of the five root packages, type-only and function-local imports counted.

It replaces import-linter's ``acyclic_siblings`` contract, which left out imports under ``if TYPE_CHECKING:``
(pyproject.toml's ``exclude_type_checking_imports``, right for the layers), so a helper module that annotates with
the class of the module importing it was a cycle it never saw. This check walks the AST of every module of the root packages (those of
``[tool.importlinter] root_packages``) and counts every ``import`` / ``from ... import`` statement wherever it
stands: at the top, under ``if TYPE_CHECKING:``, inside a function. For every package it joins its children (a
module or a sub-package, with everything under it) by the imports between them, as ``acyclic_siblings`` did, and
fails on each group of children that import one another in a ring, naming the modules and the import lines.
Imports by a computed name (``importlib.import_module(name)``) are not seen.

A cycle is broken by moving the shared piece down (a type, a constant, a protocol of what a helper uses of its
caller), never by hiding the import.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Cycle:
    package: str
    children: tuple[str, ...]  # the package's children that import one another in a ring, sorted
    lines: tuple[str, ...]  # 'path:line imports module' for each import between two of them

    def text(self) -> str:
        head = f"in {self.package}: " + " <-> ".join(c.rpartition(".")[2] for c in self.children)
        return "\n".join([head, *(f"    {line}" for line in self.lines)])


def root_packages(repo: Path = REPO) -> list[str]:
    return tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]


def modules(repo: Path, roots: Iterable[str]) -> dict[str, Path]:
    """Every module under the roots, by dotted name (a package by its own name, for its ``__init__.py``)."""
    found: dict[str, Path] = {}
    for root in roots:
        for path in sorted((repo / root).rglob("*.py")):
            parts = path.relative_to(repo).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(module imported, line) for every import statement of the module, resolved to the deepest module of
    ``known`` (``from a.b import c`` imports ``a.b.c`` when that is a module, else ``a.b``); outside ones left out."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                       for alias in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target, node.lineno


def _child(package: str, module: str) -> str | None:
    if not module.startswith(package + "."):
        return None
    return package + "." + module[len(package) + 1:].split(".")[0]


def _rings(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    rings: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    ring = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        ring.append(member)
                        if member == node:
                            break
                    if len(ring) > 1:
                        rings.append(sorted(ring))
    return rings


def cycles(repo: Path = REPO, roots: Iterable[str] | None = None) -> list[Cycle]:
    """Every ring of children importing one another, in every package under the roots."""
    known = modules(repo, root_packages(repo) if roots is None else roots)
    edges = {name: sorted(set(imports(name, path, known))) for name, path in known.items()}
    packages = sorted({name.rpartition(".")[0] for name in known if "." in name})
    found: list[Cycle] = []
    for package in packages:
        graph: dict[str, set[str]] = {}
        lines: dict[tuple[str, str], list[str]] = {}
        for name in known:
            importer = _child(package, name)
            if importer is None:
                continue
            for target, line in edges[name]:
                imported = _child(package, target)
                if imported is None or imported == importer:
                    continue
                graph.setdefault(importer, set()).add(imported)
                lines.setdefault((importer, imported), []).append(
                    f"{known[name].relative_to(repo)}:{line} imports {target}")
        for ring in _rings(graph):
            members = set(ring)
            found.append(Cycle(package, tuple(ring), tuple(sorted(
                line for (a, b), ls in lines.items() if a in members and b in members for line in ls))))
    return found


def test_no_import_cycles_inside_any_package() -> None:
    found = cycles()
    assert not found, ("import cycles (type-only and function-local imports counted):\n"
                       + "\n".join(cycle.text() for cycle in found))


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_check_sees_a_type_only_ring_and_a_function_local_one_deep_in_a_package(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "fake/__init__.py": "",
        "fake/low.py": "VALUE = 1\n",
        "fake/sub/__init__.py": "",
        "fake/sub/deeper/__init__.py": "",
        # a type-only ring two levels down
        "fake/sub/deeper/conn.py": "from fake.sub.deeper import applying\nfrom fake import low\n",
        "fake/sub/deeper/applying.py": ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                        "    from fake.sub.deeper.conn import Conn\n"),
        # a function-local ring through a relative import, between a module and a sibling sub-package
        "fake/top.py": "from fake.sub.deeper import conn\n",
        "fake/sub/clone.py": "def start():\n    from .deeper import conn\n",
        "fake/sub/deeper/replica.py": "def clone():\n    from fake.sub.clone import start\n",
    })
    found = {(c.package, c.children): c for c in cycles(tmp_path, ["fake"])}
    assert set(found) == {
        ("fake.sub.deeper", ("fake.sub.deeper.applying", "fake.sub.deeper.conn")),
        ("fake.sub", ("fake.sub.clone", "fake.sub.deeper")),
    }
    ring = found[("fake.sub.deeper", ("fake.sub.deeper.applying", "fake.sub.deeper.conn"))]
    assert ring.lines == ("fake/sub/deeper/applying.py:4 imports fake.sub.deeper.conn",
                          "fake/sub/deeper/conn.py:1 imports fake.sub.deeper.applying")
    assert "in fake.sub.deeper: applying <-> conn" in ring.text()

    # moving the shared piece down breaks the ring: the check then passes
    _tree(tmp_path, {"fake/sub/deeper/applying.py": "from fake import low\n",
                     "fake/sub/deeper/replica.py": "from fake import low\n"})
    assert cycles(tmp_path, ["fake"]) == []
