"""What a workload's loaders, drivers and replay are given: the run's connector (opened once by its caller),
never a DSN; ``loader_connector`` refuses a DSN with a TypeError (a caller's mistake, not a user's)."""

from __future__ import annotations

from connectors.base import Connector


def loader_connector(target: Connector) -> Connector:
    """``target`` itself when it is a connector; TypeError for a DSN string or anything else."""
    if isinstance(target, str) or not hasattr(target, "session"):
        raise TypeError("workload loaders take the run's connector, not a DSN")
    return target
