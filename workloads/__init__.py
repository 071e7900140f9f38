"""Workloads: ``datasets`` (the data sets and benchmark workloads the benches, the demo and the tests load) and
``statements`` (the machinery every workload shares: binding, capture, replay, sampling)."""
