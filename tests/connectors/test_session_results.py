"""A connector session's results with their column names (``Session.fetch``, ``Session.columns``), as the
rewrite equivalence check reads them, against a real PostgreSQL: names as the engine gives them, no row read
for ``columns``, one statement only, and the advisor's own errors (the session stays usable after a failure)."""

import pytest

from advisor.core.errors import StatementFailed, StatementTimeout
from connectors import factory
from connectors.base import Session
from tests.conftest import run


@pytest.fixture
def shop(db):
    run(db, "CREATE TABLE c (id int PRIMARY KEY, name text)", "INSERT INTO c VALUES (1, 'a'), (2, NULL), (3, 'a')")
    return factory.connector(db)


def test_fetch_gives_the_engines_column_names_and_the_rows(shop):
    with shop.session(5_000) as session:
        assert isinstance(session, Session)
        names, rows = session.fetch("SELECT name, count(*) FROM c GROUP BY name ORDER BY name NULLS LAST")
        assert names == ["name", "count"] and rows == [("a", 2), (None, 1)]
        assert session.fetch("SELECT id FROM c WHERE id > 5") == (["id"], [])
        assert session.fetch("SET work_mem = '8MB'") == ([], [])  # no result set: no names, no rows


def test_columns_plans_the_query_without_reading_a_row(shop):
    with shop.session() as session:
        # a row read would divide by zero: the names come from the plan alone
        assert session.columns("SELECT id, 1 / (id - id) AS boom, substr(name, 1, 1) FROM c") == \
            ["id", "boom", "substr"]
        with pytest.raises(StatementFailed, match='column "nope" does not exist'):
            session.columns("SELECT nope FROM c")


def test_a_failure_or_a_timeout_leaves_the_session_usable(shop):
    with shop.session(200) as session:
        with pytest.raises(StatementFailed, match='column "idd" does not exist'):
            session.fetch("SELECT idd FROM c")
        with pytest.raises(StatementTimeout):
            session.fetch("SELECT pg_sleep(2)")
        assert session.fetch("SELECT count(*) FROM c") == (["count"], [(3,)])


def test_fetch_runs_exactly_one_statement(shop):
    with shop.session() as session:
        with pytest.raises(StatementFailed):
            session.fetch("SELECT 1; DROP TABLE c")
        assert session.fetch("SELECT count(*) FROM c")[1] == [(3,)]  # the table is still there
