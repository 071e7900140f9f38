"""Learned indexes as engines under test: ``alex`` (a numba ALEX-like index), ``pgm`` (pygm's PGM-index,
read-only) and the ``sorted-array`` baseline, all executing ``ops.OpStream`` phases in compiled loops and
returning ``base.Measurement``. Reached from above only through ``connectors.factory``."""
