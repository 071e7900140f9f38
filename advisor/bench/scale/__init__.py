"""`advisor bench scale`: parallel trials measured and projected (bench, simulate, report)."""
