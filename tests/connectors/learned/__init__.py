"""Tests of the compiled learned indexes (connectors/learned): every key kept, parameters, fuzzing."""
