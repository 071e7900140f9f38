"""The learned-index kind's registry entry: a run plan -> keys from a source (``keys``), a workload mix
(``workload``), the index engine (``index``) -> the pipeline (``pipeline.search``) -> a handed-over
recommendation (parameters for the index's owners; never applied to a database), with the evidence (thread CPU
time per operation, per phase of the workload; ``advisor.tuning.learned_index.validation``) and details {index,
parameters, default, tuned, evaluations, unsafe_evaluations, measured, finalists, picked} (the search's best few
re-measured beside the defaults before the pick: ``advisor.tuning.learned_index.finalists``). Its verdict line (the recommendation's note,
the CLI's message) says the gain in CPU time with its interval; ``measured`` (the Evidence's, in the details and
the JSON document) how it was measured.

Keys from a synthetic set or a file need no database: such a run is stored under a target of its own, named after
the key source (``own_target``: ``keys synthetic:books:20000``, ``keys /path/keys.txt``; no DSN, engine ``keys``),
or under the target given, which is then neither observed nor changed. Keys from a ``table.column`` are read from
the target database (observed first, as every kind observes); nothing is changed there."""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.core.domain import LearnedIndexParam, Recommendation
from advisor.core.errors import AdvisorError
from advisor.core.progress import heartbeat
from advisor.core.params import ParamSpace, params_json
from advisor.tuning.learned_index import face
from advisor.tuning.kind import Context, Kind, default_outcome
from advisor.core.inputs import ranges  # NAME=LOW:HIGH items, read the same way for every kind
from advisor.tuning.learned_index import keys as key_sources
from advisor.tuning.learned_index.plan import DEFAULT_OPTIMIZER, LearnedIndexPlan
from advisor.tuning.learned_index.pipeline import LearnedIndexResult, Trial, operations, problem, tune_index
from advisor.tuning.recommend import recommend, verdict_note
from optimizers import learned_index
from optimizers.learned_index.problem import OBJECTIVE

KIND_NAME = "learned-index"


@dataclass(frozen=True)
class LearnedIndexTuneResult:
    recommendation: Recommendation | None
    message: str
    result: LearnedIndexResult | None = None
    run_id: str | None = None
    keys: int = 0
    trials: tuple[Trial, ...] = field(default_factory=tuple)

    def document(self) -> dict:
        """The run as the issue's JSON document: index, parameters, default and tuned figures, evaluations, and
        how the validation went (``measured``: rounds, why they stopped, noise rounds, the machine's load, the CPU
        time decided on and the wall-time throughput beside it; "" when not validated), the finalists re-measured
        before the pick (each one's trial, configuration, changes, search and median CPU ns per operation, rounds,
        whether picked; [] when none were) and why the pick (``picked``), and every trial (``trial_doc``)."""
        r = self.result
        return {"index": r.index if r else None, "parameters": params_json(r.best) if r else {},
                "default": r.default if r else {}, "tuned": r.tuned if r else {},
                "evaluations": r.evaluations if r else 0, "unsafe_evaluations": r.unsafe_evaluations if r else 0,
                "recommendation": self.recommendation.id if self.recommendation else None,
                "state": self.recommendation.state if self.recommendation else None,
                "run_id": self.run_id, "message": self.message,
                "measured": r.evidence.measured if r and r.evidence else "",
                "finalists": [f.doc() for f in r.finalists] if r else [], "picked": r.picked if r else "",
                "trials": [trial_doc(t) for t in self.trials]}


def trial_doc(t: Trial) -> dict:
    """A trial as the JSON document shows it: its objective (thread CPU ns per operation, what the search
    decides on) and its wall-time throughput beside it."""
    m = t.result.metrics or {}
    return {"number": t.number, "source": t.source, "status": t.result.status, "reason": t.result.reason,
            "config": params_json(t.config), "cpu_ns_per_op": t.result.objective,
            "throughput_ops": m.get("throughput_ops")}


def _indexes() -> tuple[str, ...]:
    from connectors import factory

    return factory.learned_indexes()


def _check(plan) -> None:
    """What the plan alone says wrong (a usage error): range items that are not NAME=LOW:HIGH."""
    ranges(plan.range)


def confine(plan):
    """The plan as a remote face may run it: its key file only from the server's ``key_files_dir``
    (``keys.confined``), resolved there."""
    import dataclasses

    from advisor.core.settings import get_settings

    if plan.keys is None:
        return plan
    return dataclasses.replace(plan, keys=key_sources.confined(plan.keys, get_settings().key_files_dir))


def check_target(connector, plan) -> None:
    """What the service checks before any work, once the target is known (so a request that fits the REST schema
    is refused only for what it says about the target or the sources): the key source (a known synthetic set,
    an existing file, a column the target lets us read), the mix, the index and the parameters named in
    ``range``."""
    from workloads.datasets.learned.mixes import parse_mix

    from connectors import factory

    key_sources.check(plan.keys)
    mix = parse_mix(plan.workload)
    if plan.index not in _indexes():
        raise AdvisorError(f"unknown learned index {plan.index!r}; choose one of {', '.join(_indexes())}")
    if factory.learned_index(plan.index).read_only and mix.insert > 0:
        raise AdvisorError(f"{plan.index} is read-only: choose a workload without inserts (read-only, or "
                           "lookup=...,range=...)")
    space_of(plan)
    if key_sources.kind_of(plan.keys) == "column":
        table, column = plan.keys.strip().rsplit(".", 1)
        connector.column_keys(table, column, 1)  # AdvisorError naming what the target says


def own_target(plan) -> str | None:
    """The target of its own a run of ``plan`` goes under: ``keys SOURCE`` for keys from a synthetic set or a file
    (an absolute path), None for keys from a column (the run needs the target database)."""
    import os

    kind = key_sources.kind_of(plan.keys)
    if kind == "column":
        return None
    source = plan.keys.strip()
    return f"keys {os.path.abspath(source) if kind == 'file' else source}"


def space_of(plan) -> ParamSpace:
    """The searched space: the index's parameters, narrowed by the plan's ``range`` items (NAME=LOW:HIGH)."""
    from connectors import factory

    return ParamSpace(factory.learned_index(plan.index).parameters()).narrowed(ranges(plan.range))


def run(ctx: Context, plan) -> LearnedIndexTuneResult:
    from connectors import factory
    from optimizers import registry
    from workloads.datasets.learned.mixes import parse_mix, workload

    from advisor.tuning.learned_index.training import features, training_tasks

    mix = parse_mix(plan.workload)
    engine = factory.learned_index(plan.index)
    connector = ctx.connector
    target_id = ctx.stored_target(connector)
    ctx.say(f"reading keys from {plan.keys}")
    with heartbeat(ctx.say, f"reading keys from {plan.keys}"):
        keys = key_sources.read(plan.keys, connector, plan.seed)
    ctx.say(f"{len(keys):,} keys from {plan.keys}")
    initial, stream = workload(keys, mix, operations(len(keys), mix.insert), plan.seed)
    prob = problem(space_of(plan), engine.name, features(keys, mix),
                   training=lambda: training_tasks(engine, plan.seed))
    optimizer = registry.create("learned-index", plan.optimizer, prob, seed=plan.seed, strict=False,
                                retrain=plan.retrain)  # LITune's: meta-train from scratch, not the shipped model
    with heartbeat(ctx.say, f"preparing {plan.optimizer}") as say:
        optimizer.prepare(ctx.model_dir(target_id) if ctx.model_dir else None, say)
    resume = ctx.inputs.get("resume")
    run_id = ctx.open_run(target_id, KIND_NAME, plan.optimizer, plan.to_dict(), resume, ctx.run_id)

    ctx.say(f"building {engine.name} over {len(initial):,} keys (its first build compiles it) and evaluating")
    with heartbeat(ctx.say, f"tuning {engine.name}") as say:  # a compile or a slow evaluation is not silent
        found = tune_index(engine, initial, [stream], optimizer, plan.budget,
                           rounds=plan.rounds if plan.validate else 0, seed=plan.seed, say=say,
                           store=ctx.store, run_id=run_id, target_id=target_id, resume=bool(resume),
                           parallel=plan.parallel, ray=plan.ray)
    base = dict(keys=len(keys), run_id=run_id, trials=tuple(found.trials), result=found)
    if not found.changes:
        again = f" (re-measured beside its best: {found.picked})" if found.picked else ""
        return LearnedIndexTuneResult(None, f"{plan.optimizer}: no configuration beat the defaults of {engine.name} "
                                            f"in {found.evaluations} evaluations{again}", **base)
    gain = found.tuned["throughput_ops"] / found.default["throughput_ops"] - 1.0
    ev = found.evidence
    accepted = None if ev is None else ev.accepted
    verdict = "not validated" if ev is None else \
        f"on thread CPU time per operation, {verdict_note(ev)}"
    why = (f"{engine.name}: {found.tuned['throughput_ops']:,.0f} ops/s tuned vs {found.default['throughput_ops']:,.0f}"
           f" ops/s with the defaults ({gain:+.1%} wall time); {verdict}")
    details = {"index": engine.name, "parameters": params_json(found.best), "default": found.default,
               "tuned": found.tuned,
               "evaluations": found.evaluations, "unsafe_evaluations": found.unsafe_evaluations,
               "keys": plan.keys, "key_count": len(keys), "workload": plan.workload,
               "measured": ev.measured if ev is not None else "",
               "finalists": [f.doc() for f in found.finalists], "picked": found.picked,
               "note": "parameters handed to the index's owners; nothing is applied to the database"}
    rec = recommend(ctx.store, target_id=target_id, kind=KIND_NAME, optimizer=plan.optimizer, plan=None,
                    changes=tuple(found.changes), evidence=found.evidence, accepted=accepted, why=why, details=details,
                    run_id=run_id)
    return LearnedIndexTuneResult(rec, why, **base)


def summarize(result: LearnedIndexTuneResult) -> dict:
    """What the run's row records: the default outcome and what each trial's objective is measured in."""
    return {**default_outcome(result), "objective_unit": OBJECTIVE}



def _train_shipped(*args) -> dict:
    from advisor.tuning.learned_index import shipped  # on use: the CLI lists kinds

    return shipped.train(*args)


KIND = Kind(KIND_NAME, "a learned index's parameters (ALEX-like, PGM): a search over a benchmark harness on keys "
            "and a workload mix, validated against the defaults; handed over, never applied", run,
            optimizers=learned_index.OPTIMIZERS, change_types=(LearnedIndexParam,),
            plan=LearnedIndexPlan,
            handed_over=True, default_optimizer=DEFAULT_OPTIMIZER, check_plan=_check, check_target=check_target, confine=confine,
            summarize=summarize,
            title="Learned index", uses_shadows=False, own_target=own_target, own_target_engine="keys",
            train_shipped=_train_shipped,
            report=face.report, document=face.document, page=face.PAGE, page_data=face.page)
