"""Tests of the rewriter's SQL front end (``optimizers.rewrites.sql``)."""
