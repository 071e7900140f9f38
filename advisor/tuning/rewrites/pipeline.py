"""The rewrite pipeline, top down: the statements (given SQL, or the observed workload's heaviest bound to the
constants of a real call) -> a shadow -> the problem (schema, NOT NULL columns, keys and table rows from the
target's catalog; each predicate's selectivity from the planner's estimate on the shadow) -> the optimizer's
candidate forms per statement -> re-ranked by the planner's real cost on the shadow -> equivalence by execution
(``rewrite_equivalence``: edge-case databases and the shadow) -> the best few timed against the original,
interleaved on the shadow (``rewrite_timing``) -> recommend. The original is always in the race: a statement is
rewritten only when a candidate returns the same rows and is measurably faster.

A rewrite recommendation is never applied to a database: it is handed to the statement's owners, and its
lifecycle ends at approved. The service, the CLI (``advisor rewrite``) and ``advisor bench rewrite`` call these
same functions."""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.core.domain import Evidence, QueryRewrite, Recommendation
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.core.sqltext import named, shorten
from advisor.core.wording import ratio
from advisor.storage.store import Store
from advisor.tuning.rewrites import equivalence as rewrite_equivalence
from advisor.tuning.rewrites import timing as rewrite_timing
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.observe import Observation, bind
from advisor.tuning.rewrites.given import changes_data
from advisor.tuning.rewrites.stats import planner_groups, planner_selectivity
from advisor.tuning.rewrites.tables import constraints, tables_read
from advisor.tuning.recommend import Dropped, dropped_rows, recommend
from advisor.tuning.rewrites import stored
from advisor.tuning.shadows import Shadows
from advisor.tuning.ledger import Ledger
from advisor.tuning.validation import ValidationOptions

from connectors.base import Connector
from optimizers import registry
from optimizers.rewrites.search.problem import RewriteProblem
from workloads.statements.binding import BoundStatement, parameters

EXPLAIN_SLACK = 1.05  # a candidate the planner prices above this x the original's cost is not timed
SCRATCH_DB = "advisor_rewrite_edges"  # on the shadow's server: the edge-case databases of the equivalence check


@dataclass(frozen=True)
class RewritePlan:
    """What a rewrite run does: the optimizer and its options, the statements (given SQL; empty: the observed
    workload's ``max_statements`` heaviest), how many candidate forms per statement are re-ranked by the planner
    and how many of those are timed, and the timing (None: not timed, only re-ranked and checked)."""

    optimizer: str = "aurora"
    statements: tuple[str, ...] = ()
    max_statements: int = 20
    candidates: int = 3
    timed: int = 2
    validation: ValidationOptions | None = ValidationOptions(rounds=5, repeats=1)
    seed: int = 0
    sample_percent: float | None = None
    options: dict = field(default_factory=dict)

    def check(self) -> "RewritePlan":
        registry.get("rewrites", self.optimizer)
        if not 1 <= self.candidates <= 20 or not 1 <= self.timed <= self.candidates:
            raise AdvisorError("candidates must be 1..20 and timed 1..candidates")
        for i, text in enumerate(self.statements):
            if not text.strip():
                raise AdvisorError(f"statement {i + 1} is empty")
        return self


@dataclass(frozen=True)
class Outcome:
    """One statement's answer. ``rewritten`` None: left as written, ``reason`` says why (unsupported construct,
    no rule applied, not faster, not equivalent, equivalence not checked: the check could not run the original).
    ``speedup``: original's median latency / the rewrite's, with its 95% interval ``ci``; ``equivalent``: the
    chosen rewrite's verdict (False when every candidate failed it, None when not checked)."""

    queryid: str
    original: str
    rewritten: str | None = None
    rules: tuple[str, ...] = ()
    speedup: float | None = None
    ci: tuple[float, float] | None = None
    equivalent: bool | None = None
    reason: str = ""
    rewrite_ms: float = 0.0  # the optimizer's search for this statement
    plan_cost: tuple[float, float] | None = None  # the planner's cost: original, rewrite
    checked_on: tuple[str, ...] = ()  # the databases original and rewrite returned the same rows on
    rejected: tuple[dict, ...] = ()  # candidates discarded: their SQL and why (both texts kept for a mismatch)
    passes: tuple = ()  # (the original's passes, the rewrite's passes): the timing behind ``speedup``

    def public(self) -> dict:
        """The CLI's JSON entry (exactly the documented keys)."""
        return {"queryid": self.queryid, "original": self.original, "rewritten": self.rewritten,
                "rules": list(self.rules), "speedup": self.speedup, "ci": list(self.ci) if self.ci else None, "equivalent": self.equivalent,
                "reason": self.reason}

    def details(self) -> dict:
        return {**self.public(), "rewrite_ms": round(self.rewrite_ms, 1),
                "plan_cost": list(self.plan_cost) if self.plan_cost else None, "checked_on": list(self.checked_on),
                "rejected": list(self.rejected)}


@dataclass(frozen=True)
class RewriteTuneResult:
    recommendation: Recommendation | None
    observation: Observation
    statements: tuple[Outcome, ...]
    training: dict | None = None
    message: str = ""
    explain: tuple[dict, ...] = ()  # per statement, as stored on the recommendation (the run keeps it without one)
    # what was tried and is not recommended, and why: {"change", "kind", "why"} (``advisor.tuning.recommend``)
    dropped: tuple[dict, ...] = ()


def statements_of(plan: RewritePlan, connector: Connector, obs: Observation,
                  say: Say = silent) -> tuple[list[BoundStatement], list[Outcome]]:
    """The statements to rewrite as executable SQL, and an Outcome for each that cannot be (with the reason)."""
    if plan.statements:
        out, skipped = [], []
        for i, text in enumerate(plan.statements):
            qid = f"sql{i + 1}"
            if parameters(text):
                skipped.append(Outcome(qid, text, reason="the statement has parameters ($1...): give it with the "
                                                         "constants of one call"))
                continue
            verb = changes_data(text, connector.dialect)
            if verb:
                skipped.append(Outcome(qid, text, reason=f"it changes data ({verb}): only queries are rewritten "
                                                         f"(nothing was copied or run)"))
                continue
            out.append(BoundStatement(qid, text, text, 1.0, "literal", False))
        return out, skipped
    bound, not_bound = bind(connector, obs, plan.max_statements, say)
    ids = {st.sql: st.queryid for st in obs.workload.statements}
    return bound, [Outcome(ids.get(sql_text, "?"), sql_text, reason=f"cannot be replayed: {why}")
                   for sql_text, why in not_bound]


def build_problem(connector: Connector, obs: Observation, statements: list[BoundStatement],
                  node_budget: int = 5_000) -> RewriteProblem:
    """The rewrite problem over ``statements``: the target's columns with their types and NOT NULL, unique and
    foreign keys (schema ``public`` first when a table name is in several schemas), each table's estimated rows,
    and the target's SQL dialect (``connector.dialect``), in which the rewriter reads and writes."""
    schema: dict[str, dict[str, str]] = {}
    not_null: set[tuple[str, str]] = set()
    catalog = connector.column_types()
    for (nsp, table), cols in sorted(catalog.items(), key=lambda kv: kv[0][0] != "public"):
        if table in schema:
            continue
        schema[table] = {col: typ for col, typ, _ in cols}
        not_null |= {(table, col) for col, _, nn in cols if nn}
    rows: dict[str, float] = {}
    for t in sorted(obs.snapshot.tables, key=lambda t: t.schema != "public"):
        rows.setdefault(t.name, max(float(t.rows), 1.0))
    keys: dict[str, tuple[tuple[str, ...], ...]] = {}
    for (nsp, table), unique in sorted(connector.unique_keys().items(), key=lambda kv: kv[0][0] != "public"):
        keys.setdefault(table, unique)
    fks = tuple((t, cols, ref, ref_cols) for nsp, t, cols, ref, ref_cols in connector.foreign_keys())
    return RewriteProblem(tuple((s.queryid, s.sql) for s in statements), schema, rows, frozenset(not_null),
                          node_budget=node_budget, keys=keys, foreign_keys=fks, dialect=connector.dialect)


def calibrated(problem: RewriteProblem, connector: Connector) -> RewriteProblem:
    """``problem`` with its predicates' selectivities and its groupings' groups from the planner's estimates on
    ``connector`` (a shadow)."""
    return replace(problem, selectivity=planner_selectivity(connector, problem.lowered, problem.rows),
                   groups=planner_groups(connector, problem.lowered))


def tune_rewrites(store: Store, connector: Connector, obs: Observation, plan: RewritePlan, *,
                  model_dir: Path | None = None, run_id: str | None = None, say: Say = silent,
                  shadows: Shadows | None = None, ledger: Ledger | None = None) -> RewriteTuneResult:
    """The whole rewrite pipeline for an observed target (see the module); its shadow from ``shadows`` (default: a
    full copy). Each statement's race is a trial record of the run's ``ledger``; a resumed run reuses a stored race
    of the same forms (``advisor.tuning.rewrites.stored``)."""
    plan.check()
    ledger = ledger or Ledger()
    statements, skipped = statements_of(plan, connector, obs, say)
    if not statements and not skipped:
        raise AdvisorError("nothing to rewrite: no statement given or observed")
    problem = build_problem(connector, obs, statements)
    outcomes: dict[str, Outcome] = {o.queryid: o for o in skipped}
    by_id = {s.queryid: s for s in statements}
    training = None
    if not statements:  # each given statement was refused before any copy was made
        return _recommend(store, obs, plan, tuple(o for o in skipped), by_id, None, run_id, rules_left_out(problem))
    with (shadows or Shadows()).clone(connector, sample_percent=plan.sample_percent, say=say) as shadow:
        problem = calibrated(problem, shadow.connector)
        opt = registry.create("rewrites", plan.optimizer, problem, seed=plan.seed, strict=False, **plan.options)
        training = opt.prepare(model_dir, say)
        say(f"{plan.optimizer}: searching rewrites of {len(problem.lowered)} statement(s) "
            f"({len(problem.unsupported)} outside the rewriter's subset)")
        configs = opt.ask(plan.candidates)
        why, seconds = opt.explain(), opt.report().get("seconds", {})
        gc.collect()  # the searches' e-graphs are freed here, on the thread that made them (egglog requires it)
        forms: dict[str, list[QueryRewrite]] = {}
        for config in configs:
            for change in config:
                forms.setdefault(change.queryid, []).append(change)
        shadow.sandbox.create_database(SCRATCH_DB, extensions=False)
        scratch = shadow.sandbox.connector(SCRATCH_DB)  # the edge-case checks' database, beside the shadow's
        for i, st in enumerate(statements):
            say(f"statement {i + 1}/{len(statements)} ({shorten(st.sql, 60)}): "
                f"{len(forms.get(st.queryid, []))} candidate form(s)")
            ms = 1000 * seconds.get(st.queryid, 0.0)
            if st.queryid not in forms:
                outcomes[st.queryid] = Outcome(st.queryid, st.sql, reason=_left_alone(why.get(st.queryid)),
                                               rewrite_ms=ms)
                continue
            outcome = stored.raced(ledger, st, forms[st.queryid], Outcome, say,
                                   lambda: _race(shadow, scratch, problem, st, forms[st.queryid], plan, say))
            outcomes[st.queryid] = replace(outcome, rewrite_ms=ms)
    ids = [f"sql{i + 1}" for i in range(len(plan.statements))] if plan.statements \
        else [s.queryid for s in statements] + [o.queryid for o in skipped]
    ordered = tuple(outcomes[q] for q in ids)  # as given
    return _recommend(store, obs, plan, ordered, by_id, training, run_id, rules_left_out(problem))


def rules_left_out(problem: RewriteProblem) -> list[Dropped]:
    """The rule families (one rule module each) that do not hold in the problem's dialect, one ``Dropped`` per
    family with its rules and why (``RewriteProblem.left_out``; none in postgres): no statement was searched
    with them.

    >>> problem = RewriteProblem((), {}, dialect="mysql")
    >>> [d.change for d in rules_left_out(problem)]
    ['rules filter_into_view, semi_join_to_join_on_key', 'rules simplify_predicates']
    >>> rules_left_out(RewriteProblem((), {}, dialect="postgres"))
    []
    """
    families: dict[str, list[str]] = {}
    for name, why in problem.left_out.items():
        families.setdefault(why, []).append(name)
    return [Dropped(f"rules {', '.join(names)}", "query_rewrite", f"left out: {why}")
            for why, names in families.items()]


def _left_alone(why: str | None) -> str:
    if why is None:
        return "no rule applied"
    if why.startswith("no rule"):
        return f"no rule applied: {why}"
    return f"unsupported construct: {why}"


def _race(shadow, scratch, problem: RewriteProblem, st: BoundStatement, forms: list[QueryRewrite],
          plan: RewritePlan, say: Say) -> Outcome:
    """The original against its candidate forms: planner cost, then equivalence, then timing."""
    rejected: list[dict] = []
    try:
        base_cost = shadow.connector.explain_cost(st.sql)
    except AdvisorError as e:
        return Outcome(st.queryid, st.sql, reason=f"the original cannot be planned on the shadow: {e}")
    priced = []
    forms = _named_as_written(shadow, st.sql, forms)
    for form in forms:
        try:
            priced.append((shadow.connector.explain_cost(form.rewritten), form))
        except AdvisorError as e:
            rejected.append({"sql": form.rewritten, "why": f"invalid SQL (the planner refused it): {e}"})
            say(f"{named(st.sql, st.queryid)}: discarded an invalid rewrite: {e}")
    priced.sort(key=lambda pf: pf[0])
    cheaper = [(c, f) for c, f in priced if c <= base_cost * EXPLAIN_SLACK]
    rejected += [{"sql": f.rewritten, "why": f"the planner prices it at {c:,.0f}, above the original's "
                                             f"{base_cost:,.0f}"} for c, f in priced if c > base_cost * EXPLAIN_SLACK]
    if not cheaper:
        return Outcome(st.queryid, st.sql, reason="not faster: the planner prices every rewrite above the original",
                       rejected=tuple(rejected))
    equal: list[tuple[float, QueryRewrite, tuple[str, ...]]] = []
    tables = tables_read(problem, st.queryid)
    error = None
    for cost, form in cheaper:
        if len(equal) >= plan.timed:
            break
        verdict = rewrite_equivalence.check(scratch, tables, st.sql, form.rewritten, not_null=problem.not_null,
                                            shadow=shadow.connector, seed=problem_seed(st.queryid),
                                            timeout_ms=_timeout(plan), **constraints(problem, tables))
        if verdict.error is not None:  # the check's error, not the candidate's: no candidate can be judged
            error = verdict.error
            say(f"{named(st.sql, st.queryid)}: {error}")
            break
        if verdict.equivalent:
            equal.append((cost, form, verdict.checked))
        else:
            rejected.append({"sql": form.rewritten, "why": f"not equivalent: {verdict.mismatch}"})
            say(f"{named(st.sql, st.queryid)}: discarded a rewrite that is not equivalent ({verdict.mismatch}); "
                f"rewrite: {form.rewritten!r}")
    if not equal and error is not None:
        return Outcome(st.queryid, st.sql, reason=f"equivalence not checked: {error}", rejected=tuple(rejected))
    if not equal:
        return Outcome(st.queryid, st.sql, equivalent=False, reason="not equivalent: every candidate returned "
                       "other rows than the original on a check database", rejected=tuple(rejected))
    if plan.validation is None:
        cost, form, checked = equal[0]
        return Outcome(st.queryid, st.sql, form.rewritten, form.rules, equivalent=True, checked_on=checked,
                       plan_cost=(base_cost, cost), rejected=tuple(rejected),
                       reason="not timed (validation was switched off); the planner prices it lower")
    timed = rewrite_timing.race(shadow.connector, st, [f.rewritten for _, f, _ in equal], plan.validation, say)
    best = timed.best
    if best is None:
        return Outcome(st.queryid, st.sql, equivalent=True, reason=timed.summary(),
                       rejected=tuple(rejected))
    cost, form, checked = equal[best]
    return Outcome(st.queryid, st.sql, form.rewritten, form.rules, timed.speedups[best], timed.cis[best], True,
                   reason="", plan_cost=(base_cost, cost), checked_on=checked, rejected=tuple(rejected),
                   passes=(timed.baseline, timed.candidates[best]))


def _named_as_written(shadow, original: str, forms: list[QueryRewrite]) -> list[QueryRewrite]:
    """``forms`` with their output columns named as the original's (``rewrite_equivalence.named_as``)."""
    texts = rewrite_equivalence.named_as(shadow.connector, original, [f.rewritten for f in forms])
    return [f if t == f.rewritten else replace(f, rewritten=t) for f, t in zip(forms, texts)]


def _timeout(plan: RewritePlan) -> int:
    return plan.validation.statement_timeout_ms if plan.validation else ValidationOptions().statement_timeout_ms


def problem_seed(queryid: str) -> int:
    """A fixed seed per statement for its edge-case databases (the same check every run)."""
    return sum(map(ord, queryid)) % 997


def _recommend(store: Store, obs: Observation, plan: RewritePlan, outcomes: tuple[Outcome, ...],
               by_id: dict[str, BoundStatement], training: dict | None, run_id: str | None,
               left_out: list[Dropped]) -> RewriteTuneResult:
    kept = [o for o in outcomes if o.rewritten is not None]
    rows = tuple(o.details() for o in outcomes)
    tried = not_recommended(outcomes) + left_out  # the rule families of another engine's semantics too
    result = dict(observation=obs, statements=outcomes, training=training, explain=rows,
                  dropped=tuple(dropped_rows(tried)))
    if not kept:
        why = "; ".join(f"{named(o.original, o.queryid)}: {o.reason}" for o in outcomes)
        why += "".join(f"; {d.change} {d.why}" for d in left_out)
        return RewriteTuneResult(None, message=f"{plan.optimizer}: no statement rewritten. Per statement: {why}",
                                 **result)
    changes = tuple(QueryRewrite(o.queryid, o.original, o.rewritten or "", o.rules) for o in kept)
    timed = [o for o in kept if o.speedup is not None]
    head = f"{len(kept)} of {len(outcomes)} statement(s) rewritten"
    if timed:
        head += ": " + ", ".join(f"{named(o.original, o.queryid)} {ratio(o.speedup)} faster" for o in timed)
    details = {"statements": list(rows), "training": training, "created_at": time.time(),
               "note": "a rewrite is handed to the statement's owners; it is never applied to the database"}
    evidence = _evidence(timed, by_id, plan.validation) if timed else None
    rec = recommend(store, observed=obs, kind="rewrites", optimizer=plan.optimizer, plan=None,
                    changes=changes, evidence=evidence, accepted=True if timed else None, why=head, details=details,
                    run_id=run_id, dropped=tried)
    return RewriteTuneResult(rec, message=head, **result)


def not_recommended(outcomes: tuple[Outcome, ...]) -> list[Dropped]:
    """What the run tried and does not recommend (``advisor.tuning.recommend.Dropped``): each candidate form it
    discarded (invalid, priced above the original, not equivalent), and each statement left as written with the
    reason (not faster, with the timing; not equivalent; no rule applied; unsupported; cannot be replayed)."""
    out: list[Dropped] = []
    for o in outcomes:
        tried = f"rewrite of `{shorten(o.original, 50)}`: "
        out += [Dropped(tried + shorten(c["sql"], 80), "query_rewrite", c["why"]) for c in o.rejected]
        if o.rewritten is None:
            out.append(Dropped(shorten(o.original, 80), "query_rewrite",
                               f"left as written: {o.reason or 'no reason recorded'}"))
    return out


def _evidence(timed: list[Outcome], by_id: dict[str, BoundStatement], options: ValidationOptions | None) -> Evidence:
    """The rewritten statements' passes together: the workload's time (calls x median) as written and
    rewritten (each statement's passes were taken back to back on one shadow)."""
    options = options or ValidationOptions()
    rounds = min(len(o.passes[0]) for o in timed)
    merged = ([], [])
    for side in (0, 1):
        for r in range(rounds):
            samples = {k: v for o in timed for k, v in o.passes[side][r].samples.items()}
            errors = {k: v for o in timed for k, v in o.passes[side][r].errors.items()}
            merged[side].append(ArmRound(samples, errors))
    weights = {o.queryid: by_id[o.queryid].weight for o in timed}
    return compare(merged[0], merged[1], weights, {o.queryid: o.original for o in timed}, min_gain=options.min_gain,
                   regression_threshold=options.regression_threshold, min_time_share=options.min_time_share,
                   min_call_share=options.min_call_share)
