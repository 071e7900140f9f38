"""Proving an index set on a shadow: build the indexes for real, see which statements' plans use each one and
how big each really is, measure baseline and candidate interleaved, and drop the indexes that make a statement
regress or that give no measurable benefit, re-measuring what is left.

An index *serves* a statement when the statement's plan on the shadow (with every candidate index built) scans
it. An index has a measurable benefit when at least one statement it serves got faster with the whole 95%
interval of its time ratio below 1. The *suspects* of a statement that regressed are the new indexes its plan
uses and, when it writes, the new indexes on the table it writes (each written row must also be written into
them). Each of the first ``CAREFUL_PASSES`` passes drops, per regressed statement, one suspect (a join of eight
tables may use five new indexes of which one misleads the planner: the other four stay): for a read with several
suspects, the one whose absence makes it fastest, timed with the set built and each suspect in turn dropped
inside a rolled-back transaction (``diagnose``); otherwise the one that saved the least time elsewhere. Later
passes (until one drops nothing, at most ``MAX_PRUNING_ROUNDS``, then the rest is measured once more) drop every
suspect left, except where dropping the diagnosed one alone cures the statement (on JOB, dropping both suspects
of a 1.16x regression there threw away the two indexes behind a 60 s -> 15 s round).
Three interleaved rounds are too few to judge one statement: they flag one that only noise moved about one time
in twenty (its three times with the set all above its three without), and they let a real 1.4x on a short join
through as often as not. So each read the rounds measured 10% slower or more is re-timed (``confirm_regressions``:
with the set built, blocks of runs with it and without it, dropped inside a rolled-back transaction, alternating),
and it is a regression when that longer measurement's median ratio is still 10% or more over; a regression of
``CONFIRM_BELOW``x or more is not re-timed (``index_timing``). A pass whose measurement would drop nothing is
audited before it ends the pruning: every read whose plan uses the set and that the rounds did not show faster is
re-timed the same way (``unproven``), and the pass judged again, so a set is only called clean once each
statement it can slow down has had the longer measurement (on JOB two joins measured ~1.0x in the rounds ran
1.14x and 1.20x slower on production).
Before an index goes for want of a measurable benefit, the reads it serves that the rounds measured ``HINT``x or
faster, without proof, are re-timed the same way (``hinted_benefits``): the same set validated twice kept 5 and 7
of its 9 indexes, the difference being indexes whose benefit three rounds had not proven.
An index dropped for misleading a read's plan is replaced, in a pass that a later one checks, by a wider candidate
with its leading column that covers that read, when the optimizer left one (``index_repair``).
A later pass times only the reads whose plans the drops changed: a read whose plan with the set is one an earlier
pass measured keeps that measurement and its verdict, re-timings included (``validation.Reused``; the baseline,
no new index, is the same in every pass). On JOB each pass had timed the whole workload again, ~40 s per arm and
round, after dropping two or three of fourteen indexes.
A regression in a statement that no kept index can affect (its plan uses none, it writes none of their tables)
is measurement noise: it is reported, and does not block the recommendation. Nor does the regression of a statement
too rare to matter (``Evidence.blocks``: under the guard's shares of the workload's time and calls): it condemns no
index and is shown beside the verdict.

A budget holds for the sizes built, not only the estimated ones: when the indexes left after the first pass take
more than ``budget_bytes`` on the shadow, the subset kept is the one with the most measured saving that fits (an
exact knapsack, ``index_repair.within_budget``), and what is left is measured again. The size model makes this
the exception (its estimates are within a few percent of the built sizes, ``optimizers.indexes.sizing``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.core.progress import Say
from advisor.core.domain import Evidence, IndexChange, StatementEvidence, TrialResult
from advisor.core.plans import Plan
from advisor.core.sqltext import named
from advisor.tuning.indexes import repair as index_repair
from advisor.tuning.indexes.built import held, held_set, inspect_built
from advisor.tuning.indexes.timing import confirm_regressions, diagnose, screened
from advisor.tuning.indexes.problem import written_tables
from advisor.storage.codec import evidence_from
from advisor.tuning.recommend import how_much
from advisor.tuning.ledger import Ledger, workload_digest
from advisor.tuning.validation import ValidationOptions, measure_changes, plans_each
from connectors.base import Shadow
from optimizers.indexes.corrected import Measured
from workloads.statements.binding import BoundStatement

CAREFUL_PASSES = 2  # pruning passes that drop one suspect per regressed statement (and may try repairs)
# pruning passes at most; from the third on, every suspect of a regression goes. On JOB a set still ran 1.5x
# slower than no index after three (dropping indexes changes plans, and other indexes then mislead them), and
# the whole set was refused
MAX_PRUNING_ROUNDS = 5
HINT = 0.95  # a statement the rounds measured this fast or faster, without proof, is re-timed before its index goes


@dataclass(frozen=True)
class IndexVerdict:
    index: IndexChange
    estimated_bytes: int
    built_bytes: int | None
    serves: tuple[str, ...]  # queryids whose plans use it
    kept: bool
    reason: str
    in_place_of: IndexChange | None = None  # a repair (``index_repair``): tried in place of this dropped index
    # of those it serves, the queryids measured faster (``StatementEvidence.faster``) in the evidence it was
    # judged on: never one that regressed
    helped: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexValidation:
    kept: tuple[IndexChange, ...]
    verdicts: tuple[IndexVerdict, ...]
    evidence: Evidence | None  # of the kept set (None when nothing was kept)
    unused_existing: tuple[str, ...]  # existing indexes no statement's plan uses
    # statements measured slower by more than the threshold whose plans use no kept index and that write no
    # table with one: the kept indexes cannot have changed them, so this is measurement noise, reported only
    unexplained: tuple[str, ...] = ()
    # every pass's statements, the new indexes their plans used and their times: what the what-if correction
    # learns from (``optimizers.indexes.corrected``)
    measured: tuple[Measured, ...] = ()

    @property
    def accepted(self) -> bool:
        """The kept set's gain clears the minimum gain and no statement it can affect regressed."""
        if self.evidence is None or not self.kept:
            return False
        noise = set(self.unexplained)
        return self.evidence.significant and not [r for r in self.evidence.regressions if r.queryid not in noise]


def validate_indexes(shadow: Shadow, statements: Sequence[BoundStatement], indexes: Sequence[IndexChange],
                     estimated: dict[IndexChange, int], existing_names: Sequence[str] = (),
                     options: ValidationOptions = ValidationOptions(), say: Say | None = None,
                     budget_bytes: int | None = None,
                     spares: Sequence[index_repair.Spare] = (), ledger: Ledger | None = None) -> IndexValidation:
    """Prune ``indexes`` on the shadow (see the module docstring). Each pass first builds the indexes still in
    play to see which statements' plans use each one (after a drop, plans change), then measures them. In the
    passes that a later one checks, an index dropped for misleading a read's plan is replaced by a wider one of
    ``spares`` when one fits (``index_repair``); the verdicts of such repairs follow those of ``indexes``. Each
    pass is a trial record of the run's ``ledger`` (the set, its evidence and its verdict); a resumed run reuses a
    stored pass over the same set instead of measuring it again."""
    say = say or (lambda _m: None)
    ledger = ledger or Ledger()
    estimated = {**{s.index: s.estimated_bytes for s in spares}, **estimated}
    reads = {st.queryid for st in statements if not st.is_write}
    repaired: dict[IndexChange, tuple[IndexChange, str]] = {}  # repair -> (the index it replaced, the statement)
    index_name = shadow.connector.index_name
    workload = workload_digest(statements, options)
    writers: dict[tuple[str, str], list[str]] = {}
    dialect, home = shadow.connector.dialect, shadow.connector.default_schema()
    for st in statements:
        if st.is_write:
            for table in written_tables(st.sql, dialect, home):
                writers.setdefault(table, []).append(st.queryid)
    # on reads only, each pass holds its set built from its first look to its last re-timing (``built.held``),
    # the baseline being the set hidden; a write must maintain the indexes, so a workload with one builds as it goes
    hold = not any(st.is_write for st in statements)
    before = _plans_without(shadow, statements) if hold and options.same_plans_once else None
    sizes: dict = {}
    all_used: dict[str, set[str]] | None = None
    reuse: dict = {}  # (read, its plan with the set) -> its measurement in an earlier pass (``validation.Reused``)
    verdicts: dict[IndexChange, IndexVerdict] = {}
    points: list[Measured] = []
    live = list(indexes)
    evidence: Evidence | None = None
    serves: dict[IndexChange, tuple[str, ...]] = {}
    for round_no in range(1, MAX_PRUNING_ROUNDS + 2):
        with held(shadow, live) if hold else contextlib.nullcontext():
            more, used = inspect_built(shadow, statements, live)  # builds nothing when held
            sizes = {**more, **sizes}
            all_used = dict(used) if all_used is None else all_used
            serves = {ix: tuple(sorted(used.get(index_name(ix), ()))) for ix in live}
            for ix in [ix for ix in live if not serves[ix]]:
                verdicts[ix] = IndexVerdict(ix, estimated.get(ix, 0), sizes.get(ix), (), False,
                                            "no statement's plan uses it on the shadow")
            live = [ix for ix in live if serves[ix]]
            if not live:
                evidence = None
                break
            final = round_no > MAX_PRUNING_ROUNDS
            key = {"validation": "index set", "pass": str(round_no), "workload": workload,
                   "indexes": "; ".join(sorted(_qualified(ix, index_name) for ix in live))}
            row = ledger.recall(key)
            if row is not None:  # measured and judged before the run was interrupted: its verdict stands
                say(f"pass {round_no}: these {len(live)} index(es) were measured before the run was interrupted; "
                    f"reusing stored trial {row['number'] + 1} (its evidence and verdict), not measuring again")
                evidence = evidence_from(row["evidence"])
                judged = _judged_from(row["metrics"] or {}, live, serves, writers, evidence, index_name)
            else:
                started = time.perf_counter()
                evidence, judged = _measure_pass(shadow, statements, live, serves, writers, reads, options, say,
                                                 round_no, sizes, estimated, budget_bytes, final,
                                                 held_set(shadow), before, reuse)
                ledger.record(key, "validation", TrialResult(evidence.candidate_ms, metrics=_judged_doc(judged, index_name)),
                              changes=live, evidence=evidence, duration_s=time.perf_counter() - started)
            points += measured_points(evidence, live, serves)
            if final:
                break
            verdicts.update(judged.dropped)
            dropped, suspects, culprits = list(judged.dropped), judged.suspects, judged.culprits
            if not dropped:
                break
            live = [ix for ix in live if ix not in dropped]
            say(f"dropped {len(dropped)} index(es): " + "; ".join(f"{index_name(ix)} ({verdicts[ix].reason})"
                                                                  for ix in dropped))
            if round_no <= CAREFUL_PASSES and spares:  # a later pass measures (and may prune) the repairs
                for ix, (fix, qid) in index_repair.repairs(culprits, suspects, reads, spares, live, sizes, estimated, budget_bytes,
                                               set(indexes) | set(repaired)).items():
                    repaired[fix] = (ix, qid)
                    verdicts[ix] = replace(verdicts[ix], reason=f"{verdicts[ix].reason}; {index_name(fix)} tried in "
                                                                "its place")
                    live.append(fix)
                    say(f"trying {index_name(fix)} in place of {index_name(ix)} (wider: rows its plan misjudged are "
                        "filtered inside the index, not fetched)")
    affected = {q for ix in live for q in serves.get(ix, ())} | \
        {q for ix in live for q in writers.get((ix.schema, ix.table), ())}
    unexplained = tuple(r.queryid for r in (evidence.regressions if evidence else ()) if r.queryid not in affected)
    for ix in live:
        verdicts[ix] = IndexVerdict(ix, estimated.get(ix, 0), sizes.get(ix), serves[ix], True, "measured benefit",
                                    helped=_helped(evidence, serves[ix]))
    texts = {st.queryid: st.normalized for st in statements}
    for fix, (ix, qid) in repaired.items():
        verdicts[fix] = replace(verdicts[fix], in_place_of=ix, reason=f"{verdicts[fix].reason} (tried in place of "
                                f"{index_name(ix)}, which misled the plan of {named(texts.get(qid), qid)})")
    unused = tuple(n for n in existing_names if n not in all_used)
    return IndexValidation(tuple(live), tuple(verdicts[ix] for ix in [*indexes, *repaired]), evidence, unused,
                           unexplained, tuple(points))


def measured_points(evidence: Evidence, live: Sequence[IndexChange],
                    serves: dict[IndexChange, tuple[str, ...]]) -> list[Measured]:
    """A pass's statements with the indexes of ``live`` their plans used (none for most: their baseline times count
    too) and the two arms' medians (a statement that failed is left out)."""
    out = []
    for s in evidence.statements:
        used = frozenset(ix for ix in live if s.queryid in serves.get(ix, ()))
        if not s.errors and s.baseline_ms == s.baseline_ms and s.candidate_ms == s.candidate_ms:
            out.append(Measured(s.queryid, used, s.baseline_ms, s.candidate_ms))
    return out


def _measure_pass(shadow: Shadow, statements: Sequence[BoundStatement], live: list[IndexChange],
                  serves: dict[IndexChange, tuple[str, ...]], writers: dict[tuple[str, str], list[str]],
                  reads: set[str], options: ValidationOptions, say: Say, round_no: int, sizes: dict, estimated: dict,
                  budget_bytes: int | None, final: bool, built: Sequence[IndexChange] = (),
                  before: Sequence[Plan | None] | None = None,
                  reuse: dict | None = None) -> tuple[Evidence, "_Judged"]:
    """One pass's measurement of ``live`` (the rounds, then the re-timings: flagged regressions, hinted benefits,
    the audit) and what it drops (nothing in the ``final`` pass, which only measures). ``built``: the set held
    built on the shadow (``built.held``; ``before``: the reads' plans without it), hidden in the baseline.
    ``reuse``: the earlier passes' measurements by read and plan (``validation.Reused``): a read whose plan under
    ``live`` one of them measured is not timed nor re-timed again, and its verdict stands; this pass's own are
    added to it, re-timings included."""
    reuse = {} if reuse is None else reuse
    say(f"validating {len(live)} index(es) on the shadow (pass {round_no}): {options.rounds} interleaved rounds")
    measured = measure_changes(shadow, statements, live, replace(options, warm_once=True, retime_flagged=True),
                               say=say,  # no restart; the flagged are re-timed below
                               built=built, before=before, reuse=reuse)
    evidence = measured.evidence
    known = {q for q, shape in measured.plans.items() if (q, shape) in reuse}  # an earlier pass's verdict stands
    served = {q for ix in live for q in serves[ix]}  # a statement no index of the set serves is not re-timed
    flagged = [q for q in screened(evidence, options) if q in served and q not in known]
    evidence = confirm_regressions(shadow, statements, live, evidence, options, say, flagged)
    hinted = hinted_benefits(evidence, live, serves, reads, [*flagged, *known])
    if hinted:
        say(f"re-timing {len(hinted)} statement(s) the rounds showed faster but not surely, the only ones "
            "some index serves: it goes as of no measurable benefit unless the longer measurement shows one")
        evidence = confirm_regressions(shadow, statements, live, evidence, options, say, hinted)
        flagged = [*flagged, *hinted]
    judged = _Judged({}, {}, set())
    for audit in (False, True):  # judged as measured; when that drops nothing, judged again after the audit
        if audit:
            todo = unproven(evidence, served, reads, [*flagged, *known])
            if not todo:
                break
            say(f"auditing {len(todo)} statement(s) whose plans use the set and that the rounds did not show "
                "faster: re-timing each")
            evidence = confirm_regressions(shadow, statements, live, evidence, options, say, todo)
        if not final:
            judged = _judge(shadow, statements, live, serves, writers, evidence, options, say, round_no,
                            sizes, estimated, budget_bytes)
            if judged.dropped:
                break
    final = {st.queryid: st for st in evidence.statements}
    reuse.update({key: replace(r, evidence=final[key[0]]) for key, r in measured.reusable().items()
                  if key[0] not in known and key[0] in final})
    return evidence, judged


def _plans_without(shadow: Shadow, statements: Sequence[BoundStatement]) -> list[Plan | None]:
    """The reads' plans with no new index (what every pass's baseline plans); None for a read that cannot be
    planned (that one is timed in every round, ``validation.plans_each``)."""
    return plans_each(shadow.connector, [st.sql for st in statements])


def _judged_doc(judged: "_Judged", index_name) -> dict:
    """A pass's verdict as its trial record stores it (``metrics``): the indexes it dropped and why, and the
    culprits of its regressions (whose repairs a later pass tries)."""
    return {"dropped": [{"index": _qualified(ix, index_name), "reason": v.reason, "estimated_bytes": v.estimated_bytes,
                         "built_bytes": v.built_bytes, "serves": list(v.serves), "helped": list(v.helped)}
                        for ix, v in judged.dropped.items()],
            "culprits": sorted(_qualified(ix, index_name) for ix in judged.culprits)}


def _qualified(ix: IndexChange, index_name) -> str:
    """The index's name with its schema (t(a) in two schemas: two indexes)."""
    return f"{ix.schema}.{index_name(ix)}"


def _judged_from(doc: dict, live: list[IndexChange], serves: dict[IndexChange, tuple[str, ...]],
                 writers: dict[tuple[str, str], list[str]], evidence: Evidence, index_name) -> "_Judged":
    """A stored pass's verdict (``_judged_doc``) over the same ``live`` set; its suspects are derived again from
    its evidence."""
    by_name = {_qualified(ix, index_name): ix for ix in live}
    dropped = {by_name[d["index"]]: IndexVerdict(by_name[d["index"]], int(d["estimated_bytes"] or 0),
                                                 d["built_bytes"], tuple(d["serves"]), False, d["reason"],
                                                 helped=tuple(d["helped"]))
               for d in doc.get("dropped", ()) if d["index"] in by_name}
    culprits = {by_name[n] for n in doc.get("culprits", ()) if n in by_name}
    return _Judged(dropped, _suspects(evidence, live, serves, writers), culprits)


def _suspects(evidence: Evidence, live: list[IndexChange], serves: dict[IndexChange, tuple[str, ...]],
              writers: dict[tuple[str, str], list[str]]) -> dict[IndexChange, list[StatementEvidence]]:
    """Per index, the statements whose regression it may cause (those it serves and those writing its table)
    that block (``Evidence.blocks``: a rare statement's slowdown condemns no index)."""
    by_stmt = {s.queryid: s for s in evidence.statements}
    blocks = evidence.blocks
    return {ix: [by_stmt[q] for q in serves[ix] if q in by_stmt and blocks(by_stmt[q])]
            + [by_stmt[q] for q in writers.get((ix.schema, ix.table), ()) if q in by_stmt
               and blocks(by_stmt[q])] for ix in live}


def _helped(evidence: Evidence | None, served: Sequence[str]) -> tuple[str, ...]:
    """Of the statements ``served``, those ``evidence`` measured faster (never one that regressed)."""
    return tuple(s.queryid for s in (evidence.statements if evidence else ()) if s.queryid in served and s.faster)


def hinted_benefits(evidence: Evidence, live: Sequence[IndexChange], serves: dict[IndexChange, tuple[str, ...]],
                    reads: set[str], done: Sequence[str]) -> list[str]:
    """The reads to re-time before an index goes for want of a measurable benefit: those it serves that the rounds
    measured at most ``HINT``x but whose interval still reaches 1, for each index none of whose statements the
    rounds showed surely faster (three rounds miss a real 0.8x on a noisy statement, and an index that halves a
    statement's time went so on one run and stayed on the next)."""
    by = {s.queryid: s for s in evidence.statements}
    out: list[str] = []
    for ix in live:
        mine = [by[q] for q in serves.get(ix, ()) if q in by]
        if any(s.ratio_ci[1] < 1.0 for s in mine):
            continue
        out += [s.queryid for s in mine if s.queryid in reads and s.queryid not in done and not s.errors
                and s.ratio <= HINT]
    return list(dict.fromkeys(out))


def unproven(evidence: Evidence, served: set[str], reads: set[str], done: Sequence[str]) -> list[str]:
    """The reads whose plans use the set (``served``) that the rounds neither showed faster (the whole interval
    of the ratio below 1) nor condemned, and that were not re-timed already (``done``): the audit of a set that
    the rounds found clean re-times each (three rounds let a real 1.15x on a join pass as 1.0x; JOB's job.26 and
    job.27 went through so and ran 1.14x-1.20x on production)."""
    return [s.queryid for s in evidence.statements if s.queryid in served and s.queryid in reads
            and s.queryid not in done and not s.errors and not s.regressed and not s.ratio_ci[1] < 1.0]


@dataclass(frozen=True)
class _Judged:
    dropped: dict[IndexChange, IndexVerdict]  # the indexes a pass drops, and why
    suspects: dict[IndexChange, list[StatementEvidence]]
    culprits: set[IndexChange]


def _judge(shadow: Shadow, statements: Sequence[BoundStatement], live: list[IndexChange],
           serves: dict[IndexChange, tuple[str, ...]], writers: dict[tuple[str, str], list[str]], evidence: Evidence,
           options: ValidationOptions, say: Say, round_no: int, sizes: dict, estimated: dict,
           budget_bytes: int | None) -> _Judged:
    """What one pass drops from ``live`` given its measurement: the culprits of the regressions (one per
    regressed statement in the careful passes, every suspect later; see the module docstring), the indexes with
    no measurable benefit and, in the first pass, those over the budget once built."""
    by_stmt = {s.queryid: s for s in evidence.statements}
    suspects = _suspects(evidence, live, serves, writers)
    last = round_no > CAREFUL_PASSES
    found = diagnose(shadow, statements, live, suspects, by_stmt, options, say, cured_only=last)
    culprits = index_repair.culprits(suspects, serves, by_stmt, every=last, diagnosed=found)
    dropped: dict[IndexChange, IndexVerdict] = {}
    for ix in live:
        mine = [by_stmt[q] for q in serves[ix] if q in by_stmt]
        if ix in culprits:
            worst = max(suspects[ix], key=lambda s: s.ratio if s.ratio == s.ratio else 9.9)
            dropped[ix] = IndexVerdict(ix, estimated.get(ix, 0), sizes.get(ix), serves[ix], False,
                                       f"{named(worst.sql, worst.queryid)} regressed ({how_much(worst)})",
                                       helped=_helped(evidence, serves[ix]))
        elif not any(s.ratio_ci[1] < 1.0 for s in mine):
            dropped[ix] = IndexVerdict(ix, estimated.get(ix, 0), sizes.get(ix), serves[ix], False,
                                       "no measurable benefit on the statements it serves",
                                       helped=_helped(evidence, serves[ix]))
    if round_no == 1 and budget_bytes is not None:
        left = [ix for ix in live if ix not in dropped]
        for ix in index_repair.over_budget(left, sizes, budget_bytes, serves, by_stmt, estimated):
            built = index_repair.mb(sum(sizes.get(i) or 0 for i in left))
            dropped[ix] = IndexVerdict(ix, estimated.get(ix, 0), sizes.get(ix), serves[ix], False,
                                       f"over the budget once built ({built} built, budget {index_repair.mb(budget_bytes)}):"
                                       " the indexes kept save the most measured time that fits",
                                       helped=_helped(evidence, serves[ix]))
    return _Judged(dropped, suspects, culprits)
