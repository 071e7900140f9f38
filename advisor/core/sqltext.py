"""A statement as a DBA reads it: by its SQL, never by the engine's hash (pg_stat_statements' queryid).

``shorten`` is the one place that shortens SQL (and other long text) for display: one line, whitespace collapsed,
cut at a word boundary with an ellipsis. ``named`` is how notes name a statement (``statement `SELECT ...```,
the queryid only when no SQL is known). The CLI, the web pages and the note writers all use these; the full text
stays available beside it (the CLI's recommendation page, JSON, the web's ``title`` / ``<details>``).
"""

from __future__ import annotations

WIDTH = 72  # characters: a statement beside a few figures in an 80-column terminal or a table cell
ELLIPSIS = "…"


def one_line(text: str) -> str:
    """``text`` on one line, runs of whitespace (newlines included) collapsed to one space.

    >>> one_line("SELECT id\\n  FROM   orders")
    'SELECT id FROM orders'
    """
    return " ".join((text or "").split())


def shorten(text: str | None, width: int = WIDTH) -> str:
    """``text`` on one line, at most ``width`` characters: cut at the last word boundary that fits, with an
    ellipsis; a word longer than about half the width is cut inside it instead.

    >>> shorten("SELECT id, total\\n    FROM orders   WHERE customer_id = $1")
    'SELECT id, total FROM orders WHERE customer_id = $1'
    >>> shorten("SELECT o.id, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id", 40)
    'SELECT o.id, o.total, c.name FROM…'
    >>> shorten("x" * 30, 10)
    'xxxxxxxxx…'
    >>> shorten(None)
    ''
    """
    one = one_line(text or "")
    if len(one) <= width:
        return one
    room = max(width - len(ELLIPSIS), 1)
    cut = one[:room + 1].rfind(" ")  # a space right after the room still ends a whole word
    head = one[:cut] if cut >= room // 2 else one[:room]
    return head.rstrip(" ,;(") + ELLIPSIS


def named(sql: str | None, queryid: str | None = None, width: int = WIDTH) -> str:
    """How a note names a statement: ``statement `<its SQL, shortened>```; ``statement <queryid>`` only when no
    SQL is known (evidence stored before statements carried their SQL).

    >>> named("SELECT * FROM orders\\n WHERE id = $1", "-8950316177081021396")
    'statement `SELECT * FROM orders WHERE id = $1`'
    >>> named("", "42")
    'statement 42'
    """
    text = shorten(sql, width)
    return f"statement `{text}`" if text else f"statement {queryid}"
