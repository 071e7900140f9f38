"""The learned-index search's pick, re-measured: the best few safe configurations of the search and the defaults
measured again side by side through the one measurement engine, and the pick made on their medians.

A search trial is one round (``HarnessTarget.trial``), and one round is noisy: beside a CPU hog the lucky trial
wins, so a quiet run and a busy one pick different configurations. So, before the validation:

- *The finalists* (``candidates``): the ``k`` safe trials with the lowest CPU ns per operation whose
  configurations differ from the defaults and from each other (distinct changes), best first (the search's
  ranking); with fewer than two, nothing is re-measured (the validation alone decides).
- *The re-measure* (``remeasure``): the defaults (the reference, the engine's baseline arm) and the finalists, each
  warmed up once, in ``rounds`` rounds whose order rotates (A B C D, B C D A, ...: with three finalists and four
  rounds every arm runs once in each position, unless a noise round run again shifts the rotation), through ``advisor.tuning.measure.interleave`` (a round slower for
  every arm at once is machine noise and runs again; the machine's load is recorded). The rounds are a fixed
  number: nothing stops them early, the question being which is best, not whether one clears the defaults.
- *The pick* (``choose``): the lowest median CPU ns per operation over the kept rounds; every arm whose median is
  within ``TIE`` (2%, the validation's minimum gain) of it is a tie, and among ties the one with the fewest
  changes wins, then the earlier in the search's ranking. The defaults take part with no changes, so a finalist
  they tie with is not picked (it could not clear the validation's minimum gain anyway): the run then keeps the
  defaults, as when the search found nothing better.

The re-measure's rounds are not evaluations: the search's budget still counts its trials alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from advisor.core.params import ParamSpace, params_json
from advisor.core.progress import Say, silent
from advisor.tuning.learned_index.target import HarnessTarget
from advisor.tuning.learned_index.validation import Arms, deciding
from advisor.tuning.measure import StopRule, interleave
from advisor.tuning.trials import TrialRecord

FINALISTS = 3  # configurations re-measured beside the defaults
ROUNDS = 4  # rounds of the re-measure (the defaults and three finalists: each once in every position)
TIE = 0.02  # medians within this fraction of the lowest are a tie (the validation's minimum gain)


@dataclass(frozen=True)
class Finalist:
    """One arm of the re-measure: its search trial's number (the defaults' is 0; evaluation ``trial + 1``), its configuration, how many parameters it
    changes, its CPU ns per operation in the search's one round, its medians over the re-measure's kept rounds
    (thread CPU ns per operation, wall-time throughput) and their number, and whether it was picked."""

    trial: int
    config: dict[str, str]
    changes: int
    search_cpu_ns_per_op: float
    cpu_ns_per_op: float
    throughput_ops: float
    rounds: int
    chosen: bool = False

    def doc(self) -> dict:
        """As stored and shown: the configuration's values typed (``advisor.core.params.params_json``)."""
        return {**asdict(self), "config": params_json(self.config)}


@dataclass(frozen=True)
class Remeasured:
    """The re-measure: every arm (the defaults first, then the finalists in the search's ranking), the pick, why,
    how it was measured (the engine's line), and the defaults' and the pick's median figures."""

    finalists: list[Finalist]
    chosen: TrialRecord
    why: str
    measured: str
    default: dict[str, float]
    tuned: dict[str, float]


def candidates(trials: Sequence[TrialRecord], space: ParamSpace, k: int = FINALISTS) -> list[TrialRecord]:
    """The ``k`` safe trials with the lowest objective whose configurations change the defaults, one per distinct
    set of changes, best first (ties by trial number)."""
    safe = sorted((t for t in trials if t.result.status == "measured" and t.result.objective is not None),
                  key=lambda t: (t.result.objective, t.number))
    out, seen = [], set()
    for t in safe:
        changes = tuple(sorted((c.name, c.value) for c in space.changes(t.config)))
        if changes and changes not in seen:
            seen.add(changes)
            out.append(t)
    return out[:k]


def choose(medians: Sequence[float], changes: Sequence[int], names: Sequence[str] = (),
           tie: float = TIE) -> tuple[int, str]:
    """The arm picked (its position) and why: the lowest median, or among the arms within ``tie`` of it the one
    with the fewest changes, then the first (arms in the search's ranking; ``names`` name them in the reason).

    >>> choose([100.0, 80.0, 120.0], [0, 2, 1])
    (1, 'the lowest median, the others over 2% higher')
    >>> choose([100.0, 80.0, 81.0], [0, 3, 1], ["defaults", "evaluation 4", "evaluation 2"])
    (2, "within 2% of the lowest median (evaluation 4's) with fewer changes")
    >>> choose([100.0, 99.0, 150.0], [0, 1, 2])
    (0, "within 2% of the lowest median (arm 1's) with fewer changes")
    >>> choose([100.0, 80.0, 79.5], [0, 2, 2])
    (1, "within 2% of the lowest median (arm 2's) with as many changes, earlier in the search's ranking")
    >>> choose([100.0, 80.0, 80.5], [0, 1, 2])
    (1, 'the lowest median; arm 2 within 2% of it has no fewer changes')
    """
    names = list(names) or [f"arm {i}" for i in range(len(medians))]
    low = min(range(len(medians)), key=lambda i: (medians[i], i))
    tied = [i for i, m in enumerate(medians) if m <= medians[low] * (1 + tie)]
    pick = min(tied, key=lambda i: (changes[i], i))
    if pick == low and len(tied) == 1:
        return pick, f"the lowest median, the others over {tie:.0%} higher"
    if pick == low:
        others = [names[i] for i in tied if i != pick]
        return pick, (f"the lowest median; {', '.join(others)} within {tie:.0%} of it "
                      f"{'has' if len(others) == 1 else 'have'} no fewer changes")
    reason = "fewer changes" if changes[pick] < changes[low] else "as many changes, earlier in the search's ranking"
    return pick, f"within {tie:.0%} of the lowest median ({names[low]}'s) with {reason}"


def remeasure(target: HarnessTarget, base: TrialRecord, finalists: Sequence[TrialRecord], space: ParamSpace,
              rounds: int = ROUNDS, seed: int = 0, say: Say = silent) -> Remeasured:
    """The defaults and ``finalists`` (best first) in ``rounds`` rotating rounds through the engine, and the pick
    (see the module's text). TrialFailed when an arm fails."""
    records = [base, *finalists]
    ids = [chr(ord("A") + i) for i in range(len(records))]
    names = {a: name_of(t) for a, t in zip(ids, records)}
    arms = Arms({a: (target, t.config) for a, t in zip(ids, records)}, names,
                lambda i: f"finalists round {i + 1} of {rounds}", say)
    decide = deciding(target, ids[0], seed=seed)  # each finalist against the defaults, recorded
    rule = StopRule(min_rounds=rounds, max_rounds=rounds, stop_on=())
    measured = interleave(arms.run, ids, rule, lambda kept: [decide(kept, a) for a in ids[1:]], order="rotate",
                          seed=seed, say=say)
    figures = arms.medians(measured)
    n_changes = [len(space.changes(t.config)) for t in records]
    pick, why = choose([figures[a]["cpu_ns_per_op"] for a in ids], n_changes, [names[a] for a in ids])
    kept = len(measured.rounds[ids[0]])
    out = [Finalist(t.number, dict(t.config), n, float(t.result.objective or 0.0), figures[a]["cpu_ns_per_op"],
                    figures[a]["throughput_ops"], kept, i == pick)
           for i, (a, t, n) in enumerate(zip(ids, records, n_changes))]
    line = ", ".join(f"{names[a]} {f.cpu_ns_per_op:,.0f} ({f.changes} change{'s' if f.changes != 1 else ''})"
                     for a, f in zip(ids, out))
    say(f"finalists over {kept} rounds (median CPU ns per operation): {line}; picked {names[ids[pick]]}: {why}")
    return Remeasured(out, records[pick], f"{names[ids[pick]]}: {why}", measured.line(), figures[ids[0]],
                      figures[ids[pick]])


def name_of(t: TrialRecord) -> str:
    """An arm's name in progress and reasons: "defaults", or the evaluation it was (1-based, as progress counts)."""
    return "defaults" if t.number == 0 or t.source == "default" else f"evaluation {t.number + 1}"
