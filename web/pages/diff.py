"""A side-by-side diff of two SQL texts for the pages: the lines aligned (difflib), and within lines that changed,
the tokens inserted and deleted. Plain strings only: the template escapes every piece and wraps the changed ones in
<del>/<ins>, so no SQL is ever marked safe."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

# a token with the whitespace after it: a word, a quoted string or identifier, a number, one other character
_TOKEN = re.compile(r"""(?:'(?:[^']|'')*'?|"(?:[^"]|"")*"?|\w+|\S)\s*""", re.DOTALL)
MAX_TOKENS = 4000  # longer changed blocks are shown changed as a whole (difflib is quadratic at worst)


@dataclass(frozen=True)
class Row:
    """One row of the two columns: ``op`` equal, replace, delete (left only) or insert (right only); each side a
    list of (kind, text) pieces, kind "same", "del" or "ins"."""

    op: str
    left: tuple[tuple[str, str], ...]
    right: tuple[tuple[str, str], ...]


def tokens(text: str) -> list[str]:
    """``text`` cut into tokens, each with its trailing whitespace; joined back they are ``text``.

    >>> tokens("SELECT a,b  FROM t")
    ['SELECT ', 'a', ',', 'b  ', 'FROM ', 't']
    """
    lead = text[:len(text) - len(text.lstrip())]
    out = [m.group(0) for m in _TOKEN.finditer(text, len(lead))]
    if lead:
        out.insert(0, lead)
    return out


def _key(token: str) -> str:
    """What two tokens are compared by: their text without the whitespace; words without case (SQL keywords)."""
    t = token.strip()
    return t if t[:1] in ("'", '"') else t.lower()


def _merge(pieces: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for kind, text in pieces:
        if not text:
            continue
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return tuple(out)


def inline(a: str, b: str) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The pieces of ``a`` (same or del) and of ``b`` (same or ins), by their tokens.

    >>> inline("SELECT a FROM t", "select a, b FROM t")
    ((('same', 'SELECT a FROM t'),), (('same', 'select a'), ('ins', ', b '), ('same', 'FROM t')))
    """
    ta, tb = tokens(a), tokens(b)
    if len(ta) + len(tb) > MAX_TOKENS:
        return _merge([("del", a)]), _merge([("ins", b)])
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, [_key(t) for t in ta], [_key(t) for t in tb], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            left.append(("same", "".join(ta[i1:i2])))
            right.append(("same", "".join(tb[j1:j2])))
        else:
            left.append(("del", "".join(ta[i1:i2])))
            right.append(("ins", "".join(tb[j1:j2])))
    return _merge(left), _merge(right)


def side_by_side(original: str, rewritten: str) -> list[Row]:
    """The rows of a two-column diff of ``original`` and ``rewritten``: equal lines paired, a block of changed
    lines as one row diffed by tokens (so a one-line statement rewritten on one line is one row).

    >>> [r.op for r in side_by_side("SELECT a\\nFROM t\\nWHERE x > 1", "SELECT a\\nFROM t\\nJOIN u ON true")]
    ['equal', 'equal', 'replace']
    """
    a, b = original.splitlines() or [""], rewritten.splitlines() or [""]
    rows: list[Row] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            rows += [Row("equal", _merge([("same", x)]), _merge([("same", y)])) for x, y in zip(a[i1:i2], b[j1:j2])]
        elif op == "delete":
            rows.append(Row("delete", _merge([("del", "\n".join(a[i1:i2]))]), ()))
        elif op == "insert":
            rows.append(Row("insert", (), _merge([("ins", "\n".join(b[j1:j2]))])))
        else:
            left, right = inline("\n".join(a[i1:i2]), "\n".join(b[j1:j2]))
            rows.append(Row("replace", left, right))
    return rows
