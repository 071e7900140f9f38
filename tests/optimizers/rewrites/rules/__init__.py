"""Tests of the rewrite rules (``optimizers.rewrites.rules``): golden pairs, guards, dialects."""
