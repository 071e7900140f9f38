"""``advisor bench service``: the server's targets.

``api`` is the p99 of the recommendations list under concurrent clients while a run goes on; ``observation`` the
throughput that observing a database costs it (pgbench with observation off and on)."""
