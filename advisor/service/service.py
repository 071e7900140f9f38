"""AdvisorService: the one API that the CLI, REST routes, web pages and scheduled jobs call.

Each method parses nothing and prints nothing: it takes plain values, does one job, records it in the store
and returns domain objects. The tuning itself is the pipelines' (``advisor.tuning.knobs.pipeline``, ``.indexes``): the
service finds the target's connector through the engine factory and hands the pipeline an observation.
Production is only read here; applying to it is a separate, approved step (``advisor.service.production``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from advisor.core.domain import Hardware
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.service.access import AccessMixin
from advisor.service.auth import Principal
from advisor.service.operations import OperationsMixin
from advisor.storage.store import Store
from advisor.tuning.indexes import pipeline as index_pipeline
from advisor.tuning.knobs import pipeline as knob_pipeline
from advisor.tuning.rewrites import pipeline as rewrite_pipeline
from advisor.tuning.indexes.pipeline import IndexPlan, IndexTuneResult
from advisor.tuning.knobs.pipeline import KnobPlan, TuneResult
from advisor.tuning.observe import Observation, observe, require_workload
from advisor.tuning.rewrites.pipeline import RewritePlan, RewriteTuneResult
from advisor.tuning.knobs.trials import TuningOptions
from advisor.tuning.validation import ValidationOptions
from connectors import factory
from optimizers.knobs.space import SpaceOptions

__all__ = ["AdvisorService", "IndexTuneResult", "Observation", "RewriteTuneResult", "SpaceOptions", "TuneResult"]


class AdvisorService(OperationsMixin, AccessMixin):
    """The tuning itself (observe, tune knobs, tune indexes) is here; registered targets, runs, the recommendation
    lifecycle and schedules are in ``operations``, tokens and sessions in ``access``. ``executor`` (a ``runs.RunExecutor``) runs started runs in the background; without one (the CLI),
    ``start_run`` runs them in the caller's thread. Actions that change anything take ``who`` (a Principal) and
    check its role here, so every adapter enforces the same rules."""

    def __init__(self, store: Store, say: Say | None = None, executor=None):
        self.store = store
        self.say = say or silent
        self.executor = executor
        self._principals: dict[str, tuple[int, Principal]] = {}  # token hash -> (store version, principal)

    # --- observe --------------------------------------------------------------------------------------------

    def observe(self, dsn: str, name: str | None = None, interval_s: float = 0.0) -> Observation:
        """Snapshot the target; the workload is the delta over ``interval_s`` seconds, or everything since the
        last statistics reset when 0."""
        return observe(self.store, factory.connector(dsn), name, interval_s, self.say)

    # --- tune -----------------------------------------------------------------------------------------------

    def tune_knobs(self, dsn: str, optimizer: str = "hibo", *, name: str | None = None,
                   hardware: Hardware | None = None, validation: ValidationOptions | None = ValidationOptions(),
                   sample_percent: float | None = None, max_statements: int = 30,
                   tuning: TuningOptions | None = None, space: SpaceOptions = SpaceOptions(), llm=None,
                   resume: str | None = None, repeats: int = 3, run_id: str | None = None) -> TuneResult:
        """The knob pipeline (``advisor.tuning.knobs.pipeline``): observe, search on a shadow (baseline, seeds, then the
        optimizer's asks), validate the best against the current settings, store the recommendation. ``llm``:
        an LLM seeder; None takes the one configured in the settings (ADVISOR_LLM_URL), if any. ``resume``: a
        stored, unfinished run to continue with its own options."""
        from advisor.core.hardware import detect
        from advisor.core.settings import get_settings
        from optimizers.knobs.llm import from_settings
        from optimizers.registry import get

        rest = dict(validation=validation, sample_percent=sample_percent, max_statements=max_statements)
        if resume:
            plan = KnobPlan.from_run(self.store.run(resume)["options"], **rest)
        else:
            plan = KnobPlan(tuning or TuningOptions(optimizer=optimizer), space, repeats=repeats, **rest)
        get("knobs", plan.tuning.optimizer)  # an unknown name fails before anything is touched
        connector = factory.connector(dsn)
        obs = require_workload(self.observe(dsn, name))
        return knob_pipeline.tune_knobs(self.store, connector, obs, plan, hardware=hardware or detect(),
                                        llm=llm if llm is not None else from_settings(get_settings()),
                                        run_id=run_id, resume=resume, say=self.say)

    def tune_indexes(self, dsn: str, optimizer: str = "ia2", *, budget_mb: float, name: str | None = None,
                     validation: ValidationOptions | None = ValidationOptions(), sample_percent: float | None = None,
                     max_statements: int = 30, device: str = "auto", episodes: int = 300, seed: int = 0,
                     retrain: bool = False, max_width: int = 3, samples: int = 48,
                     run_id: str | None = None) -> IndexTuneResult:
        """The index pipeline (``advisor.tuning.indexes.pipeline``): indexes for the observed workload within ``budget_mb``
        MiB, chosen on what-if costs, then each built and measured on a shadow and kept only if it measurably
        helps a statement it serves and makes none regress. Trained models are kept per target."""
        plan = IndexPlan(optimizer, budget_mb, seed, max_width, validation, sample_percent, max_statements,
                         {"episodes": episodes, "device": device, "samples": samples, "retrain": retrain}).check()
        connector = factory.connector(dsn)
        obs = require_workload(self.observe(dsn, name))
        return index_pipeline.tune_indexes(self.store, connector, obs, plan, model_dir=self.model_dir(obs.target_id),
                                           run_id=run_id, say=self.say)

    def tune_rewrites(self, dsn: str, optimizer: str = "aurora", *, sql: str | None = None,
                      name: str | None = None, validation: ValidationOptions | None = ValidationOptions(),
                      sample_percent: float | None = None, max_statements: int = 20, seed: int = 0,
                      options: dict | None = None, run_id: str | None = None) -> RewriteTuneResult:
        """The rewrite pipeline (``advisor.tuning.rewrites.pipeline``): faster SQL for the statements of ``sql`` (a script,
        constants written in), or for the observed workload's heaviest statements when it is None, each proven to
        return the same rows and timed against the original on a shadow. A rewrite is never applied. ``options``
        go to the optimizer (Aurora's ``episodes``, ``retrain``)."""
        statements = rewrite_pipeline.split_statements(sql) if sql is not None else ()
        if sql is not None and not statements:
            raise AdvisorError("no SQL statement in the text given")
        plan = RewritePlan(optimizer, statements, max_statements, validation=validation, seed=seed,
                           sample_percent=sample_percent, options=dict(options or {})).check()
        connector = factory.connector(dsn)
        obs = self.observe(dsn, name)
        if not statements:
            require_workload(obs)
        return rewrite_pipeline.tune_rewrites(self.store, connector, obs, plan,
                                              model_dir=self.model_dir(obs.target_id), run_id=run_id, say=self.say)

    def model_dir(self, target_id: str) -> Path:
        """Where the target's trained models live: beside the store (a temporary folder for an in-memory one)."""
        if self.store.path == ":memory:":
            root = Path(tempfile.gettempdir()) / "db-advisor-models"
        elif self.store.shared:  # a PostgreSQL store: this machine's data directory (models are a cache)
            root = Path.home() / ".local" / "share" / "db-advisor" / "models"
        else:
            root = Path(self.store.path).parent / "models"
        return root / target_id
