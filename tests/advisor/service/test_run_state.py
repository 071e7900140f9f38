"""One place writes a tuning run's state (issue 45): ``advisor.service.run_state``, for every way a run is started;
a pipeline returns its result and never says how its run ended. An AST walk over the advisor finds every
``update_run(..., state=...)`` call (the benches keep rows of their own, in stores of their own)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def state_writes(source: str) -> list[int]:
    """The lines of the ``update_run`` calls that set a state.

    >>> state_writes('store.update_run(r, state="done")\\nstore.update_run(r, progress=p)')
    [1]
    """
    return [n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
            and getattr(n.func, "attr", "") == "update_run" and any(k.arg == "state" for k in n.keywords)]


def test_only_run_state_writes_a_runs_state():
    outside = [f"{p.relative_to(ROOT)}:{line}" for p in sorted((ROOT / "advisor").rglob("*.py"))
               if "bench" not in p.relative_to(ROOT).parts and p.name != "run_state.py"
               for line in state_writes(p.read_text())]
    assert not outside, outside
    assert state_writes((ROOT / "advisor/service/run_state.py").read_text())  # it does write them
