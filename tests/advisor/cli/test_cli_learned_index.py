"""``advisor tune learned-index`` against a real target and the real index: ``--json`` prints the issue's
document (index, parameters, default and tuned throughput and p99, evaluations, unsafe evaluations, the
recommendation's id); bad input is one line on stderr with the CLI's exit codes (2: a usage error, before any
work; 1: an error found while running)."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.advisor.cli.test_cli_service import cli

ARGS = ("tune", "learned-index", "--keys", "synthetic:books:20000", "--workload", "read-only", "--index", "pgm",
        "--budget", "3", "--optimizer", "grid", "--rounds", "2")


@pytest.fixture(scope="module")
def keys_db(pg):
    return pg.create_database("lic_" + uuid.uuid4().hex[:8])


def test_the_json_document(tmp_path, keys_db):
    res = cli(tmp_path, *ARGS, "--target", keys_db, "--register", "keys", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    # synthetic keys: the target given holds the run and is observed once, by its registration, not by the run
    assert res.stderr.count("observing ") == 1
    assert doc["index"] == "pgm" and doc["evaluations"] == 3 and 0 <= doc["unsafe_evaluations"] <= doc["evaluations"]
    for arm in ("default", "tuned"):
        assert doc[arm]["throughput_ops"] > 0 and doc[arm]["p99_ns"] > 0
    # typed once at the edge: a number is a JSON number (pgm's epsilon an int), never its text
    assert doc["parameters"] and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                     for v in doc["parameters"].values()), doc["parameters"]
    assert "run_id" in doc and ("recommendation" in doc)
    shown = cli(tmp_path, "runs", "show", doc["run_id"], "--json")  # the run, as any run
    assert shown.returncode == 0 and json.loads(shown.stdout), shown.stderr
    if doc["recommendation"]:
        shown = json.loads(cli(tmp_path, "recommendations", "show", doc["recommendation"], "--json").stdout)
        assert shown["recommendation"]["kind"] == "learned-index"
        assert shown["recommendation"]["details"]["parameters"] == doc["parameters"]
        assert "decided on thread CPU time" in doc["measured"] and doc["tuned"]["cpu_ns_per_op"] > 0



# 2: a usage error the plan's parser finds; 1: what the service finds before any work (the sources, the target)
@pytest.mark.parametrize("change, code, words", [
    (("--keys", "nonsense"), 1, "unknown key source 'nonsense'"),
    (("--workload", "lookup=0.5,delete=0.5"), 1, "unknown part 'delete'"),
    (("--workload", "write-heavy"), 1, "pgm is read-only"),
    (("--keys", "/nonexistent/keys.bin"), 1, "does not exist"),
    (("--index", "btree"), 1, "unknown learned index 'btree'"),
    (("--keys", "nosuch.column"), 1, "nosuch"),
    (("--budget", "1"), 2, "--budget"),
])
def test_bad_input_is_one_line(tmp_path, keys_db, change, code, words):
    args = list(ARGS)
    i = args.index(change[0])
    args[i + 1] = change[1]
    res = cli(tmp_path, *args, "--target", keys_db, "--register", "keys", "--json")
    assert res.returncode == code, res.stderr
    assert words in res.stderr and "Traceback" not in res.stderr and res.stdout == ""


def test_ranges_unknown_parameters_and_bad_items_are_one_line(tmp_path, keys_db):
    res = cli(tmp_path, *ARGS, "--range", "nosuch=1:2", "--target", keys_db, "--register", "keys", "--json")
    assert res.returncode == 1 and "unknown parameter 'nosuch'" in res.stderr and "Traceback" not in res.stderr
    res = cli(tmp_path, *ARGS, "--range", "oops", "--target", keys_db, "--register", "keys", "--json")
    assert res.returncode == 2 and "NAME=LOW:HIGH" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_the_tables_for_people(tmp_path, keys_db):
    table = cli(tmp_path, *ARGS, "--target", keys_db, "--register", "keys")
    assert table.returncode == 0 and "throughput, ops/s" in table.stdout and "evaluations" in table.stdout
    (run,) = json.loads(cli(tmp_path, "runs", "list", "--json").stdout)["runs"]
    assert run["kind"] == "learned-index"
    assert cli(tmp_path, "runs", "show", run["id"]).returncode == 0
    for rec in json.loads(cli(tmp_path, "recommendations", "list", "--json").stdout)["recommendations"]:
        shown = cli(tmp_path, "recommendations", "show", rec["id"])
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr


def test_retrain_reaches_litune_from_the_cli(tmp_path, keys_db):
    """``--retrain``: LITune does not start from its shipped model; it trains its own on the run's training tasks
    (the read-only mixes of the training families, for the read-only pgm). The run keeps it."""
    args = ("tune", "learned-index", "--keys", "synthetic:books:20000", "--workload", "read-only", "--index", "pgm",
            "--budget", "2", "--optimizer", "litune", "--no-validate", "--target", keys_db, "--register", "keys", "--json")
    logs = {}
    for flag in ((), ("--retrain",)):
        res = cli(tmp_path, *args, *flag)
        assert res.returncode == 0, res.stderr
        run_id = json.loads(res.stdout)["run_id"]
        shown = json.loads(cli(tmp_path, "runs", "show", run_id, "--json").stdout)["run"]
        logs[bool(flag)] = res.stderr  # the progress lines
        assert shown["options"]["retrain"] is bool(flag)
    assert "LITune: using the shipped model" in logs[False] and "LITune: using" not in logs[True]
    assert "LITune: meta-training on" in logs[True], logs[True]


NO_DB = ("tune", "learned-index", "--workload", "read-only", "--index", "pgm", "--budget", "2", "--optimizer",
         "grid", "--rounds", "2")
# ALEX's defaults are far from its best on a write-heavy mix: grid's second and third points beat them (by 13-60%
# in wall time), so such a run stores a recommendation
WITH_REC = ("tune", "learned-index", "--workload", "write-heavy", "--index", "alex", "--budget", "3", "--optimizer",
            "grid", "--rounds", "2")


@pytest.mark.parametrize("source", ["synthetic", "file"])
def test_keys_from_a_synthetic_set_or_a_file_need_no_database(tmp_path, source):
    """No --target, no database anywhere (a DSN that reaches nothing in the environment would be used): the run
    is stored under the key source's own target, which `targets list` shows with no DSN, and its run and
    recommendation read back as any other's."""
    if source == "file":
        path = tmp_path / "keys.txt"
        path.write_text("\n".join(str(k * 7919 + 3) for k in range(5000)) + "\n")
        keys, own = str(path), f"keys {path}"
    else:
        keys = "synthetic:books:5000"
        own = f"keys {keys}"
    res = cli(tmp_path, *WITH_REC, "--keys", keys, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["evaluations"] == 3 and doc["run_id"] and "observing" not in res.stderr
    (target,) = json.loads(cli(tmp_path, "targets", "list", "--json").stdout)["targets"]
    assert (target["name"], target["engine"], target["dsn"], target["registered"]) == (own, "keys", "", False)
    listed = cli(tmp_path, "targets", "list")
    assert "keys" in listed.stdout and listed.returncode == 0
    (run,) = json.loads(cli(tmp_path, "runs", "list", "--json").stdout)["runs"]
    assert (run["id"], run["kind"], run["state"], run["target_id"]) == (doc["run_id"], "learned-index", "done",
                                                                        target["id"])
    assert cli(tmp_path, "runs", "list").returncode == 0
    rec_id = doc["recommendation"]
    assert rec_id, doc["message"]
    listed = json.loads(cli(tmp_path, "recommendations", "list", "--target", own, "--json").stdout)
    assert [r["id"] for r in listed["recommendations"]] == [rec_id]
    shown = json.loads(cli(tmp_path, "recommendations", "show", rec_id, "--json").stdout)["recommendation"]
    assert shown["kind"] == "learned-index" and shown["target_id"] == target["id"]
    assert shown["details"]["keys"] == keys
    people = cli(tmp_path, "recommendations", "show", rec_id)
    assert people.returncode == 0 and "Traceback" not in people.stderr, people.stderr


def test_a_second_run_of_the_same_keys_joins_their_target_and_a_column_needs_a_database(tmp_path):
    for _ in range(2):
        assert cli(tmp_path, *NO_DB, "--keys", "synthetic:uniform:2000", "--no-validate", "--json").returncode == 0
    (target,) = json.loads(cli(tmp_path, "targets", "list", "--json").stdout)["targets"]
    runs = json.loads(cli(tmp_path, "runs", "list", "--target", target["name"], "--json").stdout)["runs"]
    assert len(runs) == 2 and target["name"] == "keys synthetic:uniform:2000"
    res = cli(tmp_path, *NO_DB, "--keys", "public.orders.o_orderkey", "--json")
    assert res.returncode == 1 and "needs a target database" in res.stderr and "Traceback" not in res.stderr
    assert res.stdout == ""


def test_a_schedule_of_synthetic_keys_needs_no_target(tmp_path):
    res = cli(tmp_path, "schedule", "add", "--cron", "0 2 * * *", "--kind", "learned-index", "--keys",
              "synthetic:books:5000", "--workload", "read-only", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["target_name"] == "keys synthetic:books:5000"
    res = cli(tmp_path, "schedule", "add", "--cron", "0 2 * * *", "--kind", "indexes", "--budget-mb", "10")
    assert res.returncode == 1 and "a schedule without a target database takes only runs that need none" in \
        res.stderr and "Traceback" not in res.stderr
