"""``advisor bench service`` (API part): GET of the recommendations list under load, while a tuning run goes on
in the same server.

Setup: a self-started 'production' PostgreSQL with a lookup workload; the real server (``advisor serve``, its own
process, scheduler off) on a loopback port; the target registered over REST; one real index run, whose
recommendation is then copied into the store until it holds ``recommendations`` rows (stated in the output: the
list's cost depends on how many rows a page carries, not on where they came from). Then a knob tuning run
(HiBO, on a shadow) is started over REST and, once it is running, ``clients`` concurrent clients (asyncio,
one keep-alive connection each) GET ``/api/recommendations?limit=50`` for ``duration_s`` seconds. Latency is
measured client-side per request; the run's state is checked before and after the window (it must be running
throughout, else the figure is labelled invalid). Target: p99 < 100 ms with 50 clients.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx2 as httpx

from advisor.errors import AdvisorError
from advisor.hardware import detect
from advisor.progress import Say, silent

P99_TARGET_MS = 100.0


@dataclass(frozen=True)
class ApiBenchOptions:
    clients: int = 50
    duration_s: float = 30.0
    recommendations: int = 200  # rows in the store (a page of 50 is returned)
    tuning_trials: int = 60  # the background knob run; long enough to outlast the window
    out_dir: str = "bench-results/service"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


async def _load(url: str, headers: dict, clients: int, duration_s: float) -> tuple[list[float], int]:
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + duration_s

    async def client() -> None:
        nonlocal errors
        async with httpx.AsyncClient(headers=headers, timeout=30) as c:
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                r = await c.get(url)
                dt = (time.perf_counter() - t0) * 1000
                if r.status_code == 200 and len(r.json()["items"]) > 0:
                    latencies.append(dt)
                else:
                    errors += 1

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, errors


def _wait(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AdvisorError(f"bench: timed out waiting for {what}")


def run_api_bench(options: ApiBenchOptions, say: Say = silent) -> dict:
    from advisor.playground import create_shop
    from advisor.runs import RunPlan
    from advisor.service import AdvisorService
    from advisor.store import Store, new_id
    from connectors.sandbox import PostgresSandbox, free_port

    out = Path(options.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="advisor-bench-api-"))
    store_path = work / "advisor.duckdb"
    env = {**os.environ, "ADVISOR_STORE": str(store_path), "ADVISOR_KEY_FILE": str(work / "secret.key")}
    os.environ["ADVISOR_KEY_FILE"] = env["ADVISOR_KEY_FILE"]
    started = time.monotonic()
    with PostgresSandbox("bench-prod") as prod:  # production-like: fsync on
        dsn = create_shop(prod)
        say("registering the target and running one index run (in this process, before the server starts)")
        with Store(store_path) as store:
            service = AdvisorService(store, say)
            _, secret = service.create_token("bench", "operator")
            service.add_target("shop", dsn)
            run = service.start_run("shop", RunPlan(kind="indexes", optimizer="extend", budget_mb=50, rounds=3))
            rec = store.recommendation(run["result"]["recommendation"])
            for _ in range(options.recommendations - 1):
                store.add_recommendation(dataclasses.replace(rec, id=new_id(), created_at=time.time()))
        port = free_port()
        log = open(work / "server.log", "w")
        server = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--port", str(port), "--no-scheduler",
                                   "--store", str(store_path)], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            doc = _measure(f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {secret}"}, options, say)
        finally:
            server.terminate()
            try:
                server.wait(90)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()
    doc.update({"machine": {**asdict(detect()), "python": sys.version.split()[0]}, "options": asdict(options),
                "store_recommendations": options.recommendations, "target_p99_ms": P99_TARGET_MS,
                "wall_s": round(time.monotonic() - started, 1)})
    doc["meets_target"] = doc["valid"] and doc["p99_ms"] < P99_TARGET_MS
    (out / "api.json").write_text(json.dumps(doc, indent=2))
    return doc


def _measure(base: str, headers: dict, options: ApiBenchOptions, say: Say) -> dict:
    with httpx.Client(base_url=base, headers=headers, timeout=60) as c:
        def healthy():
            try:
                return c.get("/api/health").status_code == 200
            except httpx.TransportError:
                return False

        _wait(healthy, 90, "the server to start")
        r = c.post("/api/runs", json={"target": "shop", "kind": "knobs", "optimizer": "hibo",
                                      "trials": options.tuning_trials, "repeats": 3})
        if r.status_code != 202:
            raise AdvisorError(f"bench: could not start the tuning run: {r.text}")
        run_id = r.json()["id"]
        say(f"tuning run {run_id} started; waiting for its first trial")
        before = _wait(lambda: (lambda j: j if j["trials_done"] >= 1 or j["state"] not in ("queued", "running")
                                else None)(c.get(f"/api/runs/{run_id}").json()), 300, "the first trial")
        say(f"{options.clients} clients GET /api/recommendations for {options.duration_s:g} s")
        latencies, errors = asyncio.run(_load(f"{base}/api/recommendations?limit=50", headers, options.clients,
                                              options.duration_s))
        after = c.get(f"/api/runs/{run_id}").json()
        c.post(f"/api/runs/{run_id}/cancel")
    valid = before["state"] == "running" and after["state"] == "running" and bool(latencies)
    return {"requests": len(latencies), "errors": errors, "throughput_rps": round(len(latencies) / options.duration_s, 1),
            "p50_ms": round(_percentile(latencies, 50), 2), "p95_ms": round(_percentile(latencies, 95), 2),
            "p99_ms": round(_percentile(latencies, 99), 2), "max_ms": round(max(latencies), 2),
            "mean_ms": round(statistics.fmean(latencies), 2), "valid": valid,
            "tuning_run": {"id": run_id, "state_before": before["state"], "state_after": after["state"],
                           "trials_before": before["trials_done"], "trials_after": after["trials_done"]}}


def table(doc: dict) -> str:
    run = doc["tuning_run"]
    return "\n".join([
        f"GET /api/recommendations (page of 50 from {doc['store_recommendations']} rows), {doc['options']['clients']} "
        f"concurrent clients, {doc['options']['duration_s']:g} s, during tuning run {run['id']} "
        f"({run['state_before']} -> {run['state_after']}, trials {run['trials_before']} -> {run['trials_after']})",
        f"  requests {doc['requests']} ({doc['throughput_rps']} /s), errors {doc['errors']}",
        f"  latency ms: p50 {doc['p50_ms']}  p95 {doc['p95_ms']}  p99 {doc['p99_ms']}  max {doc['max_ms']}",
        f"  target p99 < {doc['target_p99_ms']:g} ms: {'met' if doc['meets_target'] else 'NOT met'}"
        + ("" if doc["valid"] else " (INVALID: the tuning run was not running throughout)")])
