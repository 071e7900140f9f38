"""Data for learned-index tuning: key sets (``keysets``: synthetic SOSD-like families, SOSD/text files, features)
and operation mixes (``mixes``: named or custom mixes, one stream per workload, drifting phases)."""
