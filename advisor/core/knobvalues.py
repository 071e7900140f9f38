"""The unit grammar of an engine's knob values, as data (``UnitGrammar``): how a value is parsed, checked against
its catalog entry and written; a proposed value rounded as a DBA writes it (``readable``: ``6667MB`` -> ``6.5GB``,
745 s -> ``12min``, 1.0834 -> ``1.1``) and a value shown with its unit (``shown``: 300 s -> ``5min``). An engine
supplies its grammar in its ``KnobProfile`` (PostgreSQL's: ``connectors/postgres/knobs.py``): its size and time
suffixes, its boolean words, its name for the settings catalog, and whether values are written with a unit
suffix (``'256MB'``) or as plain numbers in the catalog's unit (``'268435456'``).

A memory knob whose unit is ``8kB`` stores pages: ``'128MB'`` is 16384 of them.

>>> from advisor.core.domain import KnobSpec
>>> units = UnitGrammar(BINARY_SIZES, DURATIONS)
>>> sb = KnobSpec("shared_buffers", "integer", "8kB", "16384", "1024", 16, 1073741823, context="postmaster")
>>> units.to_base(sb, "128MB")
16384.0
>>> units.format_bytes(256 * 1024 * 1024)
'256MB'
>>> UnitGrammar(BINARY_SIZES, DURATIONS, write_units=False).readable(sb, "6667MB")
'851968'
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from advisor.core.domain import KnobChange, KnobSpec
from advisor.core.errors import InvalidKnobValue, UnknownKnob

# the spellings most catalogs use (PostgreSQL's): binary sizes in bytes, durations in ms
BINARY_SIZES = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
DURATIONS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "min": 60_000.0, "h": 3_600_000.0, "d": 86_400_000.0}
TRUE_WORDS = frozenset({"on", "true", "yes", "1", "t", "y"})
FALSE_WORDS = frozenset({"off", "false", "no", "0", "f", "n"})

_NUMBER_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")


@dataclass(frozen=True)
class UnitGrammar:
    """One engine's grammar of knob values. ``memory``: size suffix -> bytes (the one of 1024 bytes is the
    smallest written); ``time``: time suffix -> ms; ``true_words`` / ``false_words``: booleans as read (written
    ``on`` / ``off``); ``write_units``: values are written with a suffix, else as plain numbers in the catalog's
    unit; ``catalog``: the engine's name for its settings catalog, in messages; ``aliases``: other spellings of a
    suffix, read as it (MariaDB reads ``512MB`` and ``512m`` as ``512M``), never written."""

    memory: Mapping[str, float]
    time: Mapping[str, float]
    true_words: frozenset[str] = TRUE_WORDS
    false_words: frozenset[str] = FALSE_WORDS
    write_units: bool = True
    catalog: str = "settings catalog"
    aliases: Mapping[str, str] = field(default_factory=dict)
    _memory_order: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _time_order: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_memory_order", tuple(sorted(self.memory, key=self.memory.__getitem__, reverse=True)))
        object.__setattr__(self, "_time_order", tuple(sorted(self.time, key=self.time.__getitem__, reverse=True)))

    # --- reading and checking --------------------------------------------------------------------------------------

    def unit_factor(self, unit: str | None) -> tuple[str, float]:
        """Split a catalog unit such as ``8kB`` into its family ('memory'/'time'/'') and size of one unit
        (in bytes or ms)."""
        if not unit:
            return "", 1.0
        m = re.match(r"^(\d*)(.+)$", unit)
        assert m is not None
        mult = float(m.group(1) or 1)
        base = m.group(2)
        if base in self.memory:
            return "memory", mult * self.memory[base]
        if base in self.time:
            return "time", mult * self.time[base]
        return "", 1.0

    def to_base(self, spec: KnobSpec, value: str) -> float:
        """A numeric knob's value, given as text with or without a unit suffix, in the catalog's unit."""
        if spec.vartype not in {"integer", "real"}:
            raise InvalidKnobValue(f"{spec.name} is a {spec.vartype} setting, not a number")
        m = _NUMBER_UNIT.match(str(value))
        if not m:
            raise InvalidKnobValue(f"{spec.name}: cannot read {value!r} as a number with an optional unit")
        number, suffix = float(m.group(1)), self.aliases.get(m.group(2), m.group(2))
        if not suffix:
            return number
        family, size = self.unit_factor(spec.unit)
        if family == "memory" and suffix in self.memory:
            return number * self.memory[suffix] / size
        if family == "time" and suffix in self.time:
            return number * self.time[suffix] / size
        raise InvalidKnobValue(f"{spec.name}: unit {suffix!r} does not fit a setting measured in "
                               f"{spec.unit or 'plain numbers'}")

    def to_bytes(self, spec: KnobSpec, value: str) -> float:
        family, size = self.unit_factor(spec.unit)
        if family != "memory":
            raise InvalidKnobValue(f"{spec.name} is not a memory setting")
        return self.to_base(spec, value) * size

    def check(self, spec: KnobSpec, value: str) -> str:
        """The canonical text of ``value`` if it is valid for ``spec``; raise InvalidKnobValue otherwise."""
        text = str(value).strip()
        if spec.vartype == "bool":
            low = text.lower()
            if low in self.true_words:
                return "on"
            if low in self.false_words:
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
        base = self.to_base(spec, text)
        if math.isnan(base) or math.isinf(base):
            raise InvalidKnobValue(f"{spec.name}: {value!r} is not a finite number")
        if spec.vartype == "integer" and abs(base - round(base)) > 1e-9 and self.unit_factor(spec.unit)[0] == "":
            raise InvalidKnobValue(f"{spec.name}: {value!r} is not an integer")
        lo, hi = spec.min_value, spec.max_value
        if (lo is not None and base < lo) or (hi is not None and base > hi):
            raise InvalidKnobValue(
                f"{spec.name}: {value!r} is outside the allowed range "
                f"[{self.format_base(spec, lo) if lo is not None else '-inf'}, "
                f"{self.format_base(spec, hi) if hi is not None else 'inf'}]"
            )
        return text

    def same_value(self, spec: KnobSpec, a: str, b: str) -> bool:
        """Whether two texts mean the same setting value."""
        if spec.vartype in {"integer", "real"}:
            try:
                return math.isclose(self.to_base(spec, a), self.to_base(spec, b), rel_tol=1e-9, abs_tol=1e-12)
            except InvalidKnobValue:
                return False
        return self.check(spec, a).lower() == self.check(spec, b).lower() if spec.vartype in {"bool", "enum"} \
            else a == b

    def validate_change(self, catalog: Mapping[str, KnobSpec], change: KnobChange) -> KnobChange:
        """The change with its value canonicalised; UnknownKnob / InvalidKnobValue when it cannot be applied."""
        spec = catalog.get(change.name)
        if spec is None:
            raise UnknownKnob(f"unknown setting {change.name!r}: the target's {self.catalog} has no such name")
        return KnobChange(spec.name, self.check(spec, change.value), acts_through_plans=spec.plans_only)

    # --- writing -------------------------------------------------------------------------------------------------

    def format_bytes(self, n: float) -> str:
        """The largest whole unit the engine accepts for a byte count (rounded down to its 1024-byte unit); a
        plain byte count where values are written without units."""
        n = int(n)
        if not self.write_units:
            return str(n)
        for suffix in self._memory_order:
            size = self.memory[suffix]
            if size >= 1024 and n >= size and n % size == 0:
                return f"{n // size}{suffix}"
        kb = next(u for u in self._memory_order if self.memory[u] == 1024)
        smallest = self._memory_order[-1]
        return f"{max(n // 1024, 0)}{kb}" if n >= 1024 else f"{n}{smallest}"

    def format_base(self, spec: KnobSpec, base: float) -> str:
        """Text for a value in the catalog's unit: memory as a byte size, others as plain numbers."""
        family, size = self.unit_factor(spec.unit)
        if spec.vartype == "integer":
            base = float(round(base))
            if family == "memory" and self.write_units:
                return self.format_bytes(base * size)
            return str(int(base))
        return f"{base:.6g}"

    def clamp(self, spec: KnobSpec, base: float) -> str:
        """Text for ``base`` (in the catalog's unit) moved inside the catalog's bounds."""
        if spec.min_value is not None:
            base = max(base, spec.min_value)
        if spec.max_value is not None:
            base = min(base, spec.max_value)
        return self.format_base(spec, base)

    # --- values as a DBA writes them -----------------------------------------------------------------------------
    #
    # ``readable`` rounds a proposed value to what a DBA would write (and what is then measured and applied: the
    # text is an exact multiple of the knob's unit, so the server stores exactly what was measured); ``shown``
    # writes a value as it is, with the largest unit that keeps it whole (a knob's current value).

    def round_bytes(self, n: float, unit: int = 1024) -> str:
        """A byte count as a DBA writes it: 2 significant digits in the largest unit (``kB`` .. ``TB``), a power
        of two kept as it is, a half step (``1.5GB``) kept, any other fraction written in the next smaller unit;
        the result is a whole multiple of ``unit`` (the knob's own unit, e.g. 8 kB pages).

        >>> units = UnitGrammar(BINARY_SIZES, DURATIONS)
        >>> [units.round_bytes(x * 1024**2) for x in (256, 250, 253, 6667, 17462, 1536, 1331, 37.4, 4)]
        ['256MB', '250MB', '256MB', '6.5GB', '17GB', '1.5GB', '1300MB', '37MB', '4MB']
        >>> units.round_bytes(1000 * 1024, unit=8192), units.round_bytes(131 * 1024, unit=8192)
        ('1000kB', '128kB')
        """
        if n <= 0:
            return self.format_bytes(n)
        names = [u for u in self._memory_order if self.memory[u] >= min(unit, 1024)]
        i = next((k for k, u in enumerate(names) if n >= self.memory[u]), len(names) - 1)
        v = n / self.memory[names[i]]
        p = 2.0 ** round(math.log2(v))
        r = p if abs(v / p - 1) <= 0.02 else round_sig(v, 2)
        if not float(r).is_integer() and not float(2 * r).is_integer() and i + 1 < len(names):
            i += 1  # 1.3GB is written 1300MB
            r = round_sig(n / self.memory[names[i]], 2)
        return self.show_bytes(max(round(r * self.memory[names[i]] / unit), 1) * unit)  # whole units of the knob

    def show_bytes(self, n: float) -> str:
        """A byte count exactly, in the largest unit that keeps it whole or a half step.

        >>> units = UnitGrammar(BINARY_SIZES, DURATIONS)
        >>> [units.show_bytes(n) for n in (1536 * 1024**2, 1024**3, 1300 * 1024**2, 1000, 0)]
        ['1.5GB', '1GB', '1300MB', '1000B', '0']
        """
        for suffix in self._memory_order:
            v = n / self.memory[suffix]
            smallest = suffix == self._memory_order[-1]
            if v >= 1 and float(2 * v).is_integer() and (not smallest or float(v).is_integer()):
                return f"{_number(v)}{suffix}"
        return _number(n)

    def round_ms(self, ms: float, unit_ms: float = 1.0, whole: bool = True) -> str:
        """A duration as a DBA writes it: 2 significant digits in the largest unit (``ms`` .. ``d``) not below
        the knob's own unit (``unit_ms``), any fraction written in the next smaller unit; ``whole``: the knob
        takes whole units only (an integer knob).

        >>> units = UnitGrammar(BINARY_SIZES, DURATIONS)
        >>> [units.round_ms(s * 1000, 1000) for s in (745, 300, 30, 372, 3600, 5400, 86400, 1.3)]
        ['12min', '5min', '30s', '370s', '1h', '90min', '1d', '1s']
        >>> units.round_ms(42), units.round_ms(1300), units.round_ms(2.5, whole=False)
        ('42ms', '1300ms', '2.5ms')
        """
        if ms <= 0:
            return f"{_number(ms / unit_ms)}"
        names = [u for u in self._time_order if self.time[u] >= unit_ms - 1e-12]
        i = next((k for k, u in enumerate(names) if ms >= self.time[u] - 1e-9), len(names) - 1)
        r = round_sig(ms / self.time[names[i]], 2)
        if not float(r).is_integer() and i + 1 < len(names):
            smaller = round_sig(ms / self.time[names[i + 1]], 2)
            if float(smaller).is_integer() or names[i + 1] == names[-1]:
                i, r = i + 1, smaller
        if names[i] == names[-1] and whole:
            r = max(round(r), 1)
        return f"{_number(r)}{names[i]}"

    def readable(self, spec: KnobSpec, value: str) -> str:
        """``value`` rounded as a DBA would write it, inside the catalog's bounds: memory in kB/MB/GB at 2
        significant digits (powers of two kept), times in ms/s/min/h, other numbers at 2 significant digits. Zero
        and negative values (off, auto, use another setting) and non-numeric settings are left as they are.

        >>> from advisor.core.domain import KnobSpec
        >>> units = UnitGrammar(BINARY_SIZES, DURATIONS)
        >>> sb = KnobSpec("shared_buffers", "integer", "8kB", "16384", None, 16, 1073741823)
        >>> ct = KnobSpec("checkpoint_timeout", "integer", "s", "300", None, 30, 86400)
        >>> rpc = KnobSpec("random_page_cost", "real", None, "4", None, 0, 1e308)
        >>> wb = KnobSpec("wal_buffers", "integer", "8kB", "512", None, -1, 262143)
        >>> [units.readable(*a) for a in ((sb, "6667MB"), (ct, "745"), (rpc, "1.0834"), (wb, "-1"), (ct, "10"))]
        ['6.5GB', '12min', '1.1', '-1', '30s']
        """
        if spec.vartype not in {"integer", "real"}:
            return self.check(spec, value)
        base = self.to_base(spec, value)
        family, size = self.unit_factor(spec.unit)
        if base <= 0:
            text = _number(base)
        elif family == "memory":
            text = self.round_bytes(base * size, int(size))
        elif family == "time":
            text = self.round_ms(base * size, size, whole=spec.vartype == "integer")
        else:
            r = round_sig(base, 2)
            text = _number(max(round(r), 1) if spec.vartype == "integer" else r)
        rounded = self.to_base(spec, text)
        bound = spec.min_value if spec.min_value is not None and rounded < spec.min_value else \
            spec.max_value if spec.max_value is not None and rounded > spec.max_value else None
        if bound is not None:
            text, rounded = self.shown(spec, self.format_base(spec, bound)), bound
        return text if self.write_units else _number(rounded)

    def shown(self, spec: KnobSpec, value: str) -> str:
        """``value`` exactly, with the largest unit that keeps it whole (``'300'`` seconds is ``5min``, 16384
        pages of 8 kB are ``128MB``); non-numeric settings as they are.

        >>> from advisor.core.domain import KnobSpec
        >>> units = UnitGrammar(BINARY_SIZES, DURATIONS)
        >>> sb = KnobSpec("shared_buffers", "integer", "8kB", "16384", None, 16, 1073741823)
        >>> ct = KnobSpec("checkpoint_timeout", "integer", "s", "300", None, 30, 86400)
        >>> [units.shown(sb, "16384"), units.shown(sb, "1.5GB"), units.shown(ct, "372"), units.shown(ct, "12min")]
        ['128MB', '1.5GB', '372s', '12min']
        """
        if spec.vartype not in {"integer", "real"}:
            return value
        base = self.to_base(spec, value)
        family, size = self.unit_factor(spec.unit)
        if family == "memory" and base > 0:
            return self.show_bytes(base * size)
        if family == "time" and base > 0:
            ms = base * size
            for suffix in self._time_order:
                v = ms / self.time[suffix]
                if v >= 1 and abs(v - round(v)) < 1e-9:
                    return f"{round(v)}{suffix}"
            return f"{_number(base)}{spec.unit}"
        return _number(base)


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
