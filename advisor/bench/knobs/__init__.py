"""``advisor bench knobs``: every knob optimizer at the same trial budget on real servers, then over many seeds
on a surrogate fitted to the real trials.

``bench`` runs both; ``surrogate`` fits and runs the surrogate; ``table`` prints the result."""
