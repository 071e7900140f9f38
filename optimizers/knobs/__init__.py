"""Knob optimizers, listed in ``OPTIMIZERS`` (the rules seeder, then the searches: random, TPE, GP-BO, HiBO, and
SMAC3 as a peer). Adding one: a module here and an entry in this tuple."""

from optimizers.knobs.bo import GPSearch
from optimizers.knobs.hibo import HiBO
from optimizers.knobs.rules import RulesOptimizer
from optimizers.knobs.search import RandomSearch, TPESearch
from optimizers.knobs.smac3 import SMAC3Search

OPTIMIZERS = (RulesOptimizer, RandomSearch, TPESearch, GPSearch, HiBO, SMAC3Search)
