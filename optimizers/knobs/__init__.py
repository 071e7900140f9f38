"""Knob optimizers."""

from optimizers.knobs import rules  # noqa: F401  (registers 'rules')
