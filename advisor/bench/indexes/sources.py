"""The workloads ``advisor bench indexes --workloads ...`` advises on: where their data and statements come from.

A ``Source`` loads its data into an empty database, runs its statements there as an application would (so
pg_stat_statements and pg_qualstats fill before the advisors observe), and gives the statements the real runs
measure. Three kinds:

- ``app``: TPC-H data with primary keys only and an application's 14 parameterised statements
  (``workloads.datasets.app_tpch``), measured with fresh constants;
- ``job``: a synthetic IMDB and 33 JOB-style joins with literal constants (``workloads.datasets.job``);
- ``gen-<schema>.s<seed>``: a random application workload (``workloads.datasets.synthetic``, the index families: lookups,
  composite equality + range + ORDER BY, date windows written with casts and arithmetic, LIKE prefixes, joins
  with residual filters, aggregates; calls drawn) over TPC-H (at the ``app`` scale), the synthetic IMDB (the
  ``job`` scale) or a TPC-DS subset, drawn from the loaded data with that seed; statements nobody wrote the
  advisor for. Measured with the statements as drawn, the constants the advisors observed (``app`` measures
  fresh ones): a generated run flatters every advisor alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Protocol

from advisor.core.progress import Say
from connectors import factory
from workloads.datasets import app_tpch, synthetic as generated, job, tpcds, tpch
from workloads.statements.binding import BoundStatement

SCHEMAS = ("tpch", "job", "tpcds")
_GENERATED = re.compile(r"gen-(\w+)\.s(\d+)")


class Source(Protocol):
    name: str
    dbname: str
    scale: float

    def load(self, dsn: str, say: Say) -> None:
        """The data into the empty database at ``dsn``, and whatever is drawn from it."""

    def fill(self, dsn: str, say: Say) -> int:
        """The statements run as the application would; returns the executions that finished."""

    def measured(self) -> list[BoundStatement]: ...


@dataclass(frozen=True)
class Scales:
    app: float = app_tpch.SCALE
    job: float = job.SCALE
    tpcds: float = tpcds.MIN_SCALE


def generated_names(schemas: tuple[str, ...], seeds: tuple[int, ...]) -> tuple[str, ...]:
    """The workload names of a generated run, every schema with every seed.

    >>> generated_names(("tpch", "job"), (1, 2))
    ('gen-tpch.s1', 'gen-tpch.s2', 'gen-job.s1', 'gen-job.s2')
    """
    return tuple(f"gen-{s}.s{seed}" for s in schemas for seed in seeds)


def is_known(name: str) -> bool:
    """Whether ``name`` is a workload this module can make.

    >>> [is_known(n) for n in ("app", "job", "gen-tpcds.s3", "gen-oracle.s1", "gen-tpch")]
    [True, True, True, False, False]
    """
    m = _GENERATED.fullmatch(name)
    return name in ("app", "job") or (m is not None and m.group(1) in SCHEMAS)


def source(name: str, scales: Scales, *, seed: int = 0, fill_rounds: int = 5, measure_bindings: int = 2,
           statements: int = 15, timeout_ms: int = 120_000) -> Source:
    if name == "app":
        return AppSource(scales.app, seed, fill_rounds, measure_bindings, timeout_ms)
    if name == "job":
        return JobSource(scales.job, seed, fill_rounds, timeout_ms)
    m = _GENERATED.fullmatch(name)
    if m is None or m.group(1) not in SCHEMAS:
        raise ValueError(f"unknown workload {name!r}: app, job or gen-<{'|'.join(SCHEMAS)}>.s<seed>")
    schema = m.group(1)
    scale = {"tpch": scales.app, "job": scales.job, "tpcds": scales.tpcds}[schema]
    return GeneratedSource(name, schema, scale, int(m.group(2)), seed, statements, fill_rounds, timeout_ms)


@dataclass
class AppSource:
    scale: float
    seed: int
    fill_rounds: int
    bindings: int
    timeout_ms: int
    name: str = "app"
    dbname: str = "tpch"

    def load(self, dsn: str, say: Say) -> None:
        app_tpch.prepare(factory.connector(dsn), self.scale, progress=say)

    def fill(self, dsn: str, say: Say) -> int:
        return app_tpch.drive(factory.connector(dsn), rounds=self.fill_rounds, seed=self.seed, scale=self.scale,
                              timeout_ms=self.timeout_ms)

    def measured(self) -> list[BoundStatement]:
        return [replace(st, queryid=f"{st.queryid}#{i + 1}") for i in range(self.bindings)
                for st in app_tpch.statements(self.seed + 1000 + i, self.scale)]


@dataclass
class JobSource:
    scale: float
    seed: int
    fill_rounds: int
    timeout_ms: int
    name: str = "job"
    dbname: str = "imdb"

    def load(self, dsn: str, say: Say) -> None:
        job.load(factory.connector(dsn), self.scale, seed=self.seed, progress=say)

    def fill(self, dsn: str, say: Say) -> int:
        return job.drive(factory.connector(dsn), rounds=max(1, self.fill_rounds // 5), timeout_ms=self.timeout_ms)

    def measured(self) -> list[BoundStatement]:
        return job.statements()


@dataclass
class GeneratedSource:
    name: str
    schema: str
    scale: float
    workload_seed: int  # the generator's
    seed: int  # the data's (the synthetic IMDB)
    statements: int
    fill_rounds: int
    timeout_ms: int
    drawn: list = field(default_factory=list)  # the generated statements, once the data is loaded

    @property
    def dbname(self) -> str:
        return self.schema

    def load(self, dsn: str, say: Say) -> None:
        """The schema's data, then the statements drawn from it (the bench resets the statistics after)."""
        if self.schema == "tpch":
            tpch.load(factory.connector(dsn), self.scale, progress=say)
        elif self.schema == "job":
            job.load(factory.connector(dsn), self.scale, seed=self.seed, progress=say)
        else:
            tpcds.load(factory.connector(dsn), self.scale, progress=say)
        say(f"[{self.name}] drawing {self.statements} statements (seed {self.workload_seed})")
        self.drawn = generated.generate(factory.connector(dsn), self.statements, self.workload_seed, generated.INDEX_FAMILIES,
                                        timeout_ms=min(self.timeout_ms, 10_000), say=say)
        families = sorted({g.family for g in self.drawn})
        say(f"[{self.name}] {len(self.drawn)} statements ({', '.join(families)})")

    def fill(self, dsn: str, say: Say) -> int:
        return generated.drive(factory.connector(dsn), self.drawn, rounds=max(1, self.fill_rounds // 2),
                               timeout_ms=self.timeout_ms)

    def measured(self) -> list[BoundStatement]:
        return [g.bound() for g in self.drawn]
