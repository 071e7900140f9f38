"""The learned-index kind: keys from a source, a benchmark harness as the trial target, the optimizer loop with
a safety cut, validation of the best against the defaults, and a handed-over recommendation."""
