"""Parse, check and format knob values against their catalog entry, the way PostgreSQL reads them; round a
proposed value as a DBA writes it (``readable``: ``6667MB`` -> ``6.5GB``, 745 s -> ``12min``, 1.0834 -> ``1.1``)
and show a value with its unit (``shown``: 300 s -> ``5min``).

A memory knob whose unit is ``8kB`` stores pages: ``'128MB'`` is 16384 of them.

>>> from advisor.core.domain import KnobSpec
>>> sb = KnobSpec("shared_buffers", "integer", "8kB", "16384", "1024", 16, 1073741823, context="postmaster")
>>> to_base(sb, "128MB")
16384.0
>>> format_bytes(256 * 1024 * 1024)
'256MB'
"""

from __future__ import annotations

import math
import re

from advisor.core.domain import KnobChange, KnobSpec
from advisor.core.errors import InvalidKnobValue, UnknownKnob

MEMORY_UNITS = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
TIME_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "min": 60_000.0, "h": 3_600_000.0, "d": 86_400_000.0}
TRUE_WORDS = {"on", "true", "yes", "1", "t", "y"}
FALSE_WORDS = {"off", "false", "no", "0", "f", "n"}

_NUMBER_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")


def unit_factor(unit: str | None) -> tuple[str, float]:
    """Split a catalog unit such as ``8kB`` into its family ('memory'/'time'/'') and size of one unit
    (in bytes or ms)."""
    if not unit:
        return "", 1.0
    m = re.match(r"^(\d*)(.+)$", unit)
    assert m is not None
    mult = float(m.group(1) or 1)
    base = m.group(2)
    if base in MEMORY_UNITS:
        return "memory", mult * MEMORY_UNITS[base]
    if base in TIME_UNITS:
        return "time", mult * TIME_UNITS[base]
    return "", 1.0


def to_base(spec: KnobSpec, value: str) -> float:
    """A numeric knob's value, given as text with or without a unit suffix, in the catalog's unit."""
    if spec.vartype not in {"integer", "real"}:
        raise InvalidKnobValue(f"{spec.name} is a {spec.vartype} setting, not a number")
    m = _NUMBER_UNIT.match(str(value))
    if not m:
        raise InvalidKnobValue(f"{spec.name}: cannot read {value!r} as a number with an optional unit")
    number, suffix = float(m.group(1)), m.group(2)
    if not suffix:
        return number
    family, size = unit_factor(spec.unit)
    if family == "memory" and suffix in MEMORY_UNITS:
        return number * MEMORY_UNITS[suffix] / size
    if family == "time" and suffix in TIME_UNITS:
        return number * TIME_UNITS[suffix] / size
    raise InvalidKnobValue(f"{spec.name}: unit {suffix!r} does not fit a setting measured in {spec.unit or 'plain numbers'}")


def to_bytes(spec: KnobSpec, value: str) -> float:
    family, size = unit_factor(spec.unit)
    if family != "memory":
        raise InvalidKnobValue(f"{spec.name} is not a memory setting")
    return to_base(spec, value) * size


def format_bytes(n: float) -> str:
    """The largest whole unit PostgreSQL accepts for a byte count (rounded down to kB)."""
    n = int(n)
    for suffix in ("TB", "GB", "MB", "kB"):
        size = MEMORY_UNITS[suffix]
        if n >= size and n % size == 0:
            return f"{n // size}{suffix}"
    return f"{max(n // 1024, 0)}kB" if n >= 1024 else f"{n}B"


def format_base(spec: KnobSpec, base: float) -> str:
    """Text for a value in the catalog's unit: memory as a byte size, others as plain numbers."""
    family, size = unit_factor(spec.unit)
    if spec.vartype == "integer":
        base = float(round(base))
        if family == "memory":
            return format_bytes(base * size)
        return str(int(base))
    return f"{base:.6g}"


def check(spec: KnobSpec, value: str) -> str:
    """The canonical text of ``value`` if it is valid for ``spec``; raise InvalidKnobValue otherwise."""
    text = str(value).strip()
    if spec.vartype == "bool":
        low = text.lower()
        if low in TRUE_WORDS:
            return "on"
        if low in FALSE_WORDS:
            return "off"
        raise InvalidKnobValue(f"{spec.name}: {value!r} is not a boolean (on/off)")
    if spec.vartype == "enum":
        if text.lower() not in {e.lower() for e in spec.enum_values}:
            raise InvalidKnobValue(f"{spec.name}: {value!r} is not one of {', '.join(spec.enum_values)}")
        return text.lower()
    if spec.vartype == "string":
        if "\x00" in text:
            raise InvalidKnobValue(f"{spec.name}: value contains a NUL byte")
        return text
    base = to_base(spec, text)
    if math.isnan(base) or math.isinf(base):
        raise InvalidKnobValue(f"{spec.name}: {value!r} is not a finite number")
    if spec.vartype == "integer" and abs(base - round(base)) > 1e-9 and unit_factor(spec.unit)[0] == "":
        raise InvalidKnobValue(f"{spec.name}: {value!r} is not an integer")
    lo, hi = spec.min_value, spec.max_value
    if (lo is not None and base < lo) or (hi is not None and base > hi):
        raise InvalidKnobValue(
            f"{spec.name}: {value!r} is outside the allowed range "
            f"[{format_base(spec, lo) if lo is not None else '-inf'}, {format_base(spec, hi) if hi is not None else 'inf'}]"
        )
    return text


def clamp(spec: KnobSpec, base: float) -> str:
    """Text for ``base`` (in the catalog's unit) moved inside the catalog's bounds."""
    if spec.min_value is not None:
        base = max(base, spec.min_value)
    if spec.max_value is not None:
        base = min(base, spec.max_value)
    return format_base(spec, base)


def same_value(spec: KnobSpec, a: str, b: str) -> bool:
    """Whether two texts mean the same setting value."""
    if spec.vartype in {"integer", "real"}:
        try:
            return math.isclose(to_base(spec, a), to_base(spec, b), rel_tol=1e-9, abs_tol=1e-12)
        except InvalidKnobValue:
            return False
    return check(spec, a).lower() == check(spec, b).lower() if spec.vartype in {"bool", "enum"} else a == b


def validate_change(catalog: dict[str, KnobSpec], change: KnobChange) -> KnobChange:
    """The change with its value canonicalised; UnknownKnob / InvalidKnobValue when it cannot be applied."""
    spec = catalog.get(change.name)
    if spec is None:
        raise UnknownKnob(f"unknown setting {change.name!r}: the target's pg_settings has no such name")
    return KnobChange(spec.name, check(spec, change.value))


# --- values as a DBA writes them ---------------------------------------------------------------------------------
#
# ``readable`` rounds a proposed value to what a DBA would write (and what is then measured and applied: the
# text is an exact multiple of the knob's unit, so the server stores exactly what was measured); ``shown`` writes
# a value as it is, with the largest unit that keeps it whole (a knob's current value).

TIME_ORDER = ("d", "h", "min", "s", "ms", "us")
MEMORY_ORDER = ("TB", "GB", "MB", "kB", "B")


def round_sig(x: float, digits: int = 2) -> float:
    """``x`` rounded to ``digits`` significant digits.

    >>> round_sig(1.0834), round_sig(4.42), round_sig(0.01234), round_sig(745), round_sig(0), round_sig(-3.14159, 3)
    (1.1, 4.4, 0.012, 750.0, 0.0, -3.14)
    """
    if x == 0 or not math.isfinite(x):
        return float(x)
    places = digits - 1 - math.floor(math.log10(abs(x)))
    half_up = math.floor(abs(x) * 10.0**places + 0.5) / 10.0**places  # 745 -> 750, not to the even 740
    return float(round(math.copysign(half_up, x), max(places, 0)))


def _number(x: float) -> str:
    """A number as a person writes it: no trailing ``.0``, no exponent for ordinary sizes.

    >>> _number(120000.0), _number(1.1), _number(0.012), _number(2.0)
    ('120000', '1.1', '0.012', '2')
    """
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.12g}"


def round_bytes(n: float, unit: int = 1024) -> str:
    """A byte count as a DBA writes it: 2 significant digits in the largest unit (``kB`` .. ``TB``), a power of
    two kept as it is, a half step (``1.5GB``) kept, any other fraction written in the next smaller unit; the
    result is a whole multiple of ``unit`` (the knob's own unit, e.g. 8 kB pages).

    >>> [round_bytes(x * 1024**2) for x in (256, 250, 253, 6667, 17462, 1536, 1331, 37.4, 4)]
    ['256MB', '250MB', '256MB', '6.5GB', '17GB', '1.5GB', '1300MB', '37MB', '4MB']
    >>> round_bytes(1000 * 1024, unit=8192), round_bytes(131 * 1024, unit=8192), round_bytes(1023 * 1024)
    ('1000kB', '128kB', '1MB')
    """
    if n <= 0:
        return format_bytes(n)
    names = [u for u in MEMORY_ORDER if MEMORY_UNITS[u] >= min(unit, 1024)]
    i = next((k for k, u in enumerate(names) if n >= MEMORY_UNITS[u]), len(names) - 1)
    v = n / MEMORY_UNITS[names[i]]
    p = 2.0 ** round(math.log2(v))
    r = p if abs(v / p - 1) <= 0.02 else round_sig(v, 2)
    if not float(r).is_integer() and not float(2 * r).is_integer() and i + 1 < len(names):
        i += 1  # 1.3GB is written 1300MB
        r = round_sig(n / MEMORY_UNITS[names[i]], 2)
    return show_bytes(max(round(r * MEMORY_UNITS[names[i]] / unit), 1) * unit)  # whole units of the knob


def show_bytes(n: float) -> str:
    """A byte count exactly, in the largest unit that keeps it whole or a half step.

    >>> show_bytes(1536 * 1024**2), show_bytes(1024**3), show_bytes(1300 * 1024**2), show_bytes(1000), show_bytes(0)
    ('1.5GB', '1GB', '1300MB', '1000B', '0')
    """
    for suffix in MEMORY_ORDER:
        v = n / MEMORY_UNITS[suffix]
        if v >= 1 and float(2 * v).is_integer() and (suffix != "B" or float(v).is_integer()):
            return f"{_number(v)}{suffix}"
    return _number(n)


def round_ms(ms: float, unit_ms: float = 1.0, whole: bool = True) -> str:
    """A duration as a DBA writes it: 2 significant digits in the largest unit (``ms`` .. ``d``) not below the
    knob's own unit (``unit_ms``), any fraction written in the next smaller unit; ``whole``: the knob takes
    whole units only (an integer knob).

    >>> [round_ms(s * 1000, 1000) for s in (745, 300, 30, 372, 3600, 5400, 86400, 1.3)]
    ['12min', '5min', '30s', '370s', '1h', '90min', '1d', '1s']
    >>> round_ms(42), round_ms(1300), round_ms(2.5, whole=False), round_ms(0.25, 0.001, whole=False)
    ('42ms', '1300ms', '2.5ms', '250us')
    """
    if ms <= 0:
        return f"{_number(ms / unit_ms)}"
    names = [u for u in TIME_ORDER if TIME_UNITS[u] >= unit_ms - 1e-12]
    i = next((k for k, u in enumerate(names) if ms >= TIME_UNITS[u] - 1e-9), len(names) - 1)
    r = round_sig(ms / TIME_UNITS[names[i]], 2)
    if not float(r).is_integer() and i + 1 < len(names):
        smaller = round_sig(ms / TIME_UNITS[names[i + 1]], 2)
        if float(smaller).is_integer() or names[i + 1] == names[-1]:
            i, r = i + 1, smaller
    if names[i] == names[-1] and whole:
        r = max(round(r), 1)
    return f"{_number(r)}{names[i]}"


def readable(spec: KnobSpec, value: str) -> str:
    """``value`` rounded as a DBA would write it, inside the catalog's bounds: memory in kB/MB/GB at 2 significant
    digits (powers of two kept), times in ms/s/min/h, other numbers at 2 significant digits. Zero and negative
    values (off, auto, use another setting) and non-numeric settings are left as they are.

    >>> from advisor.core.domain import KnobSpec
    >>> sb = KnobSpec("shared_buffers", "integer", "8kB", "16384", None, 16, 1073741823)
    >>> ct = KnobSpec("checkpoint_timeout", "integer", "s", "300", None, 30, 86400)
    >>> rpc = KnobSpec("random_page_cost", "real", None, "4", None, 0, 1e308)
    >>> jc = KnobSpec("join_collapse_limit", "integer", None, "8", None, 1, 2147483647)
    >>> wb = KnobSpec("wal_buffers", "integer", "8kB", "512", None, -1, 262143)
    >>> readable(sb, "6667MB"), readable(ct, "745"), readable(rpc, "1.0834"), readable(jc, "13"), readable(wb, "-1")
    ('6.5GB', '12min', '1.1', '13', '-1')
    >>> readable(ct, "10")  # below the knob's minimum once rounded: its bound
    '30s'
    """
    if spec.vartype not in {"integer", "real"}:
        return check(spec, value)
    base = to_base(spec, value)
    family, size = unit_factor(spec.unit)
    if base <= 0:
        text = _number(base)
    elif family == "memory":
        text = round_bytes(base * size, int(size))
    elif family == "time":
        text = round_ms(base * size, size, whole=spec.vartype == "integer")
    else:
        r = round_sig(base, 2)
        text = _number(max(round(r), 1) if spec.vartype == "integer" else r)
    rounded = to_base(spec, text)
    if spec.min_value is not None and rounded < spec.min_value:
        return shown(spec, format_base(spec, spec.min_value))
    if spec.max_value is not None and rounded > spec.max_value:
        return shown(spec, format_base(spec, spec.max_value))
    return text


def shown(spec: KnobSpec, value: str) -> str:
    """``value`` exactly, with the largest unit that keeps it whole (``'300'`` seconds is ``5min``, 16384 pages of
    8 kB are ``128MB``); non-numeric settings as they are.

    >>> from advisor.core.domain import KnobSpec
    >>> sb = KnobSpec("shared_buffers", "integer", "8kB", "16384", None, 16, 1073741823)
    >>> ct = KnobSpec("checkpoint_timeout", "integer", "s", "300", None, 30, 86400)
    >>> shown(sb, "16384"), shown(sb, "1.5GB"), shown(ct, "300"), shown(ct, "372"), shown(ct, "12min")
    ('128MB', '1.5GB', '5min', '372s', '12min')
    """
    if spec.vartype not in {"integer", "real"}:
        return value
    base = to_base(spec, value)
    family, size = unit_factor(spec.unit)
    if family == "memory" and base > 0:
        return show_bytes(base * size)
    if family == "time" and base > 0:
        ms = base * size
        for suffix in TIME_ORDER:
            v = ms / TIME_UNITS[suffix]
            if v >= 1 and abs(v - round(v)) < 1e-9:
                return f"{round(v)}{suffix}"
        return f"{_number(base)}{spec.unit}"
    return _number(base)
