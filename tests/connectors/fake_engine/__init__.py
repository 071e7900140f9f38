"""``fakesql``: a third engine made in the tests from exactly the files docs/engines.md ("Adding an engine") lists,
over SQLite from the standard library (a real engine that runs here: a database is one file, a "server" is a
directory of them). ``register(monkeypatch)`` adds it as an engine would be added (one ``ENGINES`` entry, its URL
scheme in ``SCHEMES``, its dialect key in ``connectors.dialects.SQLGLOT``); the connector conformance suite
(``tests/connectors/conformance.py``) then runs on it as on PostgreSQL and MariaDB.

It implements the core ``Connector`` role; its ``loader()`` and ``bench()`` refuse in one line (a role an engine
has not got yet), as the docs allow."""

from __future__ import annotations

ENGINE = "fakesql"
PACKAGE = __name__  # tests.connectors.fake_engine: where its parts are imported from, as connectors/<engine>/


def register(monkeypatch) -> None:
    """Add the engine to the factory for one test, exactly as docs/engines.md says an engine is added."""
    from connectors import dialects, factory

    monkeypatch.setitem(factory.ENGINES, ENGINE, factory.Engine(
        f"{PACKAGE}.connector:FakeConnector", f"{PACKAGE}.sandbox:FakeSandbox", f"{PACKAGE}.shadow:create_shadow",
        f"{PACKAGE}.connection:uses_local_identity"))
    monkeypatch.setitem(factory.SCHEMES, "sqlite", ENGINE)
    monkeypatch.setitem(dialects.SQLGLOT, "sqlite", "sqlite")
