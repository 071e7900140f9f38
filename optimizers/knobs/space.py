"""The tunable knob space: which knobs, their ranges and scales, and the resource constraints a configuration
must meet before it is tried.

A configuration is a dict ``name -> text`` in a form PostgreSQL accepts (``'256MB'``, ``'1.1'``, ``'on'``).
Search optimizers work in the unit cube: ``encode``/``decode`` map between the two. Sizes use a log scale; knobs
whose range starts at 0 use log(1 + v); a knob with a special value (``wal_buffers = -1`` means "auto", a
``jit_above_cost`` of -1 means "never") gives the bottom 10% of its axis to that value.

>>> from advisor.core.domain import KnobSpec, Hardware
>>> catalog = {"work_mem": KnobSpec("work_mem", "integer", "kB", "4096", "4096", 64, 2147483647)}
>>> space = KnobSpace.build(catalog, Hardware(8 * 1024**3, 4, "ssd"))
>>> space.decode(space.encode({"work_mem": "64MB"}))
{'work_mem': '64MB'}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from advisor.core import knobvalues
from advisor.core.domain import Hardware, KnobChange, KnobSpec
from advisor.core.errors import InvalidKnobValue, UnknownKnob

MB = 1024**2
GB = 1024**3

# Knobs that trade durability for speed: never searched unless the user opts in.
DURABILITY = frozenset({"fsync", "synchronous_commit", "full_page_writes"})
# Knobs that only matter after a fresh ANALYZE or that describe the server rather than tune it.
NOT_TUNABLE = frozenset({"max_connections", "port", "listen_addresses", "shared_preload_libraries"})
SPECIAL_SHARE = 0.10  # the share of an axis given to a special value


@dataclass(frozen=True)
class Range:
    """A knob's default search range, in bytes for memory knobs and catalog units otherwise, from hardware."""

    low: float
    high: float
    scale: str = "linear"  # linear | log | log1p
    special: float | None = None  # a value with its own meaning (e.g. -1 = auto)


def default_ranges(hw: Hardware) -> dict[str, Range]:
    """The knobs that matter most for PostgreSQL (importance rankings of OtterTune/the VLDB'22 study), in
    order, with ranges that scale with the machine."""
    ram, cores = hw.memory_bytes, max(hw.cores, 1)
    return {
        "shared_buffers": Range(16 * MB, 0.4 * ram, "log"),
        "work_mem": Range(1 * MB, min(2 * GB, ram / 8), "log"),
        "effective_cache_size": Range(64 * MB, 0.9 * ram, "log"),
        "random_page_cost": Range(1.0, 8.0),
        "max_parallel_workers_per_gather": Range(0, max(2, cores)),
        "join_collapse_limit": Range(1, 20),
        "from_collapse_limit": Range(1, 20),
        "jit": Range(0, 1),
        "jit_above_cost": Range(1e3, 1e7, "log", special=-1),
        "maintenance_work_mem": Range(16 * MB, min(2 * GB, ram / 4), "log"),
        "hash_mem_multiplier": Range(1.0, 8.0),
        "effective_io_concurrency": Range(0, 512, "log1p"),
        "cpu_tuple_cost": Range(0.001, 0.1, "log"),
        "max_parallel_workers": Range(0, max(2, 2 * cores)),
        "max_worker_processes": Range(2, max(8, 4 * cores)),
        "wal_buffers": Range(64 * 1024, 256 * MB, "log", special=-1),
        "checkpoint_completion_target": Range(0.1, 0.99),
        "checkpoint_timeout": Range(30, 3600, "log"),
        "min_wal_size": Range(32 * MB, 8 * GB, "log"),
        "max_wal_size": Range(64 * MB, 32 * GB, "log"),
        "bgwriter_delay": Range(10, 10000, "log"),
        "bgwriter_lru_maxpages": Range(0, 1000, "log1p"),
        "bgwriter_lru_multiplier": Range(0.0, 10.0),
        "commit_delay": Range(0, 10000, "log1p"),
        "wal_compression": Range(0, 1),
        "geqo_threshold": Range(2, 20),
        "default_statistics_target": Range(10, 1000, "log"),
    }


DURABILITY_RANGES = {"fsync": Range(0, 1), "synchronous_commit": Range(0, 1), "full_page_writes": Range(0, 1)}


@dataclass(frozen=True)
class Dimension:
    name: str
    spec: KnobSpec
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
            value = knobvalues.check(self.spec, text).lower()
            lowered = [c.lower() for c in self.choices]
            if value not in lowered:
                raise InvalidKnobValue(f"{self.name}: {text!r} is not in the searched values {list(self.choices)}")
            return (lowered.index(value) + 0.5) / len(self.choices)
        base = knobvalues.to_base(self.spec, text)
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
        return _text(self.spec, min(max(base, self.low), self.high))


def _text(spec: KnobSpec, base: float) -> str:
    """Readable text for a value in catalog units: sizes rounded to a whole MB (or kB below 16MB)."""
    family, size = knobvalues.unit_factor(spec.unit)
    if family == "memory" and spec.vartype == "integer":
        nbytes = base * size
        step = MB if nbytes >= 16 * MB else 1024
        nbytes = round(nbytes / step) * step
        if base > 0:  # at least one unit; 0 (off) and -1 (use another setting) stay what they are
            nbytes = max(nbytes, size)
        return knobvalues.clamp(spec, math.floor(nbytes / size))
    if spec.vartype == "real":
        return knobvalues.clamp(spec, float(f"{base:.3g}"))
    return knobvalues.clamp(spec, round(base))


@dataclass(frozen=True)
class SpaceOptions:
    """What the user asks of the space: knobs to add or leave out, ranges to narrow, durability opt-in, and the
    resource budget (connections that run queries at once, the share of RAM a configuration may plan for)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    ranges: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # name -> (low, high) as knob text
    allow_durability: bool = False
    max_knobs: int | None = None
    active_connections: int | None = None  # default: 4 per core
    memory_fraction: float = 0.8


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str


@dataclass
class KnobSpace:
    dimensions: list[Dimension]
    hardware: Hardware
    catalog: Mapping[str, KnobSpec]
    options: SpaceOptions = SpaceOptions()

    @classmethod
    def build(cls, catalog: Mapping[str, KnobSpec], hardware: Hardware,
              options: SpaceOptions = SpaceOptions()) -> "KnobSpace":
        """The space for ``catalog``: the default knobs the server has, plus ``include``, minus ``exclude``,
        ranges narrowed by ``options.ranges``. Unknown names and bad ranges raise UnknownKnob/InvalidKnobValue."""
        ranges = default_ranges(hardware)
        if options.allow_durability:
            ranges.update(DURABILITY_RANGES)
        for name in (*options.include, *options.exclude, *options.ranges):
            if name not in catalog:
                raise UnknownKnob(f"unknown setting {name!r}: the server's pg_settings has no such name")
        names = [n for n in ranges if n in catalog]
        if options.max_knobs:
            names = names[:options.max_knobs]
        for name in options.include:
            if name in DURABILITY and not options.allow_durability:
                raise InvalidKnobValue(f"{name} trades durability for speed; pass allow_durability to search it")
            if name not in names:
                names.append(name)
        names = [n for n in names if n not in set(options.exclude) and n not in NOT_TUNABLE]
        dims = [_dimension(catalog[n], ranges.get(n), options.ranges.get(n)) for n in names]
        return cls([d for d in dims if d is not None], hardware, catalog, options)

    # --- coordinates ---------------------------------------------------------------------------------------------

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
        return np.array([d.to_unit(config[d.name] if d.name in config else _current(d.spec))
                         for d in self.dimensions], dtype=float)

    def decode(self, x: Iterable[float]) -> dict[str, str]:
        return {d.name: d.from_unit(u) for d, u in zip(self.dimensions, x, strict=True)}

    def default_config(self) -> dict[str, str]:
        """The server's current values for the searched knobs (the baseline of a tuning run)."""
        return {d.name: _current(d.spec) for d in self.dimensions}

    def changes(self, config: Mapping[str, str]) -> list[KnobChange]:
        """The configuration as changes, left out where it equals the server's current value."""
        out = []
        for name, text in config.items():
            spec = self.catalog[name]
            if not knobvalues.same_value(spec, _current(spec), text):
                out.append(KnobChange(name, text))
        return out

    # --- constraints ---------------------------------------------------------------------------------------------

    def active_connections(self) -> int:
        return self.options.active_connections or 4 * max(self.hardware.cores, 1)

    def memory_footprint(self, config: Mapping[str, str]) -> float:
        """Bytes the configuration may claim at peak: shared memory, plus each active connection's sorts and
        hashes (work_mem x hash_mem_multiplier per process of a parallel query), plus autovacuum workers'
        maintenance memory."""
        val = self._value
        shared = val(config, "shared_buffers") + max(val(config, "wal_buffers"), 0)
        per_op = val(config, "work_mem") * max(val(config, "hash_mem_multiplier", 1.0), 1.0)
        workers = 1 + max(val(config, "max_parallel_workers_per_gather", 0.0), 0)
        av_workers = val(config, "autovacuum_max_workers", 3.0)
        av_mem = val(config, "autovacuum_work_mem", -1.0)
        if av_mem <= 0:
            av_mem = val(config, "maintenance_work_mem")
        return shared + self.active_connections() * per_op * workers + av_workers * av_mem

    def _value(self, config: Mapping[str, str], name: str, fallback: float = 0.0) -> float:
        spec = self.catalog.get(name)
        if spec is None:
            return fallback
        text = config.get(name, _current(spec))
        family, size = knobvalues.unit_factor(spec.unit)
        base = knobvalues.to_base(spec, text)
        if family == "memory" and base >= 0:
            return base * size
        if name == "wal_buffers" and base < 0:  # auto: 1/32 of shared_buffers, at most 16MB
            return min(self._value(config, "shared_buffers") / 32, 16 * MB)
        return base

    def violations(self, config: Mapping[str, str]) -> list[Violation]:
        """Hard constraints, checked before a configuration is tried."""
        out: list[Violation] = []
        budget = self.options.memory_fraction * self.hardware.memory_bytes
        need = self.memory_footprint(config)
        if need > budget:
            out.append(Violation("memory", f"needs up to {human_bytes(need)} "
                                 f"(shared memory + {self.active_connections()} connections' work memory + autovacuum)"
                                 f", over {self.options.memory_fraction:.0%} of {human_bytes(self.hardware.memory_bytes)} RAM"))
        if "min_wal_size" in self.catalog and "max_wal_size" in self.catalog:
            if self._value(config, "min_wal_size") > self._value(config, "max_wal_size"):
                out.append(Violation("wal", "min_wal_size is above max_wal_size"))
        if "max_parallel_workers" in self.catalog and "max_worker_processes" in self.catalog:
            if self._value(config, "max_parallel_workers") > self._value(config, "max_worker_processes"):
                out.append(Violation("workers", "max_parallel_workers is above max_worker_processes (the excess is never started)"))
        return out

    def repair(self, config: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """The nearest configuration that meets the constraints (work memory shrunk first, then shared
        buffers; WAL and worker bounds ordered) and what was changed."""
        fixed = dict(config)
        notes: list[str] = []
        if "min_wal_size" in self.catalog and "max_wal_size" in self.catalog and \
                self._value(fixed, "min_wal_size") > self._value(fixed, "max_wal_size"):
            if "min_wal_size" in fixed:
                fixed["min_wal_size"] = fixed.get("max_wal_size", _current(self.catalog["max_wal_size"]))
                notes.append("min_wal_size lowered to max_wal_size")
            elif "max_wal_size" in fixed:  # min_wal_size is not searched: max_wal_size moves up to it
                fixed["max_wal_size"] = _current(self.catalog["min_wal_size"])
                notes.append("max_wal_size raised to min_wal_size")
        if "max_parallel_workers" in fixed and \
                self._value(fixed, "max_parallel_workers") > self._value(fixed, "max_worker_processes"):
            fixed["max_parallel_workers"] = _text(self.catalog["max_parallel_workers"],
                                                  self._value(fixed, "max_worker_processes"))
            notes.append("max_parallel_workers lowered to max_worker_processes")
        budget = self.options.memory_fraction * self.hardware.memory_bytes
        for name in ("work_mem", "maintenance_work_mem", "shared_buffers"):
            if self.memory_footprint(fixed) <= budget or name not in fixed:
                continue
            spec = self.catalog[name]
            _, size = knobvalues.unit_factor(spec.unit)
            for _ in range(60):
                if self.memory_footprint(fixed) <= budget:
                    break
                shrunk = self._value(fixed, name) * 0.8
                if spec.min_value is not None and shrunk / size < spec.min_value:
                    break
                fixed[name] = _text(spec, shrunk / size)
            notes.append(f"{name} lowered to {fixed[name]} to fit the memory budget")
        return fixed, notes

    def describe(self) -> list[dict]:
        return [{"name": d.name, "low": d.from_unit(0.0 if d.special is None else SPECIAL_SHARE),
                 "high": d.from_unit(1.0), "scale": d.scale if not d.categorical else "choice",
                 "special": _special_text(d.special) if d.special is not None else None,
                 "choices": list(d.choices), "restart": d.restart} for d in self.dimensions]


def _special_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def human_bytes(n: float) -> str:
    for suffix, size in (("GB", GB), ("MB", MB)):
        if n >= size:
            return f"{n / size:.1f}{suffix}"
    return f"{n / 1024:.0f}kB"


def _current(spec: KnobSpec) -> str:
    """The server's current value as knob text (memory as a byte size)."""
    if spec.vartype in {"integer", "real"}:
        return knobvalues.format_base(spec, float(spec.setting))
    return spec.setting


def _dimension(spec: KnobSpec, default: Range | None, narrowed: tuple[str, str] | None) -> Dimension | None:
    if spec.vartype == "bool":
        return Dimension(spec.name, spec, choices=("off", "on"))
    if spec.vartype == "enum":
        values = spec.enum_values
        if narrowed:
            wanted = {v.strip().lower() for v in narrowed} | {spec.setting.lower()}  # the baseline stays reachable
            values = tuple(v for v in values if v.lower() in wanted)
        values = tuple(v for v in values if v.lower() not in {"try"} or v.lower() == spec.setting.lower())
        return Dimension(spec.name, spec, choices=values) if len(values) > 1 else None
    if spec.vartype not in {"integer", "real"}:
        return None
    family, size = knobvalues.unit_factor(spec.unit)
    if default is None:  # an included knob without a curated range: its catalog bounds, log when wide
        lo, hi = spec.min_value or 0.0, spec.max_value or 1.0
        default = Range(lo * (size if family == "memory" else 1), hi * (size if family == "memory" else 1),
                        "log1p" if lo >= 0 and hi > 1000 * max(lo, 1) else "linear")
    div = size if family == "memory" else 1.0
    lo, hi = default.low / div, default.high / div
    if narrowed:
        lo, hi = knobvalues.to_base(spec, narrowed[0]), knobvalues.to_base(spec, narrowed[1])
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
    return replace(Dimension(spec.name, spec), low=lo, high=hi, scale=scale, special=special)
