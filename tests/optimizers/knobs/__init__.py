"""Tests of the knob optimizers (optimizers/knobs): the space, its configurations, search, constraints, seeding."""
