"""No code branches on a kind's name outside the kind's own folders (issue 45): what differs between kinds is the
kind's registry entry (``advisor.tuning.kinds``: its plan, its hooks and attributes), not an ``if kind ==
"indexes"`` somewhere else. An AST walk over the five packages finds every comparison with a kind's name (``==``,
``!=``, ``in`` a literal holding one) and every table keyed by two kinds' names or more; each is allowed only in
a module under a folder of that kind (``advisor/tuning/indexes/``, ``advisor/bench/indexes/``,
``optimizers/indexes/``, ...) or in the registries that list the kinds. The same holds for the web UI's templates
(every ``.html`` in the packages, ``web/templates`` among them): a comparison with a kind's name (``==``, ``!=``,
``in`` a literal list) or a table keyed by one (``{'indexes': ...}``, ``x['indexes']``) belongs in that kind's page,
its folder's ``page.html`` (``Kind.page``), which the generic templates import."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("advisor", "web", "connectors", "workloads", "optimizers")
FOLDERS = {"knobs": {"knobs"}, "indexes": {"indexes"}, "rewrites": {"rewrites"}, "all": {"all"},
           "learned-index": {"learned_index"}, "learned_index": {"learned_index"}}
REGISTRIES = {"advisor/tuning/kinds.py", "optimizers/registry.py"}  # the lists of the kinds, by design


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and node.value in FOLDERS:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [n for e in node.elts for n in _names(e)]
    return []


def branches(source: str) -> list[tuple[int, str]]:
    """(line, kind) of each comparison with a kind's name, and each table keyed by two kinds' names or more.

    >>> branches('if kind == "knobs": pass')
    [(1, 'knobs')]
    >>> branches('x = {"indexes": 1, "rewrites": 2}; y = {"indexes": s.indexes}; z = kind in ("all", "knobs")')
    [(1, 'indexes'), (1, 'rewrites'), (1, 'all'), (1, 'knobs')]
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            found += [(node.lineno, n) for side in (node.left, *node.comparators) for n in _names(side)]
        elif isinstance(node, ast.Dict):
            keyed = [n for k in node.keys if k is not None for n in _names(k)]
            if len(set(keyed)) >= 2:
                found += [(node.lineno, n) for n in keyed]
    return sorted(found, key=lambda f: f[0])


def test_no_module_branches_on_a_kind_name_outside_its_folders():
    outside = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in REGISTRIES:
                continue
            folders = set(path.relative_to(ROOT).parts[:-1])
            outside += [f"{rel}:{line}: {kind!r}" for line, kind in branches(path.read_text())
                        if not folders & FOLDERS[kind]]
    assert not outside, "a kind's name outside its folders (give its registry entry the attribute instead):\n" + \
        "\n".join(outside)


_KIND = "|".join(re.escape(k) for k in sorted(FOLDERS, key=len, reverse=True))
_QUOTED = rf"""(?P<q>['"])(?P<kind>{_KIND})(?P=q)"""
TEMPLATE_BRANCHES = (  # a kind's name compared, in a literal list compared with ``in``, or keying a table
    re.compile(rf"(?:==|!=)\s*{_QUOTED}"), re.compile(rf"{_QUOTED}\s*(?:==|!=)"),
    re.compile(rf"""\bin\s*[(\[][^)\]]*?{_QUOTED}"""), re.compile(rf"{_QUOTED}\s*:"),
    re.compile(rf"\[\s*{_QUOTED}\s*\]"), re.compile(rf"\.get\(\s*{_QUOTED}"))


def template_branches(source: str) -> list[tuple[int, str]]:
    """(line, kind) of each comparison with a kind's name in a Jinja template, and each table keyed by one.

    >>> template_branches("{% if run.kind == 'knobs' %}\\n{% if kind in ('all', 'x') %}{{ d['rewrites'] }}")
    [(1, 'knobs'), (2, 'all'), (2, 'rewrites')]
    >>> template_branches("{% if c.kind == 'knob' %}<p>the knobs and indexes</p>{{ {'learned-index': 1} }}")
    [(1, 'learned-index')]
    """
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        found += [(number, m.start(), m["kind"]) for pattern in TEMPLATE_BRANCHES for m in pattern.finditer(line)]
    return [(number, kind) for number, _, kind in sorted(set(found))]


def test_no_template_branches_on_a_kind_name_outside_its_folders():
    pages = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.html"))
    assert ROOT / "web" / "templates" / "run.html" in pages  # the generic pages are scanned
    outside = []
    for path in pages:
        folders = set(path.relative_to(ROOT).parts[:-1])
        outside += [f"{path.relative_to(ROOT).as_posix()}:{line}: {kind!r}"
                    for line, kind in template_branches(path.read_text()) if not folders & FOLDERS[kind]]
    assert not outside, "a kind's name in a template outside its folders (put the piece in the kind's page.html, " \
        "Kind.page):\n" + "\n".join(outside)
