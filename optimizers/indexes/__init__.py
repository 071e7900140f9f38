"""Index optimizers: no-index, Dexter-style greedy, Extend, exact ILP, and IA2 (TD3 with action masking)."""

from optimizers.indexes import baselines, ia2, ilp  # noqa: F401  (register their plugins)
