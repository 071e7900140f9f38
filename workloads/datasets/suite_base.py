"""What a benchmark suite is (``Suite``, its ``Template``s) and how a template draws its parameters: TPC-H's value
domains (regions, nations, brands, part types, containers, days) and the rendering of values as SQL literals. The
suites themselves are in ``workloads.datasets.suites`` (and the knob bench's in ``workloads.datasets.knob_suites``).

>>> import random
>>> t = template("t", "SELECT * FROM nation WHERE n_name = $1 AND n_nationkey < $2", lambda r: ("PERU", 7))
>>> t.render(random.Random(0), 1.0)
"SELECT * FROM nation WHERE n_name = 'PERU' AND n_nationkey < 7"
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, timedelta

from workloads.datasets import tpch
from workloads.statements.binding import BoundStatement, substitute
from workloads.datasets.sqlsource import string_literal, to_dialect
from workloads.datasets.tpch.queries import CONTAINER_1, CONTAINER_2, NATIONS, REGIONS, TYPE_1, TYPE_2, TYPE_3

Value = int | float | str | date
Render = Callable[[random.Random, float], str]


@dataclass(frozen=True)
class Template:
    """One query of a suite: its normalized text and how to make a concrete statement from an rng and a scale."""

    key: str
    normalized: str
    render: Render


@dataclass(frozen=True)
class Suite:
    name: str  # "joins" | "lookups" | "tpch"
    description: str  # what application this stands for and which knobs matter
    scale: float  # default TPC-H scale factor for the benchmark
    setup_sql: tuple[str, ...]  # DDL run once after loading, then ANALYZE
    templates: tuple[Template, ...] = field(default=(), repr=False)

    def statements(self, seed: int = 0, dialect: str | None = None) -> list[BoundStatement]:
        """One concrete statement per template, parameters drawn from ``random.Random(seed)``; written in
        ``dialect`` (a connector's, transpiled from TPC-H's ``SOURCE_DIALECT``), or as the suite has them."""
        rng = random.Random(seed)
        out = [BoundStatement(f"{self.name}.{t.key}", t.normalized, t.render(rng, self.scale), 1.0, "literal", False)
               for t in self.templates]
        if dialect is None:
            return out
        source = tpch.SOURCE_DIALECT
        return [replace(b, normalized=to_dialect(b.normalized, source, dialect), sql=to_dialect(b.sql, source, dialect))
                for b in out]


# --- rendering ----------------------------------------------------------------------------------------------------

def _literal(value: Value) -> str:
    if isinstance(value, bool):
        raise TypeError("no boolean parameters")
    if isinstance(value, (int, float)):
        return repr(value)
    return string_literal(str(value))


def template(key: str, text: str, draw: Callable[[random.Random], tuple[Value, ...]]) -> Template:
    """A template whose ``$1 .. $n`` take the values ``draw`` returns, in order."""

    def render(rng: random.Random, _scale: float) -> str:
        values = draw(rng)
        return substitute(text, lambda k: _literal(values[k - 1]))

    return Template(key, text, render)


def region(r: random.Random) -> str:
    return r.choice(REGIONS)


def nation(r: random.Random) -> str:
    return r.choice(NATIONS)[0]


def nationkey(r: random.Random) -> int:
    return r.randrange(len(NATIONS))  # TPC-H's nation keys are 0..24


def brand(r: random.Random) -> str:
    return f"Brand#{r.randint(1, 5)}{r.randint(1, 5)}"


def ptype(r: random.Random) -> str:
    return f"{r.choice(TYPE_1)} {r.choice(TYPE_2)} {r.choice(TYPE_3)}"


def container(r: random.Random) -> str:
    return f"{r.choice(CONTAINER_1)} {r.choice(CONTAINER_2)}"


def day(r: random.Random, first: date, last: date) -> date:
    return first + timedelta(days=r.randint(0, (last - first).days))
