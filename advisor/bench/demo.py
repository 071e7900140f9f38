"""The demo: a sandbox "production" server (PostgreSQL unless another engine is named) with TPC-H (all 22 queries)
and an application's ORM-style reports on it, the workload run and observed, then the whole advisor
(``AdvisorService.tune("all", ...)``): indexes, rewrites of what is still slow, knobs on a shadow with the new
indexes, and the validated changes measured together. Every server it starts is stopped; the recommendations stay
in the store, ready to approve."""

from __future__ import annotations

import random
from dataclasses import dataclass

from advisor.core.progress import Say, silent
from advisor.service.service import AdvisorService, WholeResult
from advisor.tuning import kinds
from connectors import factory
from workloads.datasets import suites, tpch
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, replay

# all 22 queries: Q17 and Q20 are correlated subqueries over lineitem that an index on l_partkey (the index
# step's to find) makes much faster
DEMO_QUERIES = tuple(tpch.QUERY_NUMBERS)


@dataclass(frozen=True)
class DemoOptions:
    scale: float = 0.02
    streams: int = 2
    rounds: int = 5
    optimizer: str = "hibo"
    trials: int = 8
    seed: int = 7
    engine: str = factory.DEFAULT_ENGINE  # of the production server (and so of its shadows)


def run_workload(dsn: str, scale: float, streams: int, seed: int, queries: tuple[int, ...] = DEMO_QUERIES,
                 concurrency: int = 2) -> int:
    """Run ``streams`` TPC-H query streams (fresh parameters each) against ``dsn``; returns statements run."""
    rng = random.Random(seed)
    items = [BoundStatement(f"s{i}q{n}", sql, sql, 1.0, "literal", False)
             for i in range(streams) for n, sql in tpch.stream(rng, scale, queries)]
    result = replay(factory.connector(dsn), items, ReplayOptions(concurrency=concurrency, repeats=1, warmup=0))
    failed = sum(len(v) for v in result.errors.values())
    return len(items) - failed


def run_demo(service: AdvisorService, options: DemoOptions = DemoOptions(), say: Say | None = None) -> WholeResult:
    say = say or silent
    production = factory.sandbox(options.engine, "production")  # an engine not supported is refused here
    say(f"starting the demo's production server (a local {production.engine} sandbox)")
    with production:
        dsn = production.create_database("tpch")
        joins = suites.get("joins")
        suites.prepare(factory.connector(dsn), joins, options.scale, progress=say)
        connector = factory.connector(dsn)  # the demo's one connector to its production database
        connector.reset_statement_stats()
        say(f"running the workload: {options.streams} TPC-H streams of {len(DEMO_QUERIES)} queries and "
            f"{options.streams} rounds of {len(joins.templates)} ORM reports, 2 clients")
        ran = run_workload(dsn, options.scale, options.streams, options.seed)
        reports = [st for i in range(options.streams) for st in joins.statements(options.seed + i)]
        replay(connector, reports, ReplayOptions(concurrency=2, repeats=1, warmup=0))
        say(f"workload done: {ran + len(reports)} statements ran")
        plan = kinds.plan_of("all", trials=options.trials, seed=options.seed, repeats=1, rounds=options.rounds,
                       max_statements=8)
        result = service.tune("all", dsn, plan, name="demo-production")
        say("stopping the demo's servers")
    return result
