"""Measurements run at a raised CPU priority where the advisor may raise it (``advisor.core.priority``): the servers
the project starts (PostgreSQL's postmaster, its backends, a restart's new postmaster; every MariaDB thread), the
threads that replay statements, and the in-process learned-index harness; ``ADVISOR_MEASURE_NICE=0`` leaves
priorities alone, and where raising is refused the measured line says so."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import psycopg
import pytest

from advisor.core import priority
from advisor.tuning.evidence import ArmRound
from advisor.tuning.measure import Measured, RoundLoad
from connectors import factory
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, replay

WANTED = priority.wanted()
RAISED = WANTED < 0 and priority.permitted(WANTED)


def _nice(pid: int, tid: int | None = None) -> int:
    """A process's (or one of its threads') nice value, from /proc (field 19 of stat)."""
    stat = Path(f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])


def test_the_measured_line_names_the_priority_it_ran_at():
    line = Measured({"A": [ArmRound({"q": [1.0]}, {})]}, stopped="clears", loads=[RoundLoad(0.5, 0.2)]).line()
    if RAISED:
        assert line.endswith(f", nice {WANTED}")
    elif WANTED == 0:  # ADVISOR_MEASURE_NICE=0: priorities left alone (wanted() is never above 0)
        assert line.endswith(", nice 0")
    else:
        assert line.endswith(", nice 0 (raising the priority is not permitted)")


@pytest.mark.skipif(not RAISED, reason="raising a priority needs root or CAP_SYS_NICE")
def test_a_postgres_server_and_its_backends_run_at_the_raised_priority_and_keep_it_across_a_restart(restartable):
    sandbox, connector = restartable
    assert _nice(sandbox.server_pid()) == WANTED
    with psycopg.connect(sandbox.dsn(), autocommit=True) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        assert _nice(backend) == WANTED
    sandbox.restart()
    assert _nice(sandbox.server_pid()) == WANTED


@pytest.mark.skipif(not RAISED, reason="raising a priority needs root or CAP_SYS_NICE")
def test_every_thread_of_a_mariadb_server_runs_at_the_raised_priority(maria):
    with maria.connector("mysql").session(10_000) as session:
        session.run("SELECT 1")
        pid = maria.server_pid()
        threads = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        assert threads and {_nice(pid, t) for t in threads} == {WANTED}


@pytest.mark.skipif(not RAISED, reason="raising a priority needs root or CAP_SYS_NICE")
def test_replay_threads_run_raised_and_the_caller_keeps_its_own(tpch_dsn):
    seen: list[int] = []
    real = factory.connector(tpch_dsn)

    class Watching:  # the real connector, noting the priority of the thread that opens each session
        def session(self, timeout_ms):
            seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            return real.session(timeout_ms)

    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    out = replay(Watching(), [BoundStatement("q", "SELECT count(*) FROM nation", "SELECT count(*) FROM nation", 1.0, "literal", False)],
                 ReplayOptions(concurrency=2, warmup=0))
    assert out.samples["q"] and seen == [WANTED, WANTED]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before


def test_a_nice_of_zero_leaves_priorities_alone(monkeypatch):
    monkeypatch.setenv("ADVISOR_MEASURE_NICE", "0")
    assert priority.server_prefix() == [] and priority.raise_this_thread() is False
    with priority.raised() as up:
        assert up is False
    assert priority.status() == "nice 0"


@pytest.mark.skipif(not RAISED, reason="raising a priority needs root or CAP_SYS_NICE")
def test_a_server_started_as_a_warm_replica_keeps_the_usual_priority(restartable):
    """A warm replica only follows its target between runs (and a MariaDB one may share the target's host): it is
    started with ``raised=False`` and runs at nice 0, while a server measured on is raised."""
    from connectors.postgres.server_control import halt, pg_ctl

    sandbox, _connector = restartable
    halt(sandbox.name, sandbox.bin, sandbox.data, sandbox.run_dir, modes=("fast",))
    pg_ctl(sandbox.name, sandbox.bin, sandbox.data, "start", log=sandbox.log, raised=False)
    try:
        assert _nice(sandbox.server_pid()) == 0
    finally:
        sandbox.restart()  # back as the fixture started it: raised
    assert _nice(sandbox.server_pid()) == WANTED
