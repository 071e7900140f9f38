"""The CLI with a MariaDB target (``mariadb://``), against the session's real MariaDB sandbox: observe, register,
list and observe a registered target, and bad DSNs answered in one line without the password. ``mysql://``, the old
scheme of MariaDB targets, still opens one (given or stored) and says a one-line notice when given."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.connectors.mariadb.conftest import mrun
from tests.advisor.cli.test_cli_service import cli, ok

SECRET = "cli-Pa55-never-printed"  # the password test_cli_service's ``cli`` checks never appears in any output


@pytest.fixture(scope="module")
def shop(maria):
    """A MariaDB database with two tables, a login that needs a password, and a few statements run on it."""
    name = "shop_" + uuid.uuid4().hex[:8]
    maria.create_database(name)
    maria.add_login("shopper", SECRET)
    dsn = f"mariadb://shopper:{SECRET}@127.0.0.1:{maria.port}/{name}"
    mrun(dsn, "CREATE TABLE customers (id INT PRIMARY KEY, city VARCHAR(30))",
         "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, amount DECIMAL(10, 2))",
         "INSERT INTO customers SELECT seq, CONCAT('city', seq % 7) FROM seq_1_to_500",
         "INSERT INTO orders SELECT seq, seq % 500, seq % 97 FROM seq_1_to_5000",
         *(f"SELECT * FROM orders WHERE customer_id = {k}" for k in range(5)))
    return dsn


NOTICE = "note: mysql:// is read as MariaDB for now and will mean MySQL once MySQL is supported"


def test_observe_a_mariadb_target(tmp_path, shop):
    res = cli(tmp_path, "observe", "--json", env={"ADVISOR_TARGET_DSN": shop})
    assert "mysql://" not in res.stderr  # mariadb:// is the scheme: no notice
    doc = ok(res)
    assert doc["database"] == shop.rsplit("/", 1)[1] and doc["server"].startswith("MariaDB 10.")
    assert doc["snapshot_id"] is None  # not registered: observed, not stored
    st = next(s for s in doc["workload"]["statements"] if "customer_id" in s["sql"] and s["sql"].startswith("SELECT"))
    assert st["calls"] == 5 and "$1" in st["sql"]  # one normalized statement, in the neutral placeholder form
    assert {t["name"] for t in doc["tables"]} == {"customers", "orders"}
    text = cli(tmp_path, "observe", "--top", "3", env={"ADVISOR_TARGET_DSN": shop, "COLUMNS": "120"})
    assert text.returncode == 0, text.stderr
    first = text.stdout.splitlines()[0]
    assert " on MariaDB 10." in first and "PostgreSQL" not in text.stdout


def test_register_list_and_observe_a_mariadb_target(tmp_path, shop):
    old_scheme = shop.replace("mariadb://", "mysql://", 1)
    added = cli(tmp_path, "targets", "add", "--name", "mshop", "--json", env={"ADVISOR_TARGET_DSN": old_scheme})
    # the old scheme opens the MariaDB target, and says so in one progress line on stderr (stdout stays JSON)
    assert added.stderr.count(NOTICE) == 1 and "Warning" not in added.stderr, added.stderr
    target = ok(added)
    assert target["engine"] == "mariadb" and target["registered"] and SECRET not in target["dsn"]
    assert target["dsn"].startswith("mysql://shopper@127.0.0.1:")  # stored as given
    assert target["last_summary"]["server"].startswith("MariaDB 10.")
    assert SECRET.encode() not in (tmp_path / "advisor.duckdb").read_bytes()
    [listed] = ok(cli(tmp_path, "targets", "list", "--json"))["targets"]
    assert (listed["name"], listed["engine"]) == ("mshop", "mariadb")
    stored = cli(tmp_path, "targets", "observe", "mshop", "--json")  # a stored mysql:// target still opens
    assert NOTICE not in stored.stderr  # the notice is for DSNs given, not every run of a stored target
    again = ok(stored)
    assert again["target_id"] == target["id"] and again["snapshot_id"]
    # the same database through the DSN is the registered target (its identity, not the DSN's text)
    by_dsn = ok(cli(tmp_path, "observe", "--json", env={"ADVISOR_TARGET_DSN": shop.replace("127.0.0.1", "localhost")}))
    assert by_dsn["target_id"] == target["id"]
    moved = ok(cli(tmp_path, "targets", "update", "mshop", "--json",
                   env={"ADVISOR_TARGET_DSN": shop.replace("127.0.0.1", "localhost")}))
    assert moved["id"] == target["id"] and moved["dsn"].startswith("mariadb://shopper@localhost:")


@pytest.mark.parametrize("wrong, says", [
    ("mysql://shopper:not-the-{secret}@127.0.0.1:{port}/{db}", "Access denied"),
    ("mariadb://shopper:{secret}@127.0.0.1:1/{db}", "cannot connect to 127.0.0.1:1/"),
    ("mariadb://shopper:{secret}@[::1/{db}", "invalid DSN"),
    ("mysql://shopper:{secret}@127.0.0.1:{port}/no_such_db", "no_such_db"),
])
def test_a_bad_mysql_dsn_is_one_line_without_the_password(tmp_path, shop, maria, wrong, says):
    dsn = wrong.format(secret=SECRET, port=maria.port, db=shop.rsplit("/", 1)[1])
    for args in (("observe",), ("targets", "add", "--name", "bad")):
        res = cli(tmp_path, *args, env={"ADVISOR_TARGET_DSN": dsn})
        lines = [line for line in res.stderr.splitlines() if not line.startswith("[")]  # progress lines aside
        assert res.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: "), res.stderr
        assert says in lines[0] and "Traceback" not in res.stderr and res.stdout == ""
