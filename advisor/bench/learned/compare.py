"""Two runs of the learned-index bench side by side, cell by cell and tuner by tuner (issue 43's target under load:
the same accepted / rejected verdicts in a quiet run and in one beside processes that keep every core busy, with
each run's CPU-time gain inside the other's 95% interval).

``compare(a, b)`` pairs the rows of two bench documents (``learned-index.json``) by cell and tuner; per pair: each
run's verdict, CPU-time gain and interval, whether the verdicts are the same and whether each gain lies inside the
other's interval (``inside``). ``table`` prints it.
"""

from __future__ import annotations

VERDICT = {True: "accepted", False: "rejected", None: "unchanged"}


def _row(r: dict | None) -> dict:
    if r is None:
        return {"verdict": "missing", "cpu_gain": None, "cpu_gain_ci": None, "best": None}
    return {"verdict": VERDICT[r["accepted"]], "cpu_gain": r.get("cpu_gain"), "cpu_gain_ci": r.get("cpu_gain_ci"),
            "best": r.get("best")}


def inside(a: dict, b: dict) -> bool | None:
    """Each run's gain inside the other's interval; None where either was not validated.

    >>> inside({"cpu_gain": 0.10, "cpu_gain_ci": [0.05, 0.2]}, {"cpu_gain": 0.12, "cpu_gain_ci": [0.08, 0.15]})
    True
    >>> inside({"cpu_gain": 0.10, "cpu_gain_ci": [0.05, 0.2]}, {"cpu_gain": 0.30, "cpu_gain_ci": [0.25, 0.35]})
    False
    """
    if a["cpu_gain"] is None or b["cpu_gain"] is None:
        return None
    return b["cpu_gain_ci"][0] <= a["cpu_gain"] <= b["cpu_gain_ci"][1] and \
        a["cpu_gain_ci"][0] <= b["cpu_gain"] <= a["cpu_gain_ci"][1]


def compare(a: dict, b: dict) -> dict:
    """Two bench documents' rows paired by cell and tuner (see the module's text)."""
    rows_a = {(c["cell"], r["tuner"]): r for c in a["cells"] for r in c["tuners"]}
    rows_b = {(c["cell"], r["tuner"]): r for c in b["cells"] for r in c["tuners"]}
    pairs = []
    for key in list(rows_a) + [k for k in rows_b if k not in rows_a]:
        one, two = _row(rows_a.get(key)), _row(rows_b.get(key))
        pairs.append({"cell": key[0], "tuner": key[1], "a": one, "b": two, "same_verdict": one["verdict"] == two["verdict"],
                      "same_configuration": one["best"] == two["best"], "inside": inside(one, two)})
    return {"pairs": pairs, "same_verdicts": sum(p["same_verdict"] for p in pairs), "rows": len(pairs),
            "inside": sum(p["inside"] is True for p in pairs),
            "validated_both": sum(p["inside"] is not None for p in pairs)}


def _gain(r: dict) -> str:
    if r["cpu_gain"] is None:
        return "-"
    lo, hi = r["cpu_gain_ci"]
    return f"{r['cpu_gain']:+.1%} [{lo:+.1%}, {hi:+.1%}]"


def table(cmp: dict, a: str = "quiet", b: str = "loaded") -> str:
    head = (f"{'cell':30} {'tuner':7} {a + ' verdict':14} {a + ' CPU gain [95%]':27} {b + ' verdict':14} "
            f"{b + ' CPU gain [95%]':27} same  inside  same config")
    lines = [head, "-" * len(head)]
    for p in cmp["pairs"]:
        yes = {True: "yes", False: "NO", None: "-"}
        lines.append(f"{p['cell']:30} {p['tuner']:7} {p['a']['verdict']:14} {_gain(p['a']):27} "
                     f"{p['b']['verdict']:14} {_gain(p['b']):27} {yes[p['same_verdict']]:5} "
                     f"{yes[p['inside']]:7} {yes[p['same_configuration']]}")
    lines.append(f"same verdicts: {cmp['same_verdicts']}/{cmp['rows']}; gains inside each other's intervals: "
                 f"{cmp['inside']}/{cmp['validated_both']} validated in both")
    return "\n".join(lines)
