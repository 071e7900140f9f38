"""The engine seam: one factory maps a DSN (or an engine name) to that engine's connector, sandbox and cloning,
and what it hands out satisfies the protocols of ``connectors.base``."""

import pytest

from advisor.core.domain import KnobChange
from advisor.core.errors import AdvisorError
from connectors import factory
from connectors.base import Connector, Sandbox, Shadow, WhatIf
from tests.conftest import FAST, run, scalar

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize("dsn", [
    "postgresql://bob@db.example:5432/shop",
    f"postgresql://bob:{SECRET}@db.example/shop?sslmode=require",
    "postgres://db.example/shop",
    "  PostgreSQL://db.example/shop",
    "host=db.example port=5432 dbname=shop user=bob",
    f"dbname=shop password={SECRET}",
    "host = db.example dbname=shop",
])
def test_postgres_dsns_in_every_form_are_postgres(dsn):
    assert factory.engine_of(dsn) == "postgres"


@pytest.mark.parametrize("dsn", [f"mysql://bob:{SECRET}@db.example:3306/shop", f"mariadb://bob:{SECRET}@db/shop",
                                 f"MySQL://root:{SECRET}@127.0.0.1/x"])
def test_mariadb_dsns_reach_the_mariadb_connector_without_echoing_the_password(dsn):
    # issue 30: mysql:// and mariadb:// were refused ("not supported yet"); now they are MariaDB targets
    assert factory.engine_of(dsn) == "mariadb"
    c = factory.connector(dsn)
    assert c.engine == "mariadb" and c.dialect == "mariadb" and SECRET not in c.display_name
    assert SECRET not in factory.target_name(dsn) and SECRET not in factory.redact(dsn)


def test_mysql_urls_still_mean_mariadb_with_a_notice_and_mariadb_urls_without_one():
    """``mariadb://`` is MariaDB's scheme; ``mysql://`` opens MariaDB as before (a stored target's DSN included)
    and has a one-line notice, for the service to say, that it will mean MySQL once MySQL is supported."""
    old, new = f"mysql://bob:{SECRET}@db/shop", f"mariadb://bob:{SECRET}@db/shop"
    assert factory.engine_of(old) == factory.engine_of(new) == "mariadb"
    assert factory.scheme_notice(new) is None and factory.scheme_notice("postgresql://db/shop") is None
    notice = factory.scheme_notice(old)
    assert notice.count("\n") == 0 and "MySQL" in notice and "mariadb://" in notice and SECRET not in notice
    assert factory.redact(old).startswith("mysql://bob@") and factory.redact(new).startswith("mariadb://bob@")


@pytest.mark.parametrize("dsn", [f"oracle://scott:{SECRET}@db/orcl", f"{SECRET}", "", f"db.example:5432 {SECRET}"])
def test_a_dsn_of_no_known_form_is_refused_without_echoing_it(dsn):
    with pytest.raises(AdvisorError) as e:
        factory.connector(dsn)
    assert SECRET not in str(e.value)
    assert "postgresql://" in str(e.value)  # says what would be accepted


def test_redact_never_returns_a_password():
    assert SECRET not in factory.redact(f"host=db.example dbname=shop user=bob password={SECRET}")
    assert SECRET not in factory.redact(f"postgresql://bob:{SECRET}@db.example/shop")
    assert SECRET not in factory.redact(f"host=db.example password='{SECRET} x' broken")  # unparsable
    assert set(factory.redact("host=db.example dbname=shop").split()) == {"host=db.example", "dbname=shop"}


def test_an_unknown_engine_name_is_refused():
    with pytest.raises(AdvisorError, match="engine oracle is not supported yet"):
        factory.sandbox("oracle", "x")

    class Elsewhere:
        engine = "oracle"

    with pytest.raises(AdvisorError, match="engine oracle is not supported yet"):
        factory.clone(Elsewhere())  # type: ignore[arg-type]


def test_every_engine_in_the_table_is_reachable_from_a_dsn_scheme():
    assert set(factory.ENGINES) <= set(factory.SCHEMES.values())


def test_connector_for_postgres_satisfies_the_protocol(db):
    c = factory.connector(db)
    assert isinstance(c, Connector) and c.engine == "postgres" and c.dsn == db
    assert c.target_name.startswith("127.0.0.1:") and c.target_name.endswith("/" + db.split("dbname=")[1])
    run(db, "CREATE TABLE t (id int PRIMARY KEY, a int)")
    assert c.table_columns()[("public", "t")] == ("id", "a")
    assert c.has_extension("hypopg") and not c.has_extension("no_such_extension")
    with factory.connect(db) as conn:  # a DB-API connection
        cur = conn.cursor()
        assert c.execute_one(cur, "SELECT 41 + 1").fetchone()[0] == 42
    with c.whatif() as session:
        assert isinstance(session, WhatIf)
        conn = session.conn
    assert conn.closed  # the session owned its connection


def test_restart_is_passed_to_the_connector(restartable):
    sandbox, _ = restartable
    calls = []
    c = factory.connector(sandbox.dsn(), restart=lambda: calls.append(1) or sandbox.restart())
    applied = c.apply([KnobChange("max_connections", "61")])
    assert applied.needs_restart and applied.restarted and calls == [1]
    c.revert(applied)
    assert calls == [1, 1]


def test_factory_sandbox_is_a_sandbox_with_a_restarting_connector():
    with factory.sandbox("postgres", "factory", settings=FAST) as sb:
        assert isinstance(sb, Sandbox) and sb.engine == "postgres" and sb.is_running()
        sb.wait_ready(5)
        dsn = sb.create_database("made")
        c = sb.connector("made")
        assert isinstance(c, Connector) and c.dsn == dsn
        assert scalar(dsn, "SHOW fsync") == "off"
        root = sb.root
    assert not sb.is_running() and not root.exists()


def test_clone_gives_a_shadow_with_the_same_data_and_settings(db):
    run(db, "CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL, note text)",
        "INSERT INTO orders SELECT g, g % 97, md5(g::text) FROM generate_series(1, 5000) g",
        "CREATE INDEX orders_customer ON orders (customer)", "ANALYZE orders")
    digest = "SELECT md5(string_agg(id::text || ':' || customer::text || ':' || note, ',' ORDER BY id)) FROM orders"
    target = factory.connector(db)
    with factory.clone(target, extra_settings={"work_mem": "7MB"}) as shadow:
        assert isinstance(shadow, Shadow) and isinstance(shadow.sandbox, Sandbox)
        assert isinstance(shadow.connector, Connector) and shadow.connector.engine == "postgres"
        assert shadow.dbname == db.split("dbname=")[1] and shadow.dsn != db
        assert shadow.restore_warnings == 0
        assert scalar(shadow.dsn, digest) == scalar(db, digest)
        assert scalar(shadow.dsn, "SELECT count(*) FROM orders") == 5000
        assert scalar(shadow.dsn, "SELECT count(*) FROM pg_indexes WHERE indexname = 'orders_customer'") == 1
        assert scalar(shadow.dsn, "SHOW work_mem") == "7MB"
        sandbox = shadow.sandbox
    assert not sandbox.is_running()
    assert scalar(db, "SHOW work_mem") != "7MB"  # the target is untouched
