"""What a knob seeder needs to know about a workload, as a few numbers: read/write mix, the share of joins,
aggregates and sorts (by time), the widest join, data size (``WorkloadFeatures``, in ``advisor.core.knobprofile``
so that an engine's workload rules read it too). ``fingerprint`` keys cached seeds.

>>> from advisor.core.domain import Statement, Workload
>>> st = Statement("1", "SELECT a, count(*) FROM t JOIN u ON t.id = u.id GROUP BY a", 10, 50.0, 100)
>>> f = extract(Workload((st,)), data_bytes=10**9, dialect="postgres")
>>> (f.join_share, f.aggregate_share, f.max_relations, f.read_share)
(1.0, 1.0, 2, 1.0)
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping

import sqlglot
from sqlglot import exp

from advisor.core.domain import Hardware, Workload
from advisor.core.knobprofile import WorkloadFeatures


def _shape(text: str, dialect: str) -> tuple[int, bool, bool]:
    """(relations, aggregates, sorts) of one statement read in ``dialect`` (the connector's key, which sqlglot reads);
    (0, False, False) when it does not parse."""
    try:
        tree = sqlglot.parse_one(text, dialect=dialect)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return 0, False, False
    if tree is None:
        return 0, False, False
    relations = len(list(tree.find_all(exp.Table)))
    aggregates = any(True for _ in tree.find_all(exp.AggFunc, exp.Group, exp.Distinct))
    sorts = any(True for _ in tree.find_all(exp.Order, exp.Window))
    return relations, aggregates, sorts


def extract(workload: Workload, data_bytes: int = 0, kind: str = "mixed", *, dialect: str,
            metrics: Mapping[str, float] | None = None) -> WorkloadFeatures:
    """The workload's features, its statements read in ``dialect`` (``Connector.dialect``, a key sqlglot reads), with
    the server's counters (``Snapshot.metrics``) for the engine's workload rules."""
    total_ms = workload.total_ms or 1.0
    join = agg = sort = 0.0
    widest = 0
    for st in workload.statements:
        relations, aggregates, sorts = _shape(st.sql, dialect)
        widest = max(widest, relations)
        join += st.total_ms if relations > 1 else 0.0
        agg += st.total_ms if aggregates else 0.0
        sort += st.total_ms if sorts else 0.0
    calls = workload.total_calls
    return WorkloadFeatures(len(workload.statements), calls, round(1.0 - workload.write_share(), 3),
                            round(join / total_ms, 3), round(agg / total_ms, 3), round(sort / total_ms, 3), widest,
                            round(workload.total_ms / calls, 3) if calls else 0.0, int(data_bytes), kind,
                            dict(metrics or {}))


def fingerprint(features: WorkloadFeatures, hardware: Hardware, knobs: list[str]) -> str:
    """Stable across small changes: shares to one decimal, sizes and times by order of magnitude."""
    def mag(v: float) -> int:
        return int(round(math.log2(v))) if v > 0 else -1
    key = {"read": round(features.read_share, 1), "join": round(features.join_share, 1),
           "agg": round(features.aggregate_share, 1), "sort": round(features.sort_share, 1),
           "rel": features.max_relations, "ms": mag(features.mean_ms), "data": mag(features.data_bytes),
           "kind": features.kind, "mem": mag(hardware.memory_bytes), "cores": hardware.cores,
           "storage": hardware.storage, "knobs": sorted(knobs)}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
