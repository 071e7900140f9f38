"""Times at the API's edge, converted in this one place: the store keeps unix seconds; every REST answer gives
ISO-8601 UTC text ("2026-11-26T17:25:14.120000Z", OpenAPI ``format: date-time``), and every input that takes a
time accepts ISO-8601 (an offset is honoured, none means UTC) or unix seconds."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator


def utc(value: Any) -> datetime:
    """Unix seconds, ISO-8601 text or a datetime as an aware UTC datetime; anything else is refused.

    >>> utc(0).isoformat()
    '1970-01-01T00:00:00+00:00'
    >>> utc("2026-11-26T18:25:14+01:00").isoformat()
    '2026-11-26T17:25:14+00:00'
    >>> utc("2026-11-26 17:25").isoformat()
    '2026-11-26T17:25:00+00:00'
    """
    if isinstance(value, datetime):
        at = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ValueError("a time must be a finite number of unix seconds or ISO-8601 text")
        return datetime.fromtimestamp(value, timezone.utc)
    elif isinstance(value, str):
        try:
            at = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"not an ISO-8601 time: {value[:40]!r} (e.g. 2026-11-26T17:25:00Z)") from None
    else:
        raise ValueError("a time must be ISO-8601 text (e.g. 2026-11-26T17:25:00Z) or unix seconds")
    return (at if at.tzinfo else at.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def is_time_key(key: Any) -> bool:
    """Keys that name a time in free-form details (audit entries, a run's result, a watch): ``at``, ``*_at``."""
    return isinstance(key, str) and (key == "at" or key.endswith("_at"))


def stamped(value: Any) -> Any:
    """A free-form structure with the number under every time key (``is_time_key``) as a UTC datetime."""
    if isinstance(value, dict):
        return {k: utc(v) if is_time_key(k) and isinstance(v, (int, float)) and not isinstance(v, bool)
                and math.isfinite(v) else stamped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [stamped(v) for v in value]
    return value


Timestamp = Annotated[datetime, BeforeValidator(utc)]
"""A time field of an input or output model: ISO-8601 UTC in JSON, ``format: date-time`` in OpenAPI."""

Details = Annotated[dict[str, Any], AfterValidator(stamped)]
"""A free-form object whose times (keys ``at``, ``*_at``) are given as ISO-8601 UTC like every other time."""
