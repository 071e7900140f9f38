"""AdvisorService's recommendations: list, inspect (their headline numbers), approve, reject, apply to production
and roll back, the watches of applied ones and the audit log. A mixin of ``advisor.service.service.AdvisorService``
(it uses its ``store`` and ``say``)."""

from __future__ import annotations


from advisor.service.auth import ADMIN, Principal
from advisor.service.ids import full_id
from advisor.core.domain import Recommendation
from advisor.core.inputs import check_text
from advisor.service.production import apply_recommendation, check_applicable, reapprove, rollback_recommendation
from advisor.service.summary import Summary, predicted_gain, summarize, tone
from advisor.service import watch
from advisor.core.settings import get_settings
from connectors import factory
from connectors.base import Connector


class RecommendationsMixin:
    # --- recommendations ------------------------------------------------------------------------------------

    def recommendations(self, state: str | None = None, *, kind: str | None = None, target: str | None = None,
                        run_id: str | None = None, limit: int | None = None, offset: int = 0) -> list[Recommendation]:
        target_id = self.store.target(target)["id"] if target else None
        return self.store.recommendations(state, target_id, kind=kind, run_id=run_id, limit=limit, offset=offset)

    def recommendation_summaries(self, state: str | None = None, *, kind: str | None = None,
                                 target: str | None = None, run_id: str | None = None, limit: int | None = None,
                                 offset: int = 0) -> list[dict]:
        """Small rows for lists: measured gain with its interval, its ``tone`` (``summary.tone``: never good for a
        rejected one) and the optimizer's predicted gain (what-if cost reduction for indexes; best trial against
        the baseline trial for a knob search), an estimate."""
        target_id = self.store.target(target)["id"] if target else None
        rows = self.store.recommendation_summaries(state, target_id, kind=kind, run_id=run_id, limit=limit,
                                                   offset=offset)
        for r in rows:
            r["predicted_gain"] = predicted_gain(r.pop("relative_cost"), r.pop("best_objective"),
                                                 r.pop("baseline_objective"))
            low, high = r.pop("gain_low"), r.pop("gain_high")
            r["gain_ci"] = [low, high] if r["gain"] is not None else None
            r["tone"] = tone(r["state"], r["gain"])
        return rows

    def count_recommendations(self, state: str | None = None, *, kind: str | None = None,
                              target: str | None = None, run_id: str | None = None,
                              target_id: str | None = None) -> int:
        return self.store.count_recommendations(state, self._target_id(target, target_id), kind, run_id)

    def recommendation(self, rec_id: str) -> Recommendation:
        """A recommendation by its id or a unique prefix of it (``advisor.service.ids``), as every method here
        that takes a recommendation's, a run's or a schedule's id."""
        return self.store.recommendation(full_id(self.store, "recommendation", rec_id))

    def run_of(self, rec: Recommendation) -> dict | None:
        """The tuning run that produced ``rec``, when it is known and still stored."""
        found = self.store.runs(run_id=rec.run_id) if rec.run_id else []
        return found[0] if found else None

    def predicted_gain(self, rec: Recommendation, run: dict | None = None) -> float | None:
        """``predicted_gain`` for one recommendation (``run``: its run, when the caller has it already)."""
        result = ((run if run is not None else self.run_of(rec)) or {}).get("result") or {}
        return predicted_gain((rec.details.get("whatif") or {}).get("relative_cost") if rec.details else None,
                              result.get("best_objective"), result.get("baseline_objective"))

    def headline(self, rec: Recommendation, run: dict | None = None) -> Summary:
        """The recommendation's headline numbers (``advisor.service.summary``), its predicted gain included."""
        return summarize(rec, self.predicted_gain(rec, run))

    def approve(self, rec_id: str, who: Principal = ADMIN, note: str = "") -> Recommendation:
        """validated -> approved; rolled_back -> approved, to re-apply it, while its evidence is fresh
        (``production.reapprove``)."""
        who.require("operator")
        rec_id = full_id(self.store, "recommendation", rec_id)
        rec = self.store.recommendation(rec_id)
        if rec.state == "rolled_back":
            return reapprove(self.store, rec, who, note)
        return self.store.transition(rec_id, "approved", who.actor, note or "approved", expect="validated")

    def reject(self, rec_id: str, who: Principal = ADMIN, note: str = "") -> Recommendation:
        who.require("operator")
        rec_id = full_id(self.store, "recommendation", rec_id)
        return self.store.transition(rec_id, "rejected", who.actor, note or "rejected by an operator")

    def connector_for(self, rec: Recommendation) -> Connector:
        """The connector of the production target a recommendation is for (its stored credentials)."""
        return factory.connector(self._dsn(self.store.target_by_id(rec.target_id)))

    def apply(self, rec_id: str, who: Principal = ADMIN) -> Recommendation:
        """Apply an approved, validated recommendation to its production target (see ``advisor.service.production``:
        no store lock is held meanwhile; a claim on the recommendation keeps a second apply out)."""
        who.require("operator")
        rec = self.recommendation(rec_id)
        check_applicable(rec)  # before the target's credentials are read: the state and kind decide first
        settings = get_settings()
        return apply_recommendation(self.store, self.connector_for(rec), rec, who,
                                    lock_timeout_s=settings.production_lock_timeout_s,
                                    claim_ttl_s=settings.apply_claim_ttl_s)

    def rollback(self, rec_id: str, who: Principal = ADMIN, why: str = "") -> Recommendation:
        who.require("operator")
        check_text("note", why)  # before production is touched: the note is stored only after the rollback ran
        rec = self.recommendation(rec_id)
        settings = get_settings()
        return rollback_recommendation(self.store, self.connector_for(rec), rec, who, why,
                                       lock_timeout_s=settings.production_lock_timeout_s,
                                       claim_ttl_s=settings.apply_claim_ttl_s)

    def check_watches(self, target: str | None = None, who: Principal = ADMIN, now: float | None = None) -> list[dict]:
        """Check the applied recommendations under watch (of ``target``, or all): roll back a regression, end the
        watches whose window passed (``advisor.service.watch``); one row per watch checked."""
        who.require("operator")
        return watch.check_watches(self, self._target_id(target, None), now)

    def audit_log(self, subject: str | None = None, limit: int | None = None, offset: int = 0) -> list[dict]:
        return self.store.audit_log(subject, limit, offset)
