"""A parameter space that is not a database's knob catalog: named parameters with a range, a scale or a set of
choices, and a default. The learned index's parameters are one (``connectors.learned`` supplies its catalog as
``ParamSpec`` data); the search optimizers (random, TPE, GP-BO, HiBO) work on any space that offers ``dim``,
``encode``/``decode`` (the unit cube), ``default_config``, ``changes`` and ``restart_mask``, as ``KnobSpace`` does.

A configuration is a ``LearnedParams``: ``name -> text`` (``'0.7'``, ``'16384'``, ``'true'``, ``'cost'``), checked
once by the space that made it (``decode``, ``default_config``, ``validate``, ``full``) and frozen, so a space with
the same parameters takes it as it is instead of checking it again; it stores, prints and compares as a dict, as
a knob configuration does, and ``value`` reads a parameter typed (a number, or a choice's word).

>>> space = ParamSpace((ParamSpec("density", 0.1, 1.0, default="0.7"),
...                     ParamSpec("fanout", 2, 1024, scale="log", integer=True, default="64"),
...                     ParamSpec("policy", choices=("cost", "always"), default="cost")))
>>> space.dim, space.default_config()
(3, {'density': '0.7', 'fanout': '64', 'policy': 'cost'})
>>> space.decode([1.0, 0.0, 0.9])
{'density': '1', 'fanout': '2', 'policy': 'always'}
>>> space.decode(space.encode({"fanout": "256"}))["fanout"]
'256'
>>> [c.name for c in space.changes({"density": "0.7", "fanout": "128", "policy": "cost"})]
['fanout']
>>> space.validate({"fanout": "5000"})
Traceback (most recent call last):
...
advisor.core.errors.InvalidKnobValue: fanout: 5000 is outside [2, 1024]

Parameters that must keep an order (a minimum below a maximum) say so with ``below``: a decoded point keeps it
(the chain's values are sorted onto its parameters, a tie moved just below the value above it), so a search never
spends a trial on an ordering the index refuses, nor asks for one ``validate`` refuses.

>>> ordered = ParamSpace((ParamSpec("min_density", 0.1, 0.9, default="0.6", below="max_density"),
...                       ParamSpec("max_density", 0.3, 0.99, default="0.8")))
>>> ordered.decode([0.9, 0.1])
{'min_density': '0.369', 'max_density': '0.82'}
>>> ParamSpace((ParamSpec("low", 0.0, 1.0, below="high"), ParamSpec("high", 0.0, 1.0))).decode([0.5, 0.5])
{'low': '0.4995', 'high': '0.5'}
>>> ordered.validate({"min_density": "0.85", "max_density": "0.5"})
Traceback (most recent call last):
...
advisor.core.errors.InvalidKnobValue: min_density (0.85) must be below max_density (0.5)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from advisor.core.domain import LearnedIndexParam
from advisor.core.errors import InvalidKnobValue, UnknownKnob

TRUE = ("true", "on", "1", "yes")
FALSE = ("false", "off", "0", "no")


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: a number in [low, high] (``scale`` linear or log; ``integer`` rounds), or one of
    ``choices`` (booleans are the choices ``("false", "true")``). ``rebuild``: a change takes effect only when
    the structure is rebuilt (the space's ``restart_mask``); ``description`` is for people and prompts."""

    name: str
    low: float = 0.0
    high: float = 1.0
    scale: str = "linear"  # linear | log
    integer: bool = False
    choices: tuple[str, ...] = ()
    default: str = ""
    rebuild: bool = False
    description: str = ""
    below: str = ""  # a parameter this one's value must stay below (strictly; whole numbers may equal it)

    @property
    def categorical(self) -> bool:
        return bool(self.choices)

    def check(self, text) -> str:
        """``text`` in canonical form; InvalidKnobValue when it is not a value of this parameter."""
        raw = str(text).strip()
        if self.categorical:
            value = raw.lower()
            if self.choices == ("false", "true"):
                value = "true" if value in TRUE else "false" if value in FALSE else value
            if value not in self.choices:
                raise InvalidKnobValue(f"{self.name}: {raw!r} is not one of {', '.join(self.choices)}")
            return value
        try:
            number = float(raw)
        except ValueError:
            raise InvalidKnobValue(f"{self.name}: {raw!r} is not a number") from None
        if not math.isfinite(number) or number < self.low or number > self.high:
            raise InvalidKnobValue(f"{self.name}: {raw} is outside [{_fmt(self.low)}, {_fmt(self.high)}]")
        if self.integer and number != round(number):
            raise InvalidKnobValue(f"{self.name}: {raw} is not a whole number")
        return _fmt(number, self.integer)

    def to_unit(self, text) -> float:
        value = self.check(text)
        if self.categorical:
            return (self.choices.index(value) + 0.5) / len(self.choices)
        a, b = self._forward(self.low), self._forward(self.high)
        return 0.0 if b == a else (self._forward(float(value)) - a) / (b - a)

    def from_unit(self, u: float) -> str:
        u = min(max(float(u), 0.0), 1.0)
        if self.categorical:
            return self.choices[min(int(u * len(self.choices)), len(self.choices) - 1)]
        a, b = self._forward(self.low), self._forward(self.high)
        value = self._inverse(a + u * (b - a))
        value = min(max(round(value) if self.integer else float(f"{value:.4g}"), self.low), self.high)
        return _fmt(value, self.integer)

    def _forward(self, v: float) -> float:
        return math.log(v) if self.scale == "log" else v

    def _inverse(self, t: float) -> float:
        return math.exp(t) if self.scale == "log" else t


def _fmt(number: float, integer: bool = False) -> str:
    if integer or float(number).is_integer():
        return str(int(round(number)))
    return f"{number:.6g}"


def as_value(value: str | float) -> float | int | str:
    """A parameter's value typed, as it is stored and handed over: a number's canonical text as the number (an int
    when whole, so it prints as the text did), a choice's word as it is; a number stays one.

    >>> [as_value(v) for v in ("0.7", "64", "1", "1e-05", "true", "bottom-up", 0.5)]
    [0.7, 64, 1, 1e-05, 'true', 'bottom-up', 0.5]
    """
    if not isinstance(value, str):
        return value
    try:
        number = float(value)
    except ValueError:
        return value
    if not math.isfinite(number):
        return value
    return int(number) if number.is_integer() else number


def as_text(value: str | float) -> str:
    """A parameter's value as a configuration holds it (``as_value``'s inverse for canonical values).

    >>> [as_text(v) for v in (0.7, 64, 1e-05, "true", "0.7")]
    ['0.7', '64', '1e-05', 'true', '0.7']
    """
    return value if isinstance(value, str) else _fmt(float(value))


def params_json(config: Mapping[str, str | float]) -> dict[str, float | int | str]:
    """A configuration (any mapping of a learned index's parameter values) in its stored form (``as_value``)."""
    return {name: as_value(value) for name, value in config.items()}


class LearnedParams(dict):
    """Parameter values checked by a space (``checked_by``: its parameters), frozen; see the module docstring.

    >>> space = ParamSpace((ParamSpec("density", 0.1, 1.0, default="0.7"),
    ...                     ParamSpec("fanout", 2, 1024, integer=True, default="64")))
    >>> params = space.full({"fanout": "128"})
    >>> params, params.value("density"), params.value("fanout"), space.validate(params) is params
    ({'density': '0.7', 'fanout': '128'}, 0.7, 128, True)
    >>> params.to_json(), space.full(params.to_json()) == params
    ({'density': 0.7, 'fanout': 128}, True)
    """

    __slots__ = ("checked_by",)

    def __init__(self, values: Mapping[str, str] | Iterable[tuple[str, str]] = (),
                 checked_by: tuple[ParamSpec, ...] = ()):
        # without ``checked_by`` (a copy ``dataclasses.asdict`` makes) no space takes it as checked

        super().__init__(values)
        self.checked_by = checked_by

    def value(self, name: str) -> float | int | str:
        """``name``'s value typed (``as_value``): a number (an int when whole), or a choice's word."""
        return as_value(self[name])

    def to_json(self) -> dict[str, float | int | str]:
        """The stored form: JSON numbers, and words for choices (what ``ParamSpace.loaded`` reads back)."""
        return {name: as_value(text) for name, text in self.items()}

    def _frozen(self, *args, **kwargs):
        raise TypeError("LearnedParams are frozen: make others with their space's full()")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _frozen  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self):
        return LearnedParams, (dict(self), self.checked_by)


class ParamSpace:
    """Parameters searched together; the coordinates the search optimizers work in."""

    def __init__(self, params: Iterable[ParamSpec]):
        self.params = tuple(params)
        self.by_name = {p.name: p for p in self.params}
        if len(self.by_name) != len(self.params):
            raise ValueError("parameter names must be unique")
        self.chains = _chains(self.params)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    @property
    def dim(self) -> int:
        return len(self.params)

    def restart_mask(self) -> np.ndarray:
        return np.array([p.rebuild for p in self.params], dtype=bool)

    def encode(self, config: Mapping[str, str]) -> np.ndarray:
        """A point in [0, 1]^d; parameters missing from ``config`` take their default."""
        return np.array([p.to_unit(config.get(p.name, p.default)) for p in self.params], dtype=float)

    def decode(self, x: Iterable[float]) -> LearnedParams:
        """The configuration at point ``x``; each ordered chain's values sorted onto its parameters."""
        config = {p.name: p.from_unit(u) for p, u in zip(self.params, x, strict=True)}
        for chain in self.chains:
            values = sorted(float(config[name]) for name in chain)
            above = math.inf
            for name, value in reversed(list(zip(chain, values))):  # from the top: each strictly below the next
                spec = self.by_name[name]
                value = min(max(value, spec.low), spec.high)
                if not spec.integer and value >= above:  # a tie (rounded or clamped alike): just below it
                    value = max(spec.low, float(f"{above * (1 - 1e-3):.4g}"))
                elif spec.integer:
                    value = min(value, above)
                config[name] = spec.check(_fmt(value, spec.integer))
                above = float(config[name])
        return LearnedParams(config, self.params)

    def default_config(self) -> LearnedParams:
        return LearnedParams({p.name: p.check(p.default) for p in self.params}, self.params)

    def spec(self, name: str) -> ParamSpec:
        if name not in self.by_name:
            raise UnknownKnob(f"unknown parameter {name!r}; expected one of {', '.join(self.names)}")
        return self.by_name[name]

    def validate(self, config: Mapping[str, str]) -> LearnedParams:
        """``config`` in canonical form; UnknownKnob / InvalidKnobValue naming the first bad parameter, or the
        first pair out of order (parameters missing from ``config`` take their default). ``config`` itself when a
        space with these parameters checked it already."""
        if isinstance(config, LearnedParams) and config.checked_by == self.params:
            return config
        checked = {name: self.spec(name).check(text) for name, text in config.items()}
        for spec in self.params:
            if spec.below and (spec.name in checked or spec.below in checked):
                low = checked.get(spec.name, spec.default)
                high = checked.get(spec.below, self.by_name[spec.below].default)
                if float(low) > float(high) or (float(low) == float(high) and not spec.integer):
                    raise InvalidKnobValue(f"{spec.name} ({low}) must be below {spec.below} ({high})")
        return LearnedParams(checked, self.params)

    def full(self, config: Mapping[str, str]) -> LearnedParams:
        """Every parameter: the defaults with ``config`` (validated) on top."""
        if isinstance(config, LearnedParams) and config.checked_by == self.params and len(config) == self.dim:
            return config
        return LearnedParams({**self.default_config(), **self.validate(config)}, self.params)

    def narrowed(self, ranges: Mapping[str, tuple[str, str]]) -> "ParamSpace":
        """This space with numeric parameters' ranges narrowed to ``{name: (low, high)}`` (each end a value of
        the parameter, the default kept inside); UnknownKnob / InvalidKnobValue naming the first bad one.

        >>> ParamSpace((ParamSpec("density", 0.1, 1.0, default="0.7"),)).narrowed({"density": ("0.5", "0.8")}).params[0].low
        0.5
        """
        out = list(self.params)
        for name, (low, high) in ranges.items():
            spec = self.spec(name)
            if spec.categorical:
                raise InvalidKnobValue(f"{name}: a choice ({', '.join(spec.choices)}) has no range to narrow")
            lo, hi = float(spec.check(low)), float(spec.check(high))
            if lo > hi:
                raise InvalidKnobValue(f"{name}: the range {low}:{high} is empty")
            if not lo <= float(spec.check(spec.default)) <= hi:
                raise InvalidKnobValue(f"{name}: the range {low}:{high} leaves out the default {spec.default}")
            out[self.names.index(name)] = replace(spec, low=lo, high=hi)
        return ParamSpace(out)

    def repair(self, config: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """The trial loop's constraint step: a parameter space states no constraint between its parameters (an
        engine that refuses a combination says so when it is built), so nothing is repaired."""
        return dict(config), []

    def violations(self, config: Mapping[str, str]) -> list:
        """No stated constraint is broken (see ``repair``)."""
        return []

    def changes(self, config: Mapping[str, str]) -> list[LearnedIndexParam]:
        """The configuration as changes, left out where it equals the default."""
        defaults = self.default_config()
        return [LearnedIndexParam(name, as_value(value)) for name, value in self.validate(config).items()
                if value != defaults[name]]

    def stored(self, config: Mapping[str, str]) -> dict[str, float | int | str]:
        """The stored form of a configuration: JSON numbers, and words for choices (``params_json``)."""
        return params_json(config)

    def loaded(self, stored: Mapping[str, str | float]) -> Mapping[str, str]:
        """A stored configuration read back (texts in older rows, JSON numbers in newer ones) in canonical form;
        as stored when it is not a configuration of this space (an infeasible trial's)."""
        try:
            return self.validate(stored)
        except (InvalidKnobValue, UnknownKnob):
            return dict(stored)


def _chains(params: tuple[ParamSpec, ...]) -> tuple[tuple[str, ...], ...]:
    """The ordered chains ``below`` links make, lowest first (``a below b``, ``b below c``: ``(a, b, c)``)."""
    names = {p.name for p in params}
    above = {p.name: p.below for p in params if p.below}
    for name, target in above.items():
        if target not in names:
            raise ValueError(f"{name} is below {target!r}, which is not a parameter of the space")
    starts = [p.name for p in params if p.name in above and p.name not in set(above.values())]
    chains = []
    for name in starts:
        chain = [name]
        while chain[-1] in above:
            if above[chain[-1]] in chain:
                raise ValueError(f"the parameters below one another make a cycle: {', '.join(chain)}")
            chain.append(above[chain[-1]])
        chains.append(tuple(chain))
    return tuple(chains)
