"""The tunable knob space: which knobs, their ranges and scales, and the resource constraints a configuration
must meet before it is tried.

Which knobs, their default ranges, the memory model and the orderings between knobs are the engine's facts, its
``KnobProfile`` (``advisor.core.knobprofile``, supplied by ``Connector.knob_profile()``); this module names no knob.
A configuration is a ``KnobConfig`` (``advisor.core.knobconfig``): ``name -> text`` in a form the server accepts
(``'256MB'``, ``'1.1'``, ``'on'``), frozen, with its units; the space makes every one (``decode``, ``default_config``,
``full``, ``repair``) and reads any mapping of texts. Search optimizers work in the unit cube: ``encode``/``decode``
map between the two. Sizes use a log scale; knobs
whose range starts at 0 use log(1 + v); a knob with a special value (a range's ``special``, e.g. -1 for "auto")
gives the bottom 10% of its axis to that value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from advisor.core.domain import Hardware, KnobChange, KnobSpec
from advisor.core.knobconfig import MB, KnobConfig, current_text as _current, knob_text as _text
from advisor.core.knobprofile import KnobProfile, Range
from advisor.core.knobvalues import UnitGrammar
from advisor.core.errors import InvalidKnobValue, UnknownKnob
from advisor.core.names import did_you_mean

GB = 1024**3

SPECIAL_SHARE = 0.10  # the share of an axis given to a special value


@dataclass(frozen=True)
class Dimension:
    name: str
    spec: KnobSpec
    units: UnitGrammar  # the engine's grammar of values (its knob profile's)
    low: float = 0.0  # catalog units
    high: float = 1.0
    scale: str = "linear"
    special: float | None = None
    choices: tuple[str, ...] = ()  # bool / enum values

    @property
    def restart(self) -> bool:
        return self.spec.needs_restart

    @property
    def categorical(self) -> bool:
        return bool(self.choices)

    def _forward(self, v: float) -> float:
        if self.scale == "log":
            return math.log(v)
        if self.scale == "log1p":
            return math.log1p(v)
        return v

    def _inverse(self, t: float) -> float:
        if self.scale == "log":
            return math.exp(t)
        if self.scale == "log1p":
            return math.expm1(t)
        return t

    def to_unit(self, text: str) -> float:
        if self.categorical:
            value = self.units.check(self.spec, text).lower()
            lowered = [c.lower() for c in self.choices]
            if value not in lowered:
                raise InvalidKnobValue(f"{self.name}: {text!r} is not in the searched values {list(self.choices)}")
            return (lowered.index(value) + 0.5) / len(self.choices)
        base = self.units.to_base(self.spec, text)
        lo_u = SPECIAL_SHARE if self.special is not None else 0.0
        if self.special is not None and math.isclose(base, self.special):
            return SPECIAL_SHARE / 2
        base = min(max(base, self.low), self.high)
        a, b = self._forward(self.low), self._forward(self.high)
        frac = 0.0 if b == a else (self._forward(base) - a) / (b - a)
        return lo_u + (1 - lo_u) * frac

    def from_unit(self, u: float) -> str:
        u = min(max(float(u), 0.0), 1.0)
        if self.categorical:
            return self.choices[min(int(u * len(self.choices)), len(self.choices) - 1)]
        if self.special is not None:
            if u < SPECIAL_SHARE:
                return _special_text(self.special)
            u = (u - SPECIAL_SHARE) / (1 - SPECIAL_SHARE)
        a, b = self._forward(self.low), self._forward(self.high)
        base = self._inverse(a + u * (b - a))
        return _text(self.units, self.spec, min(max(base, self.low), self.high))


@dataclass(frozen=True)
class SpaceOptions:
    """What the user asks of the space: knobs to add or leave out, ranges to narrow, durability opt-in, and the
    resource budget (connections that run queries at once, the share of RAM a configuration may plan for)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    ranges: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # name -> (low, high) as knob text
    allow_durability: bool = False
    allow_unsafe: bool = False  # the profile's unsafe knobs named in include may be searched
    max_knobs: int | None = None
    active_connections: int | None = None  # default: 4 per core
    memory_fraction: float = 0.8


def check_flags(profile: KnobProfile, options: SpaceOptions) -> None:
    """InvalidKnobValue for a knob named in ``include`` without the flag its kind needs: the profile's durability
    knobs ``allow_durability``, its unsafe knobs (they change correctness) ``allow_unsafe``."""
    for name in options.include:
        if name in profile.durability and not options.allow_durability:
            raise InvalidKnobValue(f"{name} trades durability for speed; pass allow_durability to search it")
        if name in profile.unsafe and not options.allow_unsafe:
            raise InvalidKnobValue(f"{name} {profile.unsafe[name]}: it changes correctness, searched only when "
                                   "named with allow_unsafe (--allow-unsafe)")


def check_options(catalog: Mapping[str, KnobSpec], profile: KnobProfile, options: SpaceOptions) -> None:
    """UnknownKnob for a name in ``include``, ``exclude`` or ``ranges`` that ``catalog`` lacks (the closest names
    suggested); InvalidKnobValue for a numeric range that is empty, or a knob named without its flag
    (``check_flags``). What a run checks before any work; ``KnobSpace.build`` checks it again."""
    for name in (*options.include, *options.exclude, *options.ranges):
        if name not in catalog:
            raise UnknownKnob(f"unknown setting {name!r}: the server's {profile.catalog_source} has no such name"
                              f"{did_you_mean(name, catalog)}")
    for name, (low, high) in options.ranges.items():
        spec = catalog[name]
        if spec.vartype in {"integer", "real"} and profile.units.to_base(spec, low) > profile.units.to_base(spec, high):
            raise InvalidKnobValue(f"{name}: range {low}..{high} is empty")
    check_flags(profile, options)


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str


@dataclass
class KnobSpace:
    dimensions: list[Dimension]
    hardware: Hardware
    catalog: Mapping[str, KnobSpec]
    profile: KnobProfile
    options: SpaceOptions = SpaceOptions()

    @classmethod
    def build(cls, catalog: Mapping[str, KnobSpec], hardware: Hardware, profile: KnobProfile,
              options: SpaceOptions = SpaceOptions()) -> "KnobSpace":
        """The space for ``catalog``: the profile's knobs the server has, plus ``include``, minus ``exclude``,
        ranges narrowed by ``options.ranges``. The profile's durability knobs come in with ``allow_durability``, its
        unsafe knobs only when named in ``include`` with ``allow_unsafe``. Unknown names, bad ranges and such knobs
        named without their flag raise UnknownKnob/InvalidKnobValue."""
        ranges = profile.ranges(hardware)
        if options.allow_durability:
            ranges.update(profile.durability)
        check_options(catalog, profile, options)
        names = [n for n in ranges if n in catalog and n not in profile.unsafe]  # unsafe: only by name, below
        if options.max_knobs:
            names = names[:options.max_knobs]
        for name in options.include:
            if name not in names:
                names.append(name)
        names = [n for n in names if n not in set(options.exclude) and n not in profile.not_tunable]
        dims = [_dimension(profile.units, catalog[n], ranges.get(n), options.ranges.get(n), profile.skipped_choices)
                for n in names]
        return cls([d for d in dims if d is not None], hardware, catalog, profile, options)

    # --- coordinates ---------------------------------------------------------------------------------------------

    @property
    def units(self) -> UnitGrammar:
        """How the engine reads and writes knob values (the profile's grammar)."""
        return self.profile.units

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.dimensions]

    @property
    def dim(self) -> int:
        return len(self.dimensions)

    def restart_mask(self) -> np.ndarray:
        return np.array([d.restart for d in self.dimensions], dtype=bool)

    def encode(self, config: Mapping[str, str]) -> np.ndarray:
        """A point in [0, 1]^d; knobs missing from ``config`` take the server's current value."""
        return np.array([d.to_unit(config[d.name] if d.name in config else _current(self.units, d.spec))
                         for d in self.dimensions], dtype=float)

    def decode(self, x: Iterable[float]) -> KnobConfig:
        return self.config({d.name: d.from_unit(u) for d, u in zip(self.dimensions, x, strict=True)})

    def default_config(self) -> KnobConfig:
        """The server's current values for the searched knobs (the baseline of a tuning run)."""
        return KnobConfig.current(self.catalog, self.units, self.names)

    def config(self, values: Mapping[str, str]) -> KnobConfig:
        """``values`` (knob texts, e.g. a stored JSON object) as a configuration of this space's catalog, as they
        are (``values`` itself when it is one)."""
        if isinstance(values, KnobConfig) and values.catalog is self.catalog:
            return values
        return KnobConfig(values, catalog=self.catalog, units=self.units)

    def full(self, values: Mapping[str, str] | Iterable[KnobChange] = ()) -> KnobConfig:
        """Every searched knob: the server's current values with ``values`` (texts, or changes) on top."""
        return self.default_config().updated(values)

    def stored(self, config: Mapping[str, str]) -> dict[str, str]:
        """The stored form of a configuration: the JSON object of its texts (``loaded`` reads it back)."""
        return self.config(config).to_json()

    def loaded(self, stored: Mapping[str, str]) -> KnobConfig:
        """A stored configuration read back (the same texts in every row, old or new)."""
        return self.config(stored)

    def changes(self, config: Mapping[str, str]) -> list[KnobChange]:
        """The configuration as changes, left out where it equals the server's current value."""
        return list(self.config(config).changes())

    # --- constraints ---------------------------------------------------------------------------------------------

    def active_connections(self) -> int:
        return self.options.active_connections or 4 * max(self.hardware.cores, 1)

    def memory_footprint(self, config: Mapping[str, str]) -> float:
        """Bytes the configuration may claim at peak, by the profile's memory model (global buffers, each active
        connection's buffers, background workers' buffers)."""
        return self.profile.memory.footprint(lambda name, fallback: self._value(config, name, fallback),
                                             self.active_connections())

    def _value(self, config: Mapping[str, str], name: str, fallback: float = 0.0) -> float:
        spec = self.catalog.get(name)
        if spec is None:
            return fallback
        text = config.get(name, _current(self.units, spec))
        family, size = self.units.unit_factor(spec.unit)
        base = self.units.to_base(spec, text)
        if family == "memory" and base >= 0:
            return base * size
        auto = self.profile.memory.auto.get(name)
        if auto is not None and base < 0:  # a share of another knob, at most a cap
            of, fraction, cap = auto
            return min(self._value(config, of) * fraction, cap)
        return base

    def violations(self, config: Mapping[str, str]) -> list[Violation]:
        """Hard constraints, checked before a configuration is tried."""
        out: list[Violation] = []
        budget = self.options.memory_fraction * self.hardware.memory_bytes
        need = self.memory_footprint(config)
        if need > budget:
            wording = self.profile.memory.wording.format(connections=self.active_connections())
            out.append(Violation("memory", f"needs up to {human_bytes(need)} ({wording})"
                                 f", over {self.options.memory_fraction:.0%} of {human_bytes(self.hardware.memory_bytes)} RAM"))
        for o in self.profile.orderings:
            if o.low in self.catalog and o.high in self.catalog and \
                    self._value(config, o.low) > self._value(config, o.high):
                out.append(Violation(o.rule, f"{o.low} is above {o.high}" + (f" ({o.why})" if o.why else "")))
        return out

    def repair(self, config: Mapping[str, str]) -> tuple[KnobConfig, list[str]]:
        """The nearest configuration that meets the constraints (ordered knobs put in order: the searched one of
        the pair moves to the other; then the memory model's ``shrink`` knobs lowered in order), its values
        written as a DBA writes them (``rounded``), and what was changed. A trial runs this configuration, so the
        value a trial ran is the value the recommendation and its "not recommended" rows show."""
        fixed = dict(config)
        notes: list[str] = []
        for o in self.profile.orderings:
            if o.low not in self.catalog or o.high not in self.catalog or \
                    self._value(fixed, o.low) <= self._value(fixed, o.high):
                continue
            if o.low in fixed:
                fixed[o.low] = fixed.get(o.high, _current(self.units, self.catalog[o.high]))
                notes.append(f"{o.low} lowered to {o.high}")
            elif o.high in fixed:  # the lower one is not searched: the higher one moves up to it
                fixed[o.high] = _current(self.units, self.catalog[o.low])
                notes.append(f"{o.high} raised to {o.low}")
        budget = self.options.memory_fraction * self.hardware.memory_bytes
        for name in self.profile.memory.shrink:
            if self.memory_footprint(fixed) <= budget or name not in fixed:
                continue
            spec = self.catalog[name]
            _, size = self.units.unit_factor(spec.unit)
            for _ in range(60):
                if self.memory_footprint(fixed) <= budget:
                    break
                shrunk = self._value(fixed, name) * 0.8
                if spec.min_value is not None and shrunk / size < spec.min_value:
                    break
                fixed[name] = self.units.readable(spec, _text(self.units, spec, shrunk / size))  # as noted
            notes.append(f"{name} lowered to {fixed[name]} to fit the memory budget")
        return self.rounded(fixed), notes

    def rounded(self, config: Mapping[str, str]) -> KnobConfig:
        """``config`` with every changed value rounded as a DBA would write it (the engine's
        ``UnitGrammar.readable``); a rounding that would leave the searched range or break the constraints (the
        memory budget) is left unrounded, unless another value's rounding makes room for it (a pass again, until nothing moves). What
        is measured is then what is recommended."""
        out = dict(config)
        base = self.default_config()
        ranges = {d.name: d for d in self.dimensions if not d.categorical}
        for _ in range(len(out) + 1):
            before = dict(out)
            for name, value in before.items():
                if self.units.same_value(self.catalog[name], base.get(name, ""), value):
                    continue
                text = self.units.readable(self.catalog[name], value)
                d = ranges.get(name)
                if d is not None and _outside(d, text) > _outside(d, value):
                    continue
                trial = {**out, name: text}
                if not self.violations(trial) or self.violations(out):
                    out = trial
            if out == before:
                break
        return self.config(out)

    def describe(self) -> list[dict]:
        return [{"name": d.name, "low": d.from_unit(0.0 if d.special is None else SPECIAL_SHARE),
                 "high": d.from_unit(1.0), "scale": d.scale if not d.categorical else "choice",
                 "special": _special_text(d.special) if d.special is not None else None,
                 "choices": list(d.choices), "restart": d.restart} for d in self.dimensions]


def _outside(d: Dimension, text: str) -> float:
    """How far ``text`` lies outside ``d``'s searched range, in catalog units (0 inside it or at its special
    value)."""
    base = d.units.to_base(d.spec, text)
    if d.special is not None and math.isclose(base, d.special):
        return 0.0
    return max(d.low - base, base - d.high, 0.0)


def _special_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def human_bytes(n: float) -> str:
    for suffix, size in (("GB", GB), ("MB", MB)):
        if n >= size:
            return f"{n / size:.1f}{suffix}"
    return f"{n / 1024:.0f}kB"


def _dimension(units: UnitGrammar, spec: KnobSpec, default: Range | None, narrowed: tuple[str, str] | None,
               skipped: frozenset[str] = frozenset()) -> Dimension | None:
    if spec.vartype == "bool":
        return Dimension(spec.name, spec, units, choices=("off", "on"))
    if spec.vartype == "enum":
        values = spec.enum_values
        if narrowed:
            wanted = {v.strip().lower() for v in narrowed} | {spec.setting.lower()}  # the baseline stays reachable
            values = tuple(v for v in values if v.lower() in wanted)
        values = tuple(v for v in values if v.lower() not in skipped or v.lower() == spec.setting.lower())
        return Dimension(spec.name, spec, units, choices=values) if len(values) > 1 else None
    if spec.vartype not in {"integer", "real"}:
        return None
    family, size = units.unit_factor(spec.unit)
    if default is None:  # an included knob without a curated range: its catalog bounds, log when wide
        lo, hi = spec.min_value or 0.0, spec.max_value or 1.0
        default = Range(lo * (size if family == "memory" else 1), hi * (size if family == "memory" else 1),
                        "log1p" if lo >= 0 and hi > 1000 * max(lo, 1) else "linear")
    div = size if family == "memory" else 1.0
    lo, hi = default.low / div, default.high / div
    if narrowed:
        lo, hi = units.to_base(spec, narrowed[0]), units.to_base(spec, narrowed[1])
        if lo > hi:
            raise InvalidKnobValue(f"{spec.name}: range {narrowed[0]}..{narrowed[1]} is empty")
    else:  # the server's current value stays reachable, so the baseline is a point of the space
        current = float(spec.setting)
        if current != default.special:
            lo, hi = min(lo, current), max(hi, current)
    if spec.min_value is not None:
        lo = max(lo, spec.min_value)
    if spec.max_value is not None:
        hi = min(hi, spec.max_value)
    if lo > hi:
        raise InvalidKnobValue(f"{spec.name}: the range lies outside the server's bounds "
                               f"[{spec.min_value}, {spec.max_value}]")
    scale = default.scale
    if scale == "log" and lo <= 0:
        scale = "log1p"
    special = default.special
    if special is not None and narrowed is not None:
        special = None  # a narrowed range means the user wants numbers, not the special value
    if special is not None and spec.min_value is not None and special < spec.min_value:
        special = None
    return replace(Dimension(spec.name, spec, units), low=lo, high=hi, scale=scale, special=special)
