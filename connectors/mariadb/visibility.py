"""Which built what-if indexes a statement's plan depends on, and batches of (statement, configuration) pairs that
can be planned under one set of toggles (``connectors.mariadb.whatif``; IGNORED visibility is table metadata,
so each toggle is an ALTER TABLE). A ``Need`` says, per table, the built indexes a statement cares about and
whether each must be visible; an index it does not care about (``cares``) may stay as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

Need = dict[tuple[str, str], dict[str, bool]]  # per table: the built indexes a statement cares about, visible or not
_WORD = re.compile(r"`((?:[^`]|``)+)`|([A-Za-z_][A-Za-z_0-9$]*)")


def words(statement: str) -> frozenset[str]:
    """The identifiers and words of a statement, lower case (backquotes undone).

    >>> sorted(words("SELECT `a``b`, C FROM t"))
    ['a`b', 'c', 'from', 'select', 't']
    """
    return frozenset((m.group(1).replace("``", "`") if m.group(1) else m.group(2)).lower()
                     for m in _WORD.finditer(statement))


def cares(columns: Sequence[str], named: frozenset[str], table_columns: Sequence[str]) -> bool:
    """Whether an index on ``columns`` can change the plan of a statement that names ``named`` (lower case) on a
    table of ``table_columns``: when its leading column is named (an access path, an order, a range), or when it
    holds every column of the table the statement names (a covering scan; also when it names none, as COUNT(*)
    does). Otherwise the optimizer has no use for it, visible or not, and it is left as it is.

    >>> cares(("a", "b"), frozenset({"a"}), ("a", "b", "c")), cares(("b", "c"), frozenset({"a", "c"}), ("a", "b", "c"))
    (True, False)
    >>> cares(("b", "a"), frozenset({"a"}), ("a", "b")), cares(("b",), frozenset({"x"}), ("a", "b"))
    (True, True)
    """
    if columns[0].lower() in named:
        return True
    used = {c.lower() for c in table_columns if c.lower() in named}
    return used <= {c.lower() for c in columns}


def batches(needs: Sequence[Need]) -> list[list[int]]:
    """The jobs (by position) grouped so that no two jobs of a group want one index shown and hidden: ``needs[k]``
    is job k's ``Need``. Jobs with the same needs are grouped first (sorted), then each group takes every later job
    that agrees with it.

    >>> t, u = ("s", "t"), ("s", "u")
    >>> batches([{t: {"a": True}}, {u: {}}, {t: {"a": False}}, {t: {"a": True, "b": False}, u: {"c": True}}])
    [[2, 1], [0, 3]]
    """
    order = sorted(range(len(needs)), key=lambda k: sorted((t, sorted(v.items())) for t, v in needs[k].items()))
    left, out = order, []
    while left:
        state: Need = {}
        group, rest = [], []
        for k in left:
            if all(state.get(t, {}).get(n, v) == v for t, d in needs[k].items() for n, v in d.items()):
                for t, d in needs[k].items():
                    state.setdefault(t, {}).update(d)
                group.append(k)
            else:
                rest.append(k)
        out.append(group)
        left = rest
    return out


def merged(needs: Iterable[Need]) -> Need:
    """One ``Need`` that holds all of ``needs`` (which ``batches`` made agree).

    >>> merged([{("s", "t"): {"a": True}}, {("s", "t"): {"b": False}}])
    {('s', 't'): {'a': True, 'b': False}}
    """
    out: Need = {}
    for need in needs:
        for t, names in need.items():
            out.setdefault(t, {}).update(names)
    return out
