"""What a learned-index run shows a person and a program (the kind's faces, as data): ``report`` (its trials on CPU
time and wall-time throughput, the defaults against the tuned parameters, the parameters, the finalists, how it was
measured, its recommendation) and ``document`` (its JSON: ``LearnedIndexTuneResult.document``). Faces draw these
(``advisor.core.report``)."""

from __future__ import annotations

from advisor.core import report as r

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
