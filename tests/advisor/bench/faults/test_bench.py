"""``advisor bench faults`` against real servers: the cheap faults (a misbehaving LLM endpoint, two clients racing on
one recommendation, a CLI run killed with kill -9, a target stopped during pg_dump) in the default run, every fault
in the slow run. Nothing here depends on timing: a fault is triggered by a progress line or a state the bench polls
for, and only outcomes are checked, never seconds."""

from __future__ import annotations

import json

import pytest

from advisor.bench.faults.bench import FaultBenchOptions, names, run_fault_bench, select, table
from advisor.cli.main import main
from advisor.core.errors import AdvisorError


def check(doc: dict, wanted) -> None:
    assert [f["name"] for f in doc["faults"]] == list(wanted)
    for f in doc["faults"]:
        assert f["error"] is None, table(doc)
        assert f["lost"] == {"trials": 0, "recommendations": 0, "audit": 0}, table(doc)
        assert f["orphans"] == [], table(doc)
        assert f["injected"] and f["detected"], table(doc)
        assert f["verdict"] in ("recovered", "refused"), table(doc)
    assert doc["ok"] and doc["lost"] == {"trials": 0, "recommendations": 0, "audit": 0}


def test_an_unknown_fault_is_refused_with_the_choices(capsys):
    with pytest.raises(AdvisorError, match="unknown fault.*nope.*shadow_kill"):
        select(("nope",))
    assert main(["bench", "faults", "--faults", "nope"]) == 1
    assert "error: unknown fault(s): nope; choose from shadow_kill" in capsys.readouterr().err
    assert select(("llm", "shadow_kill"))[0].name == "shadow_kill"  # CASES order, not the order asked


@pytest.mark.slow  # about 40 s; the LLM's misbehaviours have their own tests (test_llm_seeding, the fault
# bench's cases), a concurrent transition has one winner in test_store_postgres
def test_a_bad_llm_and_two_racing_clients_lose_nothing(tmp_path):
    doc = run_fault_bench(FaultBenchOptions(faults=("llm", "concurrent_approve"), out_dir=str(tmp_path)))
    check(doc, ("llm", "concurrent_approve"))
    llm, race = doc["faults"]
    # every misbehaviour was named in a warning, and every run went on with seeds it could trust
    assert set(llm["details"]["warnings"]) == {"hang", "garbage", "not-chat", "invents"}
    assert all(llm["details"]["warnings"].values())
    assert "did not answer within 2 s" in llm["details"]["warnings"]["hang"]
    assert "invents: run done, seeds from llm:fault-invents" in llm["recovered_how"]
    assert "INVENTED" not in llm["recovered_how"]
    # exactly one client won each race; one audit row each; the index was built once
    assert sorted(race["details"]["approve"]) == [200, 409] and sorted(race["details"]["apply"]) == [200, 409]
    assert race["details"]["audit_actions"].count("approved") == 1
    assert race["details"]["audit_actions"].count("applied") == 1
    assert race["details"]["indexes_built"] == 1
    saved = json.loads((tmp_path / "faults.json").read_text())
    assert [f["name"] for f in saved["faults"]] == ["llm", "concurrent_approve"]
    assert (tmp_path / "faults.png").stat().st_size > 0
    shown = table(doc)
    assert "concurrent_approve" in shown and "0/0/0" in shown and "every fault recovered or refused" in shown


def test_a_killed_cli_run_is_interrupted_and_a_target_stopped_during_pg_dump_fails_the_run_with_its_error(tmp_path):
    """Issue 33: the next command marks a CLI run killed with kill -9 interrupted, with the reason, and removes its
    shadow (defect 6); a target stopped while pg_dump copies it fails the run with pg_dump's own error, not the
    tail of the query it echoes (defect 7)."""
    doc = run_fault_bench(FaultBenchOptions(faults=("target_stop_during_dump", "cli_kill9"), out_dir=str(tmp_path)))
    check(doc, ("target_stop_during_dump", "cli_kill9"))
    stopped, killed = doc["faults"]
    assert all(f["verdict"] == "recovered" for f in doc["faults"]), table(doc)
    error = stopped["details"]["run_error"]
    assert stopped["details"]["run_state"] == "failed" and "pg_dump: error: query failed:" in error, table(doc)
    assert not any(echoed in error for echoed in ("Query was", "LOCK TABLE", "['")), error
    assert killed["details"]["state_after_kill"] == "running" and killed["details"]["shadows_left_by_kill"] == 1
    assert "run interrupted: the process running it (pid" in killed["detected_how"], table(doc)


@pytest.mark.slow
def test_every_fault_is_recovered_or_refused_and_nothing_is_lost(tmp_path):
    doc = run_fault_bench(FaultBenchOptions(out_dir=str(tmp_path)))
    check(doc, names())


def test_a_hung_target_ends_its_own_run_in_one_line_and_holds_no_other_targets_run(tmp_path):
    """Issue 42 item 10: the target's server stopped with SIGSTOP (connections accepted, never answered), a healthy
    target beside it: observe, a statement on an open connection and a run on the hung one each end with "did not
    answer within", and the healthy target's run starts at once and ends done."""
    doc = run_fault_bench(FaultBenchOptions(faults=("target_hung",), out_dir=str(tmp_path)))
    check(doc, ("target_hung",))
    hung = doc["faults"][0]
    assert hung["verdict"] == "recovered", table(doc)
    assert hung["details"]["hung_run"] == "failed" and hung["details"]["other_run"] == "done", table(doc)
    assert hung["details"]["other_held_behind_hung"] is False, table(doc)
    assert all("did not answer within" in line for line in hung["details"]["said"].values()), table(doc)


def test_two_recommendations_of_one_index_the_second_is_refused_naming_the_first_whose_index_stays(tmp_path):
    """Issue 42 item 1 (the fault bench's collision case): two approved recommendations build the same index; the
    first is applied, the second is refused (409 naming the first) and the first's index stays as built; once the
    first is rolled back, the second applies."""
    doc = run_fault_bench(FaultBenchOptions(faults=("prod_collision",), out_dir=str(tmp_path)))
    check(doc, ("prod_collision",))
    case = doc["faults"][0]
    assert case["verdict"] == "refused", table(doc)
    assert case["details"]["second_status"] == 409 and case["details"]["first_index_intact"], table(doc)
    assert case["details"]["states"] == {"first": "applied", "second": "approved"}, table(doc)
