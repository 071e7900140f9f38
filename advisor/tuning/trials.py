"""The one trial loop of every kind that searches (knobs on a shadow, a learned index's parameters on its harness),
its one trial record, and the ledger of the kinds that validate candidates instead (``advisor.tuning.ledger``).

A search (``TrialLoop``) runs the defaults first (the baseline every trial is compared with), then the seeds (a seed
that combines earlier ones, its ``combines``, only when each of them beat the baseline), then the optimizer's asks, until the budget of trials is spent, or early when the optimizer asks again what it asked
last (it has nothing new to try). Every trial is told to the optimizer and, when the loop has a store, stored as it
ends with the optimizer's state, so a killed run resumes where it stopped (``resume_from_store``): the optimizer
continues from its stored state when that covers every stored trial, else it is told the stored trials again.

The target is any ``SearchTarget``: the trial-target protocol (``advisor.tuning.target``) plus ``trial(config)``
(one measured trial: its result, seconds, whether it restarted), ``last_ms`` (each statement's or operation type's
median in the last trial, or None), ``display(objective)`` (the objective in words) and ``space`` (the
configurations: ``default_config``, ``full`` (the defaults with some values on top), ``changes``, ``repair``,
``violations``, ``stored``/``loaded``: a configuration's stored form and back); the optimizer's problem makes an
asked change list a full configuration (``problem.config``). A trial's per-item medians are turned into ratios to
the baseline trial's (``TrialResult.ratios``), so a constraint-aware search learns which configurations slow
something down as the guard would see it.

A kind that does not search but validates candidates its optimizer chose (an index set pass by pass, a statement's
rewrites in a race) keeps its run's ``Ledger`` (``advisor.tuning.ledger``): each validated candidate a trial record
of the run, stored as it ends with its evidence and verdict; a resumed run reuses a stored verdict.

Where trials run is the loop's ``executor`` (``advisor.tuning.executors``): in this thread by default; over several
slots (parallel clones, Ray workers) the loop keeps them all busy, asking the optimizer with the running
configurations pending, and records each trial as it ends.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from advisor.core.domain import TrialResult
from advisor.core.progress import Say, silent

MIN_ABS_MS = 1.0  # as the guard (advisor.tuning.evidence): a statement slower by less than this did not regress


def statement_ratios(statement_ms: Mapping[str, float] | None, baseline_ms: Mapping[str, float] | None,
                     min_abs_ms: float = MIN_ABS_MS) -> dict[str, float] | None:
    """Each statement's time over its baseline time; a slowdown under ``min_abs_ms`` counts as 1.0 (the guard
    ignores it too). None when either side is unknown.

    >>> statement_ratios({"a": 30.0, "b": 0.4, "c": 5.0}, {"a": 20.0, "b": 0.2, "c": 10.0})
    {'a': 1.5, 'b': 1.0, 'c': 0.5}
    """
    if not statement_ms or not baseline_ms:
        return None
    out = {}
    for key, base in baseline_ms.items():
        ms = statement_ms.get(key)
        if ms is None or not base or base <= 0 or not math.isfinite(ms):
            continue
        ratio = ms / base
        out[key] = round(min(ratio, 1.0) if ms - base < min_abs_ms else ratio, 4)
    return out or None


@dataclass
class TrialRecord:
    """One trial: its number in the run, the full configuration, where it came from (``default``, ``seed:...``
    or the optimizer's name), its result, seconds, whether it restarted the target, and each statement's (or
    operation type's) median in it."""

    number: int
    config: dict[str, str]
    source: str
    result: TrialResult
    duration_s: float
    restarted: bool = False
    statement_ms: dict[str, float] | None = None

    def slows_a_statement(self, max_slowdown: float | None = None) -> bool:
        """Whether some statement ran ``max_slowdown`` (default: the guard's regression threshold) or more slower
        than at baseline in this trial's pass."""
        if max_slowdown is None:
            from advisor.tuning.validation import ValidationOptions

            max_slowdown = ValidationOptions().regression_threshold
        worst = self.result.worst_ratio
        return worst is not None and worst >= 1.0 + max_slowdown


class SearchTarget(Protocol):
    space: Any
    last_ms: dict[str, float] | None

    def trial(self, config: Mapping[str, str]) -> tuple[TrialResult, float, bool]: ...

    def display(self, objective: float) -> str: ...


@dataclass
class TrialLoop:
    """A search over ``trials`` (a ``SearchTarget``) by ``optimizer`` within ``budget`` trials (baseline and seeds
    included). ``store``/``run_id``/``target_id``: where each trial is recorded (None: not recorded, no resume).
    ``after_default``: called with the baseline trial (a learned index sets its safety bound from it);
    ``label``: what a trial is called in progress lines."""

    store: Any
    run_id: str | None
    target_id: str | None
    trials: SearchTarget
    optimizer: Any
    budget: int
    seeds: Sequence[Any] = ()
    say: Say = silent
    records: list[TrialRecord] = field(default_factory=list)
    on_trial: Callable[[TrialRecord], None] | None = None
    after_default: Callable[[TrialRecord], None] | None = None
    label: str = "trial"
    executor: Any = None  # where trials run (``advisor.tuning.executors``); None: in this thread, on ``trials``

    @property
    def space(self):
        return self.trials.space

    def resume_from_store(self) -> None:
        """Load the trials already stored for this run; the optimizer continues from its stored state when that
        state covers every stored trial (exactly where it stopped), else it is told the trials again."""
        if self.store is None or self.run_id is None:
            return
        saved = self.store.run(self.run_id).get("optimizer_state") or {}
        told: list[TrialRecord] = []
        for row in self.store.trials(self.run_id):
            if row.get("config") is None:
                continue
            rec = record_of(row)
            rec.config = self.space.loaded(rec.config)  # older rows' texts, newer rows' numbers: one form
            self.records.append(rec)
            told.append(rec)
        reference = self.reference_ms()
        for rec in told:  # ratios to the baseline trial (none for trials stored before per-statement times were)
            if rec.result.status == "measured":
                rec.result = replace(rec.result, ratios=statement_ratios(rec.statement_ms, reference))
        if saved and saved.get("trials") == len(told):
            self.optimizer.restore(saved)
        else:
            for rec in told:
                self.optimizer.tell(tuple(self.space.changes(rec.config)), rec.result)
        if self.records:
            self.say(f"resuming run {self.run_id}: {len(self.records)} {self.label}(s) already done")
            base = next((r for r in self.records if r.source == "default"), None)  # measured or not: the hook
            if base is not None and self.after_default is not None:                # judges (a failed one stops)
                self.after_default(base)

    def reference_ms(self) -> dict[str, float] | None:
        """Per-statement medians of the run's baseline trial (the defaults), which ratios are taken to."""
        base = self.baseline()
        return base.statement_ms if base else None

    def _record(self, config: Mapping[str, str], source: str, result: TrialResult, duration: float,
                restarted: bool, statement_ms: dict[str, float] | None = None) -> TrialRecord:
        if result.status == "measured" and statement_ms:
            reference = self.reference_ms() or (statement_ms if source == "default" else None)
            result = replace(result, ratios=statement_ratios(statement_ms, reference))
        rec = TrialRecord(len(self.records), config, source, result, duration, restarted, statement_ms)
        self.records.append(rec)
        self.optimizer.tell(tuple(self.space.changes(config)), result)
        if self.store is not None and self.run_id is not None:
            self.store.add_trial(self.target_id, self.run_id, self.optimizer.name, self.space.changes(config), None,
                                 result.status, result.reason or None, number=rec.number,
                                 config=self.space.stored(config),
                                 objective=result.objective, source=source, duration_s=duration,
                                 statements=statement_ms, error=result.error or None,
                                 metrics=result.metrics or None)
            self.store.update_run(self.run_id, optimizer_state={**self.optimizer.state(), "trials": len(self.records)})
        best = self.best()
        status = (self.trials.display(result.objective) if result.objective is not None
                  else f"{result.status}: {result.reason}")
        self.say(f"{self.label} {rec.number + 1}/{self.budget} [{source}] {status}"
                 + (f"; best {self.trials.display(best.result.objective)}" if best else "")
                 + (" (restart)" if restarted else ""))
        if self.on_trial:
            self.on_trial(rec)
        return rec

    def _prepared(self, config: Mapping[str, str], source: str) -> Mapping[str, str] | None:
        """``config`` repaired to fit the constraints (said), or None when it still breaks one: then it is recorded
        as an infeasible trial, never run."""
        fixed, notes = self.space.repair(config)
        still = self.space.violations(fixed)
        if still:
            self._record(fixed, source, TrialResult(None, "infeasible", "; ".join(v.message for v in still)), 0.0,
                         False)
            return None
        if notes:
            self.say(f"adjusted to fit the constraints: {'; '.join(notes)}")
        return fixed

    def run_config(self, config: Mapping[str, str], source: str) -> TrialRecord:
        """One trial of ``config`` on this loop's own target, in the calling thread."""
        fixed = self._prepared(config, source)
        if fixed is None:
            return self.records[-1]
        result, duration, restarted = self.trials.trial(fixed)
        return self._record(fixed, source, result, duration, restarted, self.trials.last_ms)

    def execute(self) -> list[TrialRecord]:
        """Run trials until the budget is spent; returns every trial of the run (resumed ones included). With an
        ``executor`` of several slots, the baseline runs alone first, then the seeds and the optimizer's batches
        keep every slot busy (the optimizer is asked with the running configurations pending); each trial is
        recorded as it ends."""
        from advisor.tuning.executors import InProcess

        executor = self.executor or InProcess([self.trials])
        self._running: dict[int, tuple[dict, str]] = {}
        self._tickets = 0
        done_sources = [r.source for r in self.records]
        if "default" not in done_sources and len(self.records) < self.budget:
            self._start(executor, self.space.default_config(), "default")
            self._collect(executor)
            base = self.records[-1]
            if self.after_default is not None:
                self.after_default(base)
        seeds = [seed for seed in self.seeds if f"seed:{seed.source}" not in done_sources]  # a resumed run's: by name
        last, exhausted = None, False
        while True:
            while executor.free() and self._room() and not exhausted:
                if seeds:
                    if any(f"seed:{part}" in {src for _, src in self._running.values()}
                           for part in getattr(seeds[0], "combines", ()) or ()):
                        break  # a seed combining others waits until they are measured
                    seed = seeds.pop(0)
                    lost = self.lost_part(seed)
                    if lost is not None:
                        self.say(f"seed {seed.source} not tried: it combines {lost}, which did not beat the current "
                                 "settings; its trial goes to the optimizer")
                        continue
                    self._start(executor, self.space.full(seed.config), f"seed:{seed.source}")
                    continue
                want = min(executor.free(), self.budget - len(self.records) - len(self._running))
                # what the system under test holds now: known only where the one slot is this loop's own target
                alone = executor.slots == 1 and getattr(executor, "targets", [None])[0] is self.trials
                current = getattr(self.trials, "current", None) if alone else None
                pending = [tuple(self.space.changes(c)) for c, _ in self._running.values()]
                asked = self.optimizer.ask(want, current=tuple(self.space.changes(current)) if current else None,
                                           **({"pending": pending} if pending else {}))
                running = {frozenset(c) for c in pending}
                for config in asked:
                    if config == last or frozenset(config) in running:
                        exhausted = True
                        self.say(f"{self.optimizer.name} asks again what it asked last: nothing new to try, the run "
                                 f"ends after {len(self.records) + len(self._running)} of {self.budget} "
                                 f"{self.label}s")
                        break
                    last = config
                    running.add(frozenset(config))
                    self._start(executor, self.optimizer.problem.config(config), self.optimizer.name)
            if not self._running:
                break
            self._collect(executor)
        return self.records

    def _room(self) -> bool:
        return len(self.records) + len(self._running) < self.budget

    def _start(self, executor, config: Mapping[str, str], source: str) -> None:
        fixed = self._prepared(config, source)
        if fixed is None:
            return
        self._tickets += 1
        self._running[self._tickets] = (dict(fixed), source)
        executor.start(self._tickets, fixed)

    def _collect(self, executor) -> None:
        """Record the trials that ended (at least one; in the order they were started)."""
        for ended in executor.wait():
            config, source = self._running.pop(ended.ticket)
            self._record(config, source, ended.result, ended.duration_s, ended.restarted, ended.statement_ms)

    def lost_part(self, seed: Any) -> str | None:
        return lost_part(seed, self.records)

    def best(self) -> TrialRecord | None:
        ok = [r for r in self.records if r.result.status == "measured" and r.result.objective is not None]
        return min(ok, key=lambda r: (r.result.objective, r.number)) if ok else None

    def baseline(self) -> TrialRecord | None:
        return next((r for r in self.records if r.source == "default" and r.result.status == "measured"), None)


def lost_part(seed: Any, records: Sequence[TrialRecord]) -> str | None:
    """The first seed that ``seed`` combines (its ``combines``: their sources) whose trial among ``records`` did not
    beat the baseline trial (slower, failed, or slowing an item by the guard's threshold); None when every part
    won, or it combines nothing. A combination of a losing seed spends a trial on what already lost.

    >>> from types import SimpleNamespace as Seed
    >>> rec = lambda i, source, objective, ratios=None: TrialRecord(i, {}, source, TrialResult(objective, "measured",
    ...                                                                                   ratios=ratios), 1.0)
    >>> runs = [rec(0, "default", 100.0), rec(1, "seed:workload-rules", 60.0, {"q": 0.5}), rec(2, "seed:rules", 120.0)]
    >>> lost_part(Seed(combines=("workload-rules", "rules")), runs), lost_part(Seed(combines=()), runs)
    ('rules', None)
    >>> lost_part(Seed(combines=("workload-rules",)), runs[:2] + [rec(2, "seed:rules", 90.0, {"q": 1.3})])
    >>> lost_part(Seed(combines=("workload-rules", "rules")), runs[:2] + [rec(2, "seed:rules", 90.0, {"q": 1.3})])
    'rules'
    """
    base = next((r for r in records if r.source == "default" and r.result.status == "measured"), None)
    for part in getattr(seed, "combines", ()) or ():
        rec = next((r for r in records if r.source == f"seed:{part}"), None)
        if rec is None or base is None:
            continue
        if rec.result.objective is None or rec.result.objective >= base.result.objective or rec.slows_a_statement():
            return part
    return None


def record_of(row: Mapping[str, Any]) -> TrialRecord:
    """A stored trial row (``Store.trials``) as its trial record."""
    result = TrialResult(row["objective"], row["status"], row.get("reason") or "",
                         metrics=row.get("metrics") or None, error=row.get("error") or "")
    return TrialRecord(int(row["number"] or 0), dict(row["config"]), row.get("source") or "", result,
                       row.get("duration_s") or 0.0, statement_ms=row.get("statements"))
