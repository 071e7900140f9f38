"""The index pipeline, top down: observe (done by the caller) -> bind the workload -> a shadow -> candidates and
what-if costs (HypoPG) -> the optimizer's choice -> every index built for real and validated on the shadow ->
recommend. The service and ``advisor bench indexes`` call these same functions (the bench asks ``propose`` for
each workload mix and budget, and validates with ``advisor.tuning.index_validation``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from advisor.core.domain import Recommendation
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.storage.store import Store
from advisor.tuning.index_validation import IndexValidation, validate_indexes
from advisor.tuning.indexing import build_problem
from advisor.tuning.observe import Observation, bind
from advisor.tuning.recommend import recommend, verdict_note
from advisor.tuning.validation import ValidationOptions
from connectors import factory
from connectors.base import Connector
from optimizers import registry
from optimizers.indexes.problem import IndexProblem

MB = 1024 * 1024


@dataclass(frozen=True)
class IndexPlan:
    """What an index run does: the optimizer and its options (``options`` go to whichever optimizer takes them:
    IA2's ``episodes``, ``samples``, ``device``, ``retrain``), the budget (MiB of new indexes), the widest index,
    the validation (None: not validated), the shadow's sample and how many of the heaviest statements count."""

    optimizer: str = "ia2"
    budget_mb: float = 0.0
    seed: int = 0
    max_width: int = 3
    validation: ValidationOptions | None = ValidationOptions()
    sample_percent: float | None = None
    max_statements: int = 30
    options: dict = field(default_factory=dict)

    def check(self) -> "IndexPlan":
        """This plan, when its budget and optimizer make sense (AdvisorError / NotFound otherwise)."""
        if not self.budget_mb > 0 or self.budget_mb == float("inf"):
            raise AdvisorError(f"the index budget must be a positive number of MB, got {self.budget_mb:g}")
        registry.get("indexes", self.optimizer)
        return self


@dataclass(frozen=True)
class IndexTuneResult:
    recommendation: Recommendation | None  # None when no index is worth its space
    observation: Observation
    chosen: tuple = ()  # the optimizer's set, before validation
    validation: IndexValidation | None = None
    whatif: dict = field(default_factory=dict)  # relative cost, costs, bytes, budget, calls and hits, seconds
    training: dict | None = None  # what the optimizer's prepare() reported (IA2's training or reused model)
    skipped: tuple[tuple[str, str], ...] = ()
    message: str = ""


def tune_indexes(store: Store, connector: Connector, obs: Observation, plan: IndexPlan, *,
                 model_dir: Path | None = None, run_id: str | None = None, say: Say = silent) -> IndexTuneResult:
    """The whole index pipeline for an observed target; trained models live under ``model_dir``."""
    plan.check()
    bound, _skipped = bind(connector, obs, plan.max_statements, say)
    budget = int(plan.budget_mb * MB)
    with factory.clone(connector, sample_percent=plan.sample_percent, say=say) as shadow:
        unparsed: list[tuple[str, str]] = []
        problem, session = build_problem(shadow.connector, obs.snapshot, bound, budget, max_width=plan.max_width,
                                         skipped=unparsed)
        with session:
            for qid, why in unparsed:
                say(f"statement {qid}: {why}; left out of index selection")
            say(f"{len(problem.candidates)} candidate indexes from {len(problem.queries)} statements; "
                f"budget {plan.budget_mb:g} MB")
            chosen, training, whatif = propose(problem, plan.optimizer, seed=plan.seed, model_dir=model_dir,
                                               options={**plan.options, "data_bytes": obs.data_bytes}, say=say)
            estimated = {ix: problem.whatif.size(ix) for ix in chosen}
        say(f"{plan.optimizer} chose {len(chosen)} index(es), what-if relative cost {whatif['relative_cost']:.3f}")
        common = dict(target_id=obs.target_id, kind="indexes", optimizer=plan.optimizer, run_id=run_id)
        if not chosen:
            return IndexTuneResult(None, obs, (), None, whatif, training, tuple(unparsed),
                                   f"{plan.optimizer}: no index is worth its space within the budget")
        if plan.validation is None:
            rec = recommend(store, **common, plan=connector.plan_changes(chosen),
                            details=details(connector, chosen, estimated, None, whatif, training))
            return IndexTuneResult(rec, obs, chosen, None, whatif, training, tuple(unparsed),
                                   "not validated (validation was switched off)")
        existing = [i.name for i in obs.snapshot.indexes if not i.is_primary and not i.is_unique and i.scans == 0]
        checked = validate_indexes(shadow, bound, chosen, estimated, existing, plan.validation, say=say)
    info = details(connector, chosen, estimated, checked, whatif, training)
    if not checked.kept:
        why = "every chosen index was dropped on validation: " + "; ".join(
            f"{connector.index_name(v.index)}: {v.reason}" for v in checked.verdicts)
        rec = recommend(store, **common, plan=None, changes=chosen, accepted=False, why=why, details=info)
        return IndexTuneResult(rec, obs, chosen, checked, whatif, training, tuple(unparsed), why)
    why = verdict_note(checked.evidence)
    if checked.unexplained:
        why += (f"; slower but unaffected by the indexes (their plans use none of them), so noise: "
                f"{', '.join(checked.unexplained)}")
    rec = recommend(store, **common, plan=connector.plan_changes(checked.kept), evidence=checked.evidence,
                    accepted=checked.accepted, why=why, details=info)
    return IndexTuneResult(rec, obs, chosen, checked, whatif, training, tuple(unparsed), why)


def propose(problem: IndexProblem, optimizer: str, *, seed: int = 0, model_dir: Path | None = None,
            options: dict | None = None, say: Say = silent) -> tuple[tuple, dict | None, dict]:
    """The propose step: ``choose``, and the what-if figures of the choice. Returns (indexes, what prepare
    reported, what-if figures)."""
    chosen, training, selection_s, why = choose(problem, optimizer, seed=seed, model_dir=model_dir,
                                                options=options, say=say)
    base_cost, cost = problem.cost(), problem.cost(chosen)
    whatif = {"relative_cost": cost / base_cost if base_cost else 1.0, "cost_before": base_cost, "cost_after": cost,
              "estimated_bytes": problem.size(chosen), "budget_bytes": problem.budget_bytes,
              "candidates": len(problem.candidates), "selection_s": selection_s, **problem.whatif.counters(),
              **({"explain": why} if why else {})}
    return chosen, training, whatif


def choose(problem: IndexProblem, optimizer: str, *, seed: int = 0, model_dir: Path | None = None,
           options: dict | None = None, say: Say = silent) -> tuple[tuple, dict | None, float, dict[str, str]]:
    """The optimizer over ``problem``, prepared (a trained model loaded from ``model_dir``, or trained and saved
    there) and asked once. ``options`` go to the optimizer when it takes them. Returns (indexes, what prepare
    reported, seconds the ask took, the optimizer's explain())."""
    opt = registry.create("indexes", optimizer, problem, seed=seed, strict=False, **(options or {}))
    training = opt.prepare(model_dir, say)
    started = time.perf_counter()
    chosen = opt.ask(1)[0]
    return chosen, training, time.perf_counter() - started, opt.explain()


def details(connector: Connector, chosen, estimated, checked: IndexValidation | None, whatif, training) -> dict:
    """The recommendation's details: per index its sizes, the statements it helps and its verdict."""
    verdicts = {v.index: v for v in checked.verdicts} if checked else {}
    indexes = []
    for ix in chosen:
        v = verdicts.get(ix)
        indexes.append({"index": connector.index_name(ix), "table": f"{ix.schema}.{ix.table}",
                        "columns": list(ix.columns), "estimated_bytes": estimated.get(ix),
                        "built_bytes": v.built_bytes if v else None, "statements": list(v.serves) if v else [],
                        "kept": v.kept if v else None, "reason": v.reason if v else "not validated"})
    return {"indexes": indexes, "whatif": whatif, "training": training,
            "unused_existing_indexes": list(checked.unused_existing) if checked else [],
            "unexplained_slowdowns": list(checked.unexplained) if checked else []}
