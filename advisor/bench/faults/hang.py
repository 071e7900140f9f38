"""The hung target (``advisor bench faults``, issue 42 item 10): the production server stops answering while it still
accepts connections (every process of it stopped with SIGSTOP, as a wedged server looks), with a second, healthy
target registered beside it. An observation, a statement on a connection opened before, and a run on the hung target
must each end with one line ("target X did not answer within N s") within the target timeout, and a run on the
healthy target must start and not stay queued behind the hung one. The server is continued (SIGCONT) and is then
observed again."""

from __future__ import annotations

import contextlib
import os
import signal
import time

from advisor.bench.faults.base import Fault
from advisor.bench.faults.env import BenchFailure
from advisor.core.errors import AdvisorError
from advisor.service.runs import kinds
from connectors import factory
from connectors.local import server_processes

TIMEOUT_S = "5"  # ADVISOR_TARGET_TIMEOUT_S for the case: short, so that the bench waits seconds, not minutes
HUNG = "did not answer within"


class TargetHung(Fault):
    name = "target_hung"
    title = "the target stops answering (SIGSTOP: connections accepted, never answered) with a healthy target beside it"
    PLAN = kinds.plan_of("knobs", optimizer="random", trials=2, seeds=0, repeats=1, validate=False)

    saved: str | None = None
    stopped: tuple[int, ...] = ()

    def setup(self, env) -> None:
        from advisor.bench.playground import create_shop

        self.saved = os.environ.get("ADVISOR_TARGET_TIMEOUT_S")
        os.environ["ADVISOR_TARGET_TIMEOUT_S"] = TIMEOUT_S
        self.other = factory.sandbox(env.engine, "faults-other", durable=False).start()
        other_dsn = create_shop(self.other, scale=0.05)
        with env.service() as service:
            if "other" not in {t["name"] for t in service.targets()}:
                service.add_target("other", other_dsn)
        # opened before the hang: its next statement waits (the server stops a statement after 1 s itself)
        self.session = factory.connector(env.dsn).session(timeout_ms=1000)

    def inject(self, env) -> None:
        self.stopped = tuple(server_processes(env.prod.data))
        if not self.stopped:
            raise BenchFailure("the target's server did not run")
        for pid in self.stopped:
            os.kill(pid, signal.SIGSTOP)
        self.hung_at = time.monotonic()
        self.injected(f"SIGSTOP to the {len(self.stopped)} process(es) of the target's server: it accepts "
                      f"connections and never answers")

    def detect(self, env) -> None:
        from advisor.service.factory import build_service, stop

        said: dict[str, str] = {}
        try:
            with env.service() as service:
                service.observe_target("shop")
            said["observe"] = "ANSWERED"
        except AdvisorError as e:
            said["observe"] = e.message
        try:
            self.session.run("SELECT 1")
            said["open connection"] = "ANSWERED"
        except AdvisorError as e:
            said["open connection"] = e.message
        service = build_service(env.store_path, background=True, scheduler=False)
        try:
            hung_run = service.start_run("shop", self.PLAN)["id"]
            other_run = service.start_run("other", self.PLAN)["id"]
            held, deadline = True, time.monotonic() + 300
            while time.monotonic() < deadline:
                hung, other = service.store.run(hung_run), service.store.run(other_run)
                if other["state"] != "queued" and hung["state"] in ("queued", "running"):
                    held = False  # the healthy target's run started while the hung one's was still waiting
                if hung["state"] not in ("queued", "running") and other["state"] not in ("queued", "running"):
                    break
                time.sleep(0.05)
            self.ended_at = time.monotonic()
        finally:
            stop(service)
        with env.store() as store:
            hung, other = store.run(hung_run), store.run(other_run)
        said["run"] = hung.get("error") or hung["state"]
        self.outcome.details.update(said=said, hung_run=hung["state"], other_run=other["state"],
                                    other_held_behind_hung=held)
        lines = all(HUNG in m and "\n" not in m for m in said.values())
        ok = lines and hung["state"] == "failed" and other["state"] == "done" and not held
        self.detected(ok, f"observe: {said['observe']}; a statement on a connection opened before: "
                          f"{said['open connection']}; the run on it: {hung['state']} ({said['run']}); the run on "
                          f"the healthy target {'WAITED BEHIND IT' if held else 'started at once'} and ended "
                          f"{other['state']}")

    def recover(self, env) -> None:
        self._continue()
        try:
            with env.service() as service:
                obs = service.observe_target("shop")
        except AdvisorError as e:
            self.recovered(False, f"continued, the target could not be observed: {e}")
            return
        self.recovered(self.outcome.detected, f"continued (SIGCONT), the target answered again: snapshot "
                                              f"{obs.snapshot_id}", self.ended_at - self.hung_at)

    def _continue(self) -> None:
        for pid in self.stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        self.stopped = ()

    def teardown(self, env) -> None:
        """The target continued, the healthy one's server stopped (its target stays registered: removing it would
        take its run's trials along, which the ledger counts as lost)."""
        self._continue()
        if getattr(self, "session", None) is not None:
            with contextlib.suppress(Exception):
                self.session.close()
        if getattr(self, "other", None) is not None:
            self.other.stop()
        if self.saved is None:
            os.environ.pop("ADVISOR_TARGET_TIMEOUT_S", None)
        else:
            os.environ["ADVISOR_TARGET_TIMEOUT_S"] = self.saved
