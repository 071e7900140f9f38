"""Faults of the server, of production and of the LLM endpoint (``advisor bench faults``): ``advisor serve`` killed
with a scheduled job running, a production lock that blocks an apply, two clients approving and applying one
recommendation at once, and an LLM endpoint that hangs, answers garbage or invents knobs."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime

import httpx2 as httpx

from advisor.bench.faults.base import Fault
from advisor.bench.faults.env import BenchFailure, Lines, pid_alive
from advisor.bench.faults.llm import ScriptedLLM
from advisor.core.domain import DropIndexChange
from advisor.core.errors import AdvisorError
from advisor.core.hardware import detect
from advisor.service.runs import kinds
from connectors import factory

ENDED = ("done", "failed", "cancelled", "interrupted")


def reset_production(env) -> None:
    """Production as the bench made it: no index on orders but its primary key (a case that applied one and could
    not roll it back must not change what the next case is recommended)."""
    connector = factory.connector(env.dsn)
    drops = [DropIndexChange(ix.schema, ix.table, ix.name, ix.definition, why="fault bench: reset")
             for ix in connector.observe().indexes if ix.table == "orders" and not ix.is_primary]
    if drops:
        connector.apply(drops)


def index_recommendation(service, attempts: int = 3):
    """A validated index recommendation from a real index run (Extend, 50 MB) on the shop: what the production
    faults need to start from. On this shared machine a validation can reject the index when another process
    slowed one of its rounds; the run is then made again (up to ``attempts`` runs), saying why."""
    why = []
    for _ in range(attempts):
        run = service.start_run("shop", kinds.plan_of("indexes", optimizer="extend", budget_mb=50, rounds=5))
        result = run.get("result") or {}
        if run["state"] == "done" and result.get("recommendation"):
            rec = service.recommendation(result["recommendation"])
            if rec.state == "validated":
                return rec
            why.append(f"{rec.state}: {result.get('message') or rec.note}")
        else:
            why.append(f"run {run['state']}: {run.get('error')}")
    raise BenchFailure(f"no validated index recommendation in {attempts} index runs: {'; '.join(why)}")


def _seconds(stamp: str | float | None) -> float:
    """Unix seconds of a REST time (ISO-8601 UTC, as the API writes times; 0 for none).

    >>> _seconds("1970-01-01T00:01:00Z"), _seconds(None)
    (60.0, 0.0)
    """
    if not stamp:
        return 0.0
    if isinstance(stamp, (int, float)):
        return float(stamp)
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class ServerRestarted(Fault):
    name = "api_restart"
    title = "advisor serve killed (SIGKILL) during a scheduled job, restarted with a fire time pending"
    PLAN = kinds.plan_of("knobs", optimizer="random", trials=8, seeds=0, repeats=3, validate=False)
    DOWN_S = 3900  # a missed hourly fire time: the last firing is put this far back, as after that long down

    def setup(self, env) -> None:
        with env.service() as service:
            self.sid = service.add_schedule("shop", "0 * * * *", [self.PLAN])["id"]
            service.store.schedule_fired(self.sid, time.time() - self.DOWN_S)

    def inject(self, env) -> None:
        self.s1 = env.server(scheduler=True)
        self.s1.start()
        run = self.s1.wait_run(lambda r: r["state"] == "running" and r["trials_done"] >= 1,
                               find=lambda r: r["schedule_id"] == self.sid)
        self.run_id = run["id"]
        self.shadows = env.shadows()
        self.s1.kill()
        self.killed_at = time.monotonic()
        self.injected(f"the server's start caught up the schedule's missed hourly job (run {self.run_id}); SIGKILL to "
                      f"advisor serve once that run had {run['trials_done']} trial(s); the schedule's last firing "
                      f"then put {self.DOWN_S // 60} min back (the server down over the next fire time)")
        with env.store() as store:  # not build_service: it would reap the killed server's shadow
            store.schedule_fired(self.sid, time.time() - self.DOWN_S)

    def detect(self, env) -> None:
        self.outcome.details["shadows_left_by_kill"] = sum(pid_alive(pid) for pid in self.shadows)
        self.restart_wall = time.time()
        self.s2 = env.server(scheduler=True)
        self.up_s = self.s2.start()
        run = self.s2.client.get(f"/api/runs/{self.run_id}").json()
        self.up_at = time.monotonic()
        ok = run["state"] == "interrupted" and bool(run.get("error"))
        self.detected(ok, f"after the restart ({self.up_s:.1f} s to answer) the cut run is {run['state']}: "
                          f"{run.get('error')}")

    def recover(self, env) -> None:
        orphans = [s.root for pid, s in self.shadows.items() if pid_alive(pid)]
        self.orphaned(orphans)
        new = self.s2.wait_run(lambda r: r["state"] in ENDED,
                               find=lambda r: r["schedule_id"] == self.sid and r["id"] != self.run_id)
        runs = self.s2.client.get("/api/runs", params={"target": "shop", "limit": 100}).json()["items"]
        fired = [r for r in runs if r["schedule_id"] == self.sid and _seconds(r["created_at"]) >= self.restart_wall
                 and r["state"] not in ("skipped", "missed")]
        schedule = self.s2.client.get(f"/api/schedules/{self.sid}").json()
        ok = new["state"] == "done" and len(fired) == 1 and _seconds(schedule.get("next_fire_at")) > time.time()
        self.outcome.details.update(catch_up_run=new["id"], runs_after_restart=len(fired))
        self.recovered(ok, f"the pending fire time ran once at start (run {new['id']}: {new['state']}, "
                           f"{new['trials_done']} trials; {len(fired)} firing(s) after the restart); next fire "
                           f"{time.strftime('%H:%M', time.localtime(_seconds(schedule.get('next_fire_at'))))}; the killed "
                           f"server's shadow {'STILL RAN after the restart (orphan)' if orphans else 'was gone'}",
                       self.up_s)

    def teardown(self, env) -> None:
        for server in (getattr(self, "s1", None), getattr(self, "s2", None)):
            if server is not None:
                server.stop()
        with env.store() as store:
            store.remove_schedule(self.sid)


class BadLLM(Fault):
    name = "llm"
    title = "an LLM endpoint that hangs, answers garbage, is not a chat endpoint, or invents knobs"
    TIMEOUT_S = 2.0
    INVENTED = ("turbo_mode", "buffer_boost")  # knobs no engine has
    SUBS = (("hang", ({"sleep": 3600},), "did not answer within"),
            ("garbage", ("Sure! Raise the buffers and buy more RAM.", '{"configs": 42}',
                         "```json\n{configs: [}\n```"), "unusable answer"),
            ("not-chat", ({"raw": "<html><body>502 Bad Gateway</body></html>"},), "did not answer like a chat"),
            ("invents", (), "turbo_mode"))  # its script: ``invented`` (real knobs of the engine's among them)

    def invented(self, env) -> str:
        """An answer whose configurations mix knobs no engine has with three real ones of the engine's profile
        (the first it tunes), set to the middle of their ranges for this machine."""
        connector = factory.connector(env.dsn)
        profile, catalog = connector.knob_profile(), connector.knob_catalog()
        ranges = profile.ranges(detect())
        real = [k for k in ranges if k in catalog][:3]

        def middle(knob: str) -> str:
            r, spec = ranges[knob], catalog[knob]
            mid = (r.low * r.high) ** 0.5 if r.scale == "log" and r.low > 0 else (r.low + r.high) / 2
            family, size = profile.units.unit_factor(spec.unit)
            if family == "memory":
                return profile.units.round_bytes(mid, unit=int(size))
            return profile.units.clamp(spec, mid)

        return json.dumps({"configs": [
            {"knobs": {self.INVENTED[0]: "on", **{k: middle(k) for k in real[:2]}}, "reason": "fast"},
            {"knobs": {self.INVENTED[1]: "4GB", **{k: middle(k) for k in real[2:]}}, "reason": "cache"}]})

    def inject(self, env) -> None:
        from advisor.core.settings import Settings
        from optimizers.knobs.llm import from_settings

        self.subs = {}
        for sub, script, _ in self.SUBS:
            script = script or (self.invented(env),)
            lines = Lines()
            with ScriptedLLM(*script) as llm, env.service(lines) as service:
                seeder = from_settings(Settings(llm_url=llm.url, llm_model=f"fault-{sub}",
                                                llm_timeout_s=self.TIMEOUT_S))
                started = time.monotonic()
                try:
                    result, error = service.tune("knobs", env.dsn, kinds.plan_of(
                        "knobs", optimizer="random", trials=3, seeds=2, repeats=1, validate=False), name="shop", llm=seeder), None
                except AdvisorError as e:
                    result, error = None, e
                _, seeded_at, _ = lines.wait(r"tuning run \w+:", timeout_s=1) if result else (0, started, None)
                self.subs[sub] = {"lines": lines, "result": result, "error": error, "requests": llm.requests,
                                  "seeding_s": seeded_at - started}
        self.injected(f"a chat completions server on 127.0.0.1 per case (ADVISOR_LLM_TIMEOUT_S={self.TIMEOUT_S:g}): "
                      + "; ".join(f"{sub} ({s['requests']} request(s))" for sub, s in self.subs.items()))

    def detect(self, env) -> None:
        found = {}
        for sub, _, needle in self.SUBS:
            text = self.subs[sub]["lines"].text()
            found[sub] = next((ln for ln in text.splitlines() if needle in ln), None)
        self.outcome.details["warnings"] = {k: (v or "")[:240] for k, v in found.items()}
        self.detected(all(found.values()), "; ".join(f"{k}: {'warned' if v else 'NO warning naming it'}"
                                                      for k, v in found.items()))

    def recover(self, env) -> None:
        notes, ok = [], True
        for sub, s in self.subs.items():
            result = s["result"]
            if result is None:
                ok = False
                notes.append(f"{sub}: the run failed: {s['error']}")
                continue
            seeds = [t for t in result.trials if t.source.startswith("seed:")]
            sources = sorted({t.source.removeprefix("seed:") for t in seeds})
            invented = [k for t in result.trials for k in t.config if k in self.INVENTED]
            want_llm = sub == "invents"
            good = bool(seeds) and not invented and all(src.startswith("llm:") == want_llm for src in sources)
            ok = ok and good
            notes.append(f"{sub}: run done, seeds from {', '.join(sources) or 'nothing'}"
                         + (f", INVENTED knobs tried: {invented}" if invented else "")
                         + f" after {s['seeding_s']:.1f} s of seeding")
        self.recovered(ok, "; ".join(notes), max(s["seeding_s"] for s in self.subs.values()))


def post(base: str, headers: dict, path: str, barrier: threading.Barrier | None = None, **kw) -> dict:
    """One request from a client of its own; status, body, seconds, when it ended."""
    with httpx.Client(base_url=base, headers=headers, timeout=300) as c:
        if barrier is not None:
            barrier.wait(60)
        started = time.monotonic()
        r = c.post(path, **kw)
        ended = time.monotonic()
    try:
        body = r.json()
    except ValueError:
        body = {"message": r.text[:200]}
    return {"status": r.status_code, "body": body, "s": ended - started, "ended": ended}


def threaded(fn, *args, **kw) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def work():
        try:
            box.update(fn(*args, **kw))
        except Exception as e:  # noqa: BLE001
            box["error"] = f"{type(e).__name__}: {e}"

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, box
