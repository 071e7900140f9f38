"""A projection of a knob search's wall time to many workers, from the per-trial costs a bench run measured.

The model (its assumptions, stated in the bench's JSON beside every figure it gives):
- each worker has cores of its own (a node of a cluster): a trial costs what it cost in the serial run (the
  durations are drawn, with replacement, from the serial runs' trials after the baseline);
- each worker first makes its clone once (the measured clone time), in parallel with the others;
- the baseline runs alone first; then, whenever a worker is free, the driver asks the optimizer for a configuration
  (the measured seconds per ask, one ask at a time on the driver) and the worker runs it;
- every trial ends well (a failed one costs what a measured one does); the quality reached per trial is taken to
  be the serial search's (a batch of 64 pending points may search worse per trial: not modelled).

>>> round(makespan([10.0] * 9, ask_s=0.0, clone_s=0.0, workers=1), 1), round(makespan([10.0] * 9, 0.0, 0.0, 4), 1)
(90.0, 30.0)
"""

from __future__ import annotations

import heapq

import numpy as np

TRIALS = 256  # the total a projection runs (a fleet's nightly search budget, several searches' worth)
WORKERS = (1, 2, 16, 64)
ASSUMPTIONS = ("each worker has cores of its own (no contention); a trial costs a serial trial's measured time, "
               "drawn with replacement; each worker makes its clone once, in parallel; the baseline runs alone "
               "first; the driver asks one configuration at a time at the measured seconds per ask; quality per "
               "trial as in the serial search (batch-size effects not modelled)")


def makespan(durations: list[float], ask_s: float, clone_s: float, workers: int) -> float:
    """Seconds to run ``durations`` (the first is the baseline, alone) on ``workers`` slots, each after its clone is
    made, each trial after its ask on the one driver."""
    if not durations:
        return 0.0
    start = clone_s + ask_s + durations[0]  # the baseline, alone
    free = [(start, w) for w in range(workers)]
    heapq.heapify(free)
    driver = start
    end = start
    for d in durations[1:]:
        at, w = heapq.heappop(free)
        asked = max(at, driver) + ask_s
        driver = asked
        finished = asked + d
        end = max(end, finished)
        heapq.heappush(free, (finished, w))
    return end


def project(trial_s: list[float], ask_s: float, clone_s: float, trials: int = TRIALS,
            workers: tuple[int, ...] = WORKERS, draws: int = 20, seed: int = 0) -> list[dict]:
    """Per worker count: the median projected wall time of ``trials`` trials and trials per hour, over ``draws``
    resamplings of the measured trial times."""
    if not trial_s:
        return []
    rng = np.random.default_rng(seed)
    out = []
    for w in workers:
        spans = [makespan(list(rng.choice(trial_s, size=trials)), ask_s, clone_s, w) for _ in range(draws)]
        wall = float(np.median(spans))
        out.append({"workers": w, "trials": trials, "wall_s": round(wall, 1),
                    "trials_per_hour": round(trials * 3600.0 / wall, 1) if wall > 0 else None})
    return out
