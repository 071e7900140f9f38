"""A database's identity: what tells one database from another whatever DSN reaches it.

A connector's ``identity()`` gives a plain dict: ``engine``, ``system_identifier`` (the server's unique id, as the
engine's connector reads it; None where it cannot be read), ``database`` (the name) and ``database_oid`` (its
internal id, None for an engine that has none). Identities are compared here as plain values, whatever the
engine: nothing in this module knows how an engine names its server. A target records the identity it was
registered with, a recommendation the identity of the database it was validated for, and an apply the identity it
changed; production is touched only when the identities agree.

>>> a = {"engine": "postgres", "system_identifier": "7311", "database": "shop", "database_oid": 16384}
>>> mismatch(a, dict(a)) is None
True
>>> mismatch(a, {**a, "database": "shop2", "database_oid": 16390})
'database shop2 (oid 16390) instead of shop (oid 16384)'
>>> mismatch(a, {**a, "system_identifier": "9999"})
'server 9999 instead of 7311'
>>> mismatch(a, {**a, "system_identifier": None}) is None  # unknown on one side: judged by the rest
True
>>> m = {"engine": "mariadb", "system_identifier": "1f0e-77", "database": "shop", "database_oid": None}
>>> mismatch(m, {**m, "database": "shop2"})  # an engine without database ids: judged by the name
'database shop2 instead of shop'
"""

from __future__ import annotations

from typing import Any

Identity = dict[str, Any]


def mismatch(expected: Identity | None, actual: Identity | None) -> str | None:
    """How ``actual`` differs from ``expected`` in a few words, or None when they are the same database (or
    nothing was recorded to compare with)."""
    if not expected or not actual:
        return None
    parts = []
    if expected.get("engine") and actual.get("engine") and expected["engine"] != actual["engine"]:
        parts.append(f"engine {actual['engine']} instead of {expected['engine']}")
    e_sys, a_sys = expected.get("system_identifier"), actual.get("system_identifier")
    if e_sys and a_sys and str(e_sys) != str(a_sys):
        parts.append(f"server {a_sys} instead of {e_sys}")
    if (expected.get("database"), expected.get("database_oid")) != (actual.get("database"), actual.get("database_oid")):
        parts.append(f"database {_named(actual)} instead of {_named(expected)}")
    return "; ".join(parts) or None


def same(a: Identity | None, b: Identity | None) -> bool:
    """Whether two identities are surely one database: the same engine, server and database. A server whose
    identifier could not be read (a role without the privilege) cannot be told from another server with a
    database of the same name and oid, so it is never the same as anything.

    >>> a = {"engine": "postgres", "system_identifier": "7311", "database": "shop", "database_oid": 16384}
    >>> same(a, dict(a)), same(a, {**a, "database_oid": 16390}), same(a, {**a, "system_identifier": None})
    (True, False, False)
    """
    return bool(a and b and a.get("system_identifier") and b.get("system_identifier") and mismatch(a, b) is None)


def describe(identity: Identity | None) -> str:
    """``shop (oid 16384) on server 7311`` for people.

    >>> describe({"database": "shop", "database_oid": 5, "system_identifier": "7"})
    'shop (oid 5) on server 7'
    >>> describe({"database": "shop", "database_oid": None, "system_identifier": "1f0e-77"})
    'shop on server 1f0e-77'
    """
    if not identity:
        return "an unrecorded database"
    server = f" on server {identity['system_identifier']}" if identity.get("system_identifier") else ""
    return f"{_named(identity)}{server}"


def _named(identity: Identity) -> str:
    """The database's name, with its internal id where the engine has one: ``shop (oid 16384)``, ``shop``."""
    oid = identity.get("database_oid")
    return f"{identity.get('database')}" + (f" (oid {oid})" if oid is not None else "")
