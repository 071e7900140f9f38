"""``advisor bench faults``: faults injected against real servers, one case each, and what the advisor did.

Per fault: injected (and how), detected (and how the advisor said so), recovered (or refused with a clear reason),
the store's trials / recommendations / audit rows lost (rows that existed before the fault and are gone or changed
other than along a recommendation's lifecycle, plus trial numbers a resumed run holds twice, plus trials a killed
advisor reported done that the store does not have: must be 0), orphaned servers (of the engine ``--engine`` names),
and the seconds to recover. The cases are listed in ``_cases`` (from ``cases``, ``stop_cases``,
``api_cases``, ``disk``, ``prod_cases`` and ``hang``); each is a small class with ``setup`` / ``inject`` / ``detect`` /
``recover`` / ``teardown`` (``base.Fault``).

Setup: one sandbox "production" server with the shop database (``advisor.bench.playground``) and one store, both
under a work directory whose ``tmp/`` is the temporary directory of the bench and of every advisor it starts (so
every shadow lives there and leftovers are found). The advisor runs in this process through the service
(``build_service``), as the CLI in a subprocess, or as ``advisor serve`` in a subprocess, whichever the fault needs;
a kill is triggered by a progress line or a state seen over the API, never by a fixed sleep.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from advisor.bench.faults.base import Fault, Outcome
from advisor.bench.faults.env import Env
from advisor.bench.faults.ledger import add_lost
from advisor.core.errors import AdvisorError
from advisor.core.hardware import detect
from advisor.core.progress import Say, silent
from connectors.factory import DEFAULT_ENGINE, supported


def _cases() -> tuple[type[Fault], ...]:
    from advisor.bench.faults import api_cases as api
    from advisor.bench.faults import cases as local
    from advisor.bench.faults import disk, hang
    from advisor.bench.faults import prod_cases as prod
    from advisor.bench.faults import stop_cases as stop

    return (local.ShadowKilled, local.BadConfig, local.TargetDrops, stop.TargetStopped, local.AdvisorKilled,
            stop.CliKilled, api.ServerRestarted, disk.DiskFull, api.BadLLM, prod.ProductionLock,
            prod.ConcurrentApprove, prod.Collision, hang.TargetHung)


def names() -> tuple[str, ...]:
    return tuple(c.name for c in _cases())


@dataclass(frozen=True)
class FaultBenchOptions:
    faults: tuple[str, ...] = ()  # empty: all, in CASES order
    out_dir: str = "bench-results/faults"
    keep: bool = False  # keep the work directory (store, logs) for a post-mortem
    engine: str = DEFAULT_ENGINE  # of the bench's production server (the CLI's --engine)


def select(wanted: tuple[str, ...]) -> list[type[Fault]]:
    cases = _cases()
    unknown = [w for w in wanted if w not in {c.name for c in cases}]
    if unknown:
        raise AdvisorError(f"unknown fault(s): {', '.join(unknown)}; choose from {', '.join(c.name for c in cases)}")
    return [c for c in cases if not wanted or c.name in wanted]


def run_fault_bench(options: FaultBenchOptions = FaultBenchOptions(), say: Say = silent) -> dict:
    cases = select(options.faults)
    supported(options.engine)
    out = Path(options.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="advisor-faults-"))
    started = time.monotonic()
    results: list[Outcome] = []
    with Env(work, say, engine=options.engine) as env:
        for i, cls in enumerate(cases, 1):
            say(f"fault {i}/{len(cases)}: {cls.name} ({cls.title})")
            outcome = run_case(cls(), env)
            say(f"  {outcome.name}: {outcome.verdict}" + (f" ({outcome.error})" if outcome.error else ""))
            results.append(outcome)
    if not options.keep:
        shutil.rmtree(work, ignore_errors=True)
    lost = add_lost(*(o.lost for o in results))
    doc = {"faults": [o.doc() for o in results], "lost": lost,
           "ok": all(o.verdict in ("recovered", "refused", "skipped") for o in results),
           "machine": {**asdict(detect()), "python": sys.version.split()[0]}, "options": asdict(options),
           "wall_s": round(time.monotonic() - started, 1), "work_dir": str(work) if options.keep else None}
    (out / "faults.json").write_text(json.dumps(doc, indent=2, default=str))
    plot(doc, out / "faults.png")
    return doc


def run_case(case: Fault, env: Env) -> Outcome:
    """setup, the ledger, inject, detect, recover, teardown (always), the ledger again and the servers left."""
    o = case.outcome
    o.started = time.monotonic()
    before = None
    try:
        case.setup(env)
        before = env.ledger()
        case.inject(env)
        if not o.skipped:
            case.detect(env)
            case.recover(env)
    except Exception as e:  # noqa: BLE001 - a case that breaks is reported as such; the next one still runs
        o.error = (f"{type(e).__name__}: {e}".strip().splitlines() or [""])[0][:300]
    finally:
        try:
            case.teardown(env)
        except Exception as e:  # noqa: BLE001
            o.error = o.error or f"teardown: {type(e).__name__}: {e}"[:300]
    left = env.shadows()  # servers of this case still running now that its advisors are gone: orphans
    if left:
        o.orphans += [str(s.root) for s in left.values() if str(s.root) not in o.orphans]
        o.details["left_running_at_end"] = len(left)
        o.details["orphans_cleaned_by"] = env.clean_orphans(case.extra_dirs)
    if before is not None:
        try:
            after = env.ledger()
            o.lost = add_lost(after.lost(before), o.lost)
        except AdvisorError as e:
            o.error = o.error or f"cannot read the store after the fault: {e}"
    o.seconds = round(time.monotonic() - o.started, 1)
    return o


# --- report -----------------------------------------------------------------------------------------------------


def _yn(v: bool) -> str:
    return "yes" if v else "NO"


def table(doc: dict) -> str:
    width = max([19] + [len(f["name"]) for f in doc["faults"]])
    head = (f"{'fault':<{width}} {'injected':>8} {'detected':>8} {'recovered':>9}  {'lost t/r/a':>10} "
            f"{'orphans':>7} {'recover s':>9}  verdict")
    rows = [head, "-" * len(head)]
    for f in doc["faults"]:
        lost = f"{f['lost']['trials']}/{f['lost']['recommendations']}/{f['lost']['audit']}"
        secs = f"{f['recover_s']:.1f}" if f["recover_s"] is not None else "-"
        rec = "refused" if f["refused"] and not f["recovered"] else "-" if f["skipped"] else _yn(f["recovered"])
        rows.append(f"{f['name']:<{width}} {_yn(f['injected']):>8} {_yn(f['detected']):>8} {rec:>9}  {lost:>10} "
                    f"{len(f['orphans']):>7} {secs:>9}  {f['verdict']}")
    rows.append("")
    for f in doc["faults"]:
        rows.append(f"{f['name']}: {f['title']}")
        for label, key in (("skipped", "skipped"), ("injected", "injected_how"), ("detected", "detected_how"),
                           ("recovered", "recovered_how")):
            if f[key]:
                rows.append(f"  {label}: {f[key]}")
        if f["orphans"]:
            rows.append(f"  orphans: {len(f['orphans'])} server(s) left running; cleaned by "
                        f"{f['details'].get('orphans_cleaned_by', '?')}")
        if f["error"]:
            rows.append(f"  bench error: {f['error']}")
    lost = doc["lost"]
    rows.append("")
    skipped = sum(f["verdict"] == "skipped" for f in doc["faults"])
    verdict = ("every fault recovered or refused with a reason" + (f" ({skipped} skipped: not placeable here)"
                                                                   if skipped else "")
               if doc["ok"] else "NOT every fault was handled")
    rows.append(f"rows lost in all: trials {lost['trials']}, recommendations {lost['recommendations']}, audit "
                f"{lost['audit']}; {verdict}; {doc['wall_s']:.0f} s")
    return "\n".join(rows)


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    faults = doc["faults"]
    colors = {"recovered": "tab:green", "refused": "tab:blue", "skipped": "tab:gray", "FAILED": "tab:red"}
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(faults) + 1.5))
    y = range(len(faults))
    ax.barh(list(y), [f["recover_s"] or 0 for f in faults], color=[colors[f["verdict"]] for f in faults])
    ax.set_yticks(list(y), [f"{f['name']} ({f['verdict']})" for f in faults])
    ax.invert_yaxis()
    ax.set_xlabel("seconds to recover (0: none measured)")
    ax.set_title("advisor bench faults (green: recovered, blue: refused, grey: skipped, red: failed)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
