"""The SQL a user gives a rewrite run (``--sql``, ``--file``, the REST ``sql`` field): its statements as written
(``split_statements``), each refused before any work when the target's own parser refuses it (``check``: a
syntax error, an unknown table or column, with the engine's message and position, naming which statement). At most ``MAX_STATEMENTS`` statements (the plan's ``max_statements`` bound), refused
before any is checked; the text's length is capped by the plan (``plan.SQL_MAX``)."""

from __future__ import annotations

from advisor.core.errors import AdvisorError, BadStatement, parser_message

MAX_STATEMENTS = 1_000  # the plan's max_statements bound (advisor.tuning.plan.OPTIONS)


def split_statements(text: str, dialect: str) -> tuple[str, ...]:
    r"""The statements of a SQL script, as written: split at semicolons outside strings, quoted identifiers and
    comments as the engine's SQL ``dialect`` (the connector's ``dialect`` key, which sqlglot reads) reads them, e.g.
    PostgreSQL's dollar quotes or MySQL's backquoted names.

    >>> split_statements("SELECT 1; SELECT ';' AS x;\n-- done;\n", dialect="postgres")
    ('SELECT 1', "SELECT ';' AS x")
    >>> split_statements("SELECT $$a;b$$; SELECT 2", dialect="postgres")
    ('SELECT $$a;b$$', 'SELECT 2')
    >>> split_statements("SELECT `a;b` FROM t; SELECT 2", dialect="mysql")
    ('SELECT `a;b` FROM t', 'SELECT 2')
    """
    from sqlglot.dialects.dialect import Dialect  # sqlglot takes a tenth of a second to import: not for --help
    from sqlglot.errors import TokenError
    from sqlglot.tokens import TokenType

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(text)
    except TokenError as e:
        raise BadStatement(f"the SQL cannot be read: {parser_message(e)}") from None
    out, start = [], None
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            if start is not None:
                out.append(text[start:tok.start].strip())
            start = None
        elif start is None:
            start = tok.start
    if start is not None:
        out.append(text[start:].strip())
    return tuple(s for s in out if s)


def statements(text: str | None, dialect: str) -> tuple[str, ...]:
    """The statements of ``text`` in the engine's SQL ``dialect`` (none when no SQL was given); AdvisorError when
    text was given without one, or more than ``MAX_STATEMENTS``."""
    if text is None:
        return ()
    found = split_statements(text, dialect)
    if not found:
        raise AdvisorError("no SQL statement in the text given")
    if len(found) > MAX_STATEMENTS:
        raise AdvisorError(f"the SQL given holds {len(found):,} statements; a rewrite run takes at most "
                           f"{MAX_STATEMENTS:,}")
    return found


def check(connector, text: str | None) -> None:
    """Refuse the given SQL before any work (no snapshot, no shadow): each statement through the target's own
    parser (``Connector.check_sql``); ``BadStatement`` naming the first broken one (1-based) with the engine's
    message and the position in that statement, e.g. ``statement 2: syntax error at or near "WHERE" (position
    27)``."""
    for i, sql in enumerate(statements(text, connector.dialect), 1):
        try:
            connector.check_sql(sql)
        except BadStatement as e:
            raise BadStatement(f"statement {i}: {e.message}", reason=e.reason, position=e.position) from None


def changes_data(text: str, dialect: str) -> str | None:
    """The data-changing verb of ``text`` (INSERT, UPDATE, DELETE, MERGE, a DDL's), also inside a CTE; None for a
    query, or for text the parser cannot read (the target's own parser judges it next).

    >>> changes_data("DELETE FROM t WHERE a = 1", "postgres"), changes_data("SELECT * FROM t", "postgres")
    ('DELETE', None)
    >>> changes_data("WITH gone AS (DELETE FROM t RETURNING a) SELECT * FROM gone", "postgres")
    'DELETE'
    """
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read=dialect)
    except sqlglot.errors.SqlglotError:
        return None
    for node_type, verb in ((exp.Delete, "DELETE"), (exp.Update, "UPDATE"), (exp.Insert, "INSERT"),
                            (exp.Merge, "MERGE"), (exp.Create, "CREATE"), (exp.Drop, "DROP"), (exp.Alter, "ALTER")):
        if isinstance(tree, node_type) or tree.find(node_type) is not None:
            return verb
    return None if isinstance(tree, exp.Query) else tree.key.upper()
