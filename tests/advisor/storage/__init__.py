"""Tests of the store (advisor/storage)."""
