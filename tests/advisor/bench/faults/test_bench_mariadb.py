"""``advisor bench faults --engine mariadb``: the cheap faults of the default run (a misbehaving LLM endpoint, two
clients racing on one recommendation, a CLI run killed with kill -9, the target stopped while mariadb-dump copies
it) on a MariaDB production server and its MariaDB shadows. Only outcomes are checked, never seconds.

They need MariaDB's loaders, knob profile and what-if (``loader()``, ``knob_profile``, ``index_facts``): a
connector without one fails them, never skips them."""

from __future__ import annotations

import pytest

from advisor.bench.faults.bench import FaultBenchOptions, run_fault_bench, table
from tests.advisor.bench.faults.test_bench import check


@pytest.mark.slow  # about 1.5 min, as its PostgreSQL twin
def test_on_mariadb_a_bad_llm_and_two_racing_clients_lose_nothing(tmp_path):
    doc = run_fault_bench(FaultBenchOptions(faults=("llm", "concurrent_approve"), out_dir=str(tmp_path),
                                            engine="mariadb"))
    check(doc, ("llm", "concurrent_approve"))
    llm, race = doc["faults"]
    assert doc["options"]["engine"] == "mariadb"
    assert all(llm["details"]["warnings"].values()), table(doc)
    # the invented knobs were dropped, MariaDB's own knobs of the same answer seeded the run
    assert "invents: run done, seeds from llm:fault-invents" in llm["recovered_how"], table(doc)
    assert "INVENTED" not in llm["recovered_how"]
    assert sorted(race["details"]["approve"]) == [200, 409] and sorted(race["details"]["apply"]) == [200, 409]
    assert race["details"]["audit_actions"].count("applied") == 1 and race["details"]["indexes_built"] == 1


@pytest.mark.slow  # about 20 s; the default run has it on PostgreSQL
def test_on_mariadb_a_killed_cli_run_is_interrupted_and_a_target_stopped_during_the_dump_fails_the_run(tmp_path):
    doc = run_fault_bench(FaultBenchOptions(faults=("target_stop_during_dump", "cli_kill9"), out_dir=str(tmp_path),
                                            engine="mariadb"))
    check(doc, ("target_stop_during_dump", "cli_kill9"))
    stopped, killed = doc["faults"]
    assert all(f["verdict"] == "recovered" for f in doc["faults"]), table(doc)
    error = stopped["details"]["run_error"]
    assert stopped["details"]["run_state"] == "failed" and "mariadb-dump: " in error, table(doc)
    assert "Lost connection to server" in error and "Query was" not in error, error
    assert killed["details"]["state_after_kill"] == "running" and killed["details"]["shadows_left_by_kill"] == 1
    assert "run interrupted: the process running it (pid" in killed["detected_how"], table(doc)


@pytest.mark.slow  # about 30 s; the default run has it on PostgreSQL (faults/test_bench.py), and a stopped MariaDB server
# in tests/connectors/test_hung_target.py
def test_on_mariadb_a_hung_target_ends_its_own_run_in_one_line_and_holds_no_other_targets_run(tmp_path):
    """Issue 42 item 10 on MariaDB (a PyMySQL connection had no read timeout: observe and the run waited for
    minutes, and a run of another target stayed queued behind them)."""
    doc = run_fault_bench(FaultBenchOptions(faults=("target_hung",), out_dir=str(tmp_path), engine="mariadb"))
    check(doc, ("target_hung",))
    hung = doc["faults"][0]
    assert hung["verdict"] == "recovered", table(doc)
    assert hung["details"]["hung_run"] == "failed" and hung["details"]["other_run"] == "done", table(doc)
    assert hung["details"]["other_held_behind_hung"] is False, table(doc)
    assert all("did not answer within" in line for line in hung["details"]["said"].values()), table(doc)


@pytest.mark.slow  # about 15 s; the default run has it on PostgreSQL (faults/test_bench.py)
def test_on_mariadb_two_recommendations_of_one_index_the_second_is_refused_and_the_first_index_stays(tmp_path):
    """Issue 42 item 1 on MariaDB (the fault bench's collision case)."""
    doc = run_fault_bench(FaultBenchOptions(faults=("prod_collision",), out_dir=str(tmp_path), engine="mariadb"))
    check(doc, ("prod_collision",))
    case = doc["faults"][0]
    assert case["verdict"] == "refused", table(doc)
    assert case["details"]["second_status"] == 409 and case["details"]["first_index_intact"], table(doc)
    assert case["details"]["states"] == {"first": "applied", "second": "approved"}, table(doc)
