"""Optimizer plugins behind one small protocol; ``optimizers.registry`` finds them by kind and name."""
