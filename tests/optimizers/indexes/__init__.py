"""Tests of the index optimizers (optimizers/indexes): IA2, the baselines, candidates, sizing, what-if."""
