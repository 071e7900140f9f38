"""Tests of the rewriter's search (``optimizers.rewrites.search``)."""
