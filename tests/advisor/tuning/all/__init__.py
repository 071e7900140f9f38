"""Tests of the whole run (advisor/tuning/all)."""
