"""``advisor bench service`` (API part): GET of the recommendations list under load, while a tuning run goes on
in the same server.

Setup: a self-started 'production' PostgreSQL with a lookup workload; the real server (``advisor serve``, its own
process, scheduler off) on a loopback port; the target registered over REST; one real index run, whose
recommendation is then copied into the store until it holds ``recommendations`` rows (stated in the output: the
list's cost depends on how many rows a page carries, not on where they came from). Then a knob tuning run
(HiBO, on a shadow) is started over REST and, once it is running, ``clients`` concurrent clients (wrk: C, one
keep-alive connection each) GET ``/api/recommendations?limit=50`` for ``duration_s`` seconds. Latency is
measured client-side per request; the run's state is checked before and after the window (it must be running
throughout, else the figure is labelled invalid). Two passes during the run: saturated (each client sends its next
request as soon as the answer arrives: latency there is about clients / throughput) and paced (each client waits
``think_ms`` between requests, like a person or a dashboard); a saturated pass with the server idle is the
reference. Target: p99 < 100 ms with 50 clients.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx2 as httpx

from advisor.core.errors import AdvisorError
from advisor.core.hardware import detect
from advisor.core.progress import Say, silent
from connectors.factory import DEFAULT_ENGINE

P99_TARGET_MS = 100.0


@dataclass(frozen=True)
class ApiBenchOptions:
    clients: int = 50
    duration_s: float = 30.0
    recommendations: int = 200  # rows in the store (a page of 50 is returned)
    tuning_trials: int = 60  # the background knob run; long enough to outlast the windows
    think_ms: int = 100  # the paced pass: each client waits this long between requests
    out_dir: str = "bench-results/service"
    engine: str = DEFAULT_ENGINE  # of the production server the runs tune (the CLI's --engine)


_WRK_LATENCY = re.compile(r"^\s+(50|75|90|99)%\s+([0-9.]+)(us|ms|s)\s*$", re.M)
_WRK_REQUESTS = re.compile(r"^\s+(\d+) requests in ([0-9.]+)(us|ms|s|m)", re.M)
_WRK_NON_2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")
_WRK_ERRORS = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _wrk(url: str, secret: str, clients: int, duration_s: float, think_ms: int = 0) -> dict:
    """wrk (C, keep-alive connections, 2 threads) against ``url``: percentiles of latency and the request count.
    ``think_ms`` > 0: each connection waits that long between a response and its next request (wrk's
    ``delay()``; the wait is not part of the latency)."""
    if shutil.which("wrk") is None:
        raise AdvisorError("wrk is not installed (apt-get install wrk; `make bench-service` does it)")
    script = []
    if think_ms:
        path = Path(tempfile.mkdtemp(prefix="advisor-wrk-")) / "think.lua"
        path.write_text(f"function delay()\n  return {int(think_ms)}\nend\n")
        script = ["-s", str(path)]
    done = subprocess.run(["wrk", "--latency", "-t", "2", "-c", str(clients), "-d", f"{duration_s:g}s",
                           "--timeout", "30s", *script, "-H", f"Authorization: Bearer {secret}", url],
                          capture_output=True, text=True, timeout=duration_s + 60)
    if done.returncode != 0:
        raise AdvisorError(f"wrk failed: {done.stderr.strip() or done.stdout.strip()}")
    out = done.stdout
    pct = {int(p): float(v) * _MS[u] for p, v, u in _WRK_LATENCY.findall(out)}
    m = _WRK_REQUESTS.search(out)
    if not m or 99 not in pct:
        raise AdvisorError(f"cannot read wrk's output: {out[-300:]}")
    seconds = float(m.group(2)) * _MS[m.group(3)] / 1000
    bad = _WRK_NON_2XX.search(out)
    errors = _WRK_ERRORS.search(out)
    return {"requests": int(m.group(1)), "throughput_rps": round(int(m.group(1)) / seconds, 1),
            "p50_ms": pct[50], "p75_ms": pct[75], "p90_ms": pct[90], "p99_ms": pct[99],
            "non_2xx": int(bad.group(1)) if bad else 0,
            "socket_errors": sum(map(int, errors.groups())) if errors else 0, "wrk_output": out}


def _wait(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AdvisorError(f"bench: timed out waiting for {what}")


def run_api_bench(options: ApiBenchOptions, say: Say = silent) -> dict:
    from advisor.bench.playground import create_shop, playground_sandbox
    from advisor.service.factory import build_service
    from advisor.service.runs import kinds
    from advisor.storage.store import new_id
    from connectors.factory import free_port, supported

    supported(options.engine)
    out = Path(options.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="advisor-bench-api-"))
    store_path = work / "advisor.duckdb"
    env = {**os.environ, "ADVISOR_STORE": str(store_path), "ADVISOR_KEY_FILE": str(work / "secret.key")}
    os.environ["ADVISOR_KEY_FILE"] = env["ADVISOR_KEY_FILE"]
    started = time.monotonic()
    with playground_sandbox("bench-prod", engine=options.engine) as prod:  # production-like: fsync on
        dsn = create_shop(prod)
        say("registering the target and running one index run (in this process, before the server starts)")
        service = build_service(store_path, say=say)
        with service.store as store:
            _, secret = service.create_token("bench", "operator")
            service.add_target("shop", dsn)
            run = service.start_run("shop", kinds.plan_of("indexes", optimizer="extend", budget_mb=50, rounds=3))
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
    doc["meets_target"] = doc["valid"] and doc["p99_ms"] < P99_TARGET_MS  # saturated: no think time
    doc["meets_target_paced"] = doc["valid"] and doc["paced"]["p99_ms"] < P99_TARGET_MS
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
        say(f"{options.clients} clients (wrk) GET /api/recommendations?limit=50 for {options.duration_s:g} s, "
            "server idle (for comparison)")
        idle = _wrk(f"{base}/api/recommendations?limit=50", headers["Authorization"].split()[1], options.clients,
                    options.duration_s)
        r = c.post("/api/runs", json={"target": "shop", "kind": "knobs", "optimizer": "hibo",
                                      "trials": options.tuning_trials, "repeats": 3})
        if r.status_code != 202:
            raise AdvisorError(f"bench: could not start the tuning run: {r.text}")
        run_id = r.json()["id"]
        say(f"tuning run {run_id} started; waiting for its first trial")
        before = _wait(lambda: (lambda j: j if j["trials_done"] >= 1 or j["state"] not in ("queued", "running")
                                else None)(c.get(f"/api/runs/{run_id}").json()), 300, "the first trial")
        page = c.get("/api/recommendations?limit=50").json()
        if len(page["items"]) != 50:
            raise AdvisorError(f"bench: the list returned {len(page['items'])} rows, expected 50")
        say(f"{options.clients} clients (wrk) GET /api/recommendations?limit=50 for {options.duration_s:g} s")
        load = _wrk(f"{base}/api/recommendations?limit=50", headers["Authorization"].split()[1], options.clients,
                    options.duration_s)
        say(f"{options.clients} clients, each waiting {options.think_ms} ms between requests, for "
            f"{options.duration_s:g} s, tuning run still going")
        paced = _wrk(f"{base}/api/recommendations?limit=50", headers["Authorization"].split()[1], options.clients,
                     options.duration_s, options.think_ms)
        after = c.get(f"/api/runs/{run_id}").json()
        c.post(f"/api/runs/{run_id}/cancel")
    valid = before["state"] == "running" and after["state"] == "running" and all(
        x["non_2xx"] == 0 and x["socket_errors"] == 0 for x in (load, paced))
    return {**load, "valid": valid, "idle": {k: v for k, v in idle.items() if k != "wrk_output"},
            "paced": {k: v for k, v in paced.items() if k != "wrk_output"},
            "tuning_run": {"id": run_id, "state_before": before["state"], "state_after": after["state"],
                           "trials_before": before["trials_done"], "trials_after": after["trials_done"]}}


def table(doc: dict) -> str:
    run = doc["tuning_run"]
    return "\n".join([
        f"GET /api/recommendations (page of 50 from {doc['store_recommendations']} rows), {doc['options']['clients']} "
        f"concurrent clients, {doc['options']['duration_s']:g} s, during tuning run {run['id']} "
        f"({run['state_before']} -> {run['state_after']}, trials {run['trials_before']} -> {run['trials_after']})",
        f"  requests {doc['requests']} ({doc['throughput_rps']} /s), non-2xx {doc['non_2xx']}, socket errors "
        f"{doc['socket_errors']}",
        f"  latency ms (wrk): p50 {doc['p50_ms']:.2f}  p75 {doc['p75_ms']:.2f}  p90 {doc['p90_ms']:.2f}  "
        f"p99 {doc['p99_ms']:.2f}",
        f"  target p99 < {doc['target_p99_ms']:g} ms with clients that never wait: "
        f"{'met' if doc['meets_target'] else 'NOT met'}",
        f"  paced (each client waits {doc['options']['think_ms']} ms between requests), during the run: "
        f"{doc['paced']['throughput_rps']} /s, p50 {doc['paced']['p50_ms']:.2f}  p90 {doc['paced']['p90_ms']:.2f}  "
        f"p99 {doc['paced']['p99_ms']:.2f} ms: target {'met' if doc['meets_target_paced'] else 'NOT met'}",
        f"  server idle, saturated, for comparison: {doc['idle']['throughput_rps']} /s, p50 "
        f"{doc['idle']['p50_ms']:.2f}  p99 {doc['idle']['p99_ms']:.2f} ms"
        + ("" if doc["valid"] else " (INVALID: the tuning run was not running throughout)")])
