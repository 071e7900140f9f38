"""Checks on what users type: names, references to stored objects and free text (notes, SQL).

Rules, the same whatever face the input came through (CLI, REST, web form, schedule) and whichever store holds it:
- no text holds a NUL or another control character (a PostgreSQL text column cannot hold NUL; a terminal or log
  line must not be steered by one); free text may hold tabs and line breaks, names and references may not;
- a name can never be read as an id: ids are ``ID_LENGTH`` hexadecimal digits (``new_id``), and a reference is
  looked up by id *or* name, so a target named like another target's id would make one reference mean two
  objects.

>>> check_name("target", "orders-prod")
'orders-prod'
>>> check_name("target", "2f7e684e53b2")
Traceback (most recent call last):
...
advisor.core.errors.InvalidInput: a target name cannot look like an id (12 hexadecimal digits): '2f7e684e53b2'; choose another name
>>> check_text("note", "line one\\nline two")
'line one\\nline two'
>>> check_text("note", "a\\x00b")
Traceback (most recent call last):
...
advisor.core.errors.InvalidInput: note: control character U+0000 is not allowed
"""

from __future__ import annotations

import re
import uuid

from advisor.core.errors import InvalidInput

ID_LENGTH = 12
_ID = re.compile(rf"[0-9a-fA-F]{{{ID_LENGTH}}}")
# the control characters (C0, DEL, C1) as a regular-expression class body, the same in Python and in JSON schema
CONTROL = r"\x00-\x1f\x7f-\x9f"
CONTROL_IN_TEXT = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # tab, line feed and carriage return allowed
# a knob range, NAME=LOW:HIGH (each part holding more than blanks, no control character): the one pattern of the run
# plan's parser (``advisor.tuning.knobs.kind.ranges``) and of the REST schema, the same in Python and JSON schema
RANGE_ITEM = (rf"^[^={CONTROL}]*[^=\s{CONTROL}][^={CONTROL}]*=[^:{CONTROL}]*[^:\s{CONTROL}][^:{CONTROL}]*:"
              rf"[^{CONTROL}]*[^\s{CONTROL}][^{CONTROL}]*$")
_CONTROL = re.compile(f"[{CONTROL}]")
_CONTROL_IN_TEXT = re.compile(f"[{CONTROL_IN_TEXT}]")


def new_id() -> str:
    """A new object id: ``ID_LENGTH`` lower-case hexadecimal digits."""
    return uuid.uuid4().hex[:ID_LENGTH]


def looks_like_id(value: str) -> bool:
    """True when ``value`` has an id's alphabet and length (upper case included: ids are compared exactly, but a
    reader would take ``2F7E684E53B2`` for one).

    >>> looks_like_id(new_id()), looks_like_id("orders"), looks_like_id("ABCDEF012345")
    (True, False, True)
    """
    return bool(_ID.fullmatch(value))


def control_character(value: str, *, multiline: bool = False) -> str | None:
    """The first control character in ``value`` as ``U+XXXX``, or None (``multiline``: tabs and line breaks are
    allowed).

    >>> control_character("ok"), control_character("a\\x1bb"), control_character("a\\tb", multiline=True)
    (None, 'U+001B', None)
    """
    m = (_CONTROL_IN_TEXT if multiline else _CONTROL).search(value)
    return f"U+{ord(m.group()):04X}" if m else None


def check_text(field: str, value: str, *, multiline: bool = True) -> str:
    """``value`` unchanged, or ``InvalidInput`` naming ``field`` when it holds a control character."""
    bad = control_character(value, multiline=multiline)
    if bad:
        raise InvalidInput(f"{field}: control character {bad} is not allowed")
    return value


def check_name(kind: str, value: str, *, max_length: int = 200) -> str:
    """A new object's name: not blank, one line without control characters, at most ``max_length`` characters,
    and not readable as an id."""
    if not value.strip():
        raise InvalidInput(f"a {kind} needs a name")
    check_text(f"{kind} name", value, multiline=False)
    if len(value) > max_length:
        raise InvalidInput(f"a {kind} name has at most {max_length} characters (this one has {len(value)})")
    if looks_like_id(value):
        raise InvalidInput(f"a {kind} name cannot look like an id ({ID_LENGTH} hexadecimal digits): {value!r}; "
                           "choose another name")
    return value


def ranges(items: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """``NAME=LOW:HIGH`` items (a plan's ``range``: knobs, a learned index's parameters) as {name: (low, high)},
    their text, read against the knob catalog or the parameter space later.

    >>> ranges(("work_mem=4MB:256MB",))
    {'work_mem': ('4MB', '256MB')}
    """
    out = {}
    for item in items:
        name, _, bounds = item.partition("=")
        low, _, high = bounds.partition(":")
        if not re.match(RANGE_ITEM, item):
            raise InvalidInput(f"range {item!r}: expected NAME=LOW:HIGH, e.g. work_mem=4MB:256MB")
        out[name.strip()] = (low.strip(), high.strip())
    return out
