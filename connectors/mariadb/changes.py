"""The SQL that applies and reverts each change on MariaDB, rendered without running anything.

- ``KnobChange``: ``SET GLOBAL name = value`` (reverted to the value it had); a read-only variable cannot be set
  while the server runs, so its change is an option-file line (``OPTION_FILE`` prefix) that the connector
  persists into the sandbox's option file and restarts for, or reports as pending.
- ``IndexChange``: ``ALTER TABLE t ADD INDEX name (cols), ALGORITHM=INPLACE, LOCK=NONE`` (online: readers and
  writers go on), reverted by dropping it. MariaDB has no partial indexes nor INCLUDE columns: refused.
- ``DropIndexChange``: ``ALTER TABLE t DROP INDEX name``, reverted by adding it back with the columns the
  server reports for it now (never the primary key).

Identifiers go through ``connection.quote`` and values through the driver's literal escaping only.
"""

from __future__ import annotations

import hashlib
import re

import pymysql

from advisor.core.domain import DropIndexChange, IndexChange, KnobChange, KnobSpec
from advisor.core.errors import BadStatement, InvalidKnobValue, UnknownKnob
from connectors.mariadb.connection import quote

OPTION_FILE = "/* option file */ "  # an apply/revert line that is an option-file setting, not SQL
MAX_IDENTIFIER = 64
ONLINE = ", ALGORITHM=INPLACE, LOCK=NONE"
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_FACTORS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def index_name(change: IndexChange) -> str:
    """The name ``apply`` gives the index: its own name, else ``advisor_<table>_<columns>`` cut to MariaDB's 64
    characters with a hash of the whole.

    >>> index_name(IndexChange("shop", "orders", ("customer_id", "created_at")))
    'advisor_orders_customer_id_created_at'
    >>> len(index_name(IndexChange("shop", "t" * 60, ("a", "b"))))
    64
    """
    if change.name:
        return change.name
    name = "advisor_" + change.table + "_" + "_".join(change.columns)
    if len(name) <= MAX_IDENTIFIER:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return name[:MAX_IDENTIFIER - 9] + "_" + digest


def knob_value(spec: KnobSpec, value: str) -> str:
    """``value`` checked against ``spec`` and rendered as MariaDB takes it (sizes with K/M/G into bytes).

    >>> spec = KnobSpec("sort_buffer_size", "integer", "B", "2097152", "2097152", 1024.0, 1e12)
    >>> knob_value(spec, "4M"), knob_value(spec, "65536")
    ('4194304', '65536')
    >>> knob_value(KnobSpec("autocommit", "bool", None, "on", "on", None, None), "off")
    'OFF'
    """
    text = str(value).strip()
    if spec.vartype == "bool":
        if text.lower() not in {"on", "off", "1", "0", "true", "false"}:
            raise InvalidKnobValue(f"{spec.name} is on or off, not {value!r}")
        return "ON" if text.lower() in {"on", "1", "true"} else "OFF"
    if spec.vartype in ("integer", "real"):
        m = _SIZE.match(text) if spec.vartype == "integer" else None
        try:
            number = int(m.group(1)) * _FACTORS[m.group(2).upper()] if m else float(text)
        except ValueError:
            raise InvalidKnobValue(f"{spec.name} is a number, not {value!r}") from None
        if (spec.min_value is not None and number < spec.min_value) or \
                (spec.max_value is not None and number > spec.max_value):
            raise InvalidKnobValue(f"{spec.name} = {value} is outside [{spec.min_value:g}, {spec.max_value:g}]")
        return str(int(number)) if spec.vartype == "integer" else repr(float(number))
    if spec.vartype == "enum" and spec.enum_values:
        found = [e for e in spec.enum_values if e.lower() == text.lower()]
        if not found:
            raise InvalidKnobValue(f"{spec.name} is one of {', '.join(spec.enum_values)}, not {value!r}")
        return found[0]
    return text


def _literal(spec: KnobSpec, rendered: str) -> str:
    if spec.vartype in ("integer", "real", "bool"):
        return rendered
    return pymysql.converters.escape_string(rendered).join("''")


def knob_sql(catalog: dict[str, KnobSpec], change: KnobChange) -> tuple[KnobChange, str, str, bool]:
    """(the checked change, its apply line, its revert line, whether it needs a restart)."""
    spec = catalog.get(change.name.lower())
    if spec is None:
        raise UnknownKnob(f"unknown MariaDB variable {change.name!r}")
    value = knob_value(spec, change.value)
    old = knob_value(spec, spec.setting) if spec.setting != "" else spec.setting
    checked = KnobChange(spec.name, value, acts_through_plans=spec.plans_only)
    if spec.needs_restart:
        return checked, f"{OPTION_FILE}{spec.name}={value}", f"{OPTION_FILE}{spec.name}={old}", True
    return (checked, f"SET GLOBAL {spec.name} = {_literal(spec, value)}",
            f"SET GLOBAL {spec.name} = {_literal(spec, old)}", False)


def index_sql(change: IndexChange) -> tuple[str, str]:
    """(add, drop) of a new index."""
    if change.where or change.include:
        raise BadStatement(f"MariaDB has no {'partial indexes' if change.where else 'INCLUDE columns'}: "
                           f"{change.label()} cannot be built")
    if change.method.lower() not in ("btree", ""):
        raise BadStatement(f"MariaDB (InnoDB) builds B-tree indexes, not {change.method}")
    if not change.columns:
        raise BadStatement("an index needs at least one column")
    table = f"{quote(change.schema)}.{quote(change.table)}"
    name = quote(index_name(change))
    cols = ", ".join(quote(c) for c in change.columns)
    return (f"ALTER TABLE {table} ADD INDEX {name} ({cols}){ONLINE}",
            f"ALTER TABLE {table} DROP INDEX {name}{ONLINE}")


def drop_sql(change: DropIndexChange, existing: dict[tuple[str, str, str], dict]) -> tuple[str, str]:
    """(drop, add back) of an existing index, from ``existing`` (``snapshot.index_columns``)."""
    found = existing.get((change.schema, change.table, change.name))
    if found is None:
        raise BadStatement(f"index {change.name} of {change.schema}.{change.table} does not exist")
    if change.name == "PRIMARY":
        raise BadStatement("the advisor never drops a primary key")
    table = f"{quote(change.schema)}.{quote(change.table)}"
    cols = ", ".join(quote(c) if "(" not in c else quote(c.split("(")[0]) + "(" + c.split("(")[1]
                     for c in found["columns"])
    unique = "UNIQUE " if found["unique"] else ""
    return (f"ALTER TABLE {table} DROP INDEX {quote(change.name)}{ONLINE}",
            f"ALTER TABLE {table} ADD {unique}INDEX {quote(change.name)} ({cols}){ONLINE}")
