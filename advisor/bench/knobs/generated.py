"""The knob bench's generated workloads and what they add up to over seeds and engines.

Workloads (``names``): ``gen-<schema>.s<seed>``, an application's statements drawn by
``workloads.datasets.synthetic`` (the index families: lookups, composite filters, date windows, LIKE prefixes,
joins, aggregates; calls drawn), and ``multi-<schema>.s<seed>``, statements whose best configuration needs several
knobs at once (``workloads.datasets.knob_families``: long join chains along the schema's edges, groupings with
many groups), over TPC-H, a TPC-DS subset or the synthetic IMDB of the JOB bench (primary keys only; foreign keys
where the data set declares them), at the small ``SCALES``. Data is loaded once per schema and server; every
seed's statements are drawn from it.

``summary`` (over the real runs of every engine): per workload and optimizer the mean over the optimizer's seeds
of its pick's gain over the defaults re-measured in interleaved rounds (0 for a run that keeps the defaults; the
best single pass where nothing was re-measured; a run whose re-measure the time limit cut is left out), of its best single pass's gain and of its share of G*; per engine and overall the mean over workloads; whether
HiBO seeded is at least as good as each peer (mean gain over workloads and seeds, within ``TIE`` of it); and every
validated recommendation's knob count and regressed statements against the targets (at most ``MAX_KNOBS``, none).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from workloads.datasets import job, knob_families, synthetic, tpcds, tpch
from workloads.statements.binding import BoundStatement

SCHEMAS = ("tpch", "tpcds", "job")
KINDS = ("gen", "multi")
SCALES = {"tpch": 0.05, "tpcds": tpcds.MIN_SCALE, "job": job.SCALE}
# the store channel with its dimensions (customer_demographics left out: 1.9M rows at any scale)
TPCDS_TABLES = ("date_dim", "income_band", "household_demographics", "customer_address", "customer", "item", "store",
                "promotion", "store_sales", "store_returns")
PEERS = ("smac", "gp", "tpe")
MAX_KNOBS = 5
TIE = 0.005  # a mean gain this close to a peer's counts as at least as good
_NAME = re.compile(r"(gen|multi)-(\w+)\.s(\d+)")


@dataclass(frozen=True)
class GeneratedName:
    kind: str  # gen | multi
    schema: str
    seed: int


def parse(name: str) -> GeneratedName | None:
    """The parts of a generated workload's name; None for any other name.

    >>> parse("multi-tpcds.s2"), parse("gen-oracle.s1"), parse("joins")
    (GeneratedName(kind='multi', schema='tpcds', seed=2), None, None)
    """
    m = _NAME.fullmatch(name)
    return GeneratedName(m.group(1), m.group(2), int(m.group(3))) if m and m.group(2) in SCHEMAS else None


def names(schemas: tuple[str, ...], seeds: tuple[int, ...], kinds: tuple[str, ...] = KINDS) -> tuple[str, ...]:
    """Every kind over every schema with every seed, a schema's together (they share its server).

    >>> names(("tpch", "job"), (1,))
    ('gen-tpch.s1', 'multi-tpch.s1', 'gen-job.s1', 'multi-job.s1')
    """
    return tuple(f"{k}-{s}.s{seed}" for s in schemas for seed in seeds for k in kinds)


def load(connector, schema: str, scale: float | None, say: Callable[[str], None]) -> None:
    """``schema``'s data at ``scale`` (``SCALES``' by default) into the empty database of ``connector``."""
    scale = scale or SCALES[schema]
    if schema == "tpch":
        tpch.load(connector, scale, progress=say)
    elif schema == "job":
        job.load(connector, scale, progress=say)
    else:
        tpcds.load(connector, max(scale, tpcds.MIN_SCALE), TPCDS_TABLES, progress=say)


def statements(connector, name: GeneratedName, n: int, say: Callable[[str], None]) -> list[BoundStatement]:
    """The workload's ``n`` statements drawn from the loaded data (a statement no attempt made valid is left out)."""
    if name.kind == "gen":
        drawn = synthetic.generate(connector, n, name.seed, synthetic.INDEX_FAMILIES, timeout_ms=10_000, say=say)
    else:
        drawn = knob_families.draw(connector, n, name.seed, say=say)
    return [g.bound() for g in drawn]


# --- over seeds and engines -------------------------------------------------------------------------------------


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.fmean(values), 4) if values else None


def summary(workloads: list[dict]) -> dict | None:
    """Over the workload reports (``asdict(WorkloadReport)``) of a run, every engine's; None without any."""
    if not workloads:
        return None
    rows = []
    for w in workloads:
        by: dict[str, list[dict]] = {}
        for r in w["runs"]:
            by.setdefault(r["label"], []).append(r)
        row = {"engine": w.get("engine", "postgres"), "workload": w["name"], "gstar": w["gstar"],
               "seeds": max(len(v) for v in by.values()), "optimizers": {}}
        again = any(r.get("remeasured_gain") is not None for r in w["runs"])
        for label, runs in by.items():  # a run with no pick (nothing beat the defaults) keeps them: 0 re-measured
            row["optimizers"][label] = {"pass_gain": _mean([r["gain"] for r in runs]),
                                        "feasible_gain": _mean([r.get("feasible_gain") for r in runs]),
                                        "share_of_gstar": _mean([r["share_of_gstar"] for r in runs]),
                                        "gain": _mean([r.get("remeasured_gain") or 0.0 for r in runs
                                                       if not r.get("remeasure_cut")]) if again
                                        else _mean([r["gain"] for r in runs]),
                                        "measure": "re-measured" if again else "one pass"}
        row["validated"] = [{"label": v["label"], "seed": v["seed"], "knobs": len(v["knobs"]),
                             "accepted": v["accepted"], "gain": v["gain"], "regressed": v["regressed"]}
                            for v in w.get("validated") or []]
        rows.append(row)
    labels = list(dict.fromkeys(label for r in rows for label in r["optimizers"]))
    # picks re-measured and single passes do not average together: where some workloads' picks were re-measured,
    # a workload whose re-measures the time limit cut is left out of the means (and named)
    again = [r for r in rows if any(o["measure"] == "re-measured" for o in r["optimizers"].values())]
    pooled = again or rows
    overall = {label: {"gain": _mean([r["optimizers"][label]["gain"] for r in pooled if label in r["optimizers"]]),
                       "share_of_gstar": _mean([r["optimizers"][label]["share_of_gstar"] for r in pooled
                                                if label in r["optimizers"]])} for label in labels}
    engines = sorted({r["engine"] for r in rows})
    per_engine = {e: {label: _mean([r["optimizers"][label]["gain"] for r in pooled
                                    if r["engine"] == e and label in r["optimizers"]]) for label in labels}
                  for e in engines}
    hibo = overall.get("hibo", {}).get("gain")
    versus = {p: None if hibo is None or overall.get(p, {}).get("gain") is None
              else hibo >= overall[p]["gain"] - TIE for p in PEERS if p in overall}
    validated = [v for r in rows for v in r["validated"]]
    return {"workloads": rows, "overall": overall, "per_engine": per_engine, "hibo_at_least_as_good": versus,
            "left_out_of_means": [f"{r['engine']}/{r['workload']}" for r in rows if r not in pooled],
            "validated": len(validated), "accepted": sum(v["accepted"] for v in validated),
            "max_knobs": max((v["knobs"] for v in validated if v["accepted"]), default=0),
            "regressing": sum(bool(v["regressed"]) for v in validated if v["accepted"]),
            "targets": {"hibo_at_least_as_good_as_every_peer": all(versus.values()) if versus else None,
                        f"every_validated_at_most_{MAX_KNOBS}_knobs":
                            all(v["knobs"] <= MAX_KNOBS for v in validated if v["accepted"]),
                        "no_validated_recommendation_regresses": not any(v["regressed"] for v in validated
                                                                         if v["accepted"])}}


def lines(s: dict) -> list[str]:
    """The table's part over seeds and engines."""
    labels = list(s["overall"])
    out = ["\nover seeds (mean of each optimizer's runs): its pick's gain over the defaults re-measured in interleaved "
           "rounds (its best single pass's in brackets); validated: knobs / verdict of each validated recommendation",
           f"  {'engine':8} {'workload':16} {'G*':>7} " + " ".join(f"{lab:>15}" for lab in labels) + "  validated"]
    for r in s["workloads"]:
        cells = []
        for lab in labels:
            o = r["optimizers"].get(lab)
            cells.append("-".rjust(15) if o is None or o["gain"] is None else
                         f"{o['gain']:+.1%} ({_pct(o['pass_gain'])})".rjust(15))
        val = ", ".join(f"{v['label']}#{v['seed']} {v['knobs']}k "
                        + ("ok" if v["accepted"] and not v["regressed"] else
                           f"regr {len(v['regressed'])}" if v["regressed"] else "kept current")
                        for v in r["validated"]) or "-"
        out.append(f"  {r['engine']:8} {r['workload']:16} {r['gstar']:>+7.1%} " + " ".join(cells) + f"  {val}")
    for e, by in s["per_engine"].items():
        out.append(f"  {e:8} {'mean':16} {'':>7} " + " ".join(
            ("-" if by.get(lab) is None else f"{by[lab]:+.1%}").rjust(15) for lab in labels))
    out.append(f"  {'all':8} {'mean':16} {'':>7} " + " ".join(
        ("-" if s["overall"][lab]["gain"] is None else f"{s['overall'][lab]['gain']:+.1%}").rjust(15) for lab in labels))
    if s.get("left_out_of_means"):
        out.append(f"  left out of the means (picks not re-measured: cut by the time limit): "
                   f"{', '.join(s['left_out_of_means'])}")
    vs = ", ".join(f"{p}: {'yes' if ok else 'NO'}" for p, ok in s["hibo_at_least_as_good"].items() if ok is not None)
    out.append(f"  HiBO seeded at least as good as (mean gain): {vs or '-'}; validated {s['validated']}, accepted "
               f"{s['accepted']}, most knobs {s['max_knobs']}, regressing {s['regressing']}")
    for key, met in s["targets"].items():
        out.append(f"  target {key}: {({True: 'met', False: 'NOT met', None: 'n/a'})[met]}")
    return out


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:+.0%}"
