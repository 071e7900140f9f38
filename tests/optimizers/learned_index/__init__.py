"""Tests of the learned-index optimizers (optimizers/learned_index): LITune, its parameters."""
