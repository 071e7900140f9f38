"""One database is one target (issue 29): a DSN on the command line means the registered target of its database,
by the database's identity (server and database), not by the DSN's text; an unregistered database is registered
explicitly (``--register NAME``, ``advisor targets add``) or not stored at all; a second registration of one
database is refused with the first one's name; targets observed by hand before join the registered one."""

from __future__ import annotations

import json

import pytest

from advisor.bench.playground import create_shop
from advisor.core.errors import Conflict
from advisor.service.factory import build_service
from tests.advisor.cli.test_cli_service import cli, ok


@pytest.fixture(scope="module")
def shop(pg):
    return create_shop(pg, "identity_shop")


def other_text(dsn: str) -> str:
    """The same database under a DSN of another form and other options: a URL with an application name."""
    p = dict(part.split("=", 1) for part in dsn.split())
    login = f"{p['user']}:{p['password']}" if "password" in p else p["user"]  # a sandbox admits no one without
    return (f"postgresql://{login}@{p['host']}:{p['port']}/{p['dbname']}?application_name=dba-laptop"
            "&connect_timeout=7")


def names(tmp_path) -> list[str]:
    return [t["name"] for t in ok(cli(tmp_path, "targets", "list", "--json"))["targets"]]


def one_line_error(res, *fragments: str) -> str:
    assert res.returncode == 1, res.stdout + res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def test_two_dsn_texts_of_one_database_are_one_target(tmp_path, shop):
    target = ok(cli(tmp_path, "targets", "add", "--name", "shop", "--json", env={"ADVISOR_TARGET_DSN": shop}))
    for dsn in (shop, other_text(shop)):
        observed = ok(cli(tmp_path, "observe", "--target", dsn, "--json"))
        assert observed["target_id"] == target["id"] and observed["snapshot_id"]
    assert names(tmp_path) == ["shop"]
    assert ok(cli(tmp_path, "targets", "list", "--json"))["targets"][0]["last_observed_at"] is not None

    # registering the same database again, under any DSN and name, is refused with the first target's name
    res = cli(tmp_path, "targets", "add", "--name", "shop2", "--dsn", other_text(shop))
    one_line_error(res, "registered already as target 'shop'")
    assert names(tmp_path) == ["shop"]

    # --register with a database registered already: that target is used, nothing new is registered
    observed = ok(cli(tmp_path, "observe", "--target", other_text(shop), "--register", "third", "--json"))
    assert observed["target_id"] == target["id"] and names(tmp_path) == ["shop"]


def test_an_unregistered_dsn_leaves_no_target(tmp_path, shop):
    doc = ok(cli(tmp_path, "observe", "--target", shop, "--json"))
    assert doc["workload"]["statements"] and doc["target_id"] is None and doc["snapshot_id"] is None
    shown = cli(tmp_path, "observe", "--target", shop)
    assert shown.returncode == 0 and "orders" in shown.stdout
    assert "not stored" in shown.stderr and "not a registered target" in shown.stderr
    assert names(tmp_path) == []

    # tuning needs a registered target: refused before any work, in one line that says how to register
    res = cli(tmp_path, "tune", "knobs", "--target", shop, "--optimizer", "rules", "--no-validate")
    one_line_error(res, "not a registered target", "--register NAME")
    assert names(tmp_path) == [] and ok(cli(tmp_path, "runs", "list", "--json"))["runs"] == []

    # --register NAME registers it explicitly (credentials stored), and the run is stored under it
    res = ok(cli(tmp_path, "tune", "knobs", "--target", shop, "--register", "shop", "--optimizer", "rules",
                 "--no-validate", "--json"))
    (target,) = ok(cli(tmp_path, "targets", "list", "--json"))["targets"]
    assert target["name"] == "shop" and target["registered"]
    assert [r["target_id"] for r in ok(cli(tmp_path, "runs", "list", "--json"))["runs"]] == [target["id"]]
    assert res["run_id"]
    # from now on any DSN of that database means that target
    assert ok(cli(tmp_path, "observe", "--target", other_text(shop), "--json"))["target_id"] == target["id"]


def test_targets_observed_by_hand_join_the_registered_one(tmp_path, shop):
    """A store written before DSNs resolved by identity: the service's by-hand observations (library callers,
    benches) made a target named after the DSN; registering the database joins its history and forgets it."""
    store = tmp_path / "advisor.duckdb"
    service = build_service(store)
    try:
        by_hand = service.observe(shop)  # the service's default for library callers: a target of its own
        assert service.observe(other_text(shop)).target_id == by_hand.target_id  # its identity, not the text
        (twin,) = service.targets()
        assert not twin["registered"]
        registered = service.add_target("shop", other_text(shop))
        assert [t["name"] for t in service.targets()] == ["shop"]
        kept = {s["id"] for s in service.snapshots("shop")}
        assert by_hand.snapshot_id in kept and len(kept) == 3  # two by hand, one at registration
        with pytest.raises(Conflict, match="registered already as target 'shop'"):
            service.add_target("again", shop)
        assert json.dumps([t["id"] for t in service.targets()]) == json.dumps([registered["id"]])
    finally:
        service.store.close()


def test_a_registered_target_is_named_on_the_command_line(tmp_path, shop):
    target = ok(cli(tmp_path, "targets", "add", "--name", "byname", "--json", env={"ADVISOR_TARGET_DSN": shop}))
    observed = ok(cli(tmp_path, "observe", "--target", "byname", "--json"))  # its stored DSN, no DSN typed again
    assert observed["target_id"] == target["id"] and observed["snapshot_id"]
    assert observed["workload"]["statements"] and all("mean_ms" in s for s in observed["workload"]["statements"])
    missing = cli(tmp_path, "observe", "--target", "nosuchtarget")
    one_line_error(missing, "neither a DSN nor a registered target's name")
    assert "nosuchtarget" not in missing.stderr  # a word given there is never echoed: it may be a password


def test_a_new_dsn_reaching_another_targets_database_is_refused(tmp_path, shop, pg):
    """Issue 42 item 7 on the command line: ``targets update --other-database`` with the DSN of a database another
    target is registered for is refused in one line naming that target; the target keeps its DSN."""
    other = pg.create_database("identity_other")
    ok(cli(tmp_path, "targets", "add", "--name", "shop", "--json", env={"ADVISOR_TARGET_DSN": shop}))
    before = ok(cli(tmp_path, "targets", "add", "--name", "other", "--json", env={"ADVISOR_TARGET_DSN": other}))
    res = cli(tmp_path, "targets", "update", "other", "--other-database", env={"ADVISOR_TARGET_DSN": shop})
    one_line_error(res, "registered already as target 'shop'")
    after = next(t for t in ok(cli(tmp_path, "targets", "list", "--json"))["targets"] if t["name"] == "other")
    assert after["dsn"] == before["dsn"]
