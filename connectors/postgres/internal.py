"""Which statements in pg_stat_statements are PostgreSQL's own or its tools', not the application's: the snapshot
(``connectors.postgres.snapshot``) leaves them out of the observed statements.

Any ``pg_*`` name (system catalogs, statistics views, admin functions: PostgreSQL reserves the prefix; pg_dump's
catalog queries, which land in pg_stat_statements whenever a shadow is copied, are all of this kind),
``information_schema``, the advisor's own extensions (HypoPG) and the settings functions.

>>> is_internal("SELECT tableoid, oid, collname, collnamespace, collowner FROM pg_collation")
True
>>> is_internal("SELECT * FROM pg_stat_statements"), is_internal("SELECT hypopg_reset()")
(True, True)
>>> is_internal("SELECT current_setting($1)"), is_internal("SELECT * FROM information_schema.tables")
(True, True)
>>> is_internal("SELECT * FROM orders WHERE id = $1"), is_internal("SELECT n FROM pg_mine")  # a user table pg_*
(False, True)
"""

from __future__ import annotations

import re

_CATALOG = re.compile(r"\b(pg_\w+|information_schema|hypopg\w*|current_setting|set_config|version)\b", re.I)


def is_internal(sql: str) -> bool:
    """Whether a normalized statement reads or calls PostgreSQL's catalogs, statistics or admin functions."""
    return _CATALOG.search(sql) is not None
