"""``Connector.check_sql``: PostgreSQL's own parser and parse analysis on a statement before any work, without
running it: the server's message and the position in the statement; one command only; nothing changes."""

from __future__ import annotations

import pytest

from advisor.core.errors import BadStatement
from connectors import factory
from tests.conftest import run, scalar


@pytest.fixture
def orders(db):
    run(db, "CREATE TABLE orders (id int PRIMARY KEY, total numeric)", "INSERT INTO orders VALUES (1, 5), (2, 7)")
    return factory.connector(db)


@pytest.mark.parametrize("sql, reason, position", [
    ("SELEC id FROM orders", 'syntax error at or near "SELEC"', 1),
    ("SELECT id FROM orders WHERE id >", "syntax error at end of input", 33),
    ("SELECT id FROM orders\nWHERE totl > 1", 'column "totl" does not exist', 29),
    ("SELECT id FROM order_lines", 'relation "order_lines" does not exist', 16),
    ("SELECT 'open", 'unterminated quoted string at or near "\'open"', 8),
])
def test_the_servers_message_and_position_in_the_statement(orders, sql, reason, position):
    with pytest.raises(BadStatement) as e:
        orders.check_sql(sql)
    assert (e.value.reason, e.value.position) == (reason, position)
    assert e.value.message == f"{reason} (position {position})"


def test_statements_the_server_takes_are_not_run(orders, db):
    for sql in ("SELECT id FROM orders WHERE id = $1", "SELECT id FROM orders WHERE $1 IS NULL",
                "DELETE FROM orders", "UPDATE orders SET total = 0"):
        orders.check_sql(sql)  # parses and resolves; parameters of any type are allowed
    assert scalar(db, "SELECT count(*) FROM orders WHERE total > 0") == 2  # nothing ran


def test_a_smuggled_second_command_is_refused_whole(orders, db):
    with pytest.raises(BadStatement, match="cannot insert multiple commands"):
        orders.check_sql("SELECT 1; COMMIT; DROP TABLE orders")
    assert scalar(db, "SELECT count(*) FROM orders") == 2
