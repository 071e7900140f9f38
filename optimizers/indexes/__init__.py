"""Index optimizers, listed in ``OPTIMIZERS``: no-index, Dexter-style greedy, Extend, exact ILP, IA2 (TD3 with
adaptive action masking), and two peers for the bench: Supabase-style single columns per statement and every
foreign-key (join) column. Adding one: a module here and an entry in this tuple."""

from optimizers.indexes.baselines import Dexter, Extend, NoIndex
from optimizers.indexes.fkeys import ForeignKeys
from optimizers.indexes.ia2 import IA2
from optimizers.indexes.ilp import ExactILP
from optimizers.indexes.single import SingleColumn

OPTIMIZERS = (NoIndex, Dexter, Extend, ExactILP, IA2, SingleColumn, ForeignKeys)
