"""Index optimizers: no-index, Dexter-style greedy, Extend, exact ILP, and IA2 (TD3 with action masking)."""

import importlib

for _module in ("baselines", "ilp", "ia2"):  # register their plugins (a module not written yet is skipped)
    try:
        importlib.import_module(f"optimizers.indexes.{_module}")
    except ModuleNotFoundError as _e:
        if _e.name != f"optimizers.indexes.{_module}":
            raise
