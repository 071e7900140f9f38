"""What a learned-index run shows a person and a program (the kind's faces, as data): ``report`` (its trials on CPU
time and wall-time throughput, the defaults against the tuned parameters, the parameters, the finalists, how it was
measured, its recommendation), ``document`` (its JSON: ``LearnedIndexTuneResult.document``) and ``page`` (what its web
page, ``page.html``, draws of a stored recommendation). Faces draw these (``advisor.core.report``)."""

from __future__ import annotations

from pathlib import Path

from advisor.core import report as r

PAGE = Path(__file__).with_name("page.html")  # its web page (``Kind.page``): the macros of its slots

ARMS = (("cpu_ns_per_op", "CPU time per operation, ns (decides)"), ("throughput_ops", "throughput, ops/s (wall time)"),
        ("p99_ns", "p99 latency, ns"), ("memory_bytes", "memory, bytes"))


def document(result) -> dict:
    return result.document()


def report(result) -> r.Report:
    doc = result.document()
    blocks: list = []
    if doc.get("trials"):
        blocks.append(r.Table(("#", "source", "status", "CPU ns/op (decides)", "ops/s (wall time)"),
                              tuple((str(t["number"] + 1), t["source"], t["status"],
                                     f"{t['cpu_ns_per_op']:,.0f}" if t["cpu_ns_per_op"] is not None else "-",
                                     f"{t['throughput_ops']:,.0f}" if t["throughput_ops"] else "-")
                                    for t in doc["trials"])))
    blocks += [r.Table(("", "defaults", "tuned"),
                       tuple((label, *(f"{doc[arm][key]:,.0f}" if key in doc[arm] else "-"
                                       for arm in ("default", "tuned"))) for key, label in ARMS)),
               r.Text(f"{doc['index']}: " + ", ".join(f"{k}={v}" for k, v in doc["parameters"].items())),
               r.Text(f"{doc['evaluations']} evaluations, {doc['unsafe_evaluations']} unsafe"),
               r.Text(doc["message"])]
    if doc.get("finalists"):
        arms = ", ".join(f"{'defaults' if f['trial'] == 0 else 'evaluation ' + str(f['trial'] + 1)} "
                         f"{f['cpu_ns_per_op']:,.0f}" for f in doc["finalists"])
        blocks.append(r.Text(f"finalists over {doc['finalists'][0]['rounds']} rounds (median CPU ns/op): {arms}; "
                             f"picked {doc['picked']}"))
    if doc.get("measured"):
        blocks.append(r.Text(f"measured: {doc['measured']}"))
    if doc["recommendation"]:
        blocks.append(r.Text(f"recommendation {doc['recommendation']} ({doc['state']})"))
    return r.Report(tuple(blocks))


# each figure of a recommendation's page: its key in the details' "default" and "tuned", label, unit
FIGURES = (("cpu_ns_per_op", "CPU time per operation", "ns, thread CPU clock: what the validation decides on"),
           ("throughput_ops", "Throughput", "ops/s, wall time"), ("p99_ns", "p99 latency", "ns"),
           ("memory_bytes", "Memory", "bytes"))


def page(rec) -> dict | None:
    """What its page draws of a recommendation (``details``: index, parameters, default and tuned figures,
    evaluations, why the pick among the re-measured finalists): its parameters (each with whether it changed) and
    each figure under the defaults and tuned; None for details without parameters and tuned figures.

    >>> from types import SimpleNamespace as R
    >>> d = page(R(changes=(R(name="eps"),), details={"index": "pgm", "parameters": {"eps": "64", "eps_rec": "4"},
    ...                                               "default": {"p99_ns": 90.0}, "tuned": {"p99_ns": 70.0}}))
    >>> d["parameters"], d["figures"][2]["default"], d["figures"][2]["tuned"]
    ([('eps', '64', True), ('eps_rec', '4', False)], 90.0, 70.0)
    """
    d = rec.details or {}
    if not isinstance(d.get("parameters"), dict) or not isinstance(d.get("tuned"), dict):
        return None
    changed = {c.name for c in rec.changes}
    rows = [{"label": label, "unit": unit, "default": (d.get("default") or {}).get(key),
             "tuned": d["tuned"].get(key)} for key, label, unit in FIGURES]
    return {"index": d.get("index"), "parameters": [(k, v, k in changed) for k, v in d["parameters"].items()],
            "figures": rows, "evaluations": d.get("evaluations"), "unsafe": d.get("unsafe_evaluations"),
            "keys": d.get("keys"), "workload": d.get("workload"), "picked": d.get("picked") or ""}
