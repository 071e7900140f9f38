"""Gaussian-process Bayesian optimization with BoTorch: the model and acquisition shared by plain GP-BO and
HiBO, and the plain GP-BO plugin (qLogEI maximized with BoTorch's multi-start optimizer).

Restart-needing knobs cost a server restart to change. When the acquisition of the best point with those knobs
left where the shadow has them is within ``RESTART_TOLERANCE`` of the best point's own, that point is tried
instead, so restarts happen only where the model expects them to pay.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from optimizers.knobs.search import SearchOptimizer, sobol

# PyTorch (with BoTorch) is imported where it is used: every CLI call lists the optimizers, and importing it takes
# a second

RESTART_TOLERANCE = math.log(0.8)  # in log-acquisition: accept a 20% lower expected improvement to skip a restart


HYPER = ("covar_module", "likelihood", "mean_module")  # hyperparameters carried from one fit to the next


def fit_gp(X: np.ndarray, y: np.ndarray, warm: dict | None = None):
    """A SingleTaskGP on (X, -y) (BoTorch maximizes), outcomes standardized; fitted by marginal likelihood,
    starting from ``warm`` (the previous fit's hyperparameters) when given, which makes refits short."""
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood
    import torch

    from optimizers.torch_runtime import one_thread

    train_x = torch.tensor(X, dtype=torch.double)
    train_y = torch.tensor(-y, dtype=torch.double).unsqueeze(-1)
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


def log_ei(model, best_f: float):
    from botorch.acquisition.logei import qLogExpectedImprovement
    return qLogExpectedImprovement(model, best_f=best_f)


def score(acq, candidates: np.ndarray, batch: int = 1024) -> np.ndarray:
    """Acquisition values of many single points."""
    import torch

    from optimizers.torch_runtime import one_thread

    out = []
    with torch.no_grad(), one_thread():
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


class ModelSearch(SearchOptimizer):
    """A search driven by a GP: Sobol points until ``n_init`` observations, then qLogEI on a GP refitted each
    ask from the previous fit's hyperparameters. Those hyperparameters are part of the state (a fit started
    elsewhere ends elsewhere), so a restored search asks exactly what the original would have."""

    _warm: dict | None = None

    def _model_state(self) -> dict:
        import torch

        if not self._warm:
            return {}
        return {"warm": {k: {"dtype": str(v.dtype).removeprefix("torch."), "value": v.tolist()}
                         for k, v in self._warm.items() if bool(torch.isfinite(v).all())}}  # bounds stay out

    def _restore_model(self, state: dict) -> None:
        import torch

        warm = state.get("warm")
        self._warm = {k: torch.tensor(v["value"], dtype=getattr(torch, v["dtype"])) for k, v in warm.items()} \
            if warm else None

    def initial_point(self, pending) -> np.ndarray | None:
        if len(self.history) + len(pending) >= self.n_init:
            return None
        return sobol(self.space.dim, 8, self.seed + len(self.history) + len(pending))[len(self.history) % 8]

    def acquisition(self, X: np.ndarray, y: np.ndarray):
        import torch

        torch.manual_seed(self.seed + len(self.history))  # a fit that restarts draws from a seeded generator
        model = fit_gp(X, y, self._warm)
        self._warm = hyperparameters(model)
        return log_ei(model, float((-y).max()))


class GPSearch(ModelSearch):
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
        acq = self.acquisition(X, y)
        bounds = torch.stack([torch.zeros(d, dtype=torch.double), torch.ones(d, dtype=torch.double)])
        torch.manual_seed(self.seed + len(self.history))
        with warnings.catch_warnings(), one_thread():
            warnings.simplefilter("ignore")
            cand, value = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=4, raw_samples=256,
                                        options={"maxiter": 60})
        x = cand.detach().numpy().reshape(-1)
        return prefer_no_restart(x, float(value), current, self.space.restart_mask(),
                                 lambda p: float(score(acq, p[None, :])[0]))
