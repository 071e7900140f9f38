"""Tests of the index kind (advisor/tuning/indexes)."""
