"""What the store accepts and where it lives, on both backends (a DuckDB file and a database on the session's real
PostgreSQL server): NUL bytes refused alike, id-like names refused, ambiguous references an error; the DuckDB files
private to their user; ADVISOR_STORE in either DSN form, and a value that is neither a DSN nor a path refused."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from advisor.core.errors import AdvisorError, Ambiguous, InvalidInput, NotFound, StoreError
from advisor.storage.store import Store
from tests.advisor.storage.test_store import STORE_LOGIN, STORE_PASSWORD, _rec, location, pg_schema_version, pg_url  # noqa: F401

NUL = "\x00"


def test_a_nul_byte_is_refused_alike_by_both_stores(location):
    with Store(location) as s:
        tid = s.upsert_target("shop", "postgres", "host=x")
        s.add_recommendation(_rec())
        for lookup in (lambda: s.target("a" + NUL), lambda: s.run("r" + NUL), lambda: s.recommendation("x" + NUL),
                       lambda: s.token("t" + NUL), lambda: s.audit_log("s" + NUL),
                       lambda: s.recommendations(target_id=NUL), lambda: s.upsert_target("n" + NUL, "postgres", "x"),
                       lambda: s.transition("r1", "validated", "advisor", note=NUL)):
            with pytest.raises(InvalidInput, match=r"NUL|U\+0000"):
                lookup()
        assert s.recommendation("r1").state == "proposed"  # the refused note changed nothing
        assert [t["id"] for t in s.targets()] == [tid]


def test_names_that_read_as_ids_are_refused_by_the_store_itself(location):
    with Store(location) as s:
        tid = s.upsert_target("shop", "postgres", "host=x")
        for name in (tid, tid.upper(), "0123456789ab"):
            with pytest.raises(InvalidInput, match="look like an id"):
                s.register_target(name, "postgres", "host=y", "creds")
            with pytest.raises(InvalidInput, match="look like an id"):
                s.add_token(name, "viewer", "hash-" + name, "admin")
        s.upsert_target("0123456789abc", "postgres", "host=z")  # 13 digits: not an id's length


def test_an_ambiguous_reference_is_an_error_and_ids_always_resolve(location):
    with Store(location) as s:
        victim = s.upsert_target("victim", "postgres", "host=victim")
        s.db.execute("INSERT INTO targets (id, name, engine, dsn, created_at) VALUES (?, ?, 'postgres', ?, 0)",
                     ["b2" * 6, victim, "host=impostor"])  # as a store of an earlier version could hold
        with pytest.raises(Ambiguous, match="b2b2b2b2b2b2"):
            s.target(victim)
        assert s.target_by_id(victim)["dsn"] == "host=victim"
        assert s.target("victim")["id"] == victim and s.target("b2" * 6)["name"] == victim
        with pytest.raises(NotFound):
            s.target_by_id("victim")  # a name is never an internal reference


def _modes(directory) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir()}


@pytest.fixture
def umask():
    """Restores the process's umask after the test (opening a DuckDB store makes it 077)."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def test_the_duckdb_store_is_private_to_its_user(tmp_path, umask):
    home = tmp_path / "new" / "db-advisor"
    with Store(home / "advisor.duckdb") as s:
        s.add_recommendation(_rec())  # a write: DuckDB creates its .wal now
        modes = _modes(home)
        assert modes["advisor.duckdb.wal"] == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert _modes(home)["advisor.duckdb"] == 0o600
    # a store created before this rule (0644 in a directory the user chose) is made private when opened
    os.umask(0o022)
    os.chmod(tmp_path, 0o755)
    loose = tmp_path / "loose.duckdb"
    Store(loose).close()
    os.chmod(loose, 0o644)
    with Store(loose) as s:
        s.add_recommendation(_rec())
        assert _modes(tmp_path)["loose.duckdb"] == 0o600 and _modes(tmp_path)["loose.duckdb.wal"] == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755  # a directory the user chose keeps its mode


def _cli(env_store: str, cwd, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ADVISOR_STORE": env_store, "ADVISOR_SECRET_KEY": "", "ADVISOR_KEY_FILE": str(cwd / "k")}
    return subprocess.run([sys.executable, "-m", "advisor", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_keyword_dsn_store_is_the_postgresql_database_not_a_file(pg, tmp_path):
    url = pg_url(pg)
    keywords = (f"host={pg.host} port={pg.port} dbname={url.rsplit('/', 1)[1]} user={STORE_LOGIN} "
                f"password={STORE_PASSWORD}")
    done = _cli(keywords, tmp_path, "targets", "list", "--json")
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []  # no DuckDB file named after the DSN (password included)
    assert pg_schema_version(url) >= 1  # the store went into the database
    with Store(keywords) as s:
        assert STORE_PASSWORD not in s.path and s.shared


@pytest.mark.parametrize("value,says", [
    (f"host=127.0.0.1 dbnme=advisor password={STORE_PASSWORD}", "looks like a PostgreSQL keyword DSN"),
    ("mysql://u@127.0.0.1/advisor", "is a URL db-advisor cannot keep its store in"),
    ("  ", "not a file path"),
])
def test_a_store_that_is_neither_a_dsn_nor_a_path_is_one_clear_line(tmp_path, value, says):
    with pytest.raises(StoreError, match=says):
        Store(value)
    done = _cli(value, tmp_path, "targets", "list")
    assert done.returncode == 1 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert STORE_PASSWORD not in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_run_is_marked_interrupted_only_if_its_row_did_not_move_meanwhile(location):
    with Store(location) as s:
        tid = s.upsert_target("shop", "postgres", "host=x")
        s.add_run("run1", tid, "knobs", "random", {})
        seen = s.run("run1")["updated_at"]
        s.update_run("run1", progress={"line": "resumed elsewhere"})  # another process moved it on
        assert not s.interrupt_run("run1", seen, "killed") and s.run("run1")["state"] == "running"
        assert s.interrupt_run("run1", s.run("run1")["updated_at"], "killed")
        assert s.run("run1")["state"] == "interrupted" and s.run("run1")["error"] == "killed"


def test_resume_refuses_a_run_a_live_process_holds_or_of_another_target(tmp_path):
    from advisor.service.service import AdvisorService

    with Store(tmp_path / "s.duckdb") as s:
        service = AdvisorService(s)
        tid, other = s.upsert_target("shop", "postgres", "host=x"), s.upsert_target("other", "postgres", "host=y")
        s.add_run("run1", tid, "knobs", "random", {})  # owned by this (live) process
        with pytest.raises(AdvisorError, match="running in another process"):
            service.open_run(tid, "knobs", "random", {}, resume="run1")
        with pytest.raises(AdvisorError, match="another target"):
            service.open_run(other, "knobs", "random", {}, resume="run1")
        s.interrupt_run("run1", s.run("run1")["updated_at"], "killed")
        assert service.open_run(tid, "knobs", "random", {}, resume="run1") == "run1"
        assert s.run("run1")["state"] == "running"
