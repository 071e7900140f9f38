"""Our dialect keys that are not sqlglot's own names, as sqlglot dialect plugins (``connectors.dialects``): each
reads and writes exactly as the dialect it maps to (the same tokenizer, parser and generator). sqlglot loads one
through the ``sqlglot.dialects`` entry points of ``pyproject.toml`` the first time its key is asked for.

>>> from sqlglot.dialects.dialect import Dialect
>>> type(Dialect.get_or_raise("mariadb")).__name__, Mariadb.parser_class is MySQL.parser_class
('Mariadb', True)
"""

from __future__ import annotations

from sqlglot.dialects.mysql import MySQL


class Mariadb(MySQL):
    """MariaDB, read and written as sqlglot's MySQL."""

    Tokenizer = MySQL.tokenizer_class
    Parser = MySQL.parser_class
    Generator = MySQL.generator_class
