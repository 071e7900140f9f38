"""Faults on the way to production (``advisor bench faults``), over the REST API of a running ``advisor serve``: a
lock that another session holds on the table an approved index is for, and two clients approving, then applying,
one recommendation at the same moment, and two approved recommendations that build one index applied one after
the other (the second must be refused, naming the first, and leave the first's index as it was)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from advisor.bench.faults.api_cases import index_recommendation, post, reset_production, threaded
from advisor.bench.faults.base import Fault
from advisor.core.settings import get_settings
from advisor.storage.store import new_id
from connectors import factory
from connectors.probing import ServerSession


def building(sessions: list[ServerSession]) -> ServerSession | None:
    """A session building an index that waits on a lock."""
    return next((s for s in sessions if s.waiting_on_lock and "create index" in s.statement.lower()), None)


def _message(reply: dict) -> str:
    body = reply.get("body") or {}
    text = str(body.get("message") or body.get("detail") or body)
    return text if len(text) <= 300 else text[:300] + "..."


class ProductionLock(Fault):
    name = "prod_lock"
    title = "a production lock (SHARE UPDATE EXCLUSIVE on the table) blocks applying an approved index"

    def setup(self, env) -> None:
        reset_production(env)
        with env.service() as service:
            self.rec = index_recommendation(service)
            self.other = index_recommendation(service)  # a second validated one, rejected while the apply waits
            service.approve(self.rec.id, note="fault bench")
        self.change = self.rec.changes[0]
        self.holder = factory.connector(env.dsn).bench().probe()

    def inject(self, env) -> None:
        self.server = env.server()
        self.server.start()
        self.lock = self.holder.lock(self.change.table, self.change.schema, readers_wait=False)
        self.locked = True
        self.locked_at = time.monotonic()
        base, auth = self.server.base, self.server.auth()
        self.apply_thread, self.apply = threaded(post, base, auth, f"/api/recommendations/{self.rec.id}/apply")
        self.bound = bound = getattr(get_settings(), "production_lock_timeout_s", 30.0) + 60.0
        waiting = None
        with factory.connector(env.dsn).bench().probe() as probe:
            while self.apply_thread.is_alive() and waiting is None and time.monotonic() - self.locked_at < bound:
                waiting = building(probe.sessions())
                time.sleep(0.01)
        if waiting is None:
            self.injected(f"{self.lock} held by another session; the apply never waited on it "
                          f"({self.apply.get('status')}: {_message(self.apply)})")
            return
        self.injected(f"another session holds {self.lock}; POST .../apply of approved {self.rec.id} reached "
                      f"production and waits (session {waiting.id}: {waiting.statement[:60]})")
        # the rest of the API meanwhile: a list, a detail, and rejecting another recommendation
        probes = {"GET list": lambda c: c.get("/api/recommendations", params={"limit": 50}),
                  "GET one": lambda c: c.get(f"/api/recommendations/{self.other.id}")}
        self.probes = {}
        for label, call in probes.items():
            started = time.monotonic()
            r = call(self.server.client)
            self.probes[label] = {"status": r.status_code, "s": round(time.monotonic() - started, 3),
                                  "before_apply_ended": self.apply_thread.is_alive()}
        reject_thread, reject = threaded(post, base, auth, f"/api/recommendations/{self.other.id}/reject",
                                         json={"note": "fault bench: rejected while an apply waits on a lock"})
        reject_thread.join(bound)
        self.apply_thread.join(max(0.0, bound - (time.monotonic() - self.locked_at)))
        self.probes["POST reject"] = {"status": reject.get("status"),
                                      "s": round(reject["s"], 3) if "s" in reject else None,
                                      "before_apply_ended": reject.get("ended", 1e18) < self.apply.get("ended", 1e18)}
        self.outcome.details["probes"] = self.probes

    def detect(self, env) -> None:
        if not self.outcome.injected:
            return
        still = self.apply_thread.is_alive()
        if still:
            self._release()  # the bench's bound: release, so that the apply ends at last
            self.apply_thread.join(300)
        waited = self.apply.get("ended", time.monotonic()) - self.locked_at
        ok = not still and self.apply.get("status") == 409 and "lock" in _message(self.apply).lower()
        invalid = len(factory.connector(env.dsn).bench().invalid_indexes())
        state = self.server.client.get(f"/api/recommendations/{self.rec.id}").json().get("state")
        self.outcome.details.update(apply_status=self.apply.get("status"), apply_waited_s=round(waited, 1),
                                    invalid_indexes=invalid, state_after=state)
        self.detected(ok and invalid == 0 and state == "approved",
                      (f"apply answered {self.apply.get('status')} after {waited:.1f} s with the lock still held: "
                       f"{_message(self.apply)}" if not still else
                       f"apply still waited after {self.bound:.0f} s (the bench then released the lock; it answered "
                       f"{self.apply.get('status')})") + f"; {invalid} invalid index(es) left; recommendation {state}")

    def recover(self, env) -> None:
        if not self.outcome.injected:
            return
        self._release()
        released = time.monotonic()
        r = post(self.server.base, self.server.auth(), f"/api/recommendations/{self.rec.id}/apply")
        applied = r["status"] == 200 and r["body"].get("state") == "applied"
        responsive = all(p["status"] == 200 and p["before_apply_ended"] for p in self.probes.values())
        shown = ", ".join((f"{k} {p['status']} in {p['s']:.2f} s" if p["s"] is not None else
                           f"{k}: no answer within {self.bound:.0f} s")
                          + ("" if p["before_apply_ended"] else " (only AFTER the apply ended)")
                          for k, p in self.probes.items())
        self.recovered(applied and responsive,
                       f"while the apply waited: {shown}; once the lock was released the apply answered {r['status']} "
                       f"({r['body'].get('state') or _message(r)})", time.monotonic() - released)
        if applied:
            post(self.server.base, self.server.auth(), f"/api/recommendations/{self.rec.id}/rollback",
                  json={"note": "fault bench: clean up"})

    def _release(self) -> None:
        if getattr(self, "locked", False):
            self.holder.release()
            self.locked = False

    def teardown(self, env) -> None:
        if hasattr(self, "holder"):
            self._release()
            if getattr(self, "apply_thread", None) is not None:
                self.apply_thread.join(300)
            self.holder.close()
        if getattr(self, "server", None) is not None:
            self.server.stop()
        reset_production(env)


class ConcurrentApprove(Fault):
    name = "concurrent_approve"
    title = "two clients approve, then apply, one recommendation at the same moment"

    def setup(self, env) -> None:
        reset_production(env)
        with env.service() as service:
            self.rec = index_recommendation(service)

    def _race(self, action: str) -> list[dict]:
        barrier = threading.Barrier(2)
        path = f"/api/recommendations/{self.rec.id}/{action}"
        boxes = [threaded(post, self.server.base, self.server.auth(), path, barrier) for _ in range(2)]
        for thread, _ in boxes:
            thread.join(300)
        return [box for _, box in boxes]

    def inject(self, env) -> None:
        self.server = env.server()
        self.server.start()
        self.approve = self._race("approve")
        self.apply = self._race("apply")
        self.injected(f"two HTTP clients (threads, a connection each, released together by a barrier) POST approve "
                      f"of validated {self.rec.id} at once, then apply at once")

    def detect(self, env) -> None:
        def one_wins(replies):
            return sorted(r.get("status") for r in replies) == [200, 409]

        loser = [r for r in self.approve + self.apply if r.get("status") != 200]
        self.outcome.details.update(approve=[r.get("status") for r in self.approve],
                                    apply=[r.get("status") for r in self.apply])
        self.detected(one_wins(self.approve) and one_wins(self.apply),
                      f"approve answered {[r.get('status') for r in self.approve]}, apply "
                      f"{[r.get('status') for r in self.apply]}; the losers were told: "
                      + " | ".join(_message(r) for r in loser))

    def recover(self, env) -> None:
        audit = self.server.client.get("/api/audit", params={"subject": self.rec.id, "limit": 100}).json()["items"]
        actions = [a["action"] for a in audit]
        change = self.rec.changes[0]
        connector = factory.connector(env.dsn)
        invalid = set(connector.bench().invalid_indexes())
        built = sum(1 for ix in connector.observe().indexes
                    if ix.table == change.table and not ix.is_primary and ix.name not in invalid)
        state = self.server.client.get(f"/api/recommendations/{self.rec.id}").json().get("state")
        ok = actions.count("approved") == 1 and actions.count("applied") == 1 and built == 1 and state == "applied"
        self.outcome.details.update(audit_actions=actions, indexes_built=built)
        self.recovered(ok, f"recommendation {state}; audit rows: approved x{actions.count('approved')}, applied "
                           f"x{actions.count('applied')}; {built} index(es) on {change.table} besides its key")

    def teardown(self, env) -> None:
        if getattr(self, "server", None) is not None:
            if getattr(self, "apply", None):
                post(self.server.base, self.server.auth(), f"/api/recommendations/{self.rec.id}/rollback",
                      json={"note": "fault bench: clean up"})
            self.server.stop()
        reset_production(env)


class Collision(Fault):
    name = "prod_collision"
    title = "two approved recommendations build the same index: apply both, the second must be refused"

    def setup(self, env) -> None:
        reset_production(env)
        with env.service() as service:
            self.rec = index_recommendation(service)
            # what a second run on the same statements recommends: the very same change, under another id
            self.twin = replace(self.rec, id=new_id(), created_at=time.time(), applied=None,
                                note="fault bench: a second run's recommendation of the same index")
            service.store.add_recommendation(self.twin)
            for rec in (self.rec, self.twin):
                service.approve(rec.id, note="fault bench")

    def _indexes(self, env) -> dict[str, str]:
        """name -> definition of the valid indexes on the change's table besides its key."""
        change = self.rec.changes[0]
        connector = factory.connector(env.dsn)
        invalid = set(connector.bench().invalid_indexes())
        return {ix.name: ix.definition for ix in connector.observe().indexes
                if ix.table == change.table and not ix.is_primary and ix.name not in invalid}

    def _state(self, rec_id: str) -> str | None:
        return self.server.client.get(f"/api/recommendations/{rec_id}").json().get("state")

    def inject(self, env) -> None:
        self.server = env.server()
        self.server.start()
        base, auth = self.server.base, self.server.auth()
        self.first = post(base, auth, f"/api/recommendations/{self.rec.id}/apply")
        if self.first["status"] != 200:
            self.injected(f"the first apply already failed ({self.first['status']}: {_message(self.first)})")
            return
        self.built = self._indexes(env)
        self.second = post(base, auth, f"/api/recommendations/{self.twin.id}/apply")
        self.injected(f"approved {self.rec.id} applied (built {', '.join(self.built) or 'nothing'}); then approved "
                      f"{self.twin.id}, the same change ({self.rec.apply_sql[0][:80]}), applied over it")

    def detect(self, env) -> None:
        if not getattr(self, "second", None):
            return
        after = self._indexes(env)
        states = {"first": self._state(self.rec.id), "second": self._state(self.twin.id)}
        intact = after == self.built and len(after) == 1
        refused = self.second["status"] == 409 and self.rec.id in _message(self.second)
        self.outcome.details.update(second_status=self.second["status"], first_index_intact=intact,
                                    states=states, indexes=sorted(after))
        self.detected(refused and intact and states == {"first": "applied", "second": "approved"},
                      f"the second apply answered {self.second['status']}: {_message(self.second)}; the first's "
                      f"index {'intact' if intact else 'CHANGED: ' + str(sorted(after))}; first {states['first']}, "
                      f"second {states['second']}")

    def recover(self, env) -> None:
        if not getattr(self, "second", None):
            return
        started = time.monotonic()
        base, auth = self.server.base, self.server.auth()
        steps = [post(base, auth, f"/api/recommendations/{self.rec.id}/rollback",
                      json={"note": "fault bench: make way for the second"}),
                 post(base, auth, f"/api/recommendations/{self.twin.id}/apply")]
        ok = [r["status"] for r in steps] == [200, 200] and self._state(self.twin.id) == "applied" \
            and len(self._indexes(env)) == 1
        self.applied_twin = steps[1]["status"] == 200
        self.recovered(ok, f"rolling the first back answered {steps[0]['status']}, then applying the second "
                           f"{steps[1]['status']} ({steps[1]['body'].get('state') or _message(steps[1])}); "
                           f"{len(self._indexes(env))} index(es) on {self.rec.changes[0].table} besides its key",
                       time.monotonic() - started, refused=True)

    def teardown(self, env) -> None:
        if getattr(self, "server", None) is not None:
            for rec in (self.rec, self.twin):
                if self._state(rec.id) == "applied":
                    post(self.server.base, self.server.auth(), f"/api/recommendations/{rec.id}/rollback",
                         json={"note": "fault bench: clean up"})
            self.server.stop()
        reset_production(env)
