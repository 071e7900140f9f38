"""The store's rows that a fault must not lose (``advisor bench faults``): trials, recommendations and audit rows,
read before and after a fault and compared."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from advisor.core.domain import TRANSITIONS


@dataclass(frozen=True)
class Ledger:
    """The rows a fault must not lose: trials, recommendations, audit rows (id -> what must not change)."""

    trials: dict[str, tuple]
    recommendations: dict[str, tuple]
    audit: dict[str, tuple]
    snapshots: int = 0

    @classmethod
    def read(cls, store) -> "Ledger":
        q = lambda sql: store.db.execute(sql).fetchall()  # noqa: E731
        return cls({r[0]: tuple(str(v) for v in r[1:]) for r in
                    q("SELECT id, run_id, number, status, objective, config, source FROM trials")},
                   {r[0]: tuple(str(v) for v in r[1:]) for r in
                    q("SELECT id, state, changes, apply_sql, revert_sql, kind FROM recommendations")},
                   {r[0]: tuple(str(v) for v in r[1:]) for r in
                    q("SELECT id, happened_at, actor, action, subject, detail FROM audit_log")},
                   int(q("SELECT count(*) FROM snapshots")[0][0]))

    def lost(self, before: "Ledger") -> dict[str, int]:
        """Rows of ``before`` gone or changed other than along the lifecycle, plus trial numbers a run holds
        twice among trials added since ``before``."""
        trials = sum(1 for k, row in before.trials.items() if self.trials.get(k) != row)
        runs = Counter((row[0], row[1]) for k, row in self.trials.items() if row[1] != "None")
        new = {(row[0], row[1]) for k, row in self.trials.items() if k not in before.trials}
        trials += sum(n - 1 for key, n in runs.items() if n > 1 and key in new)
        recs = 0
        for k, (state, *rest) in before.recommendations.items():
            now = self.recommendations.get(k)
            if now is None or tuple(now[1:]) != tuple(rest) or now[0] not in _reachable(state):
                recs += 1
        audit = sum(1 for k, row in before.audit.items() if self.audit.get(k) != row)
        return {"trials": trials, "recommendations": recs, "audit": audit}

    def new_audit(self, before: "Ledger", subject: str | None = None) -> list[tuple]:
        """Audit rows added since ``before`` (of ``subject``), oldest first: (at, actor, action, subject, detail)."""
        rows = [row for k, row in self.audit.items()
                if k not in before.audit and (subject is None or row[3] == subject)]
        return sorted(rows, key=lambda r: float(r[0]))


def _reachable(state: str) -> set[str]:
    seen, todo = {state}, [state]
    while todo:
        for nxt in TRANSITIONS.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def add_lost(*parts: dict[str, int]) -> dict[str, int]:
    out = {"trials": 0, "recommendations": 0, "audit": 0}
    for part in parts:
        for k, v in part.items():
            out[k] = out.get(k, 0) + int(v)
    return out
