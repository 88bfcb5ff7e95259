"""KernelDiscoveryGP: warm starts from parameters only; fitted models pickle and torch.save."""

from __future__ import annotations

import io
import pickle

import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models.transforms.input import Normalize
from gpytorch.mlls import ExactMarginalLogLikelihood

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.llm.function_kernel import build_kernel_source
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.state import warm_parameters

torch.set_num_threads(1)

D = 4
TREE = {"op": "product", "args": [leaf("sl"), {"op": "sum", "args": [leaf("bock"), leaf("rq")]}]}
RQ_FN = """def covariance(x1, x2, p):
    r2 = torch.cdist(x1 / p["lengthscale"], x2 / p["lengthscale"]).pow(2)
    return (1.0 + r2 / (2.0 * p["alpha"])).pow(-p["alpha"])
"""
MEMBERS = {
    "tree": KernelCandidate(name="tree", formula=formula(TREE), origin="offline", spec=TREE),
    "llm_code": KernelCandidate(
        name="fn_rq",
        formula="(1 + r^2 / (2 alpha))^(-alpha)",
        origin="discovery",
        code=build_kernel_source({"lengthscale": "ard", "alpha": "positive"}, RQ_FN, "FnRQ", "rq"),
    ),
}


def _data(n: int = 14) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(n, D, generator=gen, dtype=torch.float64)
    Y = torch.sin(3 * X).sum(-1, keepdim=True) + 0.05 * torch.randn(n, 1, generator=gen)
    return X, (Y - Y.mean()) / Y.std()


def _model(member: str, X: torch.Tensor, Y: torch.Tensor) -> KernelDiscoveryGP:
    covar = DiscoveredKernel(MEMBERS[member].model_dump_json(), D)
    return KernelDiscoveryGP(X, Y, covar_module=covar, input_transform=Normalize(D))


def _fitted(member: str) -> KernelDiscoveryGP:
    X, Y = _data()
    model = _model(member, X, Y)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    fit_gpytorch_mll(mll, optimizer_kwargs={"options": {"maxiter": 30}})
    return model.eval()


@pytest.mark.parametrize("member", sorted(MEMBERS))
def test_fitted_model_survives_pickle_and_torch_save(member: str) -> None:
    model = _fitted(member)
    X_test = torch.rand(6, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    with torch.no_grad():
        want = model.posterior(X_test)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    copies = [pickle.loads(pickle.dumps(model)), torch.load(buffer, weights_only=False)]
    for copy in copies:
        assert isinstance(copy.covar_module, DiscoveredKernel)
        assert copy.covar_module.candidate == MEMBERS[member]
        with torch.no_grad():
            got = copy.posterior(X_test)
        torch.testing.assert_close(got.mean, want.mean)
        torch.testing.assert_close(got.variance, want.variance)
        # and it can be fitted further (parameters are live Parameters again)
        copy.train()
        mll = ExactMarginalLogLikelihood(copy.likelihood, copy)
        loss = -mll(copy(*copy.train_inputs), copy.train_targets)
        loss.backward()
        assert all(p.grad is not None for p in copy.parameters() if p.requires_grad)


def test_warm_start_from_parameters_only() -> None:
    X, Y = _data()
    fitted = _fitted("tree")
    warm = warm_parameters(fitted)
    assert not any("prior" in k or "constraint" in k for k in warm), "parameters only"
    fresh = _model("tree", X, Y)
    before = {k: v.clone() for k, v in fresh.state_dict().items() if k not in warm}
    fresh.load_state_dict(warm)
    for name, p in fresh.named_parameters():
        torch.testing.assert_close(p.detach(), warm[name].to(p))
    for key, value in before.items():  # buffers keep the new model's values
        torch.testing.assert_close(fresh.state_dict()[key], value)
    with pytest.raises(RuntimeError, match="Unexpected"):
        fresh.load_state_dict({**warm, "no.such.parameter": torch.zeros(1)})


def test_a_fixed_kernel_is_fitted_with_botorchs_attempts_and_a_member_with_kds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fixed kernel (the bock baseline, a library kernel) is fitted as Ax fits its own
    model: BoTorch's fit attempts; only kd's population members are held to
    MEMBER_FIT_ATTEMPTS (a bock run failed after 3 attempts where Ax would try 5)."""
    import inspect

    from botorch.fit import _fit_fallback

    from ax_kernel_discovery import gp
    from ax_kernel_discovery.baselines.methods import fixed_kernel_config
    from ax_kernel_discovery.surrogate.fitting import MEMBER_FIT_ATTEMPTS, candidate_model_config

    calls: list[dict] = []
    monkeypatch.setattr(gp, "fit_gpytorch_mll", lambda mll, **kwargs: calls.append(kwargs))
    X, Y = _data()
    bock = fixed_kernel_config("bock")
    member = candidate_model_config(MEMBERS["tree"], 60.0, 20, MEMBER_FIT_ATTEMPTS)
    for config in (bock, member):
        gp._fit_kernel_discovery_gp(
            _model("tree", X, Y), ExactMarginalLogLikelihood, dict(config.mll_options)
        )
    assert "max_attempts" not in calls[0]  # BoTorch's own default, as in Ax's fit
    # BoTorch's fallback fit (the one a SingleTaskGP gets) tries 5 times
    assert inspect.signature(_fit_fallback).parameters["max_attempts"].default == 5
    assert calls[1]["max_attempts"] == MEMBER_FIT_ATTEMPTS == 3
    assert calls[1]["optimizer_kwargs"] == {"timeout_sec": 60.0, "options": {"maxiter": 20}}


def test_lbfgs_memory_reaches_scipy_and_shortens_a_high_dimensional_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import botorch.optim.core as core
    from ax.generators.torch.botorch_modular.utils import fit_botorch_model

    dim = 40
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(80, dim, generator=gen, dtype=torch.float64)
    Y = torch.sin(6 * X[:, :3]).sum(-1, keepdim=True) + 0.05 * torch.randn(80, 1, generator=gen)
    Y = (Y - Y.mean()) / Y.std()
    rbf = KernelCandidate(name="rbf", formula="rbf", origin="offline", spec=leaf("rbf"))
    calls: list[tuple[dict, int]] = []
    minimize = core.minimize_with_timeout

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        raw = minimize(*args, **kwargs)
        calls.append((dict(kwargs.get("options") or {}), int(raw.nit)))
        return raw

    monkeypatch.setattr(core, "minimize_with_timeout", spy)
    losses = {}
    for memory in (None, 60):  # None: scipy's 10, as Ax fits its model
        model = KernelDiscoveryGP(X, Y, covar_module=DiscoveredKernel(rbf.model_dump_json(), dim))
        fit_options = {"max_attempts": 1} | ({"lbfgs_memory": memory} if memory else {})
        fit_botorch_model(
            model, mll_class=ExactMarginalLogLikelihood, mll_options={"fit_options": fit_options}
        )
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        with torch.no_grad():
            losses[memory] = -float(mll(model(*model.train_inputs), model.train_targets))
    (default, default_steps), (longer, longer_steps) = calls
    assert "maxcor" not in default and longer["maxcor"] == 60
    # the same convergence test, reached in fewer steps, at a loss as good (to 0.01 nats)
    assert longer_steps < default_steps
    assert losses[60] <= losses[None] + 0.01
