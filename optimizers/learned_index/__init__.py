"""Learned-index optimizers, listed in ``OPTIMIZERS``. Adding one: a module here and an entry in this tuple."""

from optimizers.learned_index.litune import LITune

OPTIMIZERS = (LITune,)
