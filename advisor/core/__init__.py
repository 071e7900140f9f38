"""Ground floor: domain types, errors, knob value units, hardware, settings and the one progress callback."""
