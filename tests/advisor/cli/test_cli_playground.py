"""The playground a DBA starts from the README's quick start: a sized shop database whose login asks for its
password, as a production server does (a wrong one is refused with one line that does not echo it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import psycopg
import pytest

SECRET = "playground-Pa55"


@pytest.fixture(scope="module")
def playground(tmp_path_factory):
    out = tmp_path_factory.mktemp("playground")
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "playground", "--scale", "0.02", "--password", SECRET,
                             "--json"], stdout=subprocess.PIPE, stderr=open(out / "err.txt", "w"), text=True,
                            env={**os.environ, "ADVISOR_STORE": str(out / "a.duckdb"),
                                 "ADVISOR_KEY_FILE": str(out / "k.key")})
    try:
        lines = []
        for line in proc.stdout:  # one JSON document, pretty-printed, then the process keeps the workload going
            lines.append(line)
            if line.startswith("}"):
                break
        yield json.loads("".join(lines))["dsn"], out
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def cli(out, *args, dsn):
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ADVISOR_STORE": str(out / "a.duckdb"),
                               "ADVISOR_KEY_FILE": str(out / "k.key"), "ADVISOR_TARGET_DSN": dsn})


def test_the_playground_is_sized_and_asks_for_its_password(playground):
    dsn, out = playground
    assert "user=dba" in dsn and f"password={SECRET}" in dsn
    with psycopg.connect(dsn) as conn:  # the scale option sized the shop: 0.02 x 200,000 orders
        assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 4000
    wrong = dsn.replace(SECRET, "not-the-password")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong).close()
    refused = cli(out, "targets", "add", "--name", "shop", dsn=wrong)
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1 and "password authentication failed" in refused.stderr
    assert "not-the-password" not in refused.stderr + refused.stdout
    added = cli(out, "targets", "add", "--name", "shop", "--json", dsn=dsn)
    assert added.returncode == 0, added.stderr
    assert SECRET not in added.stdout + added.stderr


def test_the_playground_refuses_a_bad_scale_as_usage(tmp_path):
    res = subprocess.run([sys.executable, "-m", "advisor", "playground", "--scale", "0"], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2 and "--scale" in res.stderr


def test_the_playground_without_a_password_gets_a_random_one_not_a_guessable_default(tmp_path):
    """Issue 42 item 3: the login of a playground started without --password had the password "playground", which
    any local user could guess; now it is random, and only who reads the DSN printed gets in."""
    res = subprocess.run([sys.executable, "-m", "advisor", "playground", "--scale", "0.01", "--seconds", "0.1",
                          "--json"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "ADVISOR_STORE": str(tmp_path / "a.duckdb"),
                              "ADVISOR_KEY_FILE": str(tmp_path / "k.key")})
    assert res.returncode == 0, res.stderr
    password = psycopg.conninfo.conninfo_to_dict(json.loads(res.stdout)["dsn"])["password"]
    assert password != "playground" and len(password) >= 16
