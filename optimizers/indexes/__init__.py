"""Index optimizers, listed in ``OPTIMIZERS``: no-index, Dexter-style greedy, Extend, exact ILP, and IA2 (TD3 with
adaptive action masking). Adding one: a module here and an entry in this tuple."""

from optimizers.indexes.baselines import Dexter, Extend, NoIndex
from optimizers.indexes.ia2 import IA2
from optimizers.indexes.ilp import ExactILP

OPTIMIZERS = (NoIndex, Dexter, Extend, ExactILP, IA2)
