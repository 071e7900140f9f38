"""Issue 42 item 5: no option can be injected into a client program through a MariaDB DSN. A user name or password
holding a line break (percent-encoded in the URL) is refused when the DSN is parsed, before anything runs; quotes,
backslashes and ``#`` are written into ``mariadb-dump``'s option file by the client library's own quoting rules, so
that a real login with such a name and password is copied from, and no injected line is ever read as an option."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from advisor.core.errors import TargetUnreachable
from connectors import factory
from tests.connectors.mariadb.conftest import mrows, mrun

ODD_USER = "dba\"#'\\x"  # a double quote, a comment sign, a single quote and a backslash
ODD_PASSWORD = "p\"w#'\\z \\\""


def url(maria, user: str, password: str, dbname: str, host: str | None = None) -> str:
    return (f"mysql://{quote(user, safe='')}:{quote(password, safe='')}@{host or maria.host}:{maria.port}/"
            f"{quote(dbname, safe='')}")


@pytest.fixture
def source(maria, mdb):
    mrun(mdb, "CREATE TABLE items (id int PRIMARY KEY, note varchar(20))", "INSERT INTO items VALUES (1, 'a'), (2, 'b')")
    return mdb.rsplit("/", 1)[1]


def test_a_login_with_quotes_backslashes_and_a_hash_is_copied_from(maria, source):
    maria.add_login(ODD_USER, ODD_PASSWORD)
    dsn = url(maria, ODD_USER, ODD_PASSWORD, source)
    with factory.clone(factory.connector(dsn)) as shadow:
        assert mrows(shadow.dsn, "SELECT id, note FROM items ORDER BY id") == [(1, "a"), (2, "b")]


@pytest.mark.parametrize("part", ["user", "password", "host", "database"])
@pytest.mark.parametrize("bad", ["\n", "\r", "\x00", "\t", "\x1b"])
def test_a_control_character_in_any_part_is_refused_in_one_line(maria, source, tmp_path, part, bad):
    """The injection of the issue (a user ``dba"`` + newline + ``log-error="<path>"``, a real login on the server)
    and the same in every other part: refused when parsed, naming the part and never repeating its value; nothing
    is dumped and no file is made."""
    made = tmp_path / "injected.log"
    injected = f'dba"{bad}log-error="{made}"'
    if part == "user" and bad == "\n":
        maria.add_login(injected, "pw")  # the server takes such a name: only the advisor can refuse it
    parts = {"user": "dba", "password": "pw", "host": maria.host, "database": source, part: injected}
    dsn = url(maria, parts["user"], parts["password"], parts["database"], host=quote(parts["host"], safe=""))
    with pytest.raises(TargetUnreachable, match=f"invalid DSN: the {part} holds a control character") as e:
        factory.clone(factory.connector(dsn))
    assert "\n" not in e.value.message and str(made) not in e.value.message and "log-error" not in e.value.message
    assert not made.exists()


@pytest.mark.parametrize("option", ["unix_socket=/tmp/x%0Aplugin-dir%3D/tmp", "charset=utf8%0A",
                                    "connect_timeout=5%0A"])
def test_a_control_character_in_a_query_option_is_refused(maria, option):
    with pytest.raises(TargetUnreachable, match="invalid DSN: the (unix_socket|charset|connect_timeout) holds a control"):
        factory.connector(f"mysql://dba@{maria.host}:{maria.port}/x?{option}")


def test_an_unencoded_line_break_is_refused_not_dropped(maria):
    """urlsplit drops a raw tab or line break from a URL without a word: the DSN is refused instead."""
    with pytest.raises(TargetUnreachable, match="invalid DSN: the URL holds a control character"):
        factory.connector(f"mysql://dba\nlog-error=x:pw@{maria.host}:{maria.port}/x")
