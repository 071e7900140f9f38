"""Knob optimizers, listed in ``OPTIMIZERS`` (the rules seeder, then the searches: random, TPE, GP-BO, HiBO).
Adding one: a module here and an entry in this tuple."""

from optimizers.knobs.bo import GPSearch
from optimizers.knobs.hibo import HiBO
from optimizers.knobs.rules import RulesOptimizer
from optimizers.knobs.search import RandomSearch, TPESearch

OPTIMIZERS = (RulesOptimizer, RandomSearch, TPESearch, GPSearch, HiBO)
