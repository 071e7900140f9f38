"""Tests of the tuning floor (advisor/tuning): the measurement engine, evidence, the guard, the kind registry, resumed runs."""
