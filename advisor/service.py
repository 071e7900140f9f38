"""AdvisorService: the one API that the CLI, REST routes, web pages and scheduled jobs call.

Each method parses nothing and prints nothing: it takes plain values, does one job, records it in the store
and returns domain objects. Production is only read here; applying to it is a separate, approved step.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from advisor.domain import Hardware, Recommendation, Snapshot, Statement, Workload
from advisor.errors import AdvisorError
from advisor.progress import Say, silent
from advisor.shadow import ValidationOptions, create_shadow, validate
from advisor.store import Store, new_id
from connectors.postgres import PostgresConnector
from connectors.postgres.connection import parse_dsn, redact
from optimizers import registry
from optimizers.base import TuningContext
from optimizers.knobs.rules import classify_workload
from workloads.binding import bind_workload
from workloads.capture import workload_delta


@dataclass(frozen=True)
class Observation:
    target_id: str
    snapshot_id: str
    snapshot: Snapshot
    workload: Workload
    workload_kind: str


@dataclass(frozen=True)
class TuneResult:
    recommendation: Recommendation | None  # None when the optimizer proposes nothing
    observation: Observation
    reasons: dict[str, str] = field(default_factory=dict)
    skipped: tuple[tuple[str, str], ...] = ()  # (statement, why it could not be replayed)
    message: str = ""


def target_name(dsn: str) -> str:
    p = parse_dsn(dsn)
    return f"{p.get('host', 'localhost')}:{p.get('port', '5432')}/{p.get('dbname', p.get('user', 'postgres'))}"


class AdvisorService:
    def __init__(self, store: Store, say: Say | None = None):
        self.store = store
        self.say = say or silent

    # --- observe --------------------------------------------------------------------------------------------

    def observe(self, dsn: str, name: str | None = None, interval_s: float = 0.0) -> Observation:
        """Snapshot the target; the workload is the delta over ``interval_s`` seconds, or everything since the
        last statistics reset when 0."""
        connector = PostgresConnector(dsn)
        self.say(f"observing {connector.display_name}")
        before = connector.observe() if interval_s > 0 else None
        if before is not None:
            self.say(f"waiting {interval_s:g}s for the workload")
            time.sleep(interval_s)
        snap = connector.observe()
        workload = workload_delta(snap, before)
        target_id = self.store.upsert_target(name or target_name(dsn), connector.engine, redact(dsn))
        snapshot_id = self.store.add_snapshot(target_id, snap, workload)
        return Observation(target_id, snapshot_id, snap, workload, classify_workload(workload))

    # --- tune -----------------------------------------------------------------------------------------------

    def tune_knobs(self, dsn: str, optimizer: str = "rules", *, name: str | None = None,
                   hardware: Hardware | None = None, validation: ValidationOptions | None = ValidationOptions(),
                   sample_percent: float | None = None, max_statements: int = 30) -> TuneResult:
        """Observe, ask the optimizer, validate its configuration on a shadow (unless ``validation`` is None)
        and store the recommendation: validated when the gain's interval clears the minimum gain and no
        statement regresses, rejected otherwise."""
        from advisor.hardware import detect

        opt = registry.create("knobs", optimizer)  # an unknown name fails before anything is touched
        obs = self.observe(dsn, name)
        if not obs.workload.statements:
            raise AdvisorError(f"no workload observed in database {obs.snapshot.database!r}: pg_stat_statements has "
                               "no application statements; run the workload first")
        catalog = {s.name: s for s in obs.snapshot.settings}
        hw = hardware or detect()
        context = TuningContext(catalog, obs.workload, hw, obs.workload_kind)
        self.say(f"workload: {len(obs.workload.statements)} statements, {obs.workload.total_calls} calls, "
                 f"kind {obs.workload_kind}; hardware {hw.memory_bytes / 1024**3:.1f} GiB, {hw.cores} cores, {hw.storage}")
        changes = opt.suggest(context, 1)[0]
        reasons = dict(getattr(opt, "last_reasons", {}))
        if not changes:
            return TuneResult(None, obs, reasons, (), f"{optimizer}: nothing to change")
        connector = PostgresConnector(dsn)
        plan = connector.plan_changes(changes, catalog)
        self.say(f"{optimizer} proposes {len(changes)} changes" + (" (restart needed)" if plan.needs_restart else ""))
        run_id = new_id()
        rec = Recommendation(new_id(), obs.target_id, "knobs", optimizer, plan.changes, plan.apply_sql,
                             plan.revert_sql, plan.needs_restart, "proposed", time.time())
        if validation is None:
            self.store.add_recommendation(rec)
            return TuneResult(rec, obs, reasons, (), "not validated (validation was switched off)")
        statements = self._top(obs.workload.statements, max_statements)
        bound, skipped = bind_workload(connector, Workload(statements))
        for st, why in skipped:
            self.say(f"cannot replay a statement ({why}); left out")
        self.say(f"validating on a shadow: {len(bound)} statements, {validation.rounds} interleaved rounds")
        try:
            with create_shadow(connector, sample_percent=sample_percent, say=self.say) as shadow:
                evidence = validate(shadow, bound, plan.changes, validation, say=self.say)
        except AdvisorError as e:
            self.store.add_trial(obs.target_id, run_id, optimizer, list(plan.changes), None, "failed", str(e))
            self.store.add_recommendation(rec)
            rec = self.store.transition(rec.id, "rejected", "advisor", f"validation failed: {e}")
            return TuneResult(rec, obs, reasons, tuple((s.sql, w) for s, w in skipped), f"validation failed: {e}")
        self.store.add_trial(obs.target_id, run_id, optimizer, list(plan.changes), evidence, "measured")
        rec = dataclasses.replace(rec, evidence=evidence)
        self.store.add_recommendation(rec)
        verdict = "validated" if evidence.accepted else "rejected"
        why = _verdict_note(evidence)
        rec = self.store.transition(rec.id, verdict, "advisor", why)
        return TuneResult(rec, obs, reasons, tuple((s.sql, w) for s, w in skipped), why)

    @staticmethod
    def _top(statements: Sequence[Statement], n: int) -> tuple[Statement, ...]:
        return tuple(sorted(statements, key=lambda s: s.total_ms, reverse=True)[:n])

    # --- read -----------------------------------------------------------------------------------------------

    def recommendations(self, state: str | None = None) -> list[Recommendation]:
        return self.store.recommendations(state=state)

    def recommendation(self, rec_id: str) -> Recommendation:
        return self.store.recommendation(rec_id)


def _verdict_note(evidence) -> str:
    lo, hi = evidence.gain_ci
    head = f"measured gain {evidence.gain:+.1%} (95% CI {lo:+.1%} .. {hi:+.1%}, {evidence.rounds} rounds)"
    if evidence.regressions:
        return head + f"; {len(evidence.regressions)} statement(s) regressed by more than " \
                      f"{evidence.regression_threshold:.0%}"
    if not evidence.significant:
        return head + f"; the interval does not clear the minimum gain of {evidence.min_gain:.0%}"
    return head
