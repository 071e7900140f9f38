"""Ids as a user gives them: whole, or a unique prefix of one (``MIN_PREFIX`` characters at least), resolved once
here for every face (CLI, REST, pages) by the service methods that take a recommendation's, a run's or a
schedule's id. The lists show ids whole; a prefix spares typing, and an ambiguous one is refused in one line
that names the matches, never guessed."""

from __future__ import annotations

import string

from advisor.core.errors import Ambiguous, NotFound
from advisor.core.inputs import ID_LENGTH

MIN_PREFIX = 4  # as git: fewer characters would match too much to be worth a lookup
_SHOWN = 4  # matches named in an ambiguity's line


def full_id(store, what: str, ref: str) -> str:
    """The id ``ref`` stands for among the ``what`` records (``advisor.storage.ids.TABLES``): ``ref`` itself when
    it is not a shorter run of hexadecimal digits (the lookup by id then says whether it exists), else the one id
    it starts. ``NotFound`` when none starts with it, ``Ambiguous`` naming the matches when several do."""
    given = (ref or "").strip()
    if not (MIN_PREFIX <= len(given) < ID_LENGTH) or any(c not in string.hexdigits for c in given):
        return ref
    found = store.ids_starting(what, given.lower(), limit=_SHOWN + 1)
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFound(f"no {what} with an id starting with {given!r}")
    more = ", ..." if len(found) > _SHOWN else ""
    raise Ambiguous(f"{given!r} starts the ids of several {what}s ({', '.join(found[:_SHOWN])}{more}): give more "
                    f"of the id")
