"""Knob optimizers: the rules seeder and the search optimizers (random, TPE, GP-BO, HiBO)."""

from optimizers.knobs import bo, hibo, rules, search  # noqa: F401  (register their plugins)
