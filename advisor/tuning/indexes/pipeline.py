"""The index pipeline, top down: observe (done by the caller) -> bind the workload -> a shadow -> candidates and
what-if costs on the shadow (HypoPG; on MariaDB, IGNORED indexes built there) -> the optimizer's choice -> every
index built for real and validated on the shadow -> recommend. The service and ``advisor bench indexes`` call
these same functions (the bench asks ``propose`` for each workload mix and budget, and validates with
``advisor.tuning.indexes.validation``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.core.domain import Recommendation
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.core.sqltext import named
from advisor.storage.codec import change_from
from advisor.storage.store import Store
from advisor.tuning.indexes import drops as index_drops
from advisor.tuning.indexes import repair as index_repair
from advisor.tuning.indexes import sampled
from advisor.tuning.indexes import sizing as index_sizing
from advisor.tuning.indexes.choice import fallback_note, propose, refinement_note
from advisor.tuning.indexes.correct import correct, correction_note, from_history
from advisor.tuning.indexes.explain import add_verdicts, explain, not_recommended, note_fallback
from advisor.tuning.indexes.validation import IndexValidation, validate_indexes
from advisor.tuning.indexes.problem import build_problem
from advisor.tuning.observe import Observation, bind, top
from advisor.tuning.recommend import dropped_rows, rare_note, recommend, verdict_note
from advisor.tuning.shadows import Shadows
from advisor.tuning.ledger import Ledger, workload_digest
from advisor.tuning.validation import ValidationOptions
from connectors.base import Connector
from optimizers import registry
from optimizers.indexes.corrected import CorrectedWhatIf
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
    explain: tuple[dict, ...] = ()  # per observed statement: candidates, what-if costs, each one's fate and why
    fallback: dict | None = None  # the optimizer's set was worse than a baseline's: {"from", "to", "costs"}
    # what was tried and is not recommended, and why: {"change", "kind", "why"} (``advisor.tuning.recommend``)
    dropped: tuple[dict, ...] = ()


def _resumed(ledger: Ledger | None, problem: IndexProblem, chosen: tuple, bound: list,
             options: ValidationOptions | None, say: Say) -> tuple:
    """A resumed run continues the index set its first validation pass measured over the same workload (proposing
    again on a fresh shadow may pick another of a near tie, and measure a pass again), when every index of it is
    still a candidate; ``chosen`` otherwise."""
    stored = ledger.changes_of(validation="index set", **{"pass": "1"}, workload=workload_digest(bound, options)) \
        if ledger is not None and options is not None else None
    candidates = {c.index for c in problem.candidates}
    was = tuple(change_from(d) for d in stored or ())
    if not was or not set(was) <= candidates or set(was) == set(chosen):
        return chosen
    say(f"continuing the {len(was)} index(es) the interrupted run was validating (proposed again: "
        f"{len(chosen)})")
    return was


def tune_indexes(store: Store, connector: Connector, obs: Observation, plan: IndexPlan, *,
                 model_dir: Path | None = None, run_id: str | None = None, say: Say = silent,
                 shadows: Shadows | None = None, ledger: Ledger | None = None) -> IndexTuneResult:
    """The whole index pipeline for an observed target; trained models live under ``model_dir``; its shadow comes
    from ``shadows`` (default: a full copy, ``advisor.tuning.shadows``); each validation pass is a trial record
    of the run's ``ledger`` (a resumed run's stored passes are reused, ``validate_indexes``)."""
    plan.check()
    bound, not_bound = bind(connector, obs, plan.max_statements, say)
    budget = int(plan.budget_mb * MB)
    with (shadows or Shadows()).clone(connector, sample_percent=plan.sample_percent, say=say) as shadow, \
            sampled.search_on(shadow.connector, obs.snapshot, obs.data_bytes, plan.sample_percent, say) as search:
        unparsed: list[tuple[str, str]] = []
        sizes = index_sizing.prepare(shadow.connector, obs.snapshot, model_dir, say)
        problem, session = build_problem(search.connector, obs.snapshot, bound, budget, max_width=plan.max_width,
                                         skipped=unparsed, sizes=sizes, wrap=search.planner)
        problem = search.fit(problem)
        with session:
            texts = {b.queryid: b.normalized for b in bound}
            for qid, why in unparsed:
                say(f"{named(texts.get(qid), qid)}: {why}; left out of index selection")
            say(f"{len(problem.candidates)} candidate indexes from {len(problem.queries)} statements; "
                f"budget {plan.budget_mb:g} MB")
            options = {k: v for k, v in plan.options.items() if k != "correct"} | {"data_bytes": obs.data_bytes}
            # what earlier runs measured on this target corrects the first choice's costs too (``correct``)
            learned = from_history(problem, model_dir) if plan.options.get("correct", True) else None
            if learned is not None:
                say(f"what-if costs corrected by {len(learned.measured)} statement(s) measured in earlier runs on "
                    "this target")
            chosen, training, whatif = propose(
                problem if learned is None else replace(problem, whatif=CorrectedWhatIf(problem.whatif, learned)),
                plan.optimizer, seed=plan.seed, model_dir=model_dir, options=options, say=say)
            if learned is not None:
                whatif["from_history"] = learned.report()
            chosen = _resumed(ledger, problem, chosen, [b for b in bound if b.queryid not in dict(unparsed)],
                              plan.validation, say)
            estimated = {ix: problem.whatif.size(ix) for ix in chosen}
            spares = index_repair.spares(problem, chosen) if plan.validation is not None else ()
            raw = index_sizing.raw_estimates(problem.whatif, chosen)  # HypoPG's, before calibration
            fallback = whatif.get("fallback")
            asked = list(bound)

            def rows_for(indexes: tuple, chooser: str) -> list[dict]:
                return explain(problem, asked, indexes, not_bound=_not_bound(obs, not_bound), not_parsed=unparsed,
                               left_out=_left_out(obs, plan.max_statements), name=connector.index_name,
                               chooser=chooser)

            rows = rows_for(chosen, fallback["to"] if fallback else plan.optimizer)
            if fallback:
                note_fallback(rows, fallback)
        checked, drops = None, index_drops.DropValidation()  # validated outside the what-if session
        # a statement left out of selection (not parsed or not planned) is left out of validation too: replaying
        # or planning it again would only fail again (its row above says why)
        left = {qid for qid, _why in unparsed}
        bound = [b for b in bound if b.queryid not in left]
        if plan.validation is not None:
            if chosen:
                existing = [i.name for i in obs.snapshot.indexes
                            if not i.is_primary and not i.is_unique and i.scans == 0]
                checked = validate_indexes(shadow, bound, chosen, estimated, existing, plan.validation, say=say,
                                           budget_bytes=budget, spares=spares, ledger=ledger)
                index_sizing.learn_built(sizes, raw, {v.index: v.built_bytes for v in checked.verdicts}, model_dir)
                if plan.options.get("correct", True):
                    fixed = correct(shadow, problem, sizes, bound, checked, plan.optimizer, seed=plan.seed,
                                    model_dir=model_dir, options=options, validation=plan.validation,
                                    existing=existing, ledger=ledger, say=say, search=search,
                                    rows_for=lambda s, who: rows_for(s, f"{who} on corrected costs"))
                    whatif["correction"] = fixed.report
                    if fixed.validation is not None:
                        index_sizing.learn_built(sizes, fixed.raw,
                                                 {v.index: v.built_bytes for v in fixed.validation.verdicts}, model_dir)
                    if fixed.chosen is not None:
                        chosen, checked, estimated, raw, rows = (fixed.chosen, fixed.validation, fixed.estimated,
                                                                 fixed.raw, fixed.rows or rows)
                        # the figures describe the set recommended (the planner's estimate for it, its size)
                        whatif["relative_cost"] = fixed.report["relative_cost"]["rechosen"]
                        whatif["cost_after"] = whatif["relative_cost"] * whatif["cost_before"]
                        whatif["estimated_bytes"] = sum(estimated.values())
            drops = index_drops.validate_drops(connector, shadow, bound, obs.snapshot, plan.validation, say=say,
                                               ledger=ledger)
        whatif["search"] = search.doc()
    say(f"{plan.optimizer} chose {len(chosen)} index(es), what-if relative cost {whatif['relative_cost']:.3f}")
    head = f"{fallback_note(fallback)}; " if fallback else ""
    head += f"refined: {refinement_note(whatif['refined'])}; " if whatif.get("refined") else ""
    head += f"{correction_note(whatif['correction'])}; " if whatif.get("correction", {}).get("taken") == "rechosen" \
        else ""
    if checked is not None:
        rows = add_verdicts(rows, checked.verdicts, connector.index_name)
    tried = not_recommended(rows, checked.verdicts if checked else (), drops.verdicts)  # and why not
    common = dict(observed=obs, kind="indexes", optimizer=plan.optimizer, run_id=run_id, dropped=tried)
    result = dict(observation=obs, whatif=whatif, training=training, skipped=tuple(unparsed),
                  explain=tuple(rows), fallback=fallback, chosen=chosen, validation=checked,
                  dropped=tuple(dropped_rows(tried)))
    info = details(connector, chosen, estimated, checked, whatif, training, rows, raw, drops)
    if not chosen and not drops.kept:
        why = "; ".join(f"{named(r['statement'], r['queryid'])}: {r['why']}" for r in rows)
        return IndexTuneResult(None, message=f"{plan.optimizer}: no index is worth its space within the budget. "
                               f"Per statement: {why}", **result)
    if plan.validation is None:
        rec = recommend(store, **common, plan=connector.plan_changes(chosen), details=info)
        return IndexTuneResult(rec, message=head + "not validated (validation was switched off)", **result)
    if checked is None or not checked.kept:
        lost = "" if checked is None else "every chosen index was dropped on validation: " + "; ".join(
            f"{connector.index_name(v.index)}: {v.reason}" for v in checked.verdicts)
        if drops.kept:  # no new index is worth its space, but some existing ones are not worth theirs either
            why = head + (f"{lost}; " if lost else "") + drop_note(drops)
            if drops.evidence is not None and drops.evidence.rare_slower:  # shown, not blocking
                why += "; " + rare_note(drops.evidence)
            rec = recommend(store, **common, plan=connector.plan_changes(drops.kept), evidence=drops.evidence,
                            accepted=drops.accepted, why=why, details=info)
            return IndexTuneResult(rec, message=f"{plan.optimizer}: no new index is kept; {why}", **result)
        why = head + lost
        rec = recommend(store, **common, plan=None, changes=chosen, accepted=False, why=why, details=info)
        return IndexTuneResult(rec, message=why, **result)
    why = head + verdict_note(checked.evidence, checked.unexplained)
    if checked.unexplained:
        why += (f"; slower but unaffected by the indexes (their plans use none of them), so noise: "
                f"{', '.join(checked.unexplained)}")
    rec = recommend(store, **common, plan=connector.plan_changes(checked.kept + drops.kept), evidence=checked.evidence,
                    accepted=checked.accepted, why=why, details=info)
    return IndexTuneResult(rec, message=why, **result)


def drop_note(drops: index_drops.DropValidation) -> str:
    """One line on a drop-only recommendation: what it frees, and that no statement using them regressed."""
    freed = sum(v.size_bytes or 0 for v in drops.verdicts if v.kept) / MB
    names = ", ".join(d.name for d in drops.kept)
    noise = f" (slower but using none of them, so noise: {', '.join(drops.unexplained)})" if drops.unexplained else ""
    return (f"drop {len(drops.kept)} unused or duplicate index(es) ({names}), freeing {freed:.1f} MB and their "
            f"upkeep on writes; no statement whose plan used them regressed without them{noise}")


def _not_bound(obs: Observation, skipped) -> list[tuple[str, str, str]]:
    """(queryid, normalized SQL, why) of the statements ``bind`` could not bind (it names them by their SQL)."""
    ids = {st.sql: st.queryid for st in obs.workload.statements}
    return [(ids.get(sql_text, "?"), sql_text, why) for sql_text, why in skipped]


def _left_out(obs: Observation, max_statements: int) -> list[tuple[str, str]]:
    """(queryid, normalized SQL) of the statements beyond the ``max_statements`` heaviest."""
    kept = {st.queryid for st in top(obs.workload.statements, max_statements)}
    return [(st.queryid, st.sql) for st in obs.workload.statements if st.queryid not in kept]


def details(connector: Connector, chosen, estimated, checked: IndexValidation | None, whatif, training,
            rows: list[dict] | None = None, raw: dict | None = None,
            drops: index_drops.DropValidation | None = None) -> dict:
    """The recommendation's details: per index its sizes, the statements whose plans use it (``statements``) and
    of those the ones measured faster (``helped``; never one that regressed), and its verdict; the
    explanation table (``index_explain``) and the fallback, if any. Sizes: HypoPG's estimate, the calibrated one
    (``index_sizing``) the optimizer used, the size built on the shadow. ``drops``: existing indexes to drop."""
    verdicts = {v.index: v for v in checked.verdicts} if checked else {}
    texts = {r["queryid"]: r.get("statement") or "" for r in rows or ()}
    indexes = []
    for ix in [*chosen, *(v.index for v in verdicts.values() if v.in_place_of is not None)]:
        v = verdicts.get(ix)
        repair = v.in_place_of if v else None
        indexes.append({"index": connector.index_name(ix), "table": f"{ix.schema}.{ix.table}",
                        **({"in_place_of": connector.index_name(repair)} if repair else {}),
                        "columns": list(ix.columns), "estimated_bytes": (raw or {}).get(ix, estimated.get(ix)),
                        "calibrated_bytes": estimated.get(ix, v.estimated_bytes if v else None),
                        "built_bytes": v.built_bytes if v else None, "statements": list(v.serves) if v else [],
                        "helped": list(v.helped) if v else [],
                        "statements_sql": [texts.get(q, "") for q in v.serves] if v else [],
                        "kept": v.kept if v else None, "reason": v.reason if v else "not validated"})
    return {"indexes": indexes, "whatif": whatif, "training": training,
            "unused_existing_indexes": list(checked.unused_existing) if checked else [],
            "drops": drops.report() if drops else [],
            "unexplained_slowdowns": list(checked.unexplained) if checked else [],
            "explain": list(rows or []), **({"fallback": whatif["fallback"]} if whatif.get("fallback") else {})}
