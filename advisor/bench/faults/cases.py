"""Faults of the shadow, the target and the advisor process (``advisor bench faults``; the server's and production's
are in ``api_cases``). Each case runs the advisor through the service in this process or as the CLI in a
subprocess, and triggers its fault on a progress line or a state it polls for."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable

from advisor.bench.faults.base import Fault
from advisor.bench.faults.env import TRIAL, BenchFailure, Lines, measured, pid_alive
from advisor.core.domain import Hardware
from advisor.core.errors import AdvisorError
from advisor.core.hardware import detect
from advisor.service.runs import kinds
from connectors import factory
from connectors.base import TAG
from connectors.local import RunningServer, find_server, server_processes
from connectors.probing import ServerSession


def running(sessions: list[ServerSession]) -> ServerSession | None:
    """A workload statement running on a shadow (replay sends the application's SQL untagged; the advisor's own
    statements carry the TAG comment)."""
    return next((s for s in sessions if s.active and "orders" in s.statement.lower()
                 and not s.statement.startswith(TAG)), None)


def observing(sessions: list[ServerSession]) -> ServerSession | None:
    """The advisor's own statement (tagged) waiting on a lock: an observation held at a locked table."""
    return next((s for s in sessions if s.waiting_on_lock and s.statement.startswith(TAG)), None)


def _in_thread(fn) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def work():
        try:
            box["value"] = fn()
        except Exception as e:  # noqa: BLE001 - the case reads it
            box["error"] = e

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, box


def _poll(find, dsn, alive, what: str, timeout_s: float = 300.0) -> ServerSession:
    """Poll the server's other sessions until ``find`` (sessions -> one of them, or None) finds one; that one.
    ``dsn``: a DSN, or a function giving the DSN to use now (a shadow restarted by a trial moves on: the
    connection is opened again)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with factory.connector(dsn() if callable(dsn) else dsn).bench().probe() as probe:
                while time.monotonic() < deadline:
                    found = find(probe.sessions())
                    if found is not None:
                        return found
                    if not alive():
                        raise BenchFailure(f"the advisor finished before {what}")
                    time.sleep(0.002)
        except BenchFailure:
            raise
        except Exception:  # noqa: BLE001 - the server restarted (a trial's restart) or is starting: connect again
            if not alive():
                raise BenchFailure(f"the advisor finished before {what}") from None
            time.sleep(0.02)
    raise BenchFailure(f"{what} did not happen within {timeout_s:g} s")


def stop_advisor(proc: subprocess.Popen | None) -> None:
    """Stop an advisor the bench started, gracefully first (SIGTERM: it stops its shadows)."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def _shadow(env) -> RunningServer:
    shadows = env.shadows()
    if len(shadows) != 1:
        raise BenchFailure(f"expected one shadow server, found {len(shadows)}")
    return next(iter(shadows.values()))


def _now(server: RunningServer) -> RunningServer:
    """The server of the same sandbox as it runs now (a trial's restart starts a new leader process)."""
    return find_server(server.root) or server


def next_line(lines: Lines, index: int, pattern: str, alive) -> tuple[int, float, re.Match] | None:
    try:
        return lines.wait(pattern, after=index + 1, alive=alive)
    except BenchFailure:
        return None


MEASURED = TRIAL.pattern[:-4] + r"(?!failed|infeasible)"  # a trial line whose status is a measurement


class ShadowKilled(Fault):
    name = "shadow_kill"
    title = "kill -9 of the shadow's server mid-trial"
    PLAN = kinds.plan_of("knobs", optimizer="random", trials=6, seeds=0, repeats=3, validate=False)

    def inject(self, env) -> None:
        self.lines = Lines()

        def run():
            with env.service(self.lines) as service:
                return service.start_run("shop", self.PLAN)

        self.thread, self.box = _in_thread(run)
        self.first, _, _ = self.lines.wait(r"trial 1/", alive=self.thread.is_alive)
        shadow = _shadow(env)
        row = _poll(running, lambda: _now(shadow).dsn, self.thread.is_alive, "a workload statement ran on the shadow")
        now = _now(shadow)  # the server as it runs now (trials restart it)
        # its leader and every process of it at once, as a crash takes them: a leader killed alone leaves the
        # sessions it had running (a PostgreSQL backend outlives its postmaster until it notices), so a trial could
        # end its replay on them and be measured on a server already dead (1 run in 4 did so)
        pids = list(dict.fromkeys([now.pid, *server_processes(now.data)]))
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self.killed_at = time.monotonic()
        self.kill_index = len(self.lines.items) - 1
        self.injected(f"SIGKILL to the shadow's server (pid {now.pid}, {len(pids)} process(es) in all) while trial "
                      f"{len(self.lines.trials()) + 1} replayed a statement ({' '.join(row.statement.split())[:50]}...) "
                      "on it")

    def detect(self, env) -> None:
        hit = next_line(self.lines, self.kill_index, TRIAL.pattern, self.thread.is_alive)
        if hit is None:
            self.thread.join(300)
            run = self.box.get("value") or {}
            self.detected(False, f"no trial recorded after the kill; the run ended {run.get('state')}: "
                                 f"{run.get('error') or self.box.get('error')}")
            return
        self.hit_index, _, m = hit
        ok = not measured(m.group(4))
        self.detected(ok, f"trial {m.group(1)} recorded as {m.group(4)[:140]}" if ok else
                      f"trial {m.group(1)} recorded as measured ({m.group(4)}) although its server was killed")

    def recover(self, env) -> None:
        self.thread.join(300)
        run = self.box.get("value") or {}
        later = [(t, m) for i, t, m in self.lines.trials(self.kill_index + 1) if measured(m.group(4))]
        self.outcome.details.update(run_state=run.get("state"), run_error=run.get("error"))
        if run.get("state") == "done" and later:
            t, m = later[0]
            self.recovered(True, f"the shadow came back with the last working configuration; trial {m.group(1)} "
                                 f"measured {t - self.killed_at:.1f} s after the kill; the run ended done "
                                 f"({len(self.lines.trials())} trials)", t - self.killed_at)
        else:
            self.recovered(False, f"the run ended {run.get('state')}: {run.get('error') or self.box.get('error')}; "
                                  f"{len(later)} trial(s) measured after the kill; last lines: {self.lines.tail(2)}")

    def teardown(self, env) -> None:
        if hasattr(self, "thread"):
            self.thread.join(300)


def buffer_knob(dsn: str) -> tuple[str, Callable[[str], float]]:
    """The engine's main memory knob (the first global buffer of its memory model: PostgreSQL's shared_buffers,
    MariaDB's innodb_buffer_pool_size) and how to read one of its values in bytes (0 for one not understood)."""
    connector = factory.connector(dsn)
    profile, catalog = connector.knob_profile(), connector.knob_catalog()
    knob = profile.memory.global_buffers[0]

    def in_bytes(value: str) -> float:
        try:
            return profile.units.to_bytes(catalog[knob], str(value))
        except (AdvisorError, KeyError, ValueError):
            return 0.0

    return knob, in_bytes


REFUSED = ("did not come back", "could not apply")  # how a trial says its configuration could not be used


class BadConfig(Fault):
    name = "bad_config"
    title = "a candidate configuration that stops the shadow from starting (or that it refuses)"

    def inject(self, env) -> None:
        self.knob, self.bytes = buffer_knob(env.dsn)
        real = detect()
        self.memory = real.memory_bytes * 64  # a mis-declared machine: --memory-gb 64x this one's
        hw = Hardware(self.memory, real.cores, "ssd", "given")
        self.lines = Lines()
        self.result, self.error = None, None
        with env.service(self.lines) as service:
            try:
                self.result = service.tune("knobs", env.dsn, kinds.plan_of("knobs", optimizer="random", trials=6, seeds=3, repeats=1,
                                                                   rounds=1), name="shop", hardware=hw)
            except AdvisorError as e:
                self.error = e
        records = self.result.trials if self.result else ()
        self.bad = [r for r in records if self.bytes(r.config.get(self.knob, "")) > real.memory_bytes]
        if self.bad:
            r = self.bad[0]
            self.injected(f"the run was told the machine has {self.memory / 1024**3:.0f} GiB (it has "
                          f"{real.memory_bytes / 1024**3:.0f}); trial {r.number + 1} ({r.source}) set {self.knob} = "
                          f"{r.config[self.knob]}")
        else:
            self.injected(f"no candidate above this machine's memory was tried ({len(records)} trials); "
                          f"{self.error or ''}")
            self.outcome.injected = False

    def detect(self, env) -> None:
        if not self.bad:
            return
        r = self.bad[0]
        # the shadow would not start with it (a setting read at start), or the engine refused to set it (one it
        # changes online, e.g. MariaDB's buffer pool: "could not apply: Out of memory")
        ok = r.result.status == "failed" and any(w in (r.result.reason or "") for w in REFUSED)
        self.detected(ok, f"trial {r.number + 1}: {r.result.status}: {(r.result.reason or '')[:160]}")

    def recover(self, env) -> None:
        if not self.bad:
            return
        r = self.bad[0]
        i = next((i for i, _, m in self.lines.trials() if int(m.group(1)) == r.number + 1), 0)
        later = [text for _, text in self.lines.items[i + 1:]
                 if re.search(MEASURED, text) or re.search(r"round \d+/\d+ (baseline|candidate)", text)]
        rec = self.result.recommendation if self.result else None
        clean = rec is None or all(getattr(c, "name", "") != self.knob
                                   or self.bytes(c.value) <= detect().memory_bytes for c in rec.changes)
        ok = self.result is not None and bool(later) and clean
        self.recovered(ok, (f"the shadow was back on the last working configuration within the failed trial "
                            f"({r.duration_s:.1f} s); then measured: {later[0][:80]}; the recommendation "
                            f"{'does not carry the failing value' if clean else 'CARRIES the failing value'}")
                       if ok else f"nothing measured after the failed start; {self.error or self.lines.tail(2)}",
                       r.duration_s)


class TargetDrops(Fault):
    name = "target_drop"
    title = "the target drops the advisor's connection during an observation"

    def setup(self, env) -> None:
        self.holder = factory.connector(env.dsn).bench().probe()

    def inject(self, env) -> None:
        # an ACCESS EXCLUSIVE lock on orders holds the observation at its table statistics (a deterministic moment
        # to find it); the server then terminates its connection, as an admin or a connection killer would
        self.holder.lock("orders", readers_wait=True)
        self.snapshots_before = env.ledger().snapshots

        def observe():
            with env.service() as service:
                return service.observe_target("shop")

        self.thread, self.box = _in_thread(observe)
        try:
            row = _poll(observing, env.dsn, self.thread.is_alive, "the observation waited on the target")
        except BenchFailure:
            self.thread.join(120)
            if "value" not in self.box:
                raise
            self.skip(f"the observation ended ({self.box['value'].snapshot_id}) without waiting on the table "
                      f"locked by {self.holder.held}: this engine reads what it observes without that lock, so "
                      "there is no certain moment in the observation to drop its connection")
            return
        with factory.connector(env.dsn).bench().probe() as probe:
            probe.terminate(row.id)
        self.dropped_at = time.monotonic()
        self.injected(f"the server terminated the observation's connection (session {row.id}) while it read table "
                      f"statistics")

    def detect(self, env) -> None:
        self.thread.join(120)
        error = self.box.get("error")
        partial = env.ledger().snapshots - self.snapshots_before
        ok = isinstance(error, AdvisorError) and "\n" not in str(error) and partial == 0
        self.detected(ok, f"the observation failed: {type(error).__name__}: {error}; {partial} snapshot(s) stored"
                      if error else f"the observation returned {self.box.get('value')} without an error")

    def recover(self, env) -> None:
        self.holder.release()
        with env.service() as service:
            try:
                obs = service.observe_target("shop")
            except AdvisorError as e:
                self.recovered(False, f"the next observation failed too: {e}")
                return
        self.recovered(True, f"the next observation (the target answering again) stored snapshot {obs.snapshot_id} "
                             f"with {len(obs.workload.statements)} statements", time.monotonic() - self.dropped_at)

    def teardown(self, env) -> None:
        if hasattr(self, "thread"):
            self.thread.join(120)
        self.holder.close()


class AdvisorKilled(Fault):
    name = "advisor_kill"
    title = "`advisor tune knobs` killed with SIGKILL mid-run, then run again with --resume"
    TRIALS = 6

    def _tune(self, env, lines: Lines, *extra: str) -> subprocess.Popen:
        return env.advisor("tune", "knobs", "--target", env.dsn, "--store", str(env.store_path), "--no-validate",
                           *extra, lines=lines)

    def inject(self, env) -> None:
        self.lines = Lines()
        proc = self._tune(env, self.lines, "--optimizer", "random", "--trials", str(self.TRIALS), "--seeds", "0",
                          "--repeats", "3")
        self.procs = [proc]
        alive = lambda: proc.poll() is None  # noqa: E731
        self.run_id = self.lines.wait(r"tuning run (\w+):", alive=alive)[2].group(1)
        self.lines.wait(r"trial 2/", alive=alive)
        self.shadows = env.shadows()
        proc.kill()
        proc.wait(30)
        self.killed_at = time.monotonic()
        self.announced = {int(m.group(1)) - 1 for _, _, m in self.lines.trials()}
        self.injected(f"SIGKILL to `advisor tune knobs` (pid {proc.pid}) once it reported trial "
                      f"{max(self.announced) + 1} of {self.TRIALS} of run {self.run_id}")

    def detect(self, env) -> None:
        alive = [d for pid, d in self.shadows.items() if pid_alive(pid)]
        with env.store() as store:
            run = store.run(self.run_id)
            stored = {t["number"] for t in store.trials(self.run_id)}
        missing = self.announced - stored
        self.outcome.lost["trials"] += len(missing)  # reported done by the killed advisor, not in the store
        self.outcome.details.update(state_after_kill=run["state"], trials_stored=len(stored),
                                    shadows_left_by_kill=len(alive))
        self.lines2 = Lines()
        proc = self._tune(env, self.lines2, "--resume", self.run_id)
        self.procs.append(proc)
        try:
            _, _, m = self.lines2.wait(r"resuming run \w+: (\d+) trial", alive=lambda: proc.poll() is None)
            self.detected(True, f"after the kill the store had run {self.run_id} {run['state']} with {len(stored)} "
                                f"trial(s) ({len(missing)} reported but missing); the restarted advisor said: "
                                f"resuming, {m.group(1)} trial(s) already done")
        except BenchFailure as e:
            self.detected(False, f"the restarted advisor did not resume the run: {e}")

    def recover(self, env) -> None:
        proc = self.procs[-1]
        rc = proc.wait(600)
        with env.store() as store:
            run = store.run(self.run_id)
            numbers = [t["number"] for t in store.trials(self.run_id)]
        orphans = [s.root for pid, s in self.shadows.items() if pid_alive(pid)]
        self.orphaned(orphans)
        ok = rc == 0 and run["state"] == "done" and sorted(numbers) == list(range(self.TRIALS))
        self.outcome.details.update(trial_numbers=sorted(numbers), exit_code=rc)
        shown = sorted(n + 1 for n in numbers)
        self.recovered(ok, f"the resumed run ended {run['state']} (exit {rc}) with trials {shown}"
                           f"{'' if len(set(numbers)) == len(numbers) else ' (DUPLICATES)'}; the killed advisor's "
                           f"shadow {'still ran after the restart (orphan)' if orphans else 'was gone after it'}",
                       time.monotonic() - self.killed_at)

    def teardown(self, env) -> None:
        for proc in getattr(self, "procs", []):
            stop_advisor(proc)
