"""What a tuning run does: ``RunPlan``, the plan every kind's own plan extends (each kind's folder declares its
class: ``Kind.plan``), its fields declared with ``option`` (the default stated once, with the bounds, the help
and the form's label). Every adapter builds a plan the same way (``kinds.parse_plan``: a web form's strings,
JSON's or the CLI's values), and every adapter shows the same fields, bounds and help, derived from the kind's
plan class and the kind registry (``advisor.tuning.kinds``).

>>> from advisor.tuning.knobs.plan import KnobsPlan
>>> KnobsPlan.from_values("knobs", {"trials": "12", "budget_mb": "50"}).trials  # an index option: left out
12
>>> KnobsPlan(trials=1).check_values()
Traceback (most recent call last):
...
advisor.core.errors.AdvisorError: trials must be between 2 and 10000, got 1
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass

from advisor.core.errors import AdvisorError

TEXT_MAX = 10_000  # characters of a one-line text option


@dataclass(frozen=True)
class Option:
    """One field of a run plan: its type (int, float, bool, text, names: a comma list of names), default, bounds
    (inclusive; a float's low bound is exclusive), what it means, the label a form shows, and whether the run and
    schedule forms show it (``form``; the others take their defaults there); ``multiline``: a text that may hold
    line breaks (a SQL script); ``pattern``: what each item of a names option must match; ``max_length``: the
    characters a text option may hold (refused before any work, on every face)."""

    name: str
    type: str
    default: object
    help: str
    bounds: tuple[float, float] | None = None
    label: str = ""
    form: bool = False
    multiline: bool = False
    pattern: str | None = None
    max_length: int = TEXT_MAX


def option(default: object, help: str, bounds: tuple[float, float] | None = None, label: str = "", *,
           form: bool = False, multiline: bool = False, pattern: str | None = None, max_length: int = TEXT_MAX,
           required: bool = False):
    """A plan field and its ``Option`` in one place: the default stated once (``RunPlan.options`` reads the rest,
    its type from the field's annotation). ``required``: the kind cannot default it (its default is None)."""
    meta = dict(help=help, bounds=bounds, label=label, form=form, multiline=multiline, pattern=pattern,
                max_length=max_length, required=required)
    return dataclasses.field(default=default, metadata={"option": meta})


def parallel_option():
    """The searching kinds' ``parallel``: trials side by side, each on a target of its own."""
    return option(1, "trials run side by side, each on its own target (a thin clone of the replica, a copy of the "
                  "harness); the optimizer proposes that many at once, the running ones pending", (1, 64),
                  "Parallel trials")


def ray_option():
    """The searching kinds' ``ray``: where the trials run."""
    return option(None, "run the trials on a Ray cluster: its address (host:port, ray://...) or auto (a local one "
                  "on loopback); default: the ADVISOR_RAY setting, else this process", label="Ray cluster",
                  max_length=300)


def borrowed(plan: type, name: str, *, required: bool = False):
    """Another kind's option ``name`` as a field of this plan, its default and meaning as stated there (a whole
    run takes its parts' options)."""
    f = next(f for f in dataclasses.fields(plan) if f.name == name)
    return dataclasses.field(default=f.default, metadata={"option": {**f.metadata["option"], "required": required}})


def _type_of(annotation: object) -> str:
    """An option's type from its field's annotation (a string where annotations are postponed, else a type)."""
    text = annotation.__name__ if isinstance(annotation, type) and not typing.get_args(annotation) \
        else str(annotation)
    bare = text.replace(" | None", "").strip()
    found = {"int": "int", "float": "float", "bool": "bool", "str": "text"}.get(bare)
    if found is None and bare.startswith("tuple["):
        found = "names"
    if found is None:
        raise TypeError(f"a plan option cannot be a {annotation}")
    return found


@dataclass(frozen=True)
class RunPlan:
    """One tuning run's settings: ``kind`` (a name in the kind registry) and the options every kind takes
    (``COMMON``); each kind's plan is a subclass in the kind's folder (``Kind.plan``) adding its own options, each
    field's ``option`` saying what it means. ``RunPlan.parse``/``of``/``from_dict`` give the kind's own class."""

    kind: str = ""
    optimizer: str | None = option(None, "the optimizer (default: the kind's first choice)", label="Optimizer")
    rounds: int = option(5, "interleaved A/B rounds of the validation", (1, 100), "Validation rounds", form=True)
    validate: bool = option(True, "validate on a shadow before recommending", label="Validate", form=True)
    sample_percent: float | None = option(None, "load the shadow with this percentage of large tables", (0, 100),
                                          "Sample, %")
    seed: int = option(0, "random seed of the search", (0, 2**31 - 1), "Seed")
    recheck: bool = option(False, "re-measure a validated recommendation on a freshly built shadow and report the "
                           "share of its gain that holds (a whole run always does, in its bundle)", label="Re-check")

    @classmethod
    def options(cls) -> dict[str, Option]:
        """This plan's options by name (the common ones and the kind's), from its fields."""
        found = cls.__dict__.get("_options")
        if found is None:
            found = {f.name: Option(f.name, _type_of(f.type), f.default,
                                    **{k: v for k, v in f.metadata["option"].items() if k != "required"})
                     for f in dataclasses.fields(cls) if "option" in f.metadata}
            cls._options = found
        return found

    @classmethod
    def required(cls) -> tuple[str, ...]:
        """The options the kind cannot default."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("option", {}).get("required"))

    def check_values(self) -> None:
        """AdvisorError naming the first option out of its bounds or too long, or a required one not given
        (the kind's own checks are the registry's: ``kinds.checked``)."""
        for name, o in self.options().items():
            value = getattr(self, name)
            if o.type == "int" and not o.bounds[0] <= value <= o.bounds[1]:
                raise AdvisorError(f"{name} must be between {o.bounds[0]} and {o.bounds[1]}, got {value}")
            if o.type == "text" and value is not None and len(value) > o.max_length:
                raise AdvisorError(f"{name} holds {len(value):,} characters; at most {o.max_length:,} are taken")
            if o.type == "float" and value is not None and not o.bounds[0] < value <= o.bounds[1]:
                raise AdvisorError(f"{name} must be in ({o.bounds[0]:g}, {o.bounds[1]:g}], got {value:g}")
        for name in self.required():
            if getattr(self, name) is None:
                raise AdvisorError(f"{_a(self.kind)} {self.kind} run needs {name} ({self.options()[name].help})")

    @classmethod
    def from_values(cls, kind: str, fields: Mapping[str, object]) -> "RunPlan":
        """This class's plan of loosely typed fields (see ``kinds.parse_plan``), unchecked: the ones it takes,
        each as its option's type (None or blank: the default)."""
        taken = cls.options()
        values = {name: coerce(name, raw, taken[name]) for name, raw in fields.items() if name in taken}
        return cls(kind=kind, **{name: v for name, v in values.items() if v is not None})

    @classmethod
    def from_stored(cls, d: Mapping[str, object]) -> "RunPlan":
        """A stored plan (``to_dict``) as it was, unchecked; a stored option this class no longer takes (an older
        version's) is left out."""
        options = cls.options()
        values = {name: tuple(v or ()) if options[name].type == "names" else v
                  for name, v in d.items() if name in options}
        return cls(kind=str(d["kind"]), **values)

    def sized_for(self, data_bytes: int) -> "RunPlan":
        """This plan with the defaults its kind derives from the target's size (a whole run's step: an index
        budget when none was given); the plan itself for most kinds."""
        return self

    def to_dict(self) -> dict:
        """The plan as stored and shown: its kind and its options (its own class's: never another kind's);
        ``from_stored`` reads it back.

        >>> from advisor.tuning.rewrites.plan import RewritesPlan
        >>> sorted(RewritesPlan().to_dict())
        ['kind', 'max_statements', 'optimizer', 'recheck', 'rounds', 'sample_percent', 'seed', 'sql', 'validate']
        """
        options = self.options()
        return {"kind": self.kind, **{name: list(getattr(self, name)) if o.type == "names" else getattr(self, name)
                                      for name, o in options.items()}}

COMMON = tuple(RunPlan.options())  # the options every kind takes


_TRUE, _FALSE = ("true", "on", "yes", "1"), ("false", "off", "no", "0")


def coerce(name: str, raw: object, o: Option | None) -> object:
    """One field's value as its option's type (``o``; None: text); None for a blank or missing one (the
    default)."""
    kind = "text" if o is None else o.type
    if isinstance(raw, str):
        raw = raw.strip()
        if not raw:
            return None
    if raw is None:
        return None
    if kind == "text":
        if not isinstance(raw, str):
            raise AdvisorError(f"{name} must be a name, got {raw!r}")
        return raw
    if kind == "names":
        items = raw.split(",") if isinstance(raw, str) else raw
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            raise AdvisorError(f"{name} must be a list of names, got {str(raw)[:40]!r}")
        return tuple(dict.fromkeys(i.strip() for i in items if i.strip()))
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.lower() in _TRUE + _FALSE:
            return raw.lower() in _TRUE
        raise AdvisorError(f"{name} must be true or false, got {str(raw)[:40]!r}")
    if isinstance(raw, bool):
        raise AdvisorError(f"{name} must be a number, got {raw}")
    if kind == "int":
        if isinstance(raw, int):
            return raw
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        try:
            if isinstance(raw, str):
                return int(raw)
        except ValueError:
            pass
        raise AdvisorError(f"{name} must be a whole number, got {str(raw)[:40]!r}")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise AdvisorError(f"{name} must be a number, got {str(raw)[:40]!r}") from None
    if not math.isfinite(value):
        raise AdvisorError(f"{name} must be a finite number")
    return value


def _a(word: str) -> str:
    """'a' or 'an' before ``word`` (by its first letter)."""
    return "an" if word[:1].lower() in "aeiou" else "a"
