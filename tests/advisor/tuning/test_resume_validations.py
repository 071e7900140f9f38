"""Every kind resumes after a kill (issue 43): an index run and a rewrite run store each validated candidate (an
index set's validation pass, a statement's rewrite race) as a trial record of the run as it finishes
(``advisor.tuning.trials.Ledger``); killed after the first one is stored, the run is interrupted, and resumed by
its id with the plan it was started with it reuses the stored verdict instead of measuring it again, numbers its
new trials on, and ends done. Resuming a run as another kind is refused. Real servers; the kill is raised from
the store right after the first trial is committed."""

from __future__ import annotations

import uuid

import pytest

from advisor.core.errors import AdvisorError
from advisor.service.service import AdvisorService
from advisor.storage.store import Store
from advisor.tuning.plan import RunPlan
from connectors import factory
from advisor.tuning import kinds
from tests.conftest import run


@pytest.fixture(scope="module")
def shop(pg):
    return _shop(pg)


def _shop(pg) -> str:
    """orders looked up by customer (an index Extend picks and the shadow proves), observed by
    pg_stat_statements; c and o for the rewrites (a correlated subquery, and a NOT IN)."""
    dsn = pg.create_database("resume_" + uuid.uuid4().hex[:8])
    run(dsn, "CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL, amount int NOT NULL, note text)",
        "INSERT INTO orders SELECT x, x % 5000, x % 997, repeat('x', 40) FROM generate_series(1, 50000) x",
        "CREATE TABLE c (id int PRIMARY KEY, score numeric NOT NULL, name text)",
        "CREATE TABLE o (id int PRIMARY KEY, cid int NOT NULL, amount numeric)",
        "INSERT INTO c SELECT x, x % 97, 'n' || x FROM generate_series(1, 2000) x",
        "INSERT INTO o SELECT x, x % 2000 + 1, x % 13 FROM generate_series(1, 20000) x", "ANALYZE")
    with factory.connect(dsn) as conn:
        conn.execute("SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database "
                     "WHERE datname = current_database()), 0)")  # this database's only: others keep theirs
        for k in range(30):
            conn.execute("SELECT id, amount FROM orders WHERE customer = %s", [k * 7])
    return dsn


def _killed_after_first_trial(store: Store) -> None:
    """The store commits the run's first trial, then the process is 'killed' (KeyboardInterrupt, as SIGINT)."""
    add = store.add_trial

    def add_then_die(*args, **kwargs):
        add(*args, **kwargs)
        raise KeyboardInterrupt

    store.add_trial = add_then_die


def _interrupted_then_resumed(store: Store, kind: str, dsn: str, plan: RunPlan,
                              between=lambda: None) -> tuple[dict, list, list, object]:
    _killed_after_first_trial(store)
    with pytest.raises(KeyboardInterrupt):
        AdvisorService(store, say=lambda _m: None).tune(kind, dsn, plan, by_hand=True)
    del store.add_trial  # the next process stores as usual
    between()  # what happens on the target before the run is resumed
    (row,) = store.runs()
    assert row["state"] == "interrupted" and row["kind"] == kind
    first = store.trials(row["id"])
    assert len(first) == 1 and first[0]["config"]["validation"]
    lines: list[str] = []
    service = AdvisorService(store, say=lines.append)
    assert service.resumed_plan(row["id"], kind) == plan
    result = service.tune(kind, dsn, service.resumed_plan(row["id"], kind), by_hand=True, resume=row["id"])
    assert result.recommendation is None or result.recommendation.run_id == row["id"]
    assert store.run(row["id"])["state"] == "done"
    return row, first, lines, result


def test_a_killed_index_run_resumes_without_measuring_its_stored_pass_again(shop, tmp_path):
    store = Store(str(tmp_path / "advisor.duckdb"))
    plan = kinds.parse_plan({"kind": "indexes", "optimizer": "extend", "budget_mb": 50, "rounds": 3})
    row, first, lines, result = _interrupted_then_resumed(store, "indexes", shop, plan)
    assert first[0]["config"]["pass"] == "1" and first[0]["evidence"]["rounds"] >= 3
    assert [c["columns"] for c in first[0]["changes"]] == [["customer"]]
    assert any(x.startswith(f"resuming run {row['id']}: 1 validated candidate(s) stored") for x in lines)
    assert any(x.startswith("pass 1: these 1 index(es) were measured before") for x in lines), lines
    assert not any(x.startswith("validating 1 index(es) on the shadow (pass 1)") for x in lines)  # not measured
    stored = store.trials(row["id"])
    assert stored[0]["id"] == first[0]["id"] and [t["number"] for t in stored] == list(range(len(stored)))
    assert sum(1 for t in stored if t["config"]["pass"] == "1") == 1  # the first pass: stored once, never again
    assert result.validation is not None and result.validation.evidence is not None
    with pytest.raises(AdvisorError, match="is a indexes run; resume it as one"):
        AdvisorService(store).resumed_plan(row["id"], "rewrites")
    rewrites = kinds.plan_of("rewrites", optimizer="greedy", validate=False, sql="SELECT 1")
    with pytest.raises(AdvisorError, match="is a indexes run; resume it as one"):
        AdvisorService(store).tune("rewrites", shop, rewrites, by_hand=True, resume=row["id"])


def test_a_resumed_index_run_over_another_workload_measures_its_pass_again(pg, tmp_path):
    """The resume observes the target again: a statement run since then makes another workload, so the stored
    pass over the same index set is measured again, not reused."""
    dsn = _shop(pg)

    def another_statement():  # one no index serves (no predicate): the set stays, the workload does not
        with factory.connect(dsn) as conn:
            for _k in range(30):
                conn.execute("SELECT count(*) FROM o")

    store = Store(str(tmp_path / "advisor.duckdb"))
    plan = kinds.parse_plan({"kind": "indexes", "optimizer": "extend", "budget_mb": 50, "rounds": 3})
    row, first, lines, _result = _interrupted_then_resumed(store, "indexes", dsn, plan, another_statement)
    assert not any(x.startswith("pass 1: these 1 index(es) were measured before") for x in lines), lines
    stored = [t for t in store.trials(row["id"]) if t["config"]["pass"] == "1"]
    assert len(stored) == 2 and stored[0]["id"] == first[0]["id"]  # the first pass measured again
    # the same index keys (Extend may pick the plain index or its INCLUDE variant: a near tie of what-if costs);
    # what makes the pass measured again is the workload
    assert [c["columns"] for c in stored[0]["changes"]] == [c["columns"] for c in stored[1]["changes"]]
    assert stored[0]["config"]["workload"] != stored[1]["config"]["workload"]
    assert any(x.startswith("validating") and "(pass 1)" in x for x in lines), lines


def test_the_keys_of_stored_verdicts_tell_other_constants_and_options_apart():
    from advisor.core.domain import QueryRewrite
    from advisor.tuning.rewrites.stored import race_key
    from advisor.tuning.ledger import workload_digest
    from advisor.tuning.validation import ValidationOptions
    from workloads.statements.binding import BoundStatement

    def st(sql):
        return BoundStatement("q1", "SELECT * FROM t WHERE a = $1", sql, 1.0, "literal", False)

    one, other = [st("SELECT * FROM t WHERE a = 1")], [st("SELECT * FROM t WHERE a = 2")]
    options = ValidationOptions()
    assert workload_digest(one, options) == workload_digest([st("SELECT * FROM t WHERE a = 1")], options)
    assert workload_digest(one, options) != workload_digest(other, options)
    assert workload_digest(one, options) != workload_digest(one, ValidationOptions(rounds=7))
    assert workload_digest(one, options) != workload_digest(one, ValidationOptions(regression_threshold=0.2))
    forms = [QueryRewrite("q1", "SELECT 1", "SELECT 2")]
    assert race_key("q1", one[0].sql, forms) == race_key("q1", one[0].sql, forms)
    assert race_key("q1", one[0].sql, forms) != race_key("q1", other[0].sql, forms)


CORRELATED = "SELECT c.id FROM c WHERE c.score > (SELECT 2 * avg(o.amount) FROM o WHERE o.cid = c.id)"
NOT_IN = "SELECT c.id FROM c WHERE c.id NOT IN (SELECT o.cid FROM o WHERE o.amount > 5)"


def test_a_killed_rewrite_run_resumes_without_racing_its_stored_statement_again(shop, tmp_path):
    store = Store(str(tmp_path / "advisor.duckdb"))
    plan = kinds.parse_plan({"kind": "rewrites", "optimizer": "greedy", "rounds": 2,
                          "sql": f"{CORRELATED}; {NOT_IN}"})
    row, first, lines, result = _interrupted_then_resumed(store, "rewrites", shop, plan)
    raced = first[0]["config"]["statement"]
    assert raced == "sql1" and first[0]["metrics"]["outcome"]["queryid"] == "sql1"
    assert any(x.startswith("sql1") and "reusing stored trial 1, not timing it again" in x for x in lines) or \
        any("raced before the run was interrupted; reusing stored trial 1" in x for x in lines), lines
    stored = store.trials(row["id"])
    assert [t["config"]["statement"] for t in stored] == ["sql1", "sql2"][:len(stored)]
    assert stored[0]["id"] == first[0]["id"] and len(stored) <= 2
    (again,) = [o for o in result.statements if o.queryid == "sql1"]
    was = first[0]["metrics"]["outcome"]
    assert again.rewritten == was["rewritten"] and again.speedup == was["speedup"] and again.reason == was["reason"]
    with pytest.raises(AdvisorError, match="is a rewrites run; resume it as one"):
        AdvisorService(store).resumed_plan(row["id"], "indexes")


def test_the_cli_resumes_index_and_rewrite_runs_by_id_and_refuses_another_kind(shop, tmp_path):
    """``tune indexes --resume RUN`` and ``rewrite --resume RUN`` take the stored plan (no --budget-mb, no SQL) and
    reach the same checks: a finished run is not resumed, an index run is not resumed as a rewrite run."""
    from tests.advisor.cli.test_cli_service import cli, ok

    doc = ok(cli(tmp_path, "tune", "indexes", "--target", shop, "--register", "shop", "--optimizer", "extend",
                 "--budget-mb", "50", "--no-validate", "--json"))
    (run,) = ok(cli(tmp_path, "runs", "list", "--json"))["runs"]
    assert run["kind"] == "indexes" and run["state"] == "done" and doc["recommendation"]["run_id"] == run["id"]
    again = cli(tmp_path, "tune", "indexes", "--target", shop, "--resume", run["id"])
    last = again.stderr.strip().splitlines()[-1]
    assert again.returncode == 1 and last == f"error: tuning run {run['id']} is already finished", again.stderr
    other = cli(tmp_path, "rewrite", "--target", shop, "--resume", run["id"])
    assert other.returncode == 1 and "is a indexes run; resume it as one" in other.stderr
    assert "Traceback" not in again.stderr + other.stderr
    missing = cli(tmp_path, "tune", "indexes", "--target", shop)
    assert missing.returncode == 2 and "--budget-mb" in missing.stderr
