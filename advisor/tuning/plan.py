"""What a tuning run does: ``RunPlan``, the one plan of every kind, and ``OPTIONS``, the table its fields come
from. Every adapter builds a plan the same way (``RunPlan.parse``: a web form's strings, JSON's or the CLI's
values), and every adapter shows the same fields, bounds and help, derived from this table and the kind registry
(``advisor.tuning.kinds``): a kind names the options it takes, and the options of other kinds are left at their
defaults.

>>> RunPlan.parse({"kind": "indexes", "budget_mb": "50", "trials": "12"}).trials  # a knob option: ignored
30
>>> RunPlan.parse({"kind": "knobs", "trials": "1"})
Traceback (most recent call last):
...
advisor.core.errors.AdvisorError: trials must be between 2 and 10000, got 1
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from advisor.core.errors import AdvisorError
from advisor.core.names import did_you_mean
from advisor.core.inputs import RANGE_ITEM

BUDGET_MB_MAX = 10_000_000
TEXT_MAX = 10_000  # characters of a one-line text option
SQL_MAX = 200_000  # characters of a rewrite run's SQL (its statements: ``rewrites.given.MAX_STATEMENTS``)


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


OPTIONS: dict[str, Option] = {o.name: o for o in (
    Option("optimizer", "text", None, "the optimizer (default: the kind's first choice)", label="Optimizer"),
    Option("trials", "int", 30, "trials of the knob search (baseline and seeds included)", (2, 10_000), "Trials", form=True),
    Option("seeds", "int", 3, "seed configurations (LLM or rules) tried first; 0 = none", (0, 20), "Seeds"),
    Option("repeats", "int", 3, "executions of each statement per trial (median)", (1, 100), "Repeats"),
    Option("budget_mb", "float", None, "MiB of new indexes", (0, BUDGET_MB_MAX), "Budget, MB", form=True),
    Option("include", "names", (), "knobs to add to the searched space", label="Include knobs"),
    Option("exclude", "names", (), "knobs to leave out of the searched space", label="Exclude knobs"),
    Option("range", "names", (), "narrow a knob's (or a learned index parameter's) range: NAME=LOW:HIGH, e.g. "
           "work_mem=4MB:256MB", label="Ranges", pattern=RANGE_ITEM),
    Option("allow_durability", "bool", False, "also search the knobs that trade durability for speed (the "
           "engine's: fsync, synchronous_commit, full_page_writes on PostgreSQL)", label="Durability knobs"),
    Option("allow_unsafe", "bool", False, "let include name knobs that change correctness (the engine's unsafe "
           "list, e.g. autovacuum, session_replication_role, foreign_key_checks); never applied by a schedule "
           "by itself", label="Unsafe knobs"),
    Option("objective", "text", "latency", "minimize weighted latency, or maximize throughput", label="Objective"),
    Option("episodes", "int", 300, "IA2 training episodes from scratch (with retrain, or when no model is stored "
           "or shipped)", (1, 100_000), "Episodes"),
    Option("samples", "int", 48, "IA2 rollouts sampled besides the greedy one", (0, 10_000), "Samples"),
    Option("max_width", "int", 3, "columns per candidate index", (1, 3), "Index width"),
    Option("retrain", "bool", False, "train the model again from scratch: IA2's even if this target has one or one "
           "is shipped; LITune's instead of starting from the stored or shipped one", label="Retrain"),
    Option("max_statements", "int", 20, "how many of the workload's heaviest statements to rewrite", (1, 1000),
           "Statements", form=True),
    Option("sql", "text", None, "the statements to rewrite, constants written in, separated by ; (default: the "
           "observed workload's heaviest; at most 200,000 characters and 1,000 statements)", label="SQL", form=True,
           multiline=True, max_length=SQL_MAX),
    Option("kinds", "names", (), "what a whole run tunes, in this order: indexes, rewrites, knobs "
           "(default: all three)", label="Kinds", form=True),
    Option("keys", "text", None, "a learned index's keys: synthetic:NAME[:N], [schema.]table.column of the target, "
           "or a file (one uint64 per line, or SOSD binary; at most 2,000,000 keys and 64 MiB; over the API, the web UI "
           "and schedules only a file of the server's ADVISOR_KEY_FILES_DIR)", label="Keys", form=True),
    Option("workload", "text", None, "a learned index's operation mix: read-only, read-heavy, balanced, write-heavy "
           "or lookup=0.7,insert=0.2,range=0.1", label="Workload mix", form=True),
    Option("budget", "int", 20, "evaluations of the learned-index search (the defaults' included)", (2, 10_000),
           "Evaluations", form=True),
    Option("index", "text", "alex", "the learned index: alex (updatable, ALEX-like) or pgm (read-only)",
           label="Learned index", form=True),
    Option("rounds", "int", 5, "interleaved A/B rounds of the validation", (1, 100), "Validation rounds", form=True),
    Option("validate", "bool", True, "validate on a shadow before recommending", label="Validate", form=True),
    Option("sample_percent", "float", None, "load the shadow with this percentage of large tables", (0, 100),
           "Sample, %"),
    Option("seed", "int", 0, "random seed of the search", (0, 2**31 - 1), "Seed"),
    Option("recheck", "bool", False, "re-measure a validated recommendation on a freshly built shadow and report "
           "the share of its gain that holds (a whole run always does, in its bundle)", label="Re-check"),
)}
COMMON = ("optimizer", "rounds", "validate", "sample_percent", "seed", "recheck")  # the options every kind takes
LIMITS = {name: o.bounds for name, o in OPTIONS.items() if o.type == "int"}  # a whole number's bounds
NAMES = tuple(name for name, o in OPTIONS.items() if o.type == "names")  # lists: tuples in a plan


@dataclass(frozen=True)
class RunPlan:
    """One tuning run's settings (``OPTIONS`` says what each means). ``kind`` is a name in the kind registry."""

    kind: str
    optimizer: str | None = None
    trials: int = 30
    seeds: int = 3
    repeats: int = 3
    budget_mb: float | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    range: tuple[str, ...] = ()
    allow_durability: bool = False
    allow_unsafe: bool = False
    objective: str = "latency"
    max_width: int = 3
    retrain: bool = False
    episodes: int = 300
    samples: int = 48
    rounds: int = 5
    validate: bool = True
    sample_percent: float | None = None
    max_statements: int = 20
    sql: str | None = None
    kinds: tuple[str, ...] = ()
    keys: str | None = None
    workload: str | None = None
    budget: int = 20
    index: str = "alex"
    seed: int = 0
    recheck: bool = False

    @classmethod
    def parse(cls, fields: Mapping[str, object], *, remote: bool = False) -> "RunPlan":
        """The checked plan of loosely typed fields, the one parser of every adapter: a web form's strings (blank
        means the default), JSON's or the CLI's numbers and booleans (None means the default). Options the kind
        does not take are left at their defaults. AdvisorError naming the first bad field. ``remote``: see
        ``checked``."""
        from advisor.tuning import kinds

        cls._known(fields)
        kind = _coerce("kind", fields.get("kind"))
        if kind is None:
            raise AdvisorError(f"choose what to tune: {', '.join(kinds.names())}")
        taken = set(kinds.get(kind).options) | set(COMMON) | {"kind"}
        values = {name: _coerce(name, raw) for name, raw in fields.items() if name in taken}
        return cls(**{name: v for name, v in values.items() if v is not None}).checked(remote=remote)

    def checked(self, *, remote: bool = False) -> "RunPlan":
        """This plan with its defaults filled in; AdvisorError naming the first bad field. ``remote``: the plan
        comes from a remote face (REST, the web UI, a schedule), which the server runs as its own OS user: its inputs
        are confined to what the server's settings allow (``Kind.confine``: a key file only from
        ``key_files_dir``), the plan that comes back holding them as resolved."""
        from advisor.tuning import kinds

        kind = kinds.get(self.kind)
        optimizer = self.optimizer or kind.default_optimizer
        names = kind.optimizer_names()
        if names and optimizer not in names:
            raise AdvisorError(f"no {self.kind} optimizer named {optimizer!r}{did_you_mean(str(optimizer), names)}; "
                               f"choose one of {', '.join(names)}")
        for name, (low, high) in LIMITS.items():
            if not low <= getattr(self, name) <= high:
                raise AdvisorError(f"{name} must be between {low} and {high}, got {getattr(self, name)}")
        for name, o in OPTIONS.items():
            value = getattr(self, name)
            if o.type == "text" and value is not None and len(value) > o.max_length:
                raise AdvisorError(f"{name} holds {len(value):,} characters; at most {o.max_length:,} are taken")
        for name in ("budget_mb", "sample_percent"):
            value, (low, high) = getattr(self, name), OPTIONS[name].bounds
            if value is not None and not low < value <= high:
                raise AdvisorError(f"{name} must be in ({low:g}, {high:g}], got {value:g}")
        plan = dataclasses.replace(self, optimizer=optimizer)
        for name in kind.required:
            if getattr(plan, name) is None:
                raise AdvisorError(f"{_a(kind.name)} {kind.name} run needs {name} ({OPTIONS[name].help})")
        kind.check(plan)
        if remote and kind.confine is not None:
            plan = kind.confine(plan)
        return plan

    def to_dict(self) -> dict:
        """The plan as stored and shown: its kind and the options that kind takes (``Kind.options`` and
        ``COMMON``), never another kind's defaults; ``from_dict`` fills those back in.

        >>> sorted(RunPlan(kind="rewrites").to_dict())
        ['kind', 'max_statements', 'optimizer', 'recheck', 'rounds', 'sample_percent', 'seed', 'sql', 'validate']
        """
        from advisor.tuning import kinds

        taken = ("kind", *COMMON, *kinds.get(self.kind).options)
        return {name: list(getattr(self, name)) if name in NAMES else getattr(self, name)
                for name in (f.name for f in dataclasses.fields(self)) if name in taken}

    @classmethod
    def from_dict(cls, d: dict) -> "RunPlan":
        """A stored plan (``to_dict``) as it was, unchecked."""
        d = dict(cls._known(d))
        for name in NAMES:
            if name in d:
                d[name] = tuple(d[name] or ())
        return cls(**d)

    @classmethod
    def _known(cls, fields: Mapping[str, object]) -> Mapping[str, object]:
        unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise AdvisorError(f"unknown run option(s): {', '.join(unknown)}")
        return fields


_TRUE, _FALSE = ("true", "on", "yes", "1"), ("false", "off", "no", "0")


def _coerce(name: str, raw: object) -> object:
    """One field's value as its type; None for a blank or missing one (the default)."""
    kind = "text" if name == "kind" else OPTIONS[name].type
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
