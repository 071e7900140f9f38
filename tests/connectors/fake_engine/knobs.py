"""The fake engine's knobs: SQLite's pragmas as a settings catalog (``knob_catalog``), and its knob profile
(``PROFILE``): the page cache is the one knob worth tuning, its memory the whole footprint."""

from __future__ import annotations

import sqlite3

from advisor.core.domain import KnobSpec
from advisor.core.knobprofile import KnobProfile, MemoryModel, Range
from advisor.core.knobvalues import UnitGrammar

PRAGMAS = {  # name -> (vartype, unit, low, high, what it is)
    "cache_size": ("integer", "kB", 0.0, 2.0**31, "page cache of a connection"),
    "mmap_size": ("integer", "B", 0.0, 2.0**40, "bytes of the file read through mmap"),
    "busy_timeout": ("integer", "ms", 0.0, 2.0**31, "how long a writer waits for a lock"),
}


def knob_catalog(conn: sqlite3.Connection) -> dict[str, KnobSpec]:
    out = {}
    for name, (vartype, unit, low, high, what) in PRAGMAS.items():
        row = conn.execute(f"PRAGMA {name}").fetchone()
        value = row[0] if row else 0  # a pragma this build leaves out answers nothing
        value = -value if name == "cache_size" and value < 0 else value  # negative: kibibytes
        out[name] = KnobSpec(name, vartype, unit, str(value), str(value), low, high, description=what)
    return out


PROFILE = KnobProfile(
    engine="SQLite", ranges=lambda hw: {"cache_size": Range(2.0**20, hw.memory_bytes / 4, "log")},
    durability={}, not_tunable=frozenset({"busy_timeout"}),
    memory=MemoryModel(global_buffers=("cache_size",), per_connection=(), shrink=("cache_size",),
                       wording="the page cache"),
    hardware_rules=lambda hw, kind, connections: {}, workload_rules=lambda catalog, hw, features: ({}, []),
    units=UnitGrammar(memory={"B": 1.0, "kB": 1024.0, "MB": 2.0**20}, time={"ms": 1.0, "s": 1000.0},
                      catalog="pragmas"),
    connections=("max_connections", 1))
