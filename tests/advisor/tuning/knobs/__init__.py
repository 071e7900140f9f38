"""Tests of the knob kind (advisor/tuning/knobs)."""
