"""Optimizer plugins behind one contract (``optimizers.base``), listed per kind in ``optimizers.registry``."""
