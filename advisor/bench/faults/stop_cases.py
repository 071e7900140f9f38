"""Faults where a process stops under a run (``advisor bench faults``): a CLI run killed with ``kill -9`` and left
for the next command to find, and the target stopped while the engine's dump program (pg_dump, mariadb-dump)
copies it into the shadow (issue 33)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time

from advisor.bench.faults.base import Fault
from advisor.bench.faults.cases import _in_thread, _poll, stop_advisor
from advisor.bench.faults.env import BenchFailure, Lines, pid_alive
from advisor.core.errors import AdvisorError
from advisor.service.runs import kinds
from connectors import factory
from connectors.base import TAG
from connectors.probing import ServerSession

# what pg_dump echoes after its error (the statement it ran, "LOCK TABLE ... IN ACCESS SHARE MODE"): a run's error
# must not carry it (mariadb-dump's own message says "when using LOCK TABLES": not an echo)
ECHOED = ("Query was", "ACCESS SHARE", "['")
# a dump program's own message, as ``connectors.base.tool_error`` keeps it ("pg_dump: error: ...", "mariadb-dump:
# Couldn't execute '...': Lost connection to server during query")
DUMP_ERROR = re.compile(r"\b[\w-]*dump: \S")


def dumping(sessions: list[ServerSession]) -> ServerSession | None:
    """The dump tool copying the target into a shadow, waiting on a lock: a session waiting that is not the
    advisor's own code (whose statements carry the TAG comment)."""
    return next((s for s in sessions if s.waiting_on_lock and not s.statement.startswith(TAG)), None)


class CliKilled(Fault):
    name = "cli_kill9"
    title = "`advisor tune knobs` killed with SIGKILL on its shadow, then the next CLI command"

    def inject(self, env) -> None:
        self.lines = Lines()
        self.procs: list[subprocess.Popen] = []
        proc = env.advisor("tune", "knobs", "--target", env.dsn, "--store", str(env.store_path), "--no-validate",
                           "--optimizer", "random", "--trials", "200", "--seeds", "0", "--repeats", "3",
                           lines=self.lines)
        self.procs.append(proc)
        alive = lambda: proc.poll() is None  # noqa: E731
        self.run_id = self.lines.wait(r"tuning run (\w+):", alive=alive)[2].group(1)
        self.lines.wait(r"copying the target's database", alive=alive)  # its shadow server runs
        self.shadows = env.shadows()
        if not self.shadows:
            raise BenchFailure("the CLI said it copies the target, but no shadow server runs")
        proc.kill()
        proc.wait(30)
        self.killed_at = time.monotonic()
        self.pid = proc.pid
        self.injected(f"SIGKILL to `advisor tune knobs` (pid {proc.pid}) while its shadow (server "
                      f"{', '.join(map(str, self.shadows))}) copied the target for run {self.run_id}")

    def detect(self, env) -> None:
        with env.store() as store:  # the bench's own read: not build_service, which would clean up
            left = store.run(self.run_id)["state"]
        running = [pid for pid in self.shadows if pid_alive(pid)]
        self.outcome.details.update(state_after_kill=left, shadows_left_by_kill=len(running))
        proc = env.advisor("runs", "list", "--json", "--store", str(env.store_path), lines=Lines())
        self.procs.append(proc)
        self.rc = proc.wait(300)
        with env.store() as store:
            self.run = store.run(self.run_id)
        error = self.run.get("error") or ""
        ok = self.run["state"] == "interrupted" and f"pid {self.pid}" in error and "killed" in error
        self.detected(ok, f"after the kill the run was {left} with {len(running)} shadow(s) up; the next command "
                          f"(`advisor runs list`, exit {self.rc}) found its process gone: run {self.run['state']}: "
                          f"{error or '(no reason)'}")

    def recover(self, env) -> None:
        orphans = [s.root for pid, s in self.shadows.items() if pid_alive(pid)]
        self.orphaned(orphans)
        gone = not orphans and not any(s.root.exists() for s in self.shadows.values())
        ok = self.rc == 0 and self.run["state"] == "interrupted" and gone
        self.recovered(ok, f"run {self.run_id} is {self.run['state']} (no longer running for a dead process); the "
                           f"killed CLI's shadow {'was stopped and removed' if gone else 'WAS LEFT'} by the next "
                           f"command", time.monotonic() - self.killed_at)

    def teardown(self, env) -> None:
        for proc in getattr(self, "procs", []):
            stop_advisor(proc)


class TargetStopped(Fault):
    name = "target_stop_during_dump"
    title = "the target stopped (fast shutdown) while the dump program copies it into the shadow"
    PLAN = kinds.plan_of("knobs", optimizer="random", trials=2, seeds=0, repeats=1, validate=False)

    def setup(self, env) -> None:
        self.holder = factory.connector(env.dsn).bench().probe()
        self.locked = False

    def say(self, message: str) -> None:
        """The run's progress: on the line said right before the dump starts (in the run's thread), lock the orders
        table, so that the dump program (which locks every table it dumps) waits there: a certain moment to stop the
        target. Not earlier: the observation before it reads every table's size, and would wait instead."""
        if not self.locked and "copying the target's database" in message:
            self.holder.lock("orders", readers_wait=True)
            self.locked = True
        self.lines(message)

    def inject(self, env) -> None:
        self.lines = Lines()

        def run():
            with env.service(self.say) as service:
                return service.start_run("shop", self.PLAN)

        self.thread, self.box = _in_thread(run)
        waiting = _poll(dumping, env.dsn, self.thread.is_alive, "the dump program waited on the target")
        server = env.prod.interrupt()  # a fast shutdown, as the engine's operator would ask for
        if server is None:
            raise BenchFailure("the target's server did not run")
        deadline = time.monotonic() + 120
        while pid_alive(server) and time.monotonic() < deadline:
            time.sleep(0.02)
        if pid_alive(server):
            raise BenchFailure("the target did not stop within 120 s")
        self.stopped_at = time.monotonic()
        self.injected(f"the target stopped (a fast shutdown of its server, pid {server}) while the dump program "
                      f"({waiting.application or 'its session'}) waited on a lock to copy the orders table")

    def detect(self, env) -> None:
        self.thread.join(300)
        self.ended_at = time.monotonic()
        run = self.box.get("value") or {}
        error = run.get("error") or str(self.box.get("error") or "")
        self.outcome.details.update(run_state=run.get("state"), run_error=error)
        ok = run.get("state") == "failed" and DUMP_ERROR.search(error) is not None \
            and not any(p in error for p in ECHOED)
        self.detected(ok, f"the run ended {run.get('state')}: {error or '(no reason)'}")

    def recover(self, env) -> None:
        with contextlib.suppress(Exception):
            self.holder.close()
        left = env.shadows()
        env.prod.restart()  # the target's operator starts it again, and its application runs again (an engine
        env.run_workload()  # that keeps statement statistics in memory only, as MariaDB does, forgot them)
        try:
            with env.service() as service:
                obs = service.observe_target("shop")
        except AdvisorError as e:
            self.recovered(False, f"the target started again, but observing it failed: {e}")
            return
        ok = self.outcome.detected and not left
        self.recovered(ok, f"the run ended failed with the dump program's own error, {len(left)} shadow(s) left "
                           f"running; with the target started again, the next observation stored snapshot "
                           f"{obs.snapshot_id}",
                       self.ended_at - self.stopped_at)

    def teardown(self, env) -> None:
        if hasattr(self, "thread"):
            self.thread.join(300)
        with contextlib.suppress(Exception):
            self.holder.close()
        if env.prod is not None and not env.prod.is_running():
            env.prod.restart()
            env.run_workload()
