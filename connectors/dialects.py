"""The SQL dialects of the engines, under keys of our own: ``postgres``, ``mariadb`` and ``mysql`` (MySQL, not
supported yet). A connector's ``dialect`` is one of these keys; code above ``connectors`` passes it down as data
and keys on it (the rewrite rules' ``DIALECTS`` say where they hold by these keys, so a rule can hold in MySQL and
not in MariaDB), never on sqlglot's name.

``SQLGLOT`` is the one place where a key maps to the sqlglot dialect it is read and written as. sqlglot has no
MariaDB dialect: each key that is not sqlglot's own name is registered with sqlglot here (``registered``), as a
dialect that reads and writes exactly as the one it maps to (the same tokenizer, parser and generator), so that a
key can be handed to sqlglot wherever a dialect goes (``parse_one(sql, read=connector.dialect)``). Importing
``connectors.base`` registers them.

>>> import sqlglot
>>> SQLGLOT["mariadb"], sqlglot.transpile("SELECT `a b` FROM t LIMIT 1", read="mariadb", write="postgres")
('mysql', ['SELECT "a b" FROM t LIMIT 1'])
"""

from __future__ import annotations

from sqlglot.dialects.dialect import Dialect

SQLGLOT = {"postgres": "postgres", "mariadb": "mysql", "mysql": "mysql"}  # our key -> sqlglot's dialect name


def sqlglot_name(key: str) -> str:
    """The sqlglot dialect ``key`` is read and written as.

    >>> sqlglot_name("mariadb"), sqlglot_name("postgres")
    ('mysql', 'postgres')
    """
    return SQLGLOT[key]


def registered() -> dict[str, type[Dialect]]:
    """Register with sqlglot every key that is not a sqlglot dialect's name, as a subclass of the dialect it maps to
    that keeps that dialect's tokenizer, parser and generator (sqlglot registers a ``Dialect`` subclass under its
    class name, lower case); the sqlglot dialect class of each key."""
    out: dict[str, type[Dialect]] = {}
    for key, name in SQLGLOT.items():
        base = Dialect.get_or_raise(name).__class__
        if key != name and Dialect.get(key) is None:
            type(key.capitalize(), (base,), {"Tokenizer": base.tokenizer_class, "Parser": base.parser_class,
                                             "Generator": base.generator_class, "__module__": __name__})
        out[key] = Dialect.get_or_raise(key).__class__
    return out


DIALECTS = registered()
