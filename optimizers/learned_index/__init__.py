"""Learned-index optimizers, listed in ``OPTIMIZERS``: the defaults (the baseline), then the searches (random,
a grid, TPE, GP-BO, HiBO: the knob searches' algorithms over the index's ``ParamSpace``), then LITune (deep RL).
Adding one: a module here and an entry in this tuple."""

from optimizers.learned_index.litune import LITune
from optimizers.learned_index.searches import Defaults, GPSearch, Grid, HiBO, RandomSearch, TPESearch

OPTIMIZERS = (Defaults, RandomSearch, Grid, TPESearch, GPSearch, HiBO, LITune)
