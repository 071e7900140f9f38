"""The last step of a whole-advisor run: the validated changes of every kind measured together, on a freshly
built shadow of the target as it is now, in a factorial design. With parts P1..Pk (a kind's recommendation
each), every subset of parts is an arm; each round runs every arm once in a new seeded order (its changes applied,
the workload replayed, the changes reverted), so all arms share the server's drift, through the measurement engine
(``advisor.tuning.measure``: noise rounds run again, stopped once the whole bundle's gain and every part's
contribution to it are settled, at most the budget). From the same rounds:

- the bundle's gain: all parts against none;
- each part's contribution: the bundle against the bundle without it (a part that helps only without another,
  or hurts with it, shows here: its contribution does not clear the minimum gain), and the kept set, by backward
  elimination (``measure_bundle``);
- each part on top of the parts before it (the state it was validated on), on this fresh shadow: beside the gain
  it was validated with, the share of the gain that holds when redeployed (the MLOS team's TUNA found "best"
  configurations that lose much of it); and each part alone.

Latencies are in ms, gains fractions (0.02 = 2%).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from advisor.core.domain import Applied, Change, Evidence
from advisor.core.errors import AdvisorError, SandboxError
from advisor.core.progress import Say, silent
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.measure import StopRule, interleave
from advisor.tuning.validation import ShadowCrashed, ValidationOptions
from connectors.base import Shadow
from workloads.binding import BoundStatement
from workloads.replay import ReplayOptions, replay

MAX_PARTS = 3  # 2**3 arms per round at most


@dataclass(frozen=True)
class PartResult:
    """One part of the bundle: ``alone`` (against no change), ``atop`` (against the parts listed before it: the
    state it was validated on), ``contribution`` (the kept bundle against the kept bundle without it; for a part
    left out, the evidence it was left out on) and whether it was ``kept``; ``held``: its ``atop`` gain over the
    gain it was validated with (None when that was <= 0)."""

    name: str
    alone: Evidence
    atop: Evidence
    contribution: Evidence
    validated_gain: float | None
    kept: bool = True

    @property
    def held(self) -> float | None:
        if self.validated_gain is None or self.validated_gain <= 0:
            return None
        return self.atop.gain / self.validated_gain

    @property
    def pays(self) -> bool:
        return self.kept


@dataclass(frozen=True)
class BundleResult:
    bundle: Evidence  # every part against none
    parts: tuple[PartResult, ...]
    kept: Evidence | None = None  # the kept parts against none (None when none is kept)


def measure_bundle(shadow: Shadow, statements: Sequence[BoundStatement],
                   parts: Sequence[tuple[str, Sequence[Change], float | None]],
                   options: ValidationOptions = ValidationOptions(), say: Say = silent) -> BundleResult:
    """``parts``: (name, changes, gain it was validated with), in the order they were validated (each on top of
    the ones before it). The shadow is left as it was (also on error). The kept set is found by backward
    elimination over the measured arms (``keep_parts``), one part or more: while a kept part's contribution does
    not clear the guard or the kept bundle does not, the part that adds least goes (substitutes: one of two parts
    that speed up the same statements is kept, not neither)."""
    if not parts:
        raise AdvisorError("nothing to measure: the bundle has no part")
    if len(parts) > MAX_PARTS:
        raise AdvisorError(f"a bundle of {len(parts)} parts is more than the {MAX_PARTS} measured together")
    subsets = [frozenset(c) for r in range(len(parts) + 1) for c in itertools.combinations(range(len(parts)), r)]
    rounds = _measure(shadow, statements, subsets, parts, options, say)
    weights = {s.queryid: s.weight for s in statements}
    texts = {s.queryid: s.normalized for s in statements}

    def evidence(base: frozenset, cand: frozenset) -> Evidence:
        return compare(rounds[base], rounds[cand], weights, texts, min_gain=options.min_gain,
                       regression_threshold=options.regression_threshold,
                       min_time_share=options.min_time_share, min_call_share=options.min_call_share)

    nothing = frozenset()
    kept, left_on = keep_parts(len(parts), evidence)
    k = frozenset(kept)
    results = tuple(PartResult(name, evidence(nothing, frozenset({i})),
                               evidence(frozenset(range(i)), frozenset(range(i + 1))),
                               evidence(k - {i}, k) if i in kept else left_on[i], gain, i in kept)
                    for i, (name, _changes, gain) in enumerate(parts))
    return BundleResult(evidence(nothing, subsets[-1]), results, evidence(nothing, k) if kept else None)


def keep_parts(n: int, evidence: Callable[[frozenset, frozenset], Evidence]) -> tuple[set[int], dict[int, Evidence]]:
    """The parts kept of ``n`` (indices), and for each part left out the evidence it was left out on, by backward
    elimination over ``evidence(base, candidate)`` (the measured arms compared): while a kept part's contribution
    (the kept set against the kept set without it) does not clear the guard (``Evidence.accepted``: its interval's
    lower bound above the minimum gain, no blocking regression), or the kept set against none does not, the part
    that adds least goes. (The measurement stops early only when the whole gain and every contribution clear on the
    t-widened interval, ``measure.decision_all``, where this verdict agrees with it and nothing is eliminated;
    otherwise the round budget's rounds are measured and the bootstrap's interval decides.)
    A lone part is judged the same way: its contribution is itself against none."""
    nothing = frozenset()
    kept, left_on = set(range(n)), {}
    while kept:
        k = frozenset(kept)
        adds = {i: evidence(k - {i}, k) for i in kept}
        weak = [i for i in kept if not adds[i].accepted]
        if not weak and evidence(nothing, k).accepted:
            break
        out = min(weak or kept, key=lambda i: adds[i].gain)
        left_on[out] = adds[out]
        kept.discard(out)
    return kept, left_on


def _measure(shadow: Shadow, statements: Sequence[BoundStatement], subsets: list[frozenset],
             parts: Sequence[tuple[str, Sequence[Change], float | None]], options: ValidationOptions,
             say: Say) -> dict[frozenset, list[ArmRound]]:
    """Every subset's passes, through the measurement engine (``advisor.tuning.measure``): a new seeded order each
    round (no arm always follows the same one), noise rounds run again, from ``min_rounds`` until the whole
    bundle's gain over the current state and each part's contribution (the bundle against it without that part)
    settle, at most ``rounds``."""
    warm = ReplayOptions(options.concurrency, options.repeats, options.warmup, options.statement_timeout_ms)
    arms = {",".join(map(str, sorted(s))) or "none": s for s in subsets}
    weights = {s.queryid: s.weight for s in statements}

    def run(arm: str, i: int) -> ArmRound:
        subset = arms[arm]
        changes = [c for j in sorted(subset) for c in parts[j][1]]
        applied = _apply(shadow, changes) if changes else None
        try:
            result = replay(shadow.connector, statements, warm)
        finally:
            if applied is not None:
                shadow.connector.revert(applied)
        label = " + ".join(parts[j][0] for j in sorted(subset)) or "current state"
        say(f"bundle round {i + 1} (at most {options.rounds}), {label}: {result.wall_ms / 1000:.1f}s")
        return ArmRound(result.samples, {k: len(v) for k, v in result.errors.items()})

    names = {s: a for a, s in arms.items()}
    everything = subsets[-1]

    def decide(rounds: dict[str, list[ArmRound]]) -> list[Evidence]:
        def versus(base: frozenset, cand: frozenset) -> Evidence:
            return compare(rounds[names[base]], rounds[names[cand]], weights, min_gain=options.min_gain,
                           regression_threshold=options.regression_threshold,
                           min_time_share=options.min_time_share, min_call_share=options.min_call_share)
        return [versus(frozenset(), everything)] + [versus(everything - {i}, everything) for i in everything]

    # early only when every part clearly pays: a part that cannot clear is eliminated, and the kept set's own
    # questions (asked after) were not the ones settled, so then the budget's rounds decide
    rule = StopRule(min_rounds=min(options.min_rounds, options.rounds), max_rounds=options.rounds,
                    min_gain=options.min_gain, stop_on=("clears",))
    measured = interleave(run, list(arms), rule, decide, order="shuffle", seed=0, say=say)
    return {arms[a]: r for a, r in measured.rounds.items()}


def _apply(shadow: Shadow, changes: Sequence[Change]) -> Applied:
    try:
        return shadow.connector.apply(changes)
    except SandboxError as e:
        raise ShadowCrashed(f"the shadow did not come back after applying the bundle's changes: {e}") from None
