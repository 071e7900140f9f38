"""The SQL dialects of the engines, under keys of our own: ``postgres``, ``mariadb`` and ``mysql`` (MySQL, not
supported yet). A connector's ``dialect`` is one of these keys; code above ``connectors`` passes it down as data
and keys on it (the rewrite rules' ``DIALECTS`` say where they hold by these keys, so a rule can hold in MySQL and
not in MariaDB), never on sqlglot's name.

``SQLGLOT`` is the one place where a key maps to the sqlglot dialect it is read and written as. sqlglot has no
MariaDB dialect: each key that is not sqlglot's own name is a sqlglot dialect plugin of ours
(``connectors.sqlglot_dialects``, named in ``pyproject.toml``'s ``sqlglot.dialects`` entry points), which sqlglot
loads the first time the key is asked for, so that a key can be handed to sqlglot wherever a dialect goes
(``parse_one(sql, read=connector.dialect)``) and nothing imports sqlglot before it is used (``advisor --help``).

>>> import sqlglot
>>> SQLGLOT["mariadb"], sqlglot.transpile("SELECT `a b` FROM t LIMIT 1", read="mariadb", write="postgres")
('mysql', ['SELECT "a b" FROM t LIMIT 1'])
"""

from __future__ import annotations

SQLGLOT = {"postgres": "postgres", "mariadb": "mysql", "mysql": "mysql"}  # our key -> sqlglot's dialect name


def sqlglot_name(key: str) -> str:
    """The sqlglot dialect ``key`` is read and written as.

    >>> sqlglot_name("mariadb"), sqlglot_name("postgres")
    ('mysql', 'postgres')
    """
    return SQLGLOT[key]
