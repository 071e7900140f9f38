"""Trials on a Ray cluster (``RayExecutor``, an ``advisor.tuning.executors.local.Executor``): each slot is a Ray actor
(``TrialWorker``, one CPU) that builds its own trial target where it runs from a picklable recipe (a thin clone of
the node's replica, a copy of a learned index's harness: ``Recipe.make``), and each trial is a task on it that
returns the trial's result, seconds, restart flag and per-item medians.

A worker lost mid-trial (its process killed, its node gone) ends that trial as a failed one whose reason says so,
never a lost one: the slot gets a new worker and the run goes on. A worker that cannot build its target fails the
trials sent to it the same way, with the reason it gave.

``connect(address)``: ``auto`` starts a local cluster on loopback (its head and one worker process per slot: the
GCS, the raylet and the workers listen on 127.0.0.1 only, and Ray's own token guards them), any other value is an
existing cluster's address (``host:port`` or ``ray://...``); the process keeps one connection, and a local cluster
it started is stopped when the process ends. Ray's own console messages (a worker's death, its log lines) are kept
off the user's terminal: what they say reaches the run as the failed trial's reason.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, Protocol

from advisor.core.domain import TrialResult
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.tuning.executors.local import Ended, Executor, run_trial

AUTO = "auto"
OBJECT_STORE_BYTES = 128 << 20  # trials move kilobytes; Ray's default (30% of memory) would reserve gigabytes
WAIT_S = 4.0  # a wait for a trial says how many are running this often (no step silent past 5 s)
READY_S = 600.0  # a new worker builds its target (a thin clone: seconds; a full copy: minutes) within this

# Ray reads this once, when it is first imported (every import of it is below this module's): a local cluster's
# node address is then 127.0.0.1, never the machine's network address
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

_started: dict[str, Any] = {}  # the cluster this process connected to: {"address": ..., "local": bool}


class Recipe(Protocol):
    """How a worker builds its trial target where it runs; picklable (sent to the worker)."""

    def make(self) -> Any: ...


def connect(address: str, slots: int = 2, say: Say = silent) -> str:
    """Connect this process to the Ray cluster at ``address`` (``auto``: start a local one on loopback with
    ``slots`` CPUs); returns the cluster's address. AdvisorError when it cannot be reached."""
    import ray

    if ray.is_initialized():
        return _started.get("address", "")
    _quiet_driver()
    local = address == AUTO
    say("starting a local Ray cluster on loopback" if local else f"connecting to the Ray cluster at {address}")
    try:
        if local:
            ray.init(address="local", num_cpus=max(1, slots, os.cpu_count() or 1), include_dashboard=False,
                     _node_ip_address="127.0.0.1",
                     object_store_memory=OBJECT_STORE_BYTES, log_to_driver=False, logging_level="ERROR",
                     namespace="db-advisor")
        else:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR", namespace="db-advisor")
    except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError by case
        raise AdvisorError(f"could not reach the Ray cluster at {address}: {type(e).__name__}: "
                           f"{str(e).splitlines()[0][:200] if str(e) else 'no detail'}") from None
    _started.update(address=ray.get_runtime_context().gcs_address, local=local)
    return _started["address"]


def _quiet_driver() -> None:
    """Ray's driver prints its cluster's error messages (a worker's death) on the terminal from a thread of its
    own; the executor turns each into a failed trial's reason instead, so that thread is not started. (ray 2.60's
    ``listen_error_messages``, which ``ray.init`` starts; pinned in pyproject.toml.)"""
    import ray._private.worker as driver

    driver.listen_error_messages = lambda worker, threads_stopped: None


def _worker_class():
    import ray

    @ray.remote(num_cpus=1, max_restarts=0, max_concurrency=2)
    class TrialWorker:
        """One slot: its own trial target, built from ``recipe`` here, and one trial at a time on it."""

        def __init__(self, recipe: Recipe):
            self.target, self.error = None, ""
            try:
                self.target = recipe.make()
            except AdvisorError as e:
                self.error = f"the worker could not build its trial target: {e}"
            except Exception as e:  # noqa: BLE001 - said as the trials' reason, the run goes on
                self.error = f"the worker could not build its trial target ({type(e).__name__})"

        def pid(self) -> int:
            return os.getpid()

        def trial(self, config: Mapping[str, str]):
            if self.target is None:
                return TrialResult(None, "failed", self.error, error="WorkerSetup"), 0.0, False, None
            try:
                return run_trial(self.target, config)
            except AdvisorError as e:  # its target is gone (a clone that cannot come back): this trial fails
                return (TrialResult(None, "failed", f"the worker's trial target failed: {e}", error=type(e).__name__),
                        0.0, False, None)

        def configure(self, values: dict) -> None:
            for name, value in values.items():
                if self.target is not None:
                    setattr(self.target, name, value)

        def close(self) -> None:
            close = getattr(self.target, "close", None)
            if close is not None:
                close()

    return TrialWorker


class RayExecutor(Executor):
    """``slots`` Ray actors, each with the target ``recipe`` builds where it runs (see the module docstring)."""

    name = "ray"

    def __init__(self, recipe: Recipe, slots: int, address: str = AUTO, say: Say = silent):
        import ray

        self.address = connect(address, slots, say)
        self.recipe, self.slots, self.say = recipe, max(1, int(slots)), say
        self._ray = ray
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < self.slots:
            raise AdvisorError(f"the Ray cluster at {self.address} has {cpus:g} CPU(s); {self.slots} trial workers "
                               "need one each: give fewer with --parallel, or add nodes")
        self._cls = _worker_class()
        self._configured: dict[str, Any] = {}
        self.workers: list = []
        try:
            for _ in range(self.slots):
                self.workers.append(self._new_worker())
        except AdvisorError:
            self.close()
            raise
        self._idle = list(range(self.slots))
        self._refs: dict[Any, tuple[int, int, float]] = {}  # ObjectRef -> (ticket, slot, started)
        self.lost = 0  # workers lost mid-trial (each a failed trial)

    def _new_worker(self):
        """A worker with its target built, once the cluster has placed it (at most ``READY_S``; its CPUs taken by
        other work: AdvisorError, never a wait without end)."""
        from advisor.core.progress import heartbeat

        worker = self._cls.options(name=None).remote(self.recipe)
        try:
            with heartbeat(self.say, "starting a Ray trial worker (it makes its own clone)"):
                self._ray.get(worker.pid.remote(), timeout=READY_S)
        except Exception as e:  # noqa: BLE001 - GetTimeoutError, or the worker died while building its target
            self._ray.kill(worker, no_restart=True)
            raise AdvisorError(f"a Ray trial worker did not start within {READY_S:g} s ({type(e).__name__}): the "
                               "cluster's CPUs are taken by other work") from None
        if self._configured:
            self._ray.get(worker.configure.remote(dict(self._configured)))
        return worker

    @property
    def running(self) -> int:
        return len(self._refs)

    def free(self) -> int:
        return len(self._idle)

    def start(self, ticket: int, config: Mapping[str, str]) -> None:
        if not self._idle:
            raise RuntimeError("no free slot: wait for a trial to end first")
        slot = self._idle.pop(0)
        self._refs[self.workers[slot].trial.remote(dict(config))] = (ticket, slot, time.perf_counter())

    def wait(self) -> list[Ended]:
        if not self._refs:
            return []
        ready: list = []
        waited = time.monotonic()
        while not ready:
            ready, _ = self._ray.wait(list(self._refs), num_returns=1, timeout=WAIT_S)
            if not ready:
                self.say(f"{len(self._refs)} trial(s) running on Ray workers ({time.monotonic() - waited:.0f} s)")
        ready, _ = self._ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
        out = []
        for ref in ready:
            ticket, slot, started = self._refs.pop(ref)
            out.append(self._ended(ref, ticket, slot, started))
            self._idle.append(slot)
        return sorted(out, key=lambda e: e.ticket)

    def _ended(self, ref, ticket: int, slot: int, started: float) -> Ended:
        from ray.exceptions import RayActorError, RayError, WorkerCrashedError

        try:
            result, duration, restarted, statement_ms = self._ray.get(ref)
            return Ended(ticket, result, duration, restarted, statement_ms, slot)
        except (RayActorError, WorkerCrashedError) as e:
            why = f"the Ray worker running it was lost ({type(e).__name__})"
        except RayError as e:
            why = f"the Ray task failed ({type(e).__name__})"
        self.lost += 1
        self.say(f"trial on slot {slot + 1}: {why}; a new worker takes the slot")
        try:  # the old one gives its CPU back (a task error leaves its process running)
            self._ray.kill(self.workers[slot], no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        self.workers[slot] = self._new_worker()
        return Ended(ticket, TrialResult(None, "failed", why, error="WorkerLost"),
                     time.perf_counter() - started, False, None, slot)

    def configure(self, **values: Any) -> None:
        self._configured.update(values)
        self._ray.get([w.configure.remote(dict(values)) for w in self.workers])

    def pids(self) -> list[int]:
        """Each slot's worker process id (a test kills one)."""
        return self._ray.get([w.pid.remote() for w in self.workers])

    def describe(self) -> str:
        return f"Ray at {self.address}, {self.slots} worker(s)"

    def close(self) -> None:
        for w in self.workers:
            try:
                self._ray.get(w.close.remote(), timeout=60)
            except Exception:  # noqa: BLE001 - a lost worker has nothing left to close
                pass
            self._ray.kill(w, no_restart=True)
        self.workers = []
