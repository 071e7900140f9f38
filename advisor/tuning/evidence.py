"""Turning interleaved baseline/candidate replays into Evidence: medians, gain with a bootstrap interval, and
per-statement regressions. Pure functions over latency samples (ms); no I/O.

- A round's total is the workload's estimated time: sum over statements of calls x median latency (ms).
- gain = 1 - W(candidate) / W(baseline), where W sums calls x (each statement's median over rounds), kept as
  ``Evidence.baseline_ms`` / ``candidate_ms``; its 95% interval comes from a paired bootstrap over rounds
  (baseline and candidate of one round share the server's state and drift).
- A statement regresses when its median ratio candidate/baseline is at least 1 + ``regression_threshold``, it is
  slower past doubt by its bootstrap, and it got slower by at least ``min_abs_ms`` (sub-millisecond jitter on tiny
  statements is not a regression). "Past doubt" counts every statement judged in the same comparison (Bonferroni
  over the family: with one statement, the 95% interval's lower end above 1), so that a workload of thirty
  statements on a busy machine does not find one slower by chance in most comparisons. A statement that fails
  only under the candidate regresses.
- A regression blocks the change only when the statement matters (``Evidence.blocks``): its share of the
  baseline's weighted time (calls x median, over the replayed statements) is at least ``min_time_share``, or its
  share of the calls at least ``min_call_share``, or the time its slowdown adds is itself ``min_time_share`` of the
  whole. Both default to the settings ``ADVISOR_GUARD_MIN_TIME_SHARE`` / ``ADVISOR_GUARD_MIN_CALL_SHARE`` (1%). A
  rarer statement that got slower stays in the evidence (``Evidence.rare_slower``) and is shown with the verdict;
  one that fails under the candidate always blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.core.domain import Evidence, StatementEvidence
from advisor.core.settings import get_settings


@dataclass(frozen=True)
class ArmRound:
    """One measured pass of one arm: latency samples (ms) and error counts, by statement id."""

    samples: Mapping[str, Sequence[float]]
    errors: Mapping[str, int]


def _median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float))) if len(values) else float("nan")


def _ratio_ci(a: np.ndarray, b: np.ndarray, rng: np.random.Generator, n_boot: int,
              tested: int = 1) -> tuple[tuple[float, float], bool]:
    """The 95% bootstrap interval of the ratio of medians b/a, and whether b is slower past doubt when ``tested``
    statements are judged at once: the share of bootstrap ratios at or below 1 is under 2.5% / ``tested``
    (Bonferroni). With one statement that is the interval's lower end above 1; with thirty, a statement that is
    slower only by chance (which one in forty would be, beside a busy CPU) no longer blocks its change. The
    interval returned (and stored with the statement) is its own 95% one, so a statement may show a lower end above
    1 and still not count as regressed when many were judged.

    >>> rng = np.random.default_rng(0)
    >>> a = np.array([10.0, 10.6, 11, 10.2, 10.8, 10.4, 11.4, 9.8])
    >>> b = np.array([11.5, 11, 12.5, 10.9, 12, 11.6, 10.7, 12.2])
    >>> _ratio_ci(a, b, rng, 2000)[1], _ratio_ci(a, b, rng, 2000, tested=30)[1]
    (True, False)
    >>> _ratio_ci(a, a * 1.3, rng, 2000, tested=30)[1]
    True
    """
    if len(a) < 2 or len(b) < 2:
        r = float(np.median(b) / np.median(a)) if np.median(a) > 0 else float("nan")
        return (r, r), r > 1.0
    n_boot = max(n_boot, 40 * tested)  # the family's threshold stays above a single bootstrap draw
    ia = rng.integers(0, len(a), size=(n_boot, len(a)))
    ib = rng.integers(0, len(b), size=(n_boot, len(b)))
    ma = np.median(a[ia], axis=1)
    mb = np.median(b[ib], axis=1)
    ratios = mb / np.maximum(ma, 1e-9)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    slower = float(np.mean(ratios <= 1.0)) < 0.025 / max(tested, 1)
    return (float(lo), float(hi)), slower


def _samples_both(baseline: Sequence[ArmRound], candidate: Sequence[ArmRound], k: str) -> bool:
    return any(r.samples.get(k) for r in baseline) and any(r.samples.get(k) for r in candidate)


def compare(baseline: Sequence[ArmRound], candidate: Sequence[ArmRound], weights: Mapping[str, float],
            sql: Mapping[str, str] | None = None, *, min_gain: float = 0.02, regression_threshold: float = 0.10,
            min_abs_ms: float = 1.0, n_boot: int = 2000, seed: int = 0, min_time_share: float | None = None,
            min_call_share: float | None = None, min_abs: float | None = None) -> Evidence:
    """Evidence from ``rounds`` paired passes (``baseline[i]`` and ``candidate[i]`` ran back to back); the guard's
    shares (None: the settings') say which regressions block (see the module docstring). The samples may be in
    another unit than ms (a learned index's operations: ns): ``min_abs``, in the samples' unit, then replaces
    ``min_abs_ms`` as the smallest slowdown that counts."""
    min_abs_ms = min_abs_ms if min_abs is None else float(min_abs)
    if len(baseline) != len(candidate) or not baseline:
        raise ValueError("baseline and candidate need the same, non-zero number of rounds")
    min_time_share, min_call_share = guard_shares(min_time_share, min_call_share)
    rng = np.random.default_rng(seed)
    sql = sql or {}
    rounds = len(baseline)
    ids = [k for k in weights if all(r.samples.get(k) for r in baseline) and all(r.samples.get(k) for r in candidate)]
    # round medians per statement: matrices [round, statement]
    a_mat = np.array([[_median(r.samples[k]) for k in ids] for r in baseline]).reshape(rounds, len(ids))
    b_mat = np.array([[_median(r.samples[k]) for k in ids] for r in candidate]).reshape(rounds, len(ids))
    w = np.array([weights[k] for k in ids], dtype=float)
    base_tot, cand_tot = a_mat @ w, b_mat @ w

    def _gain(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        # per statement: median over rounds, then the weighted sum (one slow pass of one statement is not a trend)
        return 1.0 - (np.median(b, axis=-2) @ w) / np.maximum(np.median(a, axis=-2) @ w, 1e-9)

    base_w = float(np.median(a_mat, axis=0) @ w) if ids else float("nan")
    cand_w = float(np.median(b_mat, axis=0) @ w) if ids else float("nan")
    if ids and base_w > 0:
        gain = float(_gain(a_mat, b_mat))
        if rounds >= 2:
            idx = rng.integers(0, rounds, size=(n_boot, rounds))  # paired: the same rounds for both arms
            lo, hi = np.percentile(_gain(a_mat[idx], b_mat[idx]), [2.5, 97.5])
            gain_ci = (float(lo), float(hi))
        else:
            gain_ci = (gain, gain)
    else:
        gain, gain_ci = 0.0, (0.0, 0.0)

    time_share, call_share = shares(baseline, weights)
    per_statement: list[StatementEvidence] = []
    tested = sum(1 for k in weights if _samples_both(baseline, candidate, k))  # judged at once, one family
    for k, w in weights.items():
        a = np.array([x for r in baseline for x in r.samples.get(k, ())], dtype=float)
        b = np.array([x for r in candidate for x in r.samples.get(k, ())], dtype=float)
        base_err = sum(r.errors.get(k, 0) for r in baseline)
        cand_err = sum(r.errors.get(k, 0) for r in candidate)
        share = dict(time_share=time_share.get(k, 0.0), call_share=call_share.get(k, 0.0))
        if len(a) == 0 or len(b) == 0:
            per_statement.append(StatementEvidence(k, sql.get(k, ""), w, _median(a), _median(b), float("nan"),
                                                   (float("nan"), float("nan")), cand_err > base_err, cand_err,
                                                   **share))
            continue
        ma, mb = float(np.median(a)), float(np.median(b))
        ratio = mb / ma if ma > 0 else float("nan")
        ci, slower = _ratio_ci(a, b, rng, n_boot, tested)
        regressed = (ratio >= 1.0 + regression_threshold and slower and mb - ma >= min_abs_ms) \
            or cand_err > base_err
        per_statement.append(StatementEvidence(k, sql.get(k, ""), w, ma, mb, ratio, ci, regressed, cand_err,
                                               **share))
    per_statement.sort(key=lambda s: -(s.weight * (s.baseline_ms if s.baseline_ms == s.baseline_ms else 0.0)))
    return Evidence(rounds, tuple(map(float, base_tot)), tuple(map(float, cand_tot)), gain, gain_ci,
                    tuple(per_statement), min_gain, regression_threshold, min_time_share, min_call_share,
                    base_w, cand_w)


def guard_shares(min_time_share: float | None = None, min_call_share: float | None = None) -> tuple[float, float]:
    """The guard's thresholds: those given, else the settings' (``ADVISOR_GUARD_MIN_TIME_SHARE`` and
    ``ADVISOR_GUARD_MIN_CALL_SHARE``)."""
    if min_time_share is None or min_call_share is None:
        settings = get_settings()
        min_time_share = settings.guard_min_time_share if min_time_share is None else min_time_share
        min_call_share = settings.guard_min_call_share if min_call_share is None else min_call_share
    return float(min_time_share), float(min_call_share)


def shares(baseline: Sequence[ArmRound], weights: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """Per statement, its share of the baseline's weighted time (weight x its median over every baseline sample)
    and of the weights (calls); a statement never measured at baseline has no time share (0).

    >>> t, c = shares([ArmRound({"big": [90.0], "adhoc": [10.0]}, {})], {"big": 99, "adhoc": 1})
    >>> round(t["adhoc"], 5), c["adhoc"]
    (0.00112, 0.01)
    """
    time = {}
    for k, w in weights.items():
        m = _median([x for r in baseline for x in r.samples.get(k, ())])
        time[k] = w * m if m == m else 0.0
    total_time, total_calls = sum(time.values()), sum(weights.values())
    return ({k: v / total_time if total_time > 0 else 0.0 for k, v in time.items()},
            {k: w / total_calls if total_calls > 0 else 0.0 for k, w in weights.items()})
