"""A target's warm replica through the service and its faces, against a real PostgreSQL primary and the real
replica (``connectors.replica``, built on a loopback reflink volume under the test's own directory): added with
the target (service, CLI, REST), checked (``targets check``: a login without replication rights is told what is
missing, one line each, exit code 1), shown with its lag, used by runs (a thin clone that holds a row written just
before the run; without a replica a full copy, each named in the run's header and JSON) and removed with its
target (no server, no mount, no slot left)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from advisor.service.service import AdvisorService
from advisor.storage.store import Store
from advisor.tuning import kinds
from connectors import factory
from connectors.postgres.sandbox import PostgresSandbox
from tests.conftest import FAST, run, scalar
from tests.advisor.cli.test_cli import advisor

READER_PASSWORD = "Reader-pw-never-shown-1"
CORRELATED = "SELECT f.id FROM fresh f WHERE f.score > (SELECT 2 * avg(o.amount) FROM o WHERE o.cid = f.id)"


@pytest.fixture(scope="module")
def primary():
    """A primary of its own (its replicas' slots and WAL are this module's only), with a shop database."""
    with PostgresSandbox("replica-primary", settings=FAST) as server:
        dsn = server.create_database("shop")
        run(dsn, "CREATE TABLE o (id int PRIMARY KEY, cid int NOT NULL, amount numeric)",
            "INSERT INTO o SELECT x, x % 500 + 1, x % 13 FROM generate_series(1, 5000) x", "ANALYZE",
            f"CREATE ROLE reader LOGIN PASSWORD '{READER_PASSWORD}' IN ROLE pg_read_all_stats, pg_read_all_data")
        yield server, dsn


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    return {"ADVISOR_KEY_FILE": str(tmp_path / "secret.key")}


def reader_dsn(server) -> str:
    """The shop database as a login that may read everything but has no replication rights."""
    return f"host=127.0.0.1 port={server.port} dbname=shop user=reader password={READER_PASSWORD}"


def left_behind(directory: Path) -> list[str]:
    """Mounts at or under ``directory`` and processes whose command line names it: what a removal must not leave."""
    root = str(directory)
    mounts = [m.split()[1] for m in Path("/proc/mounts").read_text().splitlines() if m.split()[1].startswith(root)]
    procs = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if root in cmd:
            procs.append(cmd)
    return mounts + procs


def slots(dsn: str) -> int:
    return scalar(dsn, "SELECT count(*) FROM pg_replication_slots")


def test_a_run_on_a_target_with_a_replica_takes_a_thin_clone_holding_the_latest_write(primary, tmp_path, env):
    server, dsn = primary
    lines: list[str] = []
    service = AdvisorService(Store(tmp_path / "s.duckdb"), lines.append)
    target = service.add_target("shop", dsn, replica=True)
    directory = service.replica_dir(target["id"])
    try:
        assert target["replica"]["state"] == "ready" and target["replica"]["lag"]
        assert Path(target["replica"]["directory"]) == directory and directory.is_relative_to(tmp_path)
        assert any("replica of shop" in line for line in lines)  # the build said what it was doing
        listed, = service.targets()
        assert listed["replica"]["behind_bytes"] is not None  # lag read from the running replica

        # a table created and filled on the target just before the run: the shadow must hold it
        run(dsn, "CREATE TABLE fresh (id int PRIMARY KEY, score numeric NOT NULL)",
            "INSERT INTO fresh SELECT x, x % 97 FROM generate_series(1, 500) x")
        lines.clear()
        result = service.tune("rewrites", "shop", kinds.plan_of("rewrites", optimizer="greedy", validate=False, sql=CORRELATED))
        (o,) = result.statements
        assert o.equivalent and "the shadow" in o.checked_on, o.reason  # ran on the clone, which had the table
        assert service.last_shadow["method"] == "thin clone", "\n".join(lines)
        assert service.last_shadow["line"].startswith("thin clone of the warm replica, ")
        header = next(line for line in lines if line.startswith("shadows: "))
        assert "thin clone of the warm replica" in header

        # the source itself: a row written, then the position read, then a clone holds it
        run(dsn, "INSERT INTO fresh VALUES (100000, 1)")
        shadows = service.shadows_for("shop", factory.connector(dsn), lines.append)
        with shadows.clone(factory.connector(dsn)) as shadow:
            assert scalar(shadow.dsn, "SELECT count(*) FROM fresh WHERE id = 100000") == 1
            assert shadow.method == "thin clone"
        assert scalar(dsn, "SELECT count(*) FROM fresh") == 501  # the clone's writes never reach the target
    finally:
        service.remove_target("shop")
    assert not directory.exists() and left_behind(directory) == [] and slots(dsn) == 0


def test_without_a_replica_a_run_names_its_full_copy(primary, tmp_path, env):
    server, dsn = primary
    lines: list[str] = []
    service = AdvisorService(Store(tmp_path / "s.duckdb"), lines.append)
    target = service.add_target("plain", dsn)
    assert target["replica"] is None
    run(dsn, "CREATE TABLE IF NOT EXISTS fresh (id int PRIMARY KEY, score numeric NOT NULL)")
    service.tune("rewrites", "plain", kinds.plan_of("rewrites", optimizer="greedy", validate=False, sql=CORRELATED))
    assert service.last_shadow == {"method": "full copy", "line": "full copy (no replica)"}
    assert "shadows: full copy (no replica)" in lines
    service.tune("rewrites", "plain", kinds.plan_of("rewrites", optimizer="greedy", validate=False, sql=CORRELATED,
                                              sample_percent=10))
    assert service.last_shadow["line"] == "sampled copy 10%: figures carry the sampling error"


def test_the_cli_checks_adds_lists_and_removes_a_replica(primary, tmp_path, env):
    server, dsn = primary
    ro_store, store = tmp_path / "ro.duckdb", tmp_path / "s.duckdb"  # one database is one target per store
    # a login without replication rights: what is missing, with its fix, one line each; exit code 1
    added = advisor("targets", "add", "--name", "ro", "--dsn", reader_dsn(server), store=ro_store, env=env)
    assert added.returncode == 0, added.stderr
    checked = advisor("targets", "check", "ro", store=ro_store, env=env)
    assert checked.returncode == 1, checked.stderr
    missing = [line for line in checked.stdout.splitlines() if line.startswith("missing: ")]
    assert missing and all("; fix: " in line for line in missing) and "REPLICATION" in checked.stdout.upper()
    assert READER_PASSWORD not in checked.stdout + checked.stderr
    refused = advisor("targets", "replica", "ro", store=ro_store, env=env)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "REPLICATION" in refused.stderr.upper() and "Traceback" not in refused.stderr
    again = advisor("targets", "check", "ro", store=ro_store, env=env)  # read only: still missing, nothing changed
    assert again.returncode == 1 and again.stdout == checked.stdout

    added = advisor("targets", "add", "--name", "cli", "--dsn", dsn, "--replica", "--json", store=store, env=env)
    assert added.returncode == 0, added.stderr
    doc = json.loads(added.stdout)
    directory = Path(doc["replica"]["directory"])
    try:
        assert doc["replica"]["state"] == "ready"
        assert "replica of cli" in added.stderr  # progress while it built
        assert advisor("targets", "check", "cli", store=store, env=env).stdout.startswith("ready")
        listed = advisor("targets", "list", "--json", store=store, env=env)
        rows = {t["name"]: t for t in json.loads(listed.stdout)["targets"]}
        assert rows["cli"]["replica"]["lag"]
        table = advisor("targets", "list", store=store, env={**env, "COLUMNS": "250"}).stdout
        assert "replica (lag)" in table and rows["cli"]["replica"]["lag"].split(",")[0] in table
    finally:
        removed = advisor("targets", "remove", "cli", store=store, env=env)
    assert removed.returncode == 0, removed.stderr
    assert not directory.exists() and left_behind(directory) == [] and slots(dsn) == 0


def test_rest_creates_with_a_replica_checks_and_removes(primary, tmp_path, monkeypatch):
    import time

    from fastapi.testclient import TestClient

    from web.main import create_app

    server, dsn = primary
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    app = create_app(str(tmp_path / "advisor.duckdb"), scheduler=False)
    with TestClient(app) as client:
        _, token = app.state.service.create_token("op", "operator")
        auth = {"Authorization": f"Bearer {token}"}
        refused = client.post("/api/targets", json={"name": "ro", "dsn": reader_dsn(server), "replica": True},
                              headers=auth)
        assert refused.status_code == 400 and "REPLICATION" in refused.json()["message"].upper()
        assert client.get("/api/targets/ro", headers=auth).status_code == 404  # nothing stored
        check = client.get("/api/targets/shop/check", headers=auth)
        assert check.status_code == 404
        made = client.post("/api/targets", json={"name": "shop", "dsn": dsn, "replica": True}, headers=auth)
        assert made.status_code == 201, made.text
        assert made.json()["replica"]["state"] in ("building", "ready")  # built in the background
        deadline = time.monotonic() + 600
        while (doc := client.get("/api/targets/shop", headers=auth).json())["replica"]["state"] == "building":
            assert time.monotonic() < deadline, doc
            time.sleep(1)
        assert doc["replica"]["state"] == "ready" and doc["replica"]["lag"], doc
        assert doc["replica"]["behind_bytes"] is not None
        assert client.get("/api/targets/shop/check", headers=auth).json() == {"ready": True, "missing": [],
                                                                             "notes": []}
        again = client.post("/api/targets/shop/replica", headers=auth)  # has one: started, not built again
        assert again.status_code == 202 and again.json()["replica"]["built_at"] == doc["replica"]["built_at"]
        from tests.web.logins import log_in

        assert log_in(client, token).status_code == 303
        page = client.get("/")
        assert page.status_code == 200 and 'id="replica-shop"' in page.text and "Build a warm replica" in page.text
        directory = Path(doc["replica"]["directory"])
        assert client.delete("/api/targets/shop", headers=auth).status_code == 204
    assert not directory.exists() and left_behind(directory) == [] and slots(dsn) == 0


@pytest.fixture(scope="module")
def maria_primary():
    """A MariaDB primary of its own writing row-based binary logs, with a shop database."""
    with factory.sandbox("mariadb", "replica-primary", durable=False, feeds_replicas=True) as server:
        dsn = server.create_database("shop")
        shop = server.connector("shop")
        with shop.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE o (id int PRIMARY KEY, cid int NOT NULL, amount decimal(10, 2))")
            cur.execute("INSERT INTO o SELECT seq, seq % 500 + 1, seq % 13 FROM seq_1_to_5000")
        yield server, dsn


def test_a_run_on_a_mariadb_target_with_a_replica_takes_a_thin_clone_holding_the_latest_write(maria_primary,
                                                                                              tmp_path, env):
    server, dsn = maria_primary
    lines: list[str] = []
    service = AdvisorService(Store(tmp_path / "s.duckdb"), lines.append)
    target = service.add_target("shop", dsn, replica=True)
    directory = service.replica_dir(target["id"])
    try:
        assert target["replica"]["state"] == "ready" and target["replica"]["lag"], target["replica"]
        assert target["replica"]["seed"] == "mariadb-backup"  # the primary's files are on this host
        with factory.connector(dsn).connect() as conn, conn.cursor() as cur:  # just before the run
            cur.execute("CREATE TABLE fresh (id int PRIMARY KEY, score decimal(10, 2) NOT NULL)")
            cur.execute("INSERT INTO fresh SELECT seq, seq % 97 FROM seq_1_to_500")
        lines.clear()
        result = service.tune("rewrites", "shop", kinds.plan_of("rewrites", optimizer="greedy", validate=False, sql=CORRELATED))
        (o,) = result.statements
        assert o.equivalent and "the shadow" in o.checked_on, o.reason  # ran on the clone, which had the table
        assert service.last_shadow["method"] == "thin clone", "\n".join(lines)
        assert service.last_shadow["seed"] == "mariadb-backup"
        assert any(line.startswith("shadows: thin clone of the warm replica (seeded by mariadb-backup), ")
                   for line in lines), "\n".join(lines)
    finally:
        service.remove_target("shop")
    assert not directory.exists() and left_behind(directory) == []


SEEDER_PASSWORD = "Seeder-pw-never-shown-2"


def test_the_cli_notes_what_a_mariadb_backup_seed_lacks_and_lists_the_seed_used(maria_primary, tmp_path, env):
    server, dsn = maria_primary
    with factory.connector(dsn).connect() as conn, conn.cursor() as cur:  # may follow and dump, not back up
        cur.execute("CREATE USER IF NOT EXISTS seeder@'127.0.0.1' IDENTIFIED BY %s", (SEEDER_PASSWORD,))
        cur.execute("GRANT REPLICATION SLAVE, RELOAD, BINLOG MONITOR ON *.* TO seeder@'127.0.0.1'")
        cur.execute("GRANT SELECT, SHOW VIEW, TRIGGER ON *.* TO seeder@'127.0.0.1'")  # reads all, as observing does
    lean_store, store = tmp_path / "lean.duckdb", tmp_path / "s.duckdb"
    lean = server.login_dsn("shop", "seeder", SEEDER_PASSWORD)
    assert advisor("targets", "add", "--name", "lean", "--dsn", lean, store=lean_store, env=env).returncode == 0
    checked = advisor("targets", "check", "lean", store=lean_store, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # a note, no blocker: the dump seeds it
    notes = [line for line in checked.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "seeded by mariadb-dump, not mariadb-backup" in notes[0], checked.stdout
    assert "lacks PROCESS, LOCK TABLES" in notes[0] and "GRANT PROCESS, LOCK TABLES ON *.* TO 'seeder'" in notes[0]
    assert "ready: " in checked.stdout and SEEDER_PASSWORD not in checked.stdout + checked.stderr
    from fastapi.testclient import TestClient

    from web.main import create_app

    lean_app = create_app(str(lean_store), scheduler=False)
    with TestClient(lean_app) as client:  # REST says the same notes
        _, token = lean_app.state.service.create_token("op", "operator")
        rest = client.get("/api/targets/lean/check", headers={"Authorization": f"Bearer {token}"})
    assert rest.status_code == 200 and rest.json()["ready"] and rest.json()["missing"] == [], rest.text
    assert ["note: " + note for note in rest.json()["notes"]] == notes and SEEDER_PASSWORD not in rest.text

    added = advisor("targets", "add", "--name", "full", "--dsn", dsn, "--replica", store=store, env=env)
    assert added.returncode == 0, added.stderr
    try:
        assert "note: " not in advisor("targets", "check", "full", store=store, env=env).stdout
        table = advisor("targets", "list", store=store, env={**env, "COLUMNS": "250"}).stdout
        assert "seeded by mariadb-backup" in table, table
        from tests.web.logins import log_in

        app = create_app(str(store), scheduler=False)
        with TestClient(app) as client:  # the targets page says it beside the lag
            _, token = app.state.service.create_token("op", "operator")
            assert log_in(client, token).status_code == 303
            assert "(seeded by mariadb-backup)" in client.get("/").text
    finally:
        assert advisor("targets", "remove", "full", store=store, env=env).returncode == 0
