"""Tests of the rewrite kind (advisor/tuning/rewrites)."""
