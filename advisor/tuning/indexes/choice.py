"""The propose step of the index pipeline: the optimizer's choice over a problem, checked against the baselines'
sets on the same problem and budget (the best what-if cost is recommended), then refined (redundant indexes out, the
space freed spent). ``advisor.tuning.indexes.pipeline`` proposes once on the planner's costs; ``correct`` proposes
again on costs corrected by what validation measured."""

from __future__ import annotations

import time
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from optimizers import registry
from optimizers.indexes.problem import IndexProblem
from optimizers.indexes.refine import refine

# the baselines a learned optimizer's choice is checked against (same problem and budget, see
# IndexOptimizer.checked_against_baselines), with their options; the best set is recommended. The exact ILP is
# kept small here, a check and not a second search: single-index atoms past 4,000 atoms, at most 5,000
# branch-and-bound nodes (the same answer on any machine), 60 s as a last guard; one it refuses is skipped
FALLBACK_TO = (("extend", {}), ("dexter", {}),
               ("ilp", {"max_atoms": 4_000, "max_nodes": 5_000, "time_limit_s": 60.0}))


def fallback_note(fallback: dict) -> str:
    """One line saying that a baseline's set replaced the optimizer's, with both what-if costs."""
    c = fallback["costs"]
    return (f"{fallback['from']}'s choice had what-if cost {c[fallback['from']]:,.1f}, worse than "
            f"{fallback['to']}'s {c[fallback['to']]:,.1f} for the same budget: {fallback['to']}'s set was taken in its "
            "place")


def propose(problem: IndexProblem, optimizer: str, *, seed: int = 0, model_dir: Path | None = None,
            options: dict | None = None, say: Say = silent,
            sets: dict | None = None) -> tuple[tuple, dict | None, dict]:
    """The propose step: ``choose``, then, unless ``options["fallback"]`` is False, the same problem and budget
    given to the baselines (``FALLBACK_TO``): when one's set has a lower what-if cost than the optimizer's, it is
    recommended instead and ``whatif["fallback"]`` says so (an optimizer must never make the advice worse than the
    baselines it is measured against); then, unless ``options["refine"]`` is False, the set loses its redundant
    indexes and spends the space freed (``optimizers.indexes.refine``; ``whatif["refined"]`` says what changed).
    Both apply to optimizers ``checked_against_baselines`` only. Returns (indexes, what prepare reported, what-if
    figures); ``sets``, when given, receives each baseline's set by name (the correction step's contenders)."""
    options = dict(options or {})
    check, polish = options.pop("fallback", True), options.pop("refine", True)
    chosen, training, selection_s, why = choose(problem, optimizer, seed=seed, model_dir=model_dir,
                                                options=options, say=say)
    compared = compare_baselines(problem, optimizer, chosen, seed=seed, say=say) if check else ({}, {})
    if sets is not None:
        sets.update(compared[1])
    fallback = better_baseline(problem, optimizer, chosen, seed=seed, say=say, compared=compared)
    if fallback is not None:
        chosen = fallback.pop("indexes")
    refined = None
    if polish and registry.get("indexes", optimizer).checked_against_baselines:
        out, report = refine(problem, chosen)
        if report["dropped"] or report["added"]:
            chosen, refined = tuple(out), report
            say(f"refined the set: {refinement_note(report)}")
    base_cost, cost = problem.cost(), problem.cost(chosen)
    whatif = {"relative_cost": cost / base_cost if base_cost else 1.0, "cost_before": base_cost, "cost_after": cost,
              **({"baselines": {n: c / base_cost for n, c in compared[0].items()}} if compared[0] and base_cost
                 else {}),
              "estimated_bytes": problem.size(chosen), "budget_bytes": problem.budget_bytes,
              "candidates": len(problem.candidates), "selection_s": selection_s, **problem.whatif.counters(),
              **({"explain": why} if why else {}), **({"fallback": fallback} if fallback else {}),
              **({"refined": refined} if refined else {})}
    return chosen, training, whatif


def refinement_note(report: dict) -> str:
    """What ``optimizers.indexes.refine`` changed, for a DBA.

    >>> refinement_note({"dropped": ["t(a)"], "added": [], "cost": [120.0, 120.0]})
    't(a) dropped (redundant next to the rest) (what-if cost 120.0 -> 120.0)'
    """
    parts = [f"{', '.join(report['dropped'])} dropped (redundant next to the rest)"] if report["dropped"] else []
    parts += [f"{', '.join(report['added'])} added with the space freed"] if report["added"] else []
    before, after = report["cost"]
    return "; ".join(parts) + f" (what-if cost {before:,.1f} -> {after:,.1f})"


def compare_baselines(problem: IndexProblem, optimizer: str, chosen: tuple, *, seed: int = 0,
                      say: Say = silent) -> tuple[dict[str, float], dict[str, tuple]]:
    """The what-if cost of ``chosen`` (``optimizer``'s set) and of each baseline's set on the same problem, and
    those sets; both empty when ``optimizer`` is not ``checked_against_baselines`` (a baseline, the exact solver,
    a peer). The baselines reuse the what-if cache; one that refuses the instance (the ILP: too large) is left out."""
    if not registry.get("indexes", optimizer).checked_against_baselines:
        return {}, {}
    costs = {optimizer: problem.cost(chosen)}
    sets: dict[str, tuple] = {}
    for name, options in FALLBACK_TO:
        try:
            sets[name] = tuple(registry.create("indexes", name, problem, seed=seed, strict=False, **options).ask(1)[0])
        except AdvisorError as e:
            say(f"{name} left out of the comparison: {e}")
            continue
        costs[name] = problem.cost(sets[name])
    return costs, sets


def better_baseline(problem: IndexProblem, optimizer: str, chosen: tuple, *, seed: int = 0, say: Say = silent,
                    compared: tuple[dict[str, float], dict[str, tuple]] | None = None) -> dict | None:
    """{"from", "to", "costs", "indexes"} when a baseline's set for ``problem`` costs less (what-if) than
    ``chosen``, the set of ``optimizer``; None when ``chosen`` is at least as good or ``optimizer`` is not
    ``checked_against_baselines``. ``compared``: ``compare_baselines``' answer, when already asked."""
    costs, sets = compared if compared is not None else compare_baselines(problem, optimizer, chosen, seed=seed,
                                                                          say=say)
    if not sets:
        return None
    best = min(sets, key=lambda n: costs[n])
    if not costs[best] < costs[optimizer] * (1 - 1e-9):
        return None
    say(f"{optimizer}'s set (what-if cost {costs[optimizer]:,.1f}) is worse than {best}'s ({costs[best]:,.1f}); "
        f"taking {best}'s set in its place")
    return {"from": optimizer, "to": best, "costs": costs, "indexes": sets[best]}


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
