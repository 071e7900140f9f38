"""Keeping the password out of argv: every CLI option that takes a target DSN also takes ``env:VAR``,
``file:PATH``, ``-`` (stdin), ADVISOR_TARGET_DSN when left out, and a libpq service with a password file, against
a real server that asks for a password (scram-sha-256). The password is in no output, and errors name the source,
never the DSN."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psycopg
import pytest

from connectors.postgres.sandbox import PostgresSandbox
from tests.conftest import FAST

PASSWORD = "dsn-Pa55-MARKER-never-printed"


def cli(tmp_path, *args, env=None, stdin=""):
    base = {k: v for k, v in os.environ.items() if k not in ("ADVISOR_TARGET_DSN", "PGSERVICEFILE", "PGPASSFILE")}
    full = {**base, "ADVISOR_STORE": str(tmp_path / "s.duckdb"), "ADVISOR_KEY_FILE": str(tmp_path / "k.key"),
            "PGPASSFILE": str(tmp_path / "no-passfile"), **(env or {})}
    res = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, env=full,
                         input=stdin, timeout=300)
    assert PASSWORD not in res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    return res


@pytest.fixture(scope="module")
def server():
    """A server of its own where the role ``alice`` must give her password over TCP; the database ``shop`` with a
    small workload run by alice."""
    with PostgresSandbox("pwauth", settings=FAST) as sandbox:
        sandbox.create_database("shop")
        with psycopg.connect(sandbox.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE alice LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
        hba = sandbox.data / "pg_hba.conf"
        hba.write_text("host all alice 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        with psycopg.connect(sandbox.dsn(), autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
        plain = f"host=127.0.0.1 port={sandbox.port} user=alice dbname=shop"
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(plain).close()  # the password is really needed
        with psycopg.connect(f"{plain} password={PASSWORD}", autocommit=True) as conn:
            conn.execute("CREATE TABLE t (id int PRIMARY KEY, g int)")
            conn.execute("INSERT INTO t SELECT x, x % 10 FROM generate_series(1, 20000) x")
            conn.execute("ANALYZE t")
            conn.execute("SELECT pg_stat_statements_reset()")
            for k in range(3):
                conn.execute(f"SELECT g, count(*) FROM t WHERE id > {k * 100} GROUP BY g ORDER BY g")
        yield sandbox, plain


def secret_file(tmp_path, text: str, mode: int = 0o600):
    path = tmp_path / "target.dsn"
    path.write_text(text)
    path.chmod(mode)
    return path


def observed(res) -> dict:
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["database"] == "shop" and any("GROUP BY" in s["sql"] for s in doc["workload"]["statements"])
    return doc


def test_observe_reads_the_dsn_from_each_source(server, tmp_path):
    sandbox, plain = server
    dsn = f"{plain} password={PASSWORD}"
    url = f"postgresql://alice:{PASSWORD}@127.0.0.1:{sandbox.port}/shop"
    observed(cli(tmp_path, "observe", "--target", "env:SHOP_DSN", "--register", "shop", "--json",
                 env={"SHOP_DSN": dsn}))
    observed(cli(tmp_path, "observe", "--json", env={"ADVISOR_TARGET_DSN": dsn}))  # --target left out
    observed(cli(tmp_path, "observe", "--target", f"file:{secret_file(tmp_path, url + chr(10) + 'ignored')}",
                 "--json"))
    observed(cli(tmp_path, "observe", "-t", "-", "--json", stdin=dsn + "\n"))
    res = cli(tmp_path, "observe", "--target", "env:SHOP_DSN", env={"SHOP_DSN": dsn})  # progress and the table
    assert res.returncode == 0 and f"127.0.0.1 port={sandbox.port}" in res.stderr
    targets = json.loads(cli(tmp_path, "targets", "list", "--json").stdout)["targets"]
    assert [t["name"] for t in targets] == ["shop"]  # one target, whatever the source (registered explicitly)


def test_a_libpq_service_and_password_file(server, tmp_path):
    sandbox, _ = server
    (tmp_path / "pg_service.conf").write_text(f"# services\n[shop]\nhost=127.0.0.1\nport={sandbox.port}\n"
                                              f"user=alice\ndbname=shop\n\n[other]\nport=1\n")
    passfile = secret_file(tmp_path, f"127.0.0.1:{sandbox.port}:*:alice:{PASSWORD}\n")
    env = {"PGSERVICEFILE": str(tmp_path / "pg_service.conf"), "PGPASSFILE": str(passfile)}
    observed(cli(tmp_path, "observe", "--target", "service=shop", "--register", "svc", "--json", env=env))
    targets = json.loads(cli(tmp_path, "targets", "list", "--json").stdout)["targets"]
    assert [t["name"] for t in targets] == ["svc"]  # registered explicitly (issue 29: no by-hand target cards)
    # a knob run through the service: the shadow's pg_dump finds the password in the password file as well
    res = cli(tmp_path, "tune", "knobs", "--target", "service=shop", "--optimizer", "rules", "--seeds", "0",
              "--no-validate", "--memory-gb", "4", "--cores", "2", "--json", env=env)
    assert res.returncode == 0, res.stderr
    assert [t["status"] for t in json.loads(res.stdout)["trials"]] == ["measured", "measured"]
    without = cli(tmp_path, "observe", "--target", "service=shop", env={**env, "PGPASSFILE": str(tmp_path / "x")})
    assert without.returncode == 1 and "password" in without.stderr.strip().splitlines()[-1]


def test_tune_and_register_take_every_source(server, tmp_path):
    _, plain = server
    dsn = f"{plain} password={PASSWORD}"
    res = cli(tmp_path, "tune", "indexes", "--target", f"file:{secret_file(tmp_path, dsn)}", "--register",
              "from-file", "--budget-mb", "5", "--optimizer", "extend", "--no-validate", "--json")
    assert res.returncode == 0, res.stderr
    # one database is one target (issue 29): each registration below follows the removal of the one before
    assert cli(tmp_path, "targets", "remove", "from-file").returncode == 0
    res = cli(tmp_path, "targets", "add", "--name", "from-env", "--dsn", "env:SHOP_DSN", "--json",
              env={"SHOP_DSN": dsn})
    assert res.returncode == 0 and json.loads(res.stdout)["registered"], res.stderr
    assert cli(tmp_path, "targets", "remove", "from-env").returncode == 0
    res = cli(tmp_path, "targets", "add", "--name", "from-stdin", "--dsn", "-", "--json", stdin=dsn + "\n")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "s.duckdb").exists() and PASSWORD.encode() not in (tmp_path / "s.duckdb").read_bytes()


@pytest.mark.parametrize("args, env, stdin, message", [
    (["observe"], {}, "", "no target database: give --target"),
    (["observe", "--target", "env:NOT_SET_ANYWHERE"], {}, "", "NOT_SET_ANYWHERE is not set"),
    (["observe", "--target", "env:EMPTY"], {"EMPTY": " "}, "", "EMPTY is not set or empty"),
    (["observe", "--target", "file:/nonexistent/dsn"], {}, "", "file:/nonexistent/dsn: no such file"),
    (["observe", "--target", "file:"], {}, "", "no file name"),
    (["observe", "--target", "file:/tmp"], {}, "", "is a directory"),
    (["observe", "--target", "-"], {}, "\n", "no DSN on stdin"),
    (["tune", "knobs", "--target", "env:NOT_SET_ANYWHERE"], {}, "", "NOT_SET_ANYWHERE is not set"),
    (["tune", "indexes", "--budget-mb", "5"], {}, "", "no target database"),
    (["targets", "add", "--name", "x", "--dsn", "file:/nonexistent/dsn"], {}, "", "no such file"),
    (["targets", "add", "--name", "x"], {}, "", "no DSN on stdin"),
])
def test_sources_that_give_no_dsn_are_usage_errors(tmp_path, args, env, stdin, message):
    res = cli(tmp_path, *args, env=env, stdin=stdin)
    assert res.returncode == 2 and res.stdout == "", res.stderr
    errors = [ln for ln in res.stderr.strip().splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0], res.stderr


def test_a_dsn_file_others_can_read_is_refused(server, tmp_path):
    _, plain = server
    path = secret_file(tmp_path, f"{plain} password={PASSWORD}\n", mode=0o644)
    res = cli(tmp_path, "observe", "--target", f"file:{path}")
    assert res.returncode == 2 and "accessible by other users (mode 0644)" in res.stderr and "chmod 600" in res.stderr
    empty = secret_file(tmp_path, "\nhost=x\n")
    res = cli(tmp_path, "observe", "--target", f"file:{empty}")
    assert res.returncode == 2 and "first line is empty" in res.stderr


def test_a_bad_dsn_from_a_file_is_not_repeated(tmp_path):
    """A DSN libpq refuses, read from a file: the error names the problem, not the DSN (nor its password)."""
    path = secret_file(tmp_path, f"postgresql://alice:{PASSWORD}%ZZ@127.0.0.1:1/shop\n")
    res = cli(tmp_path, "observe", "--target", f"file:{path}")
    assert res.returncode == 1 and "invalid DSN" in res.stderr


@pytest.mark.parametrize("dsn, part", [
    (f"mysql://dba%22%0Alog-error%3D%22%2Ftmp%2Fx%22:{PASSWORD}@127.0.0.1:1/shop", "user"),
    (f"mysql://dba:{PASSWORD}%0D@127.0.0.1:1/shop", "password"),
    (f"postgresql://alice:{PASSWORD}@127.0.0.1:1/sh%0Aop", "dbname"),
    (f"host=127.0.0.1 port=1 user='a\nb' password={PASSWORD}", "user"),
])
def test_a_control_character_in_a_dsn_part_is_refused_on_the_command_line(tmp_path, dsn, part):
    """Issue 42 item 5: the CLI parses targets with the engines' parsers, which refuse a DSN part holding a
    control character (a line break in a user name injected an option into mariadb-dump's option file)."""
    res = cli(tmp_path, "targets", "add", "--name", "x", "--dsn", dsn)
    errors = [ln for ln in res.stderr.strip().splitlines() if ln.startswith("error: ")]
    assert res.returncode == 1 and len(errors) == 1, res.stderr
    assert f"the {part} holds a control character" in errors[0] and "log-error" not in res.stderr


# --- the DSN fuzz against the CLI's target parsing ----------------------------------------------------------------


def test_dsn_fuzz_parsing_and_connecting(pg):
    """``connectors.factory`` (what every command parses a target with): an AdvisorError or a connector, never
    another exception; the password in no message, display or name; no DSN value in an error."""
    from advisor.core.errors import AdvisorError
    from connectors import factory
    from connectors.postgres.sandbox import free_port
    from tests.dsn_fuzz import MARKER, VALUE, cases

    failures = []
    for dsn in cases(free_port(), pg.port):
        step = "engine_of"
        try:
            factory.engine_of(dsn)
            step = "connector"
            connector = factory.connector(dsn)
            step = "names"
            shown = connector.display_name + " " + connector.target_name
            assert MARKER not in shown, f"the password is shown: {shown[:200]}"
            step = "connect"
            connector.connect().close()
        except AdvisorError as e:
            if MARKER in e.message or VALUE in e.message:
                failures.append(f"{step}: {dsn[:100]!r} -> {e.message[:300]}")
        except Exception as e:  # noqa: BLE001 - what the fuzz looks for
            failures.append(f"{step}: {dsn[:100]!r} -> {type(e).__name__}: {str(e)[:200]}")
    assert not failures, f"{len(failures)}:\n" + "\n".join(failures[:20])


def test_dsn_fuzz_through_the_cli(pg, tmp_path, monkeypatch, capsys):
    """``advisor observe --target DSN`` (in this process: a NUL cannot be in a real argv) for fuzzed DSNs: a
    clean exit (one ``error:`` line, exit 1 or 2, no traceback) or an observation; the password nowhere."""
    import signal

    from advisor.cli.main import main
    from connectors.postgres.sandbox import free_port
    from tests.dsn_fuzz import MARKER, VALUE, cases

    monkeypatch.delenv("ADVISOR_TARGET_DSN", raising=False)
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "k.key"))
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    failures = []
    try:
        for dsn in cases(free_port(), pg.port)[::3]:  # a third of them: each opens the store (the parsing test has all)
            code = main(["observe", "--target", dsn, "--store", str(tmp_path / "s.duckdb")])
            out, err = capsys.readouterr()
            errors = [ln for ln in err.splitlines() if ln.startswith("error: ")]
            if code == 0:
                ok = not errors and MARKER not in out + err
            else:
                ok = (code in (1, 2) and len(errors) == 1 and "Traceback" not in err and MARKER not in out + err
                      and VALUE not in errors[0] and "internal error" not in errors[0])
            if not ok:
                failures.append(f"{dsn[:100]!r} -> {code}: {err[-300:]}")
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert not failures, f"{len(failures)}:\n" + "\n".join(failures[:20])
