"""The settings catalog from pg_settings: type, unit, bounds, enum values and how a change takes effect."""

from __future__ import annotations

import psycopg

from advisor.core.domain import KnobSpec
from connectors.postgres.connection import TAG

CATALOG_SQL = TAG + """
SELECT name, vartype, unit, setting, boot_val, min_val, max_val, enumvals, context, category, short_desc,
       source, sourcefile
FROM pg_settings ORDER BY name"""


def read_catalog(conn: psycopg.Connection) -> dict[str, KnobSpec]:
    out: dict[str, KnobSpec] = {}
    for (name, vartype, unit, setting, boot, lo, hi, enums, context, category, desc, source,
         sourcefile) in conn.execute(CATALOG_SQL):
        out[name] = KnobSpec(
            name=name, vartype=vartype, unit=unit, setting=setting, boot_value=boot,
            min_value=float(lo) if lo is not None else None, max_value=float(hi) if hi is not None else None,
            enum_values=tuple(enums or ()), context=context, category=category, description=desc,
            source=source, sourcefile=sourcefile,
        )
    return out
