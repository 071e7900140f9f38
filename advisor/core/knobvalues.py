"""Parse, check and format knob values against their catalog entry, the way PostgreSQL reads them.

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
