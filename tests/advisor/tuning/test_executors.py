"""The trial executors (``advisor.tuning.executors``, ``advisor.tuning.executors.on_ray``) on the real learned-index
harness (ALEX, compiled) and a real local Ray cluster (a head on loopback and two worker processes, started by the
executor itself): the same trials through each executor are recorded alike; parallel slots are kept busy with the
optimizer's batches (the running configurations pending, none asked twice); a Ray worker killed mid-run ends its
trial as a failed one that says so, the slot gets a new worker and the run completes with every trial accounted
for, in the store too. Nothing here asserts a time: only which trials ran, where and how they ended."""

from __future__ import annotations

import os
import signal

import pytest

from advisor.core.domain import LearnedIndexParam
from advisor.storage.store import Store
from advisor.tuning.executors import InProcess, open_executor, ray_address
from advisor.tuning.learned_index.pipeline import problem
from advisor.tuning.learned_index.target import HarnessRecipe
from advisor.tuning.trials import TrialLoop
from optimizers import registry
from optimizers.learned_index.problem import LearnedIndexOptimizer
from tests.advisor.items import alex_balanced

N = 20_000
CONFIGS = [{"max_density": "0.6", "init_density": "0.5", "min_density": "0.3"},
           {"max_density": "0.3", "init_density": "0.2", "min_density": "0.1"},
           {"max_density": "0.99", "init_density": "0.95", "min_density": "0.9"},
           {"max_density": "0.9", "init_density": "0.6", "min_density": "0.2"},
           {"max_density": "0.8", "init_density": "0.7", "min_density": "0.5"}]


class Listed(LearnedIndexOptimizer):
    """A learned-index optimizer (the real contract) that proposes ``CONFIGS`` in order, never one running."""

    name = "listed"
    batches = True

    def _setup(self) -> None:
        self.asked = 0

    def _ask(self, n, current, pending=()):
        out = []
        for _ in range(n):
            config = CONFIGS[self.asked % len(CONFIGS)]
            self.asked += 1
            out.append(tuple(LearnedIndexParam(k, v) for k, v in config.items()))
        return out


@pytest.fixture(scope="module")
def target():
    return alex_balanced(N)


@pytest.fixture(scope="module")
def ray_executor(target):
    """Two Ray workers, each with its own copy of the harness, on a local cluster this module starts."""
    ex = open_executor(target, parallel=2, ray="auto", recipe=lambda: HarnessRecipe.of(target))
    assert ex.address.startswith("127.0.0.1:")  # the cluster listens on loopback only
    yield ex
    ex.close()


def run(target, executor, budget=6, optimizer=None, store=None, run_id=None):
    opt = optimizer or Listed(problem(target.space, "alex"))
    loop = TrialLoop(store, run_id, "t" if store else None, target, opt, budget, executor=executor,
                     label="evaluation")
    return loop, loop.execute()


def outline(records):
    """What a run's trials were, whatever their timing: (source, config, status), in the order they were asked."""
    return sorted((r.source, tuple(sorted(r.config.items())), r.result.status) for r in records)


def test_the_same_trials_through_every_executor_are_recorded_alike(target, ray_executor):
    _, serial = run(target, None)
    with InProcess([target, HarnessRecipe.of(target).make()]) as side_by_side:
        _, local = run(target, side_by_side)
    _, remote = run(target, ray_executor)
    for records in (serial, local, remote):
        assert [r.number for r in records] == list(range(6)) and records[0].source == "default"
        assert all(r.result.status == "measured" and r.result.objective > 0
                   and r.result.metrics["throughput_ops"] > 0 for r in records)
    assert outline(serial) == outline(local) == outline(remote)


def test_parallel_slots_ask_batches_with_the_running_trials_pending(target):
    """A real search (random) over two copies: after the defaults, it is asked for two at once, then for one with
    the other still running; no configuration is run twice."""
    opt = registry.create("learned-index", "random", problem(target.space, "alex"), seed=4)
    asks: list[tuple[int, int]] = []
    ask = opt.ask

    def counting(n=1, *, current=None, pending=()):
        asks.append((n, len(pending)))
        return ask(n, current=current, pending=pending)

    opt.ask = counting
    with InProcess([target, HarnessRecipe.of(target).make()]) as ex:
        _, records = run(target, ex, budget=7, optimizer=opt)
    assert len(records) == 7 and asks[0] == (2, 0)
    assert all(n + pending <= 2 for n, pending in asks) and any(pending == 1 for _, pending in asks)
    configs = [tuple(sorted(r.config.items())) for r in records]
    assert len(set(configs)) == len(configs)


def test_a_ray_worker_killed_mid_run_is_a_failed_trial_and_the_run_completes(target, ray_executor, tmp_path):
    store = Store(str(tmp_path / "advisor.duckdb"))
    tid = store.upsert_target("keys", "postgres", "postgresql://advisor@127.0.0.1/keys")
    run_id = "run-killed-worker"
    store.add_run(run_id, tid, "learned-index", "listed", {})
    killed: list[int] = []

    def kill_one(rec) -> None:  # on the first trial after the defaults: a worker's process dies
        if rec.number == 1 and not killed:
            pid = ray_executor.pids()[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    opt = Listed(problem(target.space, "alex"))
    loop = TrialLoop(store, run_id, tid, target, opt, 9,
                     executor=ray_executor, on_trial=kill_one, label="evaluation")
    records = loop.execute()
    assert killed and len(records) == 9 and [r.number for r in records] == list(range(9))
    lost = [r for r in records if r.result.status == "failed"]
    assert lost and all(r.result.reason.startswith("the Ray worker running it was lost") for r in lost)
    assert all(r.result.error == "WorkerLost" for r in lost)
    assert sum(r.result.status == "measured" for r in records) >= 5  # the run went on, on a new worker
    assert killed[0] not in ray_executor.pids()  # the slot has a new worker
    stored = store.trials(run_id)  # every trial in the store, the lost ones with their reason
    assert [t["number"] for t in stored] == list(range(9))
    assert [t["status"] for t in stored] == [r.result.status for r in records]


def test_ray_address_comes_from_the_run_else_the_setting(monkeypatch):
    monkeypatch.setenv("ADVISOR_RAY", "auto")
    assert ray_address(None) == "auto" and ray_address("none") is None and ray_address("10.0.0.5:6379") == \
        "10.0.0.5:6379"
    monkeypatch.delenv("ADVISOR_RAY")
    assert ray_address(None) is None


def test_more_ray_workers_than_the_cluster_has_cpus_is_refused_in_one_line(target, ray_executor):
    from advisor.core.errors import AdvisorError

    with pytest.raises(AdvisorError, match=r"has \d+ CPU\(s\); 64 trial workers need one each"):
        open_executor(target, parallel=64, ray="auto", recipe=lambda: HarnessRecipe.of(target))
