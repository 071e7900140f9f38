"""Where a knob search's trials run: on the run's shadow alone (the default), ``parallel`` side by side on thin
clones of their own made the run's way (``Shadows``), or on Ray workers (``advisor.tuning.executors.on_ray``), each
building its own clone where it runs from a ``ShadowRecipe``: a thin clone of the warm replica (the worker's node
holds it) or, without one, a full copy of the target."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.tuning.executors import Executor, open_executor, ray_address
from advisor.tuning.knobs.runners import ReplayRunner
from advisor.tuning.knobs.trials import ShadowTarget
from advisor.tuning.shadows import Shadows
from connectors.base import Connector
from optimizers.knobs.space import KnobSpace
from workloads.statements.binding import BoundStatement


@dataclass(frozen=True)
class ShadowRecipe:
    """How a worker elsewhere (``advisor.tuning.executors.on_ray``) builds a knob trial target of its own: a thin
    clone of the target's warm replica (``replica``: the engine and the replica's directory, on the worker's node)
    or else a full copy of the target (``dsn``), with the statements replayed and how a trial measures them."""

    engine: str
    replica: str | None
    dsn: str | None = field(repr=False)  # the target's, with its password: never shown
    statements: tuple = ()
    space: KnobSpace | None = None
    sample_percent: float | None = None
    repeats: int = 3
    objective: str = "latency"
    timeout_factor: float = 3.0
    min_timeout_s: float = 5.0

    def make(self) -> ShadowTarget:
        from pathlib import Path

        from connectors import factory

        if self.replica is not None:
            shadow = factory.open_replica(self.engine, Path(self.replica)).clone(silent)
        elif self.dsn is not None:
            shadow = factory.clone(factory.connector(self.dsn), sample_percent=self.sample_percent)
        else:
            raise AdvisorError("the recipe names neither a replica nor the target to copy")
        runner = ReplayRunner(list(self.statements), repeats=self.repeats, objective=self.objective)
        return ShadowTarget(shadow, runner, self.space, self.timeout_factor, self.min_timeout_s)


def trial_executor(trials: ShadowTarget, plan, connector: Connector, shadows: Shadows,
                   bound: list[BoundStatement], say: Say = silent) -> Executor:
    """Where the search's trials run (``advisor.tuning.executors``; ``plan``: the run's ``KnobPlan``): on
    ``trials`` (the run's shadow) alone, or ``plan.tuning.parallel`` side by side, the others on thin clones of their
    own made the run's way; or on Ray workers, each making its clone of the replica (or copy of the target) where it
    runs."""
    tuning = plan.tuning

    def copies(n: int):
        stack = ExitStack()
        more = []
        try:
            for i in range(n):
                say(f"making shadow {i + 2} of {n + 1} for trials side by side")
                clone = stack.enter_context(shadows.clone(connector, sample_percent=plan.sample_percent, say=say))
                more.append(ShadowTarget(clone, ReplayRunner(bound, repeats=plan.repeats, objective=tuning.objective),
                                        trials.space, tuning.timeout_factor, tuning.min_timeout_s, say))
        except BaseException:
            stack.close()
            raise
        return more, stack.close

    def recipe() -> ShadowRecipe:  # made the run's way: a thin clone of the replica, else a copy (sampled if asked)
        replica = shadows.replica if not plan.sample_percent else None
        return ShadowRecipe(connector.engine, str(replica.directory) if replica is not None else None,
                            None if replica is not None else connector.dsn, tuple(bound), trials.space,
                            plan.sample_percent, plan.repeats, tuning.objective, tuning.timeout_factor,
                            tuning.min_timeout_s)

    executor = open_executor(trials, parallel=tuning.parallel, ray=ray_address(tuning.ray), copies=copies,
                             recipe=recipe, say=say)
    if executor.slots > 1 or executor.name == "ray":
        say(f"trials: {executor.describe()}")
    return executor
