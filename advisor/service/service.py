"""AdvisorService: the one API that the CLI, REST routes, web pages and scheduled jobs call.

Each method parses nothing and prints nothing: it takes plain values, does one job, records what it did in the
store (an unregistered database is observed, not stored; a store read through ``advisor serve`` refuses changes)
and returns domain objects. A target is given as a registered target's name or as a DSN, which means the
registered target of the database it reaches. The tuning itself is the pipelines', one per kind (``advisor.tuning.kinds``, ``tune``): the
service finds the target's connector through the engine factory and hands the pipeline an observation.
Production is only read here; applying to it is a separate, approved step (``advisor.service.production``).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from advisor.core import processes
from advisor.core.errors import AdvisorError, EngineUnsupported, NotFound, NotRegistered
from advisor.core.progress import Say, heartbeat, silent
from advisor.service.access import AccessMixin
from advisor.service.auth import Principal, local_actor
from advisor.service.recommendations import RecommendationsMixin
from advisor.service.targets import TargetsMixin
from advisor.service.tuning_runs import TuningRunsMixin
from advisor.service.replicas import ReplicasMixin
from advisor.service.schedules import SchedulesMixin
from advisor.service import run_state
from advisor.service.runs import ProgressLog, RunCancelled
from advisor.storage.store import Store, new_id
from advisor.tuning import kinds
from advisor.tuning.kind import Context
from advisor.tuning.observe import Observation, observe
from advisor.tuning.plan import RunPlan
from connectors import factory

# inputs ``tune`` once took that are run plan options now: given as inputs, they would be ignored
MOVED_TO_PLAN = frozenset({"sql", "space", "objective", "include", "exclude", "range", "allow_durability",
                           "allow_unsafe", "max_width", "retrain"})

__all__ = ["AdvisorService", "IndexTuneResult", "Observation", "RewriteTuneResult", "RunPlan",
           "TuneResult", "WholeResult"]

# the pipelines' result types, re-exported on first use: importing the pipelines (the optimizers, egglog) takes
# about a second, which every CLI call would pay
_RESULTS = {"IndexTuneResult": "advisor.tuning.indexes.pipeline", "TuneResult": "advisor.tuning.knobs.pipeline",
            "RewriteTuneResult": "advisor.tuning.rewrites.pipeline", "WholeResult": "advisor.tuning.all.pipeline"}


def __getattr__(name: str):
    if name in _RESULTS:
        import importlib

        return getattr(importlib.import_module(_RESULTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class AdvisorService(TargetsMixin, TuningRunsMixin, RecommendationsMixin, SchedulesMixin, AccessMixin, ReplicasMixin):
    """The tuning itself (observe, tune knobs, tune indexes) is here; registered targets, runs, the recommendation
    lifecycle and schedules are in ``operations``, tokens and sessions in ``access``. ``executor`` (a ``runs.RunExecutor``) runs started runs in the background; without one (the CLI),
    ``start_run`` runs them in the caller's thread. Actions that change anything take ``who`` (a Principal) and
    check its role here, so every adapter enforces the same rules."""

    def __init__(self, store: Store, say: Say | None = None, executor=None):
        self.store = store
        self.say = say or silent
        self.executor = executor
        self._principals: dict[str, tuple[int, Principal]] = {}  # token hash -> (store version, principal)
        self.last_shadow: dict | None = None  # what the last ``tune`` call's shadows were (its JSON's "shadow")

    # --- observe --------------------------------------------------------------------------------------------

    def observe(self, dsn: str, name: str | None = None, interval_s: float = 0.0, *, register: str | None = None,
                by_hand: bool = True) -> Observation:
        """Snapshot the target; the workload is the delta over ``interval_s`` seconds, or everything since the
        last statistics reset when 0. A DSN without ``name`` means the target of its database, whatever the DSN's
        text (``advisor.tuning.observe``); ``register``: register the database under that name first when no
        target is registered for it; without ``by_hand`` an unregistered database is observed but not stored."""
        dsn, name = self._named_or_dsn(dsn, name)
        connector = factory.connector(dsn)
        name = name or self._registered(connector, dsn, register)
        return observe(self.store, connector, name, interval_s, self.say, by_hand=by_hand)

    def _named_or_dsn(self, target: str, name: str | None) -> tuple[str, str | None]:
        """``target`` as (DSN, target name): a registered target's name or id (a word: no ``=``, no ``://``) means
        that target's stored DSN; anything else is a DSN, named as given."""
        if name is not None or "=" in target or "://" in target:
            if name is None:
                self._notice_scheme(target)
            return target, name
        try:
            found = self.store.target(target.strip())
        except NotFound:
            # the word is not echoed: it may be a password typed in the wrong place
            raise NotFound("the target given is neither a DSN nor a registered target's name (advisor targets list "
                           "shows the names)") from None
        return self._dsn(found), found["name"]

    def _notice_scheme(self, dsn: str) -> None:
        """Say the one-line notice of a DSN given by the user whose URL scheme will change meaning (``mysql://``:
        MariaDB until MySQL is supported; ``connectors.factory.scheme_notice``); the DSN opens as before."""
        notice = factory.scheme_notice(dsn)
        if notice:
            self.say(f"note: {notice}")

    def _registered(self, connector, dsn: str, register: str | None) -> str | None:
        """The name of the registered target of the database ``connector`` reaches (its identity, not the DSN's
        text), registering it as ``register`` when there is none (and a name is given); else None."""
        found = self.store.target_with_identity(connector.identity(), registered_only=True)
        if found is not None:
            if register and register != found["name"]:
                self.say(f"this database is registered already as target {found['name']}: using it")
            return found["name"]
        return self.add_target(register, dsn)["name"] if register else None

    # --- tune -----------------------------------------------------------------------------------------------

    def tune(self, kind: str, dsn: str | None, plan: RunPlan | None = None, *, name: str | None = None,
             run_id: str | None = None, register: str | None = None, by_hand: bool = True, **inputs) -> object:
        """Tune ``dsn`` (shown as ``name``) with the pipeline of ``kind`` (a name in the kind registry,
        ``advisor.tuning.kinds``): observe, propose, validate on a shadow, store the recommendation(s); the result
        is the pipeline's. ``plan``: the run's options (default: the kind's defaults), the SQL of a rewrite run and a
        knob run's space included; ``inputs``: values that are not plan options, which the kind documents (a knob
        run's ``hardware``, ``llm``, ``resume``); a plan option given as an input is refused, never ignored. A plan
        for another kind, an unknown kind or optimizer fails before anything is
        touched. Without ``name``, the DSN means the registered target of its database (``observe``), or the one
        registered as ``register``; an unregistered database is then refused unless ``by_hand`` (a target of
        its own, unregistered, for library callers and benches). A plan its kind runs without a database
        (``Kind.own_target``: a learned index's keys from a synthetic set or a file) takes ``dsn`` None and is
        stored under that target of its own; given a target, it is stored under it, which is not observed."""
        entry = kinds.get(kind)
        misplaced = sorted(set(inputs) & MOVED_TO_PLAN)
        if misplaced:
            raise AdvisorError(f"{', '.join(misplaced)}: run plan options, give them in the plan (RunPlan), not as "
                               "inputs")
        plan = kinds.checked(plan or kinds.plan_of(kind))
        if plan.kind != kind:
            raise AdvisorError(f"a {plan.kind} plan cannot run as a {kind} run")
        own = entry.target_of_its_own(plan)  # a plan that needs no database: the target of its own it goes under
        if dsn is None and own is None:
            raise AdvisorError(f"this {kind} run needs a target database: give one (--target: a registered "
                               "target's name or a DSN)")
        connector, target_id = None, None
        if dsn is not None:
            dsn, name = self._named_or_dsn(dsn, name)
            connector = factory.connector(dsn)  # the run's one connector: the pipelines take it, never the DSN
        self.check_plan_on(connector, plan)  # before anything is stored: given SQL the target refuses, say
        if connector is None:  # stored under its own target; no database is opened
            name, target_id = own, self.store.own_target(own, entry.own_target_engine)
        elif name is None:
            name = self._registered(connector, dsn, register)
            if name is None and not by_hand:
                raise NotRegistered(f"{connector.target_name} is not a registered target: register it to tune it "
                                    "(add --register NAME, or first `advisor targets add --name NAME --dsn ...`)")
        if own is not None and target_id is None and name is not None:
            target_id = self._stored_id(name)  # the target given, not observed: this plan does not read it
        from advisor.core.settings import get_settings

        device = inputs.pop("device", None) or get_settings().device
        opened: list[str] = []  # the run rows opened for this call: their ends are recorded here
        # a run the service executes records its log already (``execute_run``); one opened here (the command
        # line's) records it the same way, from its first line, once the pipeline opens its row
        progress = ProgressLog(self.store, None, self.say) if run_id is None else None
        tell = progress or self.say

        def open_run(target_id: str, kind: str, optimizer: str | None, options: dict, resume: str | None = None,
                     existing: str | None = None) -> str:
            found = self.open_run(target_id, kind, optimizer, options, run_id=existing, resume=resume)
            if found != run_id and found not in opened:
                opened.append(found)
            if progress is not None and progress.run_id is None:
                progress.attach(found)
            return found

        shadows = self._shadows(entry, connector, name, plan, tell)
        try:
            # no step of any pipeline silent past the heartbeat: one that does not report on its own (a model's
            # first episodes, a solver, a screening pass) is said to be still at work
            with heartbeat(tell, f"tuning ({kind})") as say:
                ctx = Context(self.store, connector, name, run_id, say, self.model_dir, device, dict(inputs),
                              open_run, shadows=shadows, target_id=target_id)
                result = entry.run(ctx, plan)
            rec = result.recommendation
            if plan.recheck and rec is not None and rec.state == "validated" and not entry.handed_over:
                try:
                    from advisor.tuning.all.pipeline import recheck

                    recheck(dataclasses.replace(ctx, say=tell), rec, plan)
                    result = dataclasses.replace(result, recommendation=self.store.recommendation(rec.id))
                except AdvisorError as e:  # the recommendation stands as validated; the re-check says why it is missing
                    tell(f"could not re-measure recommendation {rec.id} on a fresh shadow: {e}")
        except (KeyboardInterrupt, SystemExit, RunCancelled):
            _flush(progress)
            run_state.interrupted(self.store, opened)
            raise
        except Exception as e:
            missing = unsupported(e, f"tuning ({kind})")
            message = (missing or e).message if isinstance(missing or e, AdvisorError) \
                else f"internal error ({type(e).__name__}: {e})"
            _flush(progress)
            run_state.failed(self.store, opened, message)
            if missing is not None:
                raise missing from e
            raise
        self.last_shadow = shadows.doc(plan.sample_percent) if entry.uses_shadows else None
        _flush(progress)
        run_state.done(self.store, opened, self.outcome(entry, result))
        return result

    def _stored_id(self, name: str) -> str | None:
        """The id of the stored target called ``name``, or None (a database observed by hand, not stored yet)."""
        try:
            return self.store.target(name)["id"]
        except NotFound:
            return None

    def _shadows(self, entry, connector, name: str | None, plan: RunPlan, say: Say):
        """Where the run's shadows come from (a thin clone of the target's warm replica, a full or a sampled
        copy), said first in the run's header; the replica's position is read here, before the run observes."""
        from advisor.tuning.shadows import Shadows

        if not entry.uses_shadows:
            return Shadows()
        shadows = self.shadows_for(name, connector, say)
        say(f"shadows: {shadows.planned(plan.sample_percent)['line']}")
        return shadows

    def outcome(self, entry, result) -> dict:
        """What a run's row records of its result: the kind's outcome and, for a kind that uses shadows, what
        they were (``shadow``)."""
        return {**entry.outcome(result), **({"shadow": self.last_shadow} if self.last_shadow else {})}

    def check_plan_on(self, connector, plan: RunPlan) -> None:
        """Refuse, before any work, what the target of ``connector`` refuses of ``plan`` (a rewrite run's SQL: the
        target's own parser's message and position, ``advisor.tuning.rewrites.given``)."""
        entry = kinds.get(plan.kind)
        if entry.check_target is not None:
            entry.check_target(connector, plan)

    def open_run(self, target_id: str, kind: str, optimizer: str | None, options: dict, *,
                 run_id: str | None = None, resume: str | None = None) -> str:
        """The run row a pipeline stores its trials under: ``resume`` (a stored, unfinished run of this target,
        taken over by this process), the service's ``run_id`` (its options completed with the pipeline's), or a
        new one."""
        if resume:
            run = self.store.run(resume)
            if run["kind"] != kind:
                raise AdvisorError(f"tuning run {resume} is a {run['kind']} run; resume it as one")
            if run["state"] == "done":
                raise AdvisorError(f"tuning run {resume} is already finished")
            if run["target_id"] != target_id:
                raise AdvisorError(f"tuning run {resume} is a run of another target; resume it with that target")
            if run["state"] in ("queued", "running") and processes.alive(run.get("owner")) is not False:
                raise AdvisorError(f"tuning run {resume} is {run['state']} in another process (pid "
                                   f"{(run.get('owner') or {}).get('pid', '?')}); it can be resumed once that ends")
            # running again, owned by this process (a killed owner's run was marked interrupted by whoever reaped it)
            run_state.running(self.store, resume, owner=processes.this_process())
            return resume
        if run_id and self.store.runs(run_id=run_id):  # its row exists: record the pipeline's own options
            self.store.update_run(run_id, options={**self.store.run(run_id)["options"], **options})
            return run_id
        run_id = run_id or new_id()  # a run of this process's caller (the command line): started by its user
        self.store.add_run(run_id, target_id, kind, optimizer or kind, options, started_by=local_actor())
        return run_id

    def resumed_plan(self, run_id: str, kind: str) -> RunPlan:
        """The plan a stored run of ``kind`` was started with, to resume it as it was (NotFound for no such run)."""
        run = self.store.run(run_id)
        if run["kind"] != kind:
            raise AdvisorError(f"tuning run {run_id} is a {run['kind']} run; resume it as one")
        return kinds.checked(kinds.stored_plan({**run["options"], "kind": kind}))

    def model_dir(self, target_id: str) -> Path:
        """Where the target's trained models live: beside the store (a temporary folder for an in-memory one)."""
        if self.store.path == ":memory:":
            root = Path(tempfile.gettempdir()) / "db-advisor-models"
        elif self.store.shared:  # a PostgreSQL store: this machine's data directory (models are a cache)
            root = Path.home() / ".local" / "share" / "db-advisor" / "models"
        else:
            root = Path(self.store.path).parent / "models"
        return root / target_id


def _flush(progress: ProgressLog | None) -> None:
    """Write a run's last log lines (a log that never found its row, a run that failed first, writes none)."""
    if progress is not None:
        progress.flush()


def unsupported(e: BaseException, action: str) -> EngineUnsupported | None:
    """``e`` as the one-line EngineUnsupported when it is a connector lacking a method of the ``Connector``
    protocol (``connectors.base``: an engine whose package does not implement that part yet); else None.

    >>> class Half:
    ...     engine = "thirdsql"
    >>> try:
    ...     Half().whatif()
    ... except AttributeError as e:
    ...     print(unsupported(e, "tuning (indexes)"))
    tuning (indexes) is not available for thirdsql targets yet: the thirdsql connector does not implement whatif
    """
    name, obj = getattr(e, "name", None), getattr(e, "obj", None)
    if not isinstance(e, AttributeError) or not name or name.startswith("_") \
            or not isinstance(getattr(obj, "engine", None), str) or not hasattr(factory.Connector, name):
        return None
    return EngineUnsupported(f"{action} is not available for {obj.engine} targets yet: the {obj.engine} connector "
                             f"does not implement {name}")
