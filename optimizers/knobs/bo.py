"""Gaussian-process Bayesian optimization with BoTorch: the model and acquisition shared by plain GP-BO and
HiBO, and the plain GP-BO plugin (qLogEI maximized with BoTorch's multi-start optimizer).

Constraint-aware (``constrained=True``, the default): once a trial has slowed a statement by ``max_slowdown`` or
more, failed, or been infeasible, a second GP models c(x) = log(worst per-statement ratio to the baseline), and
the acquisition becomes BoTorch's LogConstrainedExpectedImprovement: log EI over the best *feasible* objective
plus log P(c(x) < log(1 + max_slowdown)). Regions that regress a statement or crash the server are learned and
avoided; the search looks for the best configuration the guard would accept, not the best total.

Restart-needing knobs cost a server restart to change. When the acquisition of the best point with those knobs
left where the shadow has them is within ``RESTART_TOLERANCE`` of the best point's own, that point is tried
instead, so restarts happen only where the model expects them to pay.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from optimizers.knobs.problem import KnobOptimizer
from optimizers.knobs.search import MAX_SLOWDOWN, SpaceSearch

# PyTorch (with BoTorch) is imported where it is used: every CLI call lists the optimizers, and importing it takes
# a second

RESTART_TOLERANCE = math.log(0.8)  # in log-acquisition: accept a 20% lower expected improvement to skip a restart


HYPER = ("covar_module", "likelihood", "mean_module")  # hyperparameters carried from one fit to the next


def fit_gp(X: np.ndarray, y: np.ndarray, warm: dict | None = None):
    """A SingleTaskGP on (X, -y) (BoTorch maximizes), outcomes standardized; fitted by marginal likelihood,
    starting from ``warm`` (the previous fit's hyperparameters) when given, which makes refits short."""
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.exceptions.warnings import InputDataWarning
    from botorch.models.transforms.outcome import Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood
    import torch

    from optimizers.torch_runtime import one_thread

    train_x = torch.tensor(X, dtype=torch.double)
    train_y = torch.tensor(-y, dtype=torch.double).unsqueeze(-1)
    with warnings.catch_warnings():  # equal outcomes (e.g. every trial so far failed alike) cannot be standardized:
        warnings.simplefilter("ignore", InputDataWarning)  # botorch says so on the terminal; the flat GP still ranks
        model = SingleTaskGP(train_x, train_y, outcome_transform=Standardize(m=1))
    if warm:
        try:
            model.load_state_dict(warm, strict=False)
        except RuntimeError:  # a different space: start from the priors
            pass
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with warnings.catch_warnings(), one_thread():
        warnings.simplefilter("ignore")
        try:
            fit_gpytorch_mll(mll, optimizer_kwargs={"options": {"maxiter": 60 if warm else 150}})
        except Exception:  # noqa: BLE001 - an unfitted GP still ranks candidates; the search goes on
            pass
    return model


def hyperparameters(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items() if k.startswith(HYPER)}


def log_ei(model, best_f: float, pending=None):
    """qLogEI; with ``pending`` (points whose trials run now) BoTorch's own batch mode: a candidate's value is the
    joint improvement of it and the pending points, so it is low where a pending point already looks."""
    from botorch.acquisition.logei import qLogExpectedImprovement
    return qLogExpectedImprovement(model, best_f=best_f, X_pending=_pending(pending), sampler=_sampler(pending))


PENDING_SAMPLES = 64  # quasi-Monte-Carlo samples of a batch acquisition (BoTorch's default 512 took 4x an ask)


def _sampler(pending):
    """A small QMC sampler for a batch acquisition (pending points), None (BoTorch's default) otherwise."""
    if pending is None or not len(pending):
        return None
    import torch
    from botorch.sampling import SobolQMCNormalSampler

    return SobolQMCNormalSampler(sample_shape=torch.Size([PENDING_SAMPLES]))


def _pending(points):
    import torch

    if points is None or not len(points):
        return None
    return torch.tensor(np.asarray(points, dtype=float), dtype=torch.double)


def constrained_log_ei(model, constraint_model, best_f: float, max_log_ratio: float, pending=None):
    """log EI of ``model`` (fitted on -objective) times the probability that ``constraint_model`` (fitted on
    -log worst ratio, as ``fit_gp`` negates) stays under ``max_log_ratio``. With ``pending`` points, the same in
    BoTorch's Monte-Carlo batch form (qLogEI with the constraint as a sample-wise feasibility, pending points
    joint with the candidate)."""
    from botorch.models import ModelListGP

    models = ModelListGP(model, constraint_model)
    if pending is None or not len(pending):
        from botorch.acquisition.analytic import LogConstrainedExpectedImprovement

        return LogConstrainedExpectedImprovement(models, best_f=best_f, objective_index=0,
                                                 constraints={1: (-max_log_ratio, None)})
    from botorch.acquisition.logei import qLogExpectedImprovement
    from botorch.acquisition.objective import GenericMCObjective

    # output 1 is -log(worst ratio): feasible (<= 0) where -Z1 - max_log_ratio <= 0
    return qLogExpectedImprovement(models, best_f=best_f, objective=GenericMCObjective(lambda Z, X=None: Z[..., 0]),
                                   constraints=[lambda Z: -Z[..., 1] - max_log_ratio], X_pending=_pending(pending),
                                   sampler=_sampler(pending))


def _tensors_to_json(warm: dict | None) -> dict | None:
    import torch

    if not warm:
        return None
    return {k: {"dtype": str(v.dtype).removeprefix("torch."), "value": v.tolist()}
            for k, v in warm.items() if bool(torch.isfinite(v).all())}  # bounds stay out


def _tensors_from_json(warm: dict | None) -> dict | None:
    import torch

    return {k: torch.tensor(v["value"], dtype=getattr(torch, v["dtype"])) for k, v in warm.items()} if warm else None


def _numerical_warning() -> type[Warning]:
    from linear_operator.utils.warnings import NumericalWarning

    return NumericalWarning


def score(acq, candidates: np.ndarray, batch: int = 1024) -> np.ndarray:
    """Acquisition values of many single points."""
    import torch

    from optimizers.torch_runtime import one_thread

    out = []
    with torch.no_grad(), one_thread(), warnings.catch_warnings():
        # a joint posterior with pending points near a candidate needs jitter; linear_operator says so each time
        warnings.simplefilter("ignore", _numerical_warning())
        for i in range(0, len(candidates), batch):
            chunk = torch.tensor(candidates[i:i + batch], dtype=torch.double).unsqueeze(1)
            out.append(acq(chunk).numpy())
    return np.concatenate(out) if out else np.array([])


def prefer_no_restart(x: np.ndarray, value: float, current, restart: np.ndarray, value_of) -> np.ndarray:
    """``x`` with its restart-needing knobs at ``current``'s when that costs little acquisition."""
    if current is None or not restart.any():
        return x
    pinned = x.copy()
    pinned[restart] = np.asarray(current, dtype=float)[restart]
    if np.allclose(pinned, x):
        return x
    return pinned if value_of(pinned) >= value + RESTART_TOLERANCE else x


class ModelSearch(SpaceSearch):
    """A search driven by a GP: Sobol points until ``n_init`` observations, then qLogEI on a GP refitted each
    ask from the previous fit's hyperparameters. Those hyperparameters are part of the state (a fit started
    elsewhere ends elsewhere), so a restored search asks exactly what the original would have."""

    _warm: dict | None = None
    _cwarm: dict | None = None  # the constraint GP's hyperparameters

    def _setup(self, constrained: bool = True, max_slowdown: float = MAX_SLOWDOWN, **options) -> None:
        super()._setup(**options)
        self.constrained = bool(constrained)
        self.max_ratio = 1.0 + float(max_slowdown)

    def _model_state(self) -> dict:
        out = {}
        if self._warm:
            out["warm"] = _tensors_to_json(self._warm)
        if self._cwarm:
            out["constraint_warm"] = _tensors_to_json(self._cwarm)
        return out

    def _restore_model(self, state: dict) -> None:
        self._warm = _tensors_from_json(state.get("warm"))
        self._cwarm = _tensors_from_json(state.get("constraint_warm"))

    def models_constraint(self) -> bool:
        """Whether the constraint is modelled now: asked for, and some trial regressed, failed or was infeasible."""
        return self.constrained and not bool(self.feasible_mask().all())

    def acquisition(self, X: np.ndarray, y: np.ndarray, pending: list[np.ndarray] | None = None):
        """log EI on a GP over (X, y) (y = log objective, minimized); constrained by a GP on the worst log-ratio
        once a trial has regressed (see the module's docstring); ``pending``: points whose trials run now."""
        import torch

        torch.manual_seed(self.seed + len(self.history))  # a fit that restarts draws from a seeded generator
        model = fit_gp(X, y, self._warm)
        self._warm = hyperparameters(model)
        if not self.models_constraint():
            return log_ei(model, float((-y).max()), pending)
        feasible = self.feasible_mask()
        best_f = float((-y[feasible]).max()) if feasible.any() else float((-y).max())
        Xc, c = self.constraint_data()
        torch.manual_seed(self.seed + len(self.history) + 1)
        cmodel = fit_gp(Xc, c, self._cwarm)
        self._cwarm = hyperparameters(cmodel)
        return constrained_log_ei(model, cmodel, best_f, math.log(self.max_ratio), pending)


class GPSpaceSearch(ModelSearch):
    name = "gp"
    description = "plain BoTorch GP-BO: SingleTaskGP + qLogEI, Sobol start"

    def _ask_one(self, current, pending):
        start = self.initial_point(pending)
        if start is not None:
            return start
        import torch
        from botorch.optim import optimize_acqf

        from optimizers.torch_runtime import one_thread

        d = self.space.dim
        X, y = self.data()
        acq = self.acquisition(X, y, pending)
        bounds = torch.stack([torch.zeros(d, dtype=torch.double), torch.ones(d, dtype=torch.double)])
        torch.manual_seed(self.seed + len(self.history))
        with warnings.catch_warnings(), one_thread():
            warnings.simplefilter("ignore")
            cand, value = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=4, raw_samples=256,
                                        options={"maxiter": 60})
        x = cand.detach().numpy().reshape(-1)
        return prefer_no_restart(x, float(value), current, self.space.restart_mask(),
                                 lambda p: float(score(acq, p[None, :])[0]))


class GPSearch(KnobOptimizer, GPSpaceSearch):
    """GP-BO over a knob space."""
