"""The store's recommendations (appended once; only their state moves, along ``domain.TRANSITIONS``, audited)
and the audit log. A mixin of ``advisor.storage.store.Store`` (it uses its ``db`` and ``lock``)."""

from __future__ import annotations

import json
import time

from advisor.storage import codec
from advisor.storage.schema import changes_lists, new_id, page
from advisor.core.domain import TRANSITIONS, Recommendation, state_word
from advisor.core.errors import Conflict, InvalidTransition, NotFound
from advisor.core.inputs import check_text


class RecommendationTables:
    # --- recommendations ------------------------------------------------------------------------------------

    @changes_lists
    def add_recommendation(self, rec: Recommendation, actor: str = "advisor") -> None:
        self.db.execute(
            f"INSERT INTO recommendations ({self._REC_COLS}, apply_sql, revert_sql, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [rec.id, rec.target_id, rec.kind, rec.optimizer, json.dumps(codec.plain(list(rec.changes))),
             rec.needs_restart, rec.state, rec.created_at,
             json.dumps(codec.plain(rec.evidence)) if rec.evidence else None, rec.note,
             json.dumps(codec.plain(rec.details)), rec.run_id,
             json.dumps(codec.plain(rec.applied)) if rec.applied else None,
             json.dumps(list(rec.apply_sql)), json.dumps(list(rec.revert_sql)), rec.created_at])
        self.audit(actor, "recommend", rec.id, {"state": rec.state, "kind": rec.kind})

    _REC_COLS = ("id, target_id, kind, optimizer, changes, needs_restart, state, created_at, evidence, note, details, "
                 "run_id, applied")

    def _rec(self, r: tuple) -> Recommendation:
        return Recommendation(
            id=r[0], target_id=r[1], kind=r[2], optimizer=r[3],
            changes=tuple(codec.change_from(c) for c in json.loads(r[4])), apply_sql=tuple(json.loads(r[13])),
            revert_sql=tuple(json.loads(r[14])), needs_restart=bool(r[5]), state=r[6], created_at=r[7],
            evidence=codec.evidence_from(json.loads(r[8]) if r[8] else None), note=r[9],
            details=json.loads(r[10]) if r[10] else {}, run_id=r[11], applied=json.loads(r[12]) if r[12] else None)

    @staticmethod
    def _rec_filter(state, target_id, kind, run_id) -> tuple[str, list]:
        return ("WHERE (? IS NULL OR state = ?) AND (? IS NULL OR target_id = ?) AND (? IS NULL OR kind = ?) "
                "AND (? IS NULL OR run_id = ?)", [state, state, target_id, target_id, kind, kind, run_id, run_id])

    def recommendations(self, state: str | None = None, target_id: str | None = None, *, kind: str | None = None,
                        run_id: str | None = None, limit: int | None = None, offset: int = 0) -> list[Recommendation]:
        where, args = self._rec_filter(state, target_id, kind, run_id)
        query = f"SELECT {self._REC_COLS}, apply_sql, revert_sql FROM recommendations {where} " \
                "ORDER BY created_at DESC LIMIT ? OFFSET ?"
        rows = self.db.execute(query, [*args, *page(limit, offset)]).fetchall()
        return [self._rec(r) for r in rows]

    _SUMMARY_COLS = ("id", "target_id", "target", "kind", "optimizer", "state", "needs_restart", "created_at",
                     "updated_at", "run_id", "changes", "gain", "gain_low", "gain_high", "relative_cost",
                     "best_objective", "baseline_objective")

    def recommendation_summaries(self, state: str | None = None, target_id: str | None = None, *,
                                 kind: str | None = None, run_id: str | None = None, limit: int | None = None,
                                 offset: int = 0) -> list[dict]:
        """One small row per recommendation for lists, computed in SQL (no evidence or details parsed): the
        measured gain and its interval, the what-if relative cost (indexes) and the run's best and baseline
        objectives (knob searches)."""
        where, args = self._rec_filter(state, target_id, kind, run_id)
        where = where.replace("state", "r.state").replace("target_id", "r.target_id").replace(
            "kind", "r.kind").replace("run_id", "r.run_id")
        num = self._database.json_double
        rows = self.db.execute(
            "SELECT r.id, r.target_id, t.name, r.kind, r.optimizer, r.state, r.needs_restart, r.created_at, "
            f"r.updated_at, r.run_id, json_array_length(r.changes), {num('r.evidence', 'gain')}, "
            f"{num('r.evidence', 'gain_ci', 0)}, {num('r.evidence', 'gain_ci', 1)}, "
            f"{num('r.details', 'whatif', 'relative_cost')}, {num('u.result', 'best_objective')}, "
            f"{num('u.result', 'baseline_objective')} FROM recommendations r "
            "LEFT JOIN targets t ON t.id = r.target_id LEFT JOIN tuning_runs u ON u.id = r.run_id "
            f"{where} ORDER BY r.created_at DESC LIMIT ? OFFSET ?",
            [*args, *page(limit, offset)]).fetchall()
        return [dict(zip(self._SUMMARY_COLS, r)) for r in rows]

    def count_recommendations(self, state: str | None = None, target_id: str | None = None,
                              kind: str | None = None, run_id: str | None = None) -> int:
        where, args = self._rec_filter(state, target_id, kind, run_id)
        return self.db.execute(f"SELECT count(*) FROM recommendations {where}", args).fetchone()[0]

    def recommendation(self, rec_id: str) -> Recommendation:
        row = self.db.execute(f"SELECT {self._REC_COLS}, apply_sql, revert_sql FROM recommendations WHERE id = ?",
                              [rec_id]).fetchone()
        if row is None:
            raise NotFound(f"no recommendation {rec_id!r}")
        return self._rec(row)

    @changes_lists
    def set_applied(self, rec_id: str, applied: dict) -> None:
        """Record what an apply to production did and how to revert it (before the state changes)."""
        self.db.execute("UPDATE recommendations SET applied = ? WHERE id = ?",
                        [json.dumps(codec.plain(applied)), rec_id])

    @changes_lists
    def add_details(self, rec_id: str, details: dict) -> None:
        """Add facts learned after a recommendation was made (e.g. how it fared in a whole run's bundle) to its
        details; the keys given replace those of the same name."""
        with self.lock:
            rec = self.recommendation(rec_id)
            self.db.execute("UPDATE recommendations SET details = ? WHERE id = ?",
                            [json.dumps(codec.plain({**rec.details, **details})), rec_id])

    def transition(self, rec_id: str, new_state: str, actor: str, note: str = "",
                   expect: str | None = None, claim: str | None = None) -> Recommendation:
        """Move a recommendation along its lifecycle (``expect``: the state it must be in now), audited. While
        an apply or rollback holds the recommendation's claim (``ClaimTables.claim``), only that claim's holder
        (``claim``) moves it."""
        check_text("note", note)
        with self.lock:
            rec = self.recommendation(rec_id)
            if expect is not None and rec.state != expect:
                raise InvalidTransition(f"recommendation {rec_id} is {state_word(rec.state)}, not "
                                        f"{state_word(expect)}")
            if new_state not in TRANSITIONS.get(rec.state, frozenset()):
                raise InvalidTransition(f"recommendation {rec_id} is {state_word(rec.state)}; it cannot become "
                                        f"{state_word(new_state)}")
            with self._database.transaction():
                # conditional on the state just read: of two processes moving it at once, one changes the row
                changed = self.db.execute(
                    "UPDATE recommendations SET state = ?, updated_at = ? WHERE id = ? AND state = ? "
                    "AND (claim IS NULL OR claim = ?) RETURNING id",
                    [new_state, time.time(), rec_id, rec.state, claim]).fetchall()
                if changed:
                    self.audit(actor, new_state, rec_id, {"from": rec.state, "note": note})
            if not changed and self.current_claim(rec_id)[0] not in (None, claim):
                raise Conflict(f"recommendation {rec_id} is being changed in production right now; it did not "
                               f"become {new_state}")
            if not changed:
                now = self.recommendation(rec_id).state
                raise InvalidTransition(f"recommendation {rec_id} was {state_word(rec.state)} but another process made "
                                        f"it {state_word(now)} meanwhile; it did not become {state_word(new_state)}")
            self._bump()
            return self.recommendation(rec_id)

    # --- audit ----------------------------------------------------------------------------------------------

    def audit(self, actor: str, action: str, subject: str, detail: dict) -> None:
        self.db.execute("INSERT INTO audit_log VALUES (?, ?, ?, ?, ?, ?)",
                        [new_id(), time.time(), actor, action, subject, json.dumps(codec.plain(detail))])

    def audit_log(self, subject: str | None = None, limit: int | None = None, offset: int = 0) -> list[dict]:
        rows = self.db.execute("SELECT happened_at, actor, action, subject, detail FROM audit_log WHERE ? IS NULL OR "
                               "subject = ? ORDER BY happened_at LIMIT ? OFFSET ?",
                               [subject, subject, *page(limit, offset)]).fetchall()
        return [{"at": r[0], "actor": r[1], "action": r[2], "subject": r[3], "detail": json.loads(r[4])} for r in rows]
