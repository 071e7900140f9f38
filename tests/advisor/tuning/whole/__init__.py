"""Tests of the whole run (advisor/tuning/whole)."""
