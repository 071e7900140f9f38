"""A knob configuration as one typed value (``KnobConfig``), from the optimizer to the connector, and the one place
a number in a knob's catalog unit becomes the text a configuration holds (``knob_text``: units and rounding).

A ``KnobConfig`` maps each knob's name to its value as the engine accepts it (``'256MB'``, ``'1.1'``, ``'on'``),
frozen, and knows the server's catalog and the engine's unit grammar: ``number`` reads a value in its catalog
unit, ``changes`` says what differs from the server's current settings, ``delta`` what must be set to go from
another configuration to this one (the ``KnobChange`` list a connector turns into SQL, the only place SQL is
written), ``updated`` gives a new configuration with some values replaced. It is a ``dict`` to read (stored as a
JSON object, printed and compared as one), never to write: a knob space (``optimizers.knobs.space.KnobSpace``)
makes it, from the unit cube (``decode``), the server's settings (``default_config``), a change list or a stored
JSON object (``full``), and repairs and rounds it.

>>> from advisor.core.domain import KnobChange, KnobSpec
>>> from advisor.core.knobvalues import BINARY_SIZES, DURATIONS, UnitGrammar
>>> units = UnitGrammar(BINARY_SIZES, DURATIONS)
>>> catalog = {"work_mem": KnobSpec("work_mem", "integer", "kB", "4096", None, 64, 2**31),
...            "random_page_cost": KnobSpec("random_page_cost", "real", None, "4", None, 0, 1e10)}
>>> now = KnobConfig.current(catalog, units, ["work_mem", "random_page_cost"])
>>> now
{'work_mem': '4MB', 'random_page_cost': '4'}
>>> config = now.updated([KnobChange("work_mem", "64MB")])
>>> config.number("work_mem"), config.changes()
(65536.0, (KnobChange(name='work_mem', value='64MB', kind='knob', acts_through_plans=False),))
>>> config.delta({"work_mem": "65536kB", "random_page_cost": "4.0"})
()
>>> config["work_mem"] = "1GB"
Traceback (most recent call last):
...
TypeError: a KnobConfig is frozen: make another with updated()
>>> [knob_text(units, catalog["work_mem"], kb) for kb in (65432.1, 12345.6)]
['64MB', '12346kB']
>>> knob_text(units, catalog["random_page_cost"], 1.23456)
'1.23'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from advisor.core.domain import KnobChange, KnobSpec
from advisor.core.knobvalues import UnitGrammar

MB = 1024**2


def knob_text(units: UnitGrammar, spec: KnobSpec, base: float) -> str:
    """Readable text for a value in catalog units, within the catalog's bounds: sizes rounded to a whole MB (or kB
    below 16MB), real numbers to 3 significant digits, integers to a whole number."""
    family, size = units.unit_factor(spec.unit)
    if family == "memory" and spec.vartype == "integer":
        nbytes = base * size
        step = MB if nbytes >= 16 * MB else 1024
        nbytes = round(nbytes / step) * step
        if base > 0:  # at least one unit; 0 (off) and -1 (use another setting) stay what they are
            nbytes = max(nbytes, size)
        return units.clamp(spec, math.floor(nbytes / size))
    if spec.vartype == "real":
        return units.clamp(spec, float(f"{base:.3g}"))
    return units.clamp(spec, round(base))


def current_text(units: UnitGrammar, spec: KnobSpec) -> str:
    """The server's current value as knob text (memory as a byte size)."""
    if spec.vartype in {"integer", "real"}:
        return units.format_base(spec, float(spec.setting))
    return spec.setting


class KnobConfig(dict):
    """Knob name -> value text, frozen, with the catalog and unit grammar that give the values their units (see
    the module docstring). Equal to any mapping with the same texts; a plain ``dict(config)`` is a mutable copy."""

    catalog: Mapping[str, KnobSpec]
    units: UnitGrammar

    __slots__ = ("catalog", "units")

    def __init__(self, values: Mapping[str, str] | Iterable[tuple[str, str]] = (), *,
                 catalog: Mapping[str, KnobSpec] | None = None, units: UnitGrammar | None = None):
        # without a catalog and grammar (a copy ``dataclasses.asdict`` makes) it is only the mapping of texts
        super().__init__(values)
        self.catalog = catalog
        self.units = units

    @classmethod
    def current(cls, catalog: Mapping[str, KnobSpec], units: UnitGrammar, names: Iterable[str]) -> "KnobConfig":
        """The server's current values of ``names``."""
        return cls({n: current_text(units, catalog[n]) for n in names}, catalog=catalog, units=units)

    # --- reading ---------------------------------------------------------------------------------------------------

    def spec(self, name: str) -> KnobSpec:
        return self.catalog[name]

    def number(self, name: str) -> float:
        """A numeric knob's value in its catalog unit (``8kB`` pages, ``ms``, plain)."""
        return self.units.to_base(self.catalog[name], self[name])

    def same(self, name: str, text: str) -> bool:
        """Whether ``text`` means this configuration's value of ``name``."""
        return self.units.same_value(self.catalog[name], self[name], text)

    def changes(self) -> tuple[KnobChange, ...]:
        """The values that differ from the server's current settings, as changes (in this configuration's order)."""
        return tuple(KnobChange(n, v) for n, v in self.items()
                     if not self.units.same_value(self.catalog[n], current_text(self.units, self.catalog[n]), v))

    def delta(self, since: Mapping[str, str]) -> tuple[KnobChange, ...]:
        """What must be set to go from ``since`` (a full configuration, e.g. what a shadow has) to this one."""
        return tuple(KnobChange(n, v) for n, v in self.items()
                     if not self.units.same_value(self.catalog[n], since.get(n, ""), v))

    def updated(self, values: Mapping[str, str] | Iterable[KnobChange]) -> "KnobConfig":
        """A configuration with ``values`` (a mapping, or changes: other kinds of change are ignored) on top."""
        if not isinstance(values, Mapping):
            values = {c.name: c.value for c in values if isinstance(c, KnobChange)}
        return KnobConfig({**self, **values}, catalog=self.catalog, units=self.units)

    def to_json(self) -> dict[str, str]:
        """The stored form: a plain JSON object of texts (what ``full`` of a knob space reads back)."""
        return dict(self)

    # --- frozen ----------------------------------------------------------------------------------------------------

    def _frozen(self, *args, **kwargs):
        raise TypeError("a KnobConfig is frozen: make another with updated()")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _frozen  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self):
        return _rebuild, (dict(self), self.catalog, self.units)


def _rebuild(values: dict, catalog: Mapping[str, KnobSpec], units: UnitGrammar) -> KnobConfig:
    return KnobConfig(values, catalog=catalog, units=units)
