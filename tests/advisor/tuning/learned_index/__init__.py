"""Tests of the learned-index kind (advisor/tuning/learned_index)."""
