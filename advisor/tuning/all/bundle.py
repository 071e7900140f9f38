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

Where the parts that differ between two arms act only through plans (index builds and drops, settings only the
planner reads), a read whose plan
shape is the same in both arms is not moved by them: in that comparison it takes the same times in both arms (the
base arm's), as validation times such a statement once (``same_plans``). Beside a busy CPU, the noise of the
statements a part cannot touch otherwise drowns its contribution (the demo's indexes: +7.3%, -4.5% .. +19.4%
after 8 rounds, though validated alone).

Latencies are in ms, gains fractions (0.02 = 2%).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from advisor.core.domain import Applied, Change, Evidence
from advisor.core.errors import AdvisorError, BadStatement, SandboxError
from advisor.core.progress import Say, silent
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.measure import StopRule, interleave
from advisor.tuning.validation import ShadowCrashed, ValidationOptions, through_plans
from connectors.base import Shadow
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, replay

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
    same = same_plans(shadow, statements, subsets, parts, options, say)
    rounds = _measure(shadow, statements, subsets, parts, options, say, same)
    weights = {s.queryid: s.weight for s in statements}
    texts = {s.queryid: s.normalized for s in statements}

    def evidence(base: frozenset, cand: frozenset) -> Evidence:
        return _versus(rounds, base, cand, same, weights, texts, options)

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


SamePlans = Callable[[frozenset, frozenset], dict[str, str]]  # (base, cand) -> queryid -> the shape both share


def same_plans(shadow: Shadow, statements: Sequence[BoundStatement], subsets: list[frozenset],
               parts: Sequence[tuple[str, Sequence[Change], float | None]], options: ValidationOptions,
               say: Say) -> SamePlans:
    """For two arms, the reads whose plan shape is the same in both, where every part that differs between them
    acts only through plans (else none). Each arm's plans are read once, its changes applied and reverted; none
    when a read cannot be planned or no part acts through plans."""
    through = {i for i, (_n, changes, _g) in enumerate(parts) if through_plans(changes, options)}
    reads = [s for s in statements if not s.is_write]
    none: SamePlans = lambda base, cand: {}  # noqa: E731
    if not through or not reads:
        return none
    shapes: dict[frozenset, list[str]] = {}
    try:
        for subset in subsets:
            changes = [c for j in sorted(subset) for c in parts[j][1]]
            applied = _apply(shadow, changes) if changes else None
            try:
                shapes[subset] = [p.shape() for p in shadow.connector.plans([s.sql for s in reads])]
            finally:
                if applied is not None:
                    shadow.connector.revert(applied)
    except BadStatement:
        return none
    say(f"planned {len(reads)} reads in each of the bundle's {len(subsets)} arms: a read whose plan the parts "
        "that act through plans leave the same takes the same times in both arms of that comparison")

    def same(base: frozenset, cand: frozenset) -> dict[str, str]:
        if not (base ^ cand) <= through:
            return {}
        return {s.queryid: a for s, a, b in zip(reads, shapes[base], shapes[cand]) if a == b}
    return same


def _versus(rounds: dict[frozenset, list[ArmRound]], base: frozenset, cand: frozenset, same: SamePlans,
            weights: dict[str, float], texts: dict[str, str] | None, options: ValidationOptions) -> Evidence:
    """``cand``'s arm against ``base``'s, a read with the same plan in both taking the base arm's times in both
    (see the module docstring); its evidence names that plan."""
    kept = same(base, cand)
    cand_rounds = [ArmRound({**b.samples, **{q: a.samples[q] for q in kept if q in a.samples}},
                            {**b.errors, **{q: a.errors.get(q, 0) for q in kept}})
                   for a, b in zip(rounds[base], rounds[cand])] if kept else rounds[cand]
    ev = compare(rounds[base], cand_rounds, weights, texts, min_gain=options.min_gain,
                 regression_threshold=options.regression_threshold,
                 min_time_share=options.min_time_share, min_call_share=options.min_call_share)
    if not kept:
        return ev
    return replace(ev, statements=tuple(replace(s, same_plan=kept.get(s.queryid, "")) for s in ev.statements))


def _measure(shadow: Shadow, statements: Sequence[BoundStatement], subsets: list[frozenset],
             parts: Sequence[tuple[str, Sequence[Change], float | None]], options: ValidationOptions,
             say: Say, same: SamePlans) -> dict[frozenset, list[ArmRound]]:
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

    everything = subsets[-1]

    def decide(rounds: dict[str, list[ArmRound]]) -> list[Evidence]:
        by_subset = {arms[a]: r for a, r in rounds.items()}
        return [_versus(by_subset, base, everything, same, weights, None, options)
                for base in [frozenset(), *(everything - {i} for i in everything)]]

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
