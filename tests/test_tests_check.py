"""Every test checks something: a test function with no check at all in it fails this test.

A test checks when its body (or a helper of tests/ it calls, followed through the calls) holds an ``assert``, a
``raise``, ``pytest.raises`` / ``pytest.warns`` / ``pytest.fail``, or a call named ``assert...``, ``check...`` or
``expect...`` (``np.testing.assert_array_equal``, egglog's ``EGraph.check``, playwright's ``expect``, a function
under test that raises when what it guards is broken, as ``check_applicable``). A test that only runs code and
checks nothing passes whatever the code does.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CHECK_PREFIXES = ("assert", "check", "expect")
PYTEST_CHECKS = {"raises", "warns", "fail"}

Functions = dict[tuple[str, str], ast.FunctionDef | ast.AsyncFunctionDef]


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _checks_itself(fn: ast.AST) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assert, ast.Raise)):
            return True
        if (isinstance(node, ast.Attribute) and node.attr in PYTEST_CHECKS and isinstance(node.value, ast.Name)
                and node.value.id == "pytest"):
            return True
        if isinstance(node, ast.Call) and (_called_name(node) or "").lstrip("_").startswith(CHECK_PREFIXES):
            return True
    return False


def unchecked_tests(root: Path, package: str = "tests") -> list[str]:
    """'path:line name' of every test function under ``root`` that checks nothing, helpers followed."""
    trees: dict[str, tuple[Path, ast.Module]] = {}
    functions: Functions = {}
    imported: dict[str, dict[str, tuple[str, str]]] = {}
    for path in sorted(root.rglob("*.py")):
        module = ".".join((package, *path.relative_to(root).with_suffix("").parts))
        tree = ast.parse(path.read_text(), str(path))
        trees[module] = (path, tree)
        imported[module] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.setdefault((module, node.name), node)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == package:
                for alias in node.names:
                    imported[module][alias.asname or alias.name] = (node.module, alias.name)

    known: dict[tuple[str, str], bool] = {}

    def checks(key: tuple[str, str], seen: frozenset[tuple[str, str]] = frozenset()) -> bool:
        if key not in known:
            fn = functions[key]
            known[key] = _checks_itself(fn) or any(
                callee in functions and callee not in seen and checks(callee, seen | {key})
                for callee in (
                    (key[0], name) if (key[0], name) in functions else imported[key[0]].get(name)
                    for name in (_called_name(n) for n in ast.walk(fn) if isinstance(n, ast.Call)) if name)
                if callee is not None)
        return known[key]

    found = []
    for module, (path, tree) in trees.items():
        for node in ast.walk(tree):
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
                    and not checks((module, node.name))):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}")
    return found


def test_every_test_function_checks_something() -> None:
    found = unchecked_tests(TESTS)
    assert not found, "test functions that check nothing (no assert, pytest.raises or check call):\n" + "\n".join(found)


def test_the_scan_finds_a_test_that_only_runs_code(tmp_path: Path) -> None:
    root = tmp_path / "tests"
    root.mkdir()
    (root / "helpers.py").write_text("def verify(x):\n    assert x == 2\n\ndef run(x):\n    return x + 1\n")
    (root / "test_fake.py").write_text(
        "import pytest\n"
        "import numpy as np\n"
        "from tests.helpers import run, verify\n\n"
        "def _twice(x):\n    verify(x)\n\n"
        "def test_asserts():\n    assert run(1) == 2\n\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n\n"
        "def test_numpy():\n    np.testing.assert_array_equal([1], [1])\n\n"
        "def test_through_helpers():\n    _twice(run(1))\n\n"
        "def test_only_runs():\n    run(1)\n\n"
        "class TestGroup:\n    def test_prints(self):\n        print(run(2))\n")
    assert unchecked_tests(root) == ["tests/test_fake.py:21 test_only_runs", "tests/test_fake.py:25 test_prints"]
