"""The ledger of a run whose kind validates candidates its optimizer chose instead of searching (an index set's
validation pass, a rewrite's race): each validated candidate is a trial record of the run, stored as it ends with its
evidence and verdict, keyed by what was measured; a resumed run reads them back and reuses a stored verdict
(``Ledger``), and ``workload_digest`` keys a verdict by what decides it besides its changes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.core.domain import TrialResult
from advisor.core.progress import Say, silent
from advisor.tuning.trials import TrialRecord


@dataclass
class Ledger:
    """A validating run's trial records (see the module docstring): ``recall(config)`` the stored row of a
    candidate measured before (its ``evidence`` and ``metrics``, the verdict, as stored), ``record`` one that was
    just measured. Without a store or a run it stores nothing and recalls nothing."""

    store: Any = None
    run_id: str | None = None
    target_id: str | None = None
    optimizer: str = ""
    say: Say = silent
    rows: list[dict] = field(default_factory=list)
    reusable: bool = False  # a resumed run: the stored rows' verdicts are reused

    @classmethod
    def of(cls, store, run_id: str | None, target_id: str | None, optimizer: str, *, resume: bool = False,
           say: Say = silent) -> "Ledger":
        ledger = cls(store, run_id, target_id, optimizer, say)
        if store is not None and run_id is not None:  # numbered on after what the run holds (a whole run's steps)
            ledger.rows = [r for r in store.trials(run_id) if r.get("config") is not None]
            ledger.reusable = resume
            if resume and ledger.rows:
                say(f"resuming run {run_id}: {len(ledger.rows)} validated candidate(s) stored; each is reused, not "
                    "measured again")
        return ledger

    @property
    def stored(self) -> bool:
        return self.store is not None and self.run_id is not None

    def recall(self, config: Mapping[str, str]) -> dict | None:
        """The stored row of the candidate ``config`` (the last one, should it have been stored twice), or None."""
        want = dict(config)
        return next((r for r in reversed(self.rows) if r["config"] == want), None) if self.reusable else None

    def changes_of(self, **config: str) -> list[dict] | None:
        """The stored changes of the last candidate whose key holds ``config`` (a resumed run continues the set it
        was validating), or None."""
        row = next((r for r in reversed(self.rows) if all(r["config"].get(k) == v for k, v in config.items())),
                   None) if self.reusable else None
        return None if row is None else list(row.get("changes") or ())

    def evidence(self, config: Mapping[str, str], source: str, changes: Sequence, measure: Callable[[], Any],
                 what: str):
        """The evidence of the candidate ``config`` (``changes``) whose verdict follows from its evidence alone:
        the stored one (a resumed run; said, not measured again), else ``measure()``'s, stored as it ends."""
        row = self.recall(config)
        if row is not None:
            from advisor.storage.codec import evidence_from

            self.say(f"{what}: measured before the run was interrupted; reusing stored trial {row['number'] + 1}, "
                     "not measuring again")
            return evidence_from(row["evidence"])
        import time

        started = time.perf_counter()
        found = measure()
        self.record(config, source, TrialResult(found.candidate_ms), changes=changes, evidence=found,
                    duration_s=time.perf_counter() - started)
        return found

    def record(self, config: Mapping[str, str], source: str, result: TrialResult, *, changes: Sequence = (),
               evidence=None, duration_s: float = 0.0) -> TrialRecord:
        """Store a validated candidate as the run's next trial record (committed before this returns)."""
        rec = TrialRecord(max((int(r["number"] or 0) + 1 for r in self.rows), default=0), dict(config), source,
                          result, duration_s)
        row = {"number": rec.number, "config": rec.config, "source": source, "objective": result.objective,
               "status": result.status, "reason": result.reason, "metrics": result.metrics,
               "evidence": _plain(evidence), "duration_s": duration_s}
        self.rows.append(row)
        if self.stored:
            self.store.add_trial(self.target_id, self.run_id, self.optimizer, list(changes), evidence,
                                 result.status, result.reason or None, number=rec.number, config=rec.config,
                                 objective=result.objective, source=source, duration_s=duration_s,
                                 metrics=result.metrics or None)
        return rec


def workload_digest(statements: Sequence, options: Any = None) -> str:
    """A short digest of what decides a stored verdict besides its changes: the measured statements' (queryid,
    sql: its constants) and the options that judge it (rounds, min_gain, regression_threshold). A key carrying it
    makes a resumed run over another workload, or with other options, measure again instead of reusing.

    >>> workload_digest([]) == workload_digest([], None) and len(workload_digest([]))
    12
    """
    import hashlib

    parts = sorted(f"{st.queryid}\t{st.sql}" for st in statements)
    if options is not None:
        parts.append(f"rounds={options.rounds} min_gain={options.min_gain} "
                     f"regression={options.regression_threshold}")
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:12]


def _plain(evidence) -> dict | None:
    from advisor.storage import codec

    return codec.plain(evidence) if evidence is not None else None
