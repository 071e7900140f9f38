"""Tests of the query rewriter (``optimizers.rewrites``), one folder per layer; the optimizers end to end here."""
