"""``advisor bench rewrite``: the query rewriter on the 22 TPC-H queries and a suite of rewrite-prone statements
(``workloads.datasets.rewrite_suite``), on a self-started server.

1. The rewrite pipeline itself (``AdvisorService.tune``: candidates, the planner's re-ranking, equivalence
   by execution, timing against the original on a shadow), as a user runs it.
2. The peer, sqlglot's ``optimize()`` as a user would run it (unguarded), on every statement: its output planned
   and checked on the same edge-case databases and shadow (invalid SQL, wrong rows), then timed.
3. Side by side on one shadow: each statement as written, our answer (the rewrite, or the original when we left it
   alone) and sqlglot's output, interleaved (``rewrite_timing.race``).
4. The search strategies at the same node budget on every statement in the rewriter's subset: the estimated cost
   each reaches and the e-nodes it took (Aurora against capped saturation, random order and greedy).

``advisor bench rewrite --generated N`` runs steps 1-3 (``RewriteBench.measure``) on generated statements instead:
``advisor.bench.rewrites.corpus``.

On any engine (``--engine``), the statements (PostgreSQL's SQL) transpiled to its dialect; one it cannot write, run
or finish once as written is reported as skipped with the reason (``runnable``), not measured.

Latencies are medians in ms; a total is the sum of the statements' medians; speedups are original / other. The
summary against the issue's targets, the table and the plot are ``advisor.bench.rewrites.report``'s.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import sqlglot
from sqlglot.optimizer import optimize

from advisor.bench.rewrites.report import STRATEGIES, plot, summary
from advisor.core.errors import AdvisorError
from advisor.core.hardware import detect
from advisor.core.progress import Say, silent
from advisor.service.service import AdvisorService
from advisor.tuning import kinds
from advisor.storage.store import Store
from advisor.tuning.rewrites import equivalence as rewrite_equivalence
from advisor.tuning.rewrites import timing as rewrite_timing
from advisor.tuning.rewrites.pipeline import SCRATCH_DB, build_problem, calibrated
from advisor.tuning.rewrites.tables import constraints, tables_named
from advisor.tuning.validation import ValidationOptions
from connectors import factory
from connectors.base import Connector
from optimizers import registry
from optimizers.rewrites.sql.emit import to_sql
from optimizers.rewrites.sql.lower import lower
from optimizers.rewrites.sql.parsing import Unsupported
from workloads.datasets import tpch
from workloads.statements.binding import BoundStatement
from workloads.datasets.rewrite_suite import SUITE
from workloads.datasets.sqlsource import to_dialect
from workloads.datasets.tpch.queries import query

SOURCE_DIALECT = "postgres"  # the dialect the bench's statements (TPC-H's queries and the suite) are written in


@dataclass(frozen=True)
class RewriteBenchOptions:
    scale: float = 0.02
    optimizer: str = "aurora"
    rounds: int = 3
    statement_timeout_ms: int = 60_000
    seed: int = 0
    out_dir: str = "bench-results/rewrite"
    only: tuple[str, ...] = ()  # these statements of the bench only (by name); all when empty
    episodes: int = 300  # Aurora's training episodes
    held_out: bool = True  # Aurora trains on statements generated from the schema only, never on the bench's
    engine: str = factory.DEFAULT_ENGINE  # of the server the bench starts (its shadows are of the same engine)


def statements(scale: float, seed: int) -> list[tuple[str, str, str]]:
    """(name, group, SQL): the 22 TPC-H queries with seeded parameters, then the suite (in ``SOURCE_DIALECT``)."""
    out = [(f"q{n}", "tpch", query(n, random.Random(seed + n), scale)) for n in range(1, 23)]
    return out + [(name, "suite", sql) for name, _, sql in SUITE]


def runnable(connector: Connector, named: list[tuple[str, str, str]], timeout_ms: int,
             say: Say = silent) -> tuple[list[tuple[str, str, str]], list[dict]]:
    """The statements of ``named`` (name, group, SQL in ``SOURCE_DIALECT``) in the ``connector``'s dialect that run
    once as written on its database within ``timeout_ms``; each other as a skipped row (name, group, its source SQL,
    the reason: it cannot be written in the dialect, or the engine refused, failed or timed it out)."""
    kept, skipped = [], []
    for name, group, sql in named:
        try:
            text = to_dialect(sql, SOURCE_DIALECT, connector.dialect)
            with connector.session(timeout_ms) as session:
                session.fetch(text)
            kept.append((name, group, text))
        except AdvisorError as e:
            reason = f"cannot run on {connector.engine}: {str(e).splitlines()[0][:200]}"
            say(f"{name}: skipped ({reason})")
            skipped.append({"name": name, "group": group, "sql": sql, "reason": reason})
    return kept, skipped


def sqlglot_optimize(sql: str, schema: dict[str, dict[str, str]], dialect: str) -> str:
    """sqlglot's optimizer as a user runs it: parse in the target's ``dialect`` (``connector.dialect``),
    ``optimize`` against the schema, write back."""
    tree = sqlglot.parse_one(sql, read=dialect)
    return optimize(tree, schema=schema, dialect=dialect).sql(dialect=dialect)


class RewriteBench:
    def __init__(self, options: RewriteBenchOptions = RewriteBenchOptions(), say: Say | None = None):
        self.options, self.say = options, say or silent
        self.out = Path(options.out_dir)

    def run(self) -> dict:
        o, started = self.options, time.time()
        factory.supported(o.engine)
        every = statements(o.scale, o.seed)
        if unknown := sorted(set(o.only) - {name for name, _, _ in every}):
            raise AdvisorError(f"unknown statement(s) {', '.join(unknown)}: the bench's are q1..q22 and the suite's")
        self.out.mkdir(parents=True, exist_ok=True)
        named = [st for st in every if not o.only or st[0] in o.only]
        with factory.sandbox(o.engine, "bench-rewrite") as production, \
                tempfile.TemporaryDirectory(prefix="advisor-bench-store-") as tmp:
            dsn = production.create_database("tpch")
            self.say(f"loading TPC-H at scale {o.scale:g} on {o.engine}")
            tpch.load(factory.connector(dsn), o.scale, progress=self.say)
            named, skipped = runnable(factory.connector(dsn), named, o.statement_timeout_ms, self.say)
            service = AdvisorService(Store(Path(tmp) / "store.duckdb"), say=self.say)
            rows, strategies, training = self.measure(service, dsn, named) if named else ([], {}, None)
        doc = {"machine": asdict(detect()), "options": asdict(o), "statements": rows, "skipped": skipped,
               "strategies": strategies, "training": training, "wall_s": round(time.time() - started, 1)}
        doc["summary"] = summary(doc)
        (self.out / "rewrite.json").write_text(json.dumps(doc, indent=2, default=str))
        plot(doc, self.out / "rewrite.png")
        return doc

    def measure(self, service: AdvisorService, dsn: str, named: list[tuple[str, str, str]],
                strategies: bool = True) -> tuple[list[dict], dict, dict | None]:
        """The bench's flow over ``named`` (name, group, SQL) on the loaded database at ``dsn``: the pipeline's
        answers, sqlglot's outputs, both checked and timed against the original on one shadow, and with
        ``strategies`` the search strategies compared. Returns the rows (one per statement, in order), the
        strategies' results per statement and Aurora's training report."""
        o = self.options
        timing = ValidationOptions(rounds=o.rounds, statement_timeout_ms=o.statement_timeout_ms)
        self.say(f"the rewrite pipeline ({o.optimizer}) on {len(named)} statements")
        script = ";\n".join(sql for _, _, sql in named)
        result = service.tune("rewrites", dsn, kinds.plan_of("rewrites", optimizer=o.optimizer, rounds=o.rounds, seed=o.seed,
                                                       sql=script), validation=timing,
                              options={"episodes": o.episodes, "own": not o.held_out})
        ours = {f"sql{i + 1}": out for i, out in enumerate(result.statements)}
        connector = factory.connector(dsn)
        bound = [BoundStatement(f"sql{i + 1}", sql, sql, 1.0, "literal", False) for i, (_, _, sql) in
                 enumerate(named)]
        problem = build_problem(connector, result.observation, bound)
        rows = [{"name": name, "group": group, "sql": sql, **self._ours(ours[f"sql{i + 1}"])}
                for i, (name, group, sql) in enumerate(named)]
        self._peer(problem, rows)
        searched: dict = {}
        with factory.clone(connector, say=self.say) as shadow:
            problem = calibrated(problem, shadow.connector)  # as the pipeline did
            shadow.sandbox.create_database(SCRATCH_DB, extensions=False)
            scratch = shadow.sandbox.connector(SCRATCH_DB)
            self._check(shadow, scratch, problem, rows)
            self._time(shadow, rows, timing)
            if strategies:
                searched = self._strategies(problem, service.model_dir(result.observation.target_id), rows, shadow)
        return rows, searched, result.training

    @staticmethod
    def _ours(outcome) -> dict:
        return {"rewritten": outcome.rewritten, "rules": list(outcome.rules), "reason": outcome.reason,
                "pipeline_speedup": outcome.speedup, "pipeline_ci": list(outcome.ci) if outcome.ci else None,
                "equivalent": outcome.equivalent, "rewrite_ms": round(outcome.rewrite_ms, 1),
                "plan_cost": list(outcome.plan_cost) if outcome.plan_cost else None,
                "checked_on": list(outcome.checked_on), "rejected": list(outcome.rejected)}

    def _peer(self, problem, rows: list[dict]) -> None:
        for row in rows:
            started = time.perf_counter()
            try:
                row["sqlglot"] = sqlglot_optimize(row["sql"], problem.schema, problem.dialect)
                row["sqlglot_error"] = None
            except Exception as e:  # noqa: BLE001 - the peer's own failure is a result of the bench
                row["sqlglot"], row["sqlglot_error"] = None, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            row["sqlglot_rewrite_ms"] = round(1000 * (time.perf_counter() - started), 1)

    def _check(self, shadow, scratch, problem, rows: list[dict]) -> None:
        """Plan and check every output (ours and the peer's) on the edge-case databases and the shadow."""
        timeout = self.options.statement_timeout_ms
        for row in rows:
            self.say(f"checking {row['name']}")
            read = tables_named(row["sql"], dialect=problem.dialect)  # every table the statement's text names, in any clause
            tables = {t: cols for t, cols in problem.schema.items() if t in read}
            for who in ("ours", "sqlglot"):
                text = row["rewritten"] if who == "ours" else row["sqlglot"]
                # our answers must keep the statement's column names; the peer's rows are judged alone, its renamed
                # columns listed apart (``sqlglot_renamed_columns``)
                row[f"{who}_verdict"] = None if text is None else \
                    _verdict(shadow, scratch, tables, problem, row["sql"], text, timeout, names=who == "ours")
            row["sqlglot_renamed"] = row["sqlglot_verdict"] == "equivalent" and \
                rewrite_equivalence.column_names(shadow.connector, row["sqlglot"]) != \
                rewrite_equivalence.column_names(shadow.connector, row["sql"])

    def _time(self, shadow, rows: list[dict], timing: ValidationOptions) -> None:
        """Latency medians (ms) of the original, our answer and the peer's output, interleaved on one shadow; an
        output that is invalid or wrong is not timed (``None``), one we left alone is the original."""
        for row in rows:
            arms = {"ours": row["rewritten"], "sqlglot": row["sqlglot"]}
            arms = {k: v for k, v in arms.items() if v and row[f"{k}_verdict"] == "equivalent"}
            st = BoundStatement(row["name"], row["sql"], row["sql"], 1.0, "literal", False)
            self.say(f"timing {row['name']}: the original against {', '.join(arms) or 'itself'}")
            race = rewrite_timing.race(shadow.connector, st, list(arms.values()) or [row["sql"]], timing)
            first = race.evidence[0].statements
            row["original_lat_ms"] = first[0].baseline_ms if first else None
            row["ours_lat_ms"] = row["original_lat_ms"] if row["rewritten"] is None else None
            row["sqlglot_lat_ms"] = None
            for (who, _), ev in zip(arms.items(), race.evidence):
                row[f"{who}_lat_ms"] = ev.statements[0].candidate_ms if ev.statements else None

    def _strategies(self, problem, model_dir: Path, rows: list[dict], shadow) -> dict:
        """Per statement in the subset and per strategy: the estimated cost reached, the e-nodes, the search's ms,
        and the planner's cost of the SQL it extracts (the plan PostgreSQL would run)."""
        by_id = {f"sql{i + 1}": row["name"] for i, row in enumerate(rows)}
        out: dict[str, dict] = {}
        for name in STRATEGIES:
            opt = registry.create("rewrites", name, problem, seed=self.options.seed, strict=False,
                                  episodes=self.options.episodes, own=not self.options.held_out)
            opt.prepare(model_dir, self.say)
            for qid in problem.lowered:
                started = time.perf_counter()
                result, search = opt.run_search(qid)
                ms = round(1000 * (time.perf_counter() - started), 1)
                try:
                    planned = shadow.connector.explain_cost(to_sql(search.best(), problem.lowered[qid]))
                except Exception:  # noqa: BLE001 - an extraction the planner refuses is reported as such
                    planned = None
                out.setdefault(by_id[qid], {})[name] = {
                    "relative_cost": result.cost / max(result.initial_cost, 1), "nodes": result.nodes,
                    "steps": result.steps, "ms": ms, "planner_cost": planned}
        for i, row in enumerate(rows):  # parse and lowering, the part of a rewrite before the search
            started = time.perf_counter()
            try:
                lower(row["sql"], problem.schema, dialect=problem.dialect)
            except Unsupported:
                pass
            row["lower_ms"] = round(1000 * (time.perf_counter() - started), 1)
        return out


def _verdict(shadow, scratch, tables, problem, original: str, text: str, timeout_ms: int, names: bool) -> str:
    try:
        shadow.connector.explain_cost(text)
    except Exception as e:  # noqa: BLE001 - invalid SQL is the verdict
        return f"invalid: {str(e).splitlines()[0][:200]}"
    v = rewrite_equivalence.check(scratch, tables, original, text, not_null=problem.not_null, shadow=shadow.connector,
                                  timeout_ms=timeout_ms, names=names, **constraints(problem, tables))
    if v.error is not None:  # the original itself failed on a check database: the check's fault, not the output's
        return f"unchecked: {v.error}"
    return "equivalent" if v.equivalent else f"wrong: {v.mismatch}"
