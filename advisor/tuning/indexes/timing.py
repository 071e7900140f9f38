"""Timing single statements on a shadow with an index set built and without it (dropped inside a rolled-back
transaction), for the pruning of ``index_validation``: ``confirm_regressions`` re-times a statement that three
interleaved rounds cannot judge (alternating blocks of runs with the set and without it), ``diagnose`` finds which
of several new indexes a regressed read's plan uses misleads it (each dropped in turn).
Three interleaved rounds are too few to judge one statement: they flag one that only noise moved about one time
in twenty (its three times with the set all above its three without), and they let a real 1.4x on a short join
through as often as not; the longer measurement decides.
"""

from __future__ import annotations

import math

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from advisor.core.domain import Evidence, IndexChange, StatementEvidence
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say
from advisor.core.sqltext import named
from advisor.core.wording import ratio
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.indexes.built import held, held_set
from advisor.tuning.measure import StopRule, interleave
from advisor.tuning.validation import ValidationOptions
from connectors.base import Shadow
from workloads.statements.binding import BoundStatement

CONFIRM_BLOCKS = 3  # alternating blocks per arm at most when a statement slower in the rounds is re-timed
CONFIRM_REPEATS = 3  # timed runs per block at most (after one unmeasured run, for a statement under WARM_BELOW_MS)
# the runs of one arm's blocks take about this long in all: a long statement runs fewer times per block (one, at
# least): on JOB a 15 s join flagged at 1.97x was re-timed 9 times per arm, with a warm-up each block, for 7 min
CONFIRM_BUDGET_MS = 6_000.0
CONFIRM_CAP = 2.0  # a run this many times the other arm's slowest so far is cut there: which side it is on is known
WARM_BELOW_MS = 100.0  # a block of a statement this fast starts with an unmeasured run; a longer one's is wasted
CONFIRM_BELOW = 2.0  # a flagged regression this many times slower is not re-timed
MIN_SLOWER_MS = 1.0  # a statement slower by less is not a regression (evidence.compare's floor)
BEST_MARGIN = 1.25  # in a diagnosis, a suspect's runs are cut at this many times the best median so far


def confirm_regressions(shadow: Shadow, statements: Sequence[BoundStatement], live: Sequence[IndexChange],
                        evidence: Evidence, options: ValidationOptions, say: Say,
                        which: Sequence[str] | None = None) -> Evidence:
    """``evidence`` with each read in ``which`` (default: each the rounds measured slower by the regression
    threshold, except one flagged at ``CONFIRM_BELOW``x or more) re-timed: ``live`` built, blocks of runs with the
    set and as many without it (every index of ``live`` dropped inside a rolled-back transaction), the arms
    alternating, the baseline first (``measure.interleave``: a block slow for both arms at once is run again).
    Its medians, ratio and interval become the longer measurement's, and it is a regression when that median
    ratio is still over the threshold (``slower_by_threshold``). A statement the rounds already timed for twice the
    budget per arm is judged so on the rounds' medians instead (``_timed_long``).

    The re-timing costs what the question needs, not what the statement takes: ``CONFIRM_REPEATS`` runs per
    block, fewer for a long statement (``CONFIRM_BUDGET_MS`` per arm in all, one at least); a run past
    ``CONFIRM_CAP`` x the other arm's slowest so far is cut there (its side of the threshold is known: a cut
    candidate is a regression, a cut baseline is not one); and after two blocks it stops when the Student t
    interval of the blocks' ratios lies on one side of the threshold (``measure.decision`` with the threshold as
    the minimum gain), else it takes ``CONFIRM_BLOCKS``."""
    reads = {st.queryid: st for st in statements if not st.is_write}
    wanted = set(screened(evidence, options) if which is None else which)
    todo = [s for s in evidence.statements if s.queryid in wanted and s.queryid in reads]
    out: dict[str, StatementEvidence] = {}
    for s in [s for s in todo if _timed_long(s)]:  # the rounds were as long a measurement
        out[s.queryid] = replace(s, regressed=slower_by_threshold(s, options) or bool(s.errors))
        say(f"{named(s.sql, s.queryid)}: {ratio(s.ratio)} in the rounds, not re-timed (its rounds ran at least "
            f"{LONG_ROUNDS * min(s.baseline_ms, s.candidate_ms) / 1000:.0f} s per arm already): "
            + ("a regression" if out[s.queryid].regressed else "not a regression"))
    todo = [s for s in todo if s.queryid not in out]
    if not todo:
        return replace(evidence, statements=tuple(out.get(s.queryid, s) for s in evidence.statements))
    with held(shadow, live):
        hidden = list(held_set(shadow))  # the whole set held (it may hold more than ``live``): none in the baseline
        for s in todo:
            sql = reads[s.queryid].sql

            def timed(arm: str, repeats: int, limit: int, warmup: int, sql=sql) -> list[float]:
                return shadow.connector.timings_without(sql, [] if arm == "with" else hidden, repeats, limit,
                                                        warmup=warmup)

            try:  # the question is which side of the threshold its ratio is on; noise blocks run again
                (_blocks, n), again = retime(s, timed, options)
            except AdvisorError as e:  # the flag stands as measured
                say(f"{named(s.sql, s.queryid)}: not re-timed ({e})")
                continue
            out[s.queryid] = replace(s, baseline_ms=again.baseline_ms, candidate_ms=again.candidate_ms,
                                     ratio=again.ratio, ratio_ci=again.ratio_ci,
                                     regressed=slower_by_threshold(again, options))
            say(f"{named(s.sql, s.queryid)}: {ratio(s.ratio)} in the rounds, {ratio(again.ratio)} re-timed ({n} runs "
                "per arm): " + ("a regression" if out[s.queryid].regressed else "not a regression"))
    return replace(evidence, statements=tuple(out.get(s.queryid, s) for s in evidence.statements))


def retime(s: StatementEvidence, timed: Callable[[str, int, int, int], list[float]],
           options: ValidationOptions) -> tuple[tuple[int, int], StatementEvidence]:
    """One flagged statement re-timed in alternating blocks, the baseline ("without") first, through the engine:
    ``timed(arm, repeats, limit_ms, warmup)`` times it in one arm (arms "without" and "with"; the caller puts the
    shadow in that state). Runs per block within ``CONFIRM_BUDGET_MS`` per arm, a run cut at ``CONFIRM_CAP`` x the
    other arm's slowest so far, two blocks when they agree on the threshold's side, else ``CONFIRM_BLOCKS``.
    Returns ((kept blocks, runs per arm), its evidence from those blocks); AdvisorError when a run fails."""
    longest = max(s.baseline_ms, s.candidate_ms)
    longest = longest if longest == longest else CONFIRM_BUDGET_MS
    cap = int(min(options.statement_timeout_ms, max(100.0, 3 * longest)))
    repeats = max(1, min(CONFIRM_REPEATS, int(CONFIRM_BUDGET_MS // (CONFIRM_BLOCKS * max(longest, 1.0)))))
    seen: dict[str, list[float]] = {"without": [], "with": []}

    def run(arm: str, _i: int) -> ArmRound:
        other = seen["with" if arm == "without" else "without"]
        limit = int(min(cap, max(100.0, CONFIRM_CAP * max(other)))) if other else cap
        times = timed(arm, repeats, limit, int(longest < WARM_BELOW_MS))
        seen[arm].extend(times)
        return ArmRound({s.queryid: times}, {})

    def decide(rounds: dict[str, list[ArmRound]]) -> Evidence:
        return compare(rounds["without"], rounds["with"], {s.queryid: s.weight}, min_gain=options.min_gain,
                       regression_threshold=options.regression_threshold, min_time_share=options.min_time_share,
                       min_call_share=options.min_call_share)

    rule = StopRule(min_rounds=2, max_rounds=CONFIRM_BLOCKS, min_gain=-options.regression_threshold)
    measured = interleave(run, ("without", "with"), rule, decide, order="abba")
    kept = measured.rounds["with"]
    return (len(kept), sum(len(r.samples.get(s.queryid, ())) for r in kept)), measured.evidence.statements[0]


LONG_ROUNDS = 2  # the fewest rounds a statement is timed in (one leaves the later rounds after two at the earliest)


def _timed_long(s: StatementEvidence) -> bool:
    """The rounds timed the statement for twice a re-timing's budget per arm or more, counting the fewest rounds
    it can have run in (``LONG_ROUNDS``): a re-timing would measure nothing they did not (on JOB a 16 s join
    flagged at 1.94x was re-timed for 100 s)."""
    shortest = min(s.baseline_ms, s.candidate_ms)
    return shortest == shortest and shortest * LONG_ROUNDS >= 2 * CONFIRM_BUDGET_MS


def screened(evidence: Evidence, options: ValidationOptions) -> list[str]:
    """The statements the rounds measured slower by the threshold, except those flagged at ``CONFIRM_BELOW``x or
    more (and those that failed): the ones to re-time."""
    return [s.queryid for s in evidence.statements if slower_by_threshold(s, options) and not s.errors
            and not (s.regressed and s.ratio >= CONFIRM_BELOW)]


def slower_by_threshold(s: StatementEvidence, options: ValidationOptions) -> bool:
    """Slower by the threshold or more (median ratio) and by at least a millisecond: what the rounds screen for
    re-timing, and the verdict of the re-timed runs (the interval test of the rounds misses a real 1.4x on a 17 ms
    join, JOB's job.02, as often as not)."""
    return s.ratio == s.ratio and s.ratio >= 1.0 + options.regression_threshold and \
        s.candidate_ms - s.baseline_ms >= MIN_SLOWER_MS


def diagnose(shadow: Shadow, statements: Sequence[BoundStatement], live: Sequence[IndexChange],
             suspects: dict[IndexChange, list[StatementEvidence]], by_stmt: dict[str, StatementEvidence],
             options: ValidationOptions, say: Say, cured_only: bool = False) -> dict[str, IndexChange]:
    """Per regressed read with several suspects, the suspect whose absence makes it fastest (``live`` built,
    each suspect dropped in turn inside a rolled-back transaction, median of 3 timed runs (fewer for a long statement,
    as in ``confirm_regressions``) cut at 0.9x its time
    with the set or 3x its time with no new index, whichever is less (at least 100 ms), the remaining runs
    skipped once one is cut), when that is at least 10% faster than with the whole set (with ``cured_only``, the
    last pruning pass, only when it is also no slower than with no new index beyond the regression threshold);
    the others are left to the heuristic of ``repair.culprits``. Once a suspect's absence was timed, the next ones
    are cut at ``BEST_MARGIN`` x that best median too (one cut there cannot be the fastest), and no run is an
    unmeasured warm-up: the rounds just ran the statement, and the median of 3 outvotes one cold run. On JOB a
    join cut at 3x in the rounds (~10 s with no index) was otherwise timed 4 times per suspect at up to 27 s, for
    minutes on end."""
    reads = {st.queryid: st for st in statements if not st.is_write}
    blamed: dict[str, list[IndexChange]] = {}
    for ix, bad in suspects.items():
        for st in bad:
            if st.queryid in reads:
                blamed.setdefault(st.queryid, []).append(ix)
    # most blamed first (the suspect of the most regressions): once it is timed, the others are cut at
    # ``BEST_MARGIN`` x its time, and on JOB the index misleading five joins' plans was last of four, after a 30 s run
    blamed = {q: sorted(ixs, key=lambda ix: -len(suspects[ix])) for q, ixs in blamed.items() if len(ixs) > 1}
    if not blamed:
        return {}
    out: dict[str, IndexChange] = {}
    with held(shadow, live):
        for qid, ixs in blamed.items():
            with_all = by_stmt[qid].candidate_ms
            # a run slower than 0.9x the time with the set cannot single the suspect out, nor can one 3x slower
            # than with no new index (the statement would still regress): it is cut there
            base = by_stmt[qid].baseline_ms
            cap = int(min(options.statement_timeout_ms, max(100.0, min(0.9 * with_all, 3 * base))))
            # three runs each, fewer for a long statement (``CONFIRM_BUDGET_MS``' runs per suspect, one at least)
            repeats = max(1, min(3, int(CONFIRM_BUDGET_MS // (CONFIRM_BLOCKS * max(cap, 1)))))
            text = named(reads[qid].normalized if qid in reads else None, qid)
            say(f"{text}: timing it without each of its {len(ixs)} suspect indexes (runs cut at {cap} ms)")
            times: dict[IndexChange, float] = {}
            cut: list[str] = []
            try:
                for ix in ixs:
                    found = [t for t in times.values() if t == t]
                    limit = min(cap, max(1, math.ceil(BEST_MARGIN * min(found)))) if found else cap
                    runs = shadow.connector.timings_without(reads[qid].sql, [ix], repeats, limit, warmup=0)
                    times[ix] = float(np.median(runs))
                    if limit < cap and times[ix] >= limit:  # slower than the best by the margin: not the one
                        times[ix] = float("nan")
                        cut.append(shadow.connector.index_name(ix))
            except AdvisorError as e:  # e.g. the statement fails without an index: the heuristic decides
                say(f"{text}: no timed diagnosis ({e})")
                continue
            if cut:
                say(f"{text}: without {', '.join(cut)} it ran past {BEST_MARGIN:g}x the best time so far: cut there")
            best = min((ix for ix in ixs if times[ix] == times[ix]), key=lambda ix: (times[ix], repr(ix)))
            cured = times[best] <= base * (1 + options.regression_threshold) if base == base else False
            if times[best] < 0.9 * with_all and (cured or not cured_only):
                out[qid] = best
                say(f"{text}: {with_all:.0f} ms with the set, {times[best]:.0f} ms without "
                    f"{shadow.connector.index_name(best)}: that index misleads its plan")
    return out
