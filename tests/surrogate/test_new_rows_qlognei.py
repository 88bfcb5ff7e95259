"""NewRowsqLogNEI: BoTorch's qLogNEI, its joint posterior from cached baseline blocks."""

from __future__ import annotations

import pytest
import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.surrogate import Surrogate
from ax.generators.torch_base import TorchOptConfig
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.objective import GenericMCObjective, ScalarizedPosteriorTransform
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.utils.datasets import SupervisedDataset
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood, GaussianLikelihood
from torch.overrides import TorchFunctionMode

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import leaf
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.surrogate.acquisition import KernelDiscoveryAcquisition
from ax_kernel_discovery.surrogate.new_rows_qlognei import (
    ROWS_IN_MAX_ELEMENTS,
    NewRowsqLogNEI,
    _rows_in,
    serves,
)

DIM = 8


def _data(n: int = 14) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    X = torch.rand(n, DIM, generator=g, dtype=torch.float64)
    Y = ((X[:, :3] - 0.4) ** 2).sum(-1, keepdim=True) + 0.1 * torch.sin(5 * X[:, 3:4])
    return X, Y


def _sems(Y: torch.Tensor) -> torch.Tensor:
    """Known observation variances (SEMs squared), one per point, all different."""
    g = torch.Generator().manual_seed(11)
    return (0.05 + 0.3 * torch.rand(Y.shape, generator=g, dtype=torch.float64)) ** 2


def _models() -> dict[str, SingleTaskGP]:
    X, Y = _data()
    spec = {"op": "sum", "args": [leaf("rbf"), leaf("matern52", warp="kumaraswamy")]}
    warped = KernelCandidate(name="w", formula="rbf + matern52@kumaraswamy", spec=spec)
    Z = (Y - Y.mean()) / Y.std()
    bounds = torch.tensor([[-1.0] * DIM, [2.0] * DIM])
    models = {
        "rbf": SingleTaskGP(X, Z),
        "transforms": SingleTaskGP(
            X * 3 - 1,
            Y * 10,
            input_transform=Normalize(DIM, bounds=bounds),
            outcome_transform=Standardize(1),
        ),
        "warped": KernelDiscoveryGP(X, Z, covar_module=warped.build(DIM)),
        # observations with SEMs: a FixedNoiseGaussianLikelihood (issue 30 item 16)
        "sems": SingleTaskGP(X, Z, train_Yvar=_sems(Z)),
        "sems_transforms": SingleTaskGP(
            X * 3 - 1,
            Y * 10,
            train_Yvar=100 * _sems(Y),
            input_transform=Normalize(DIM, bounds=bounds),
            outcome_transform=Standardize(1),
        ),
        "sems_warped": KernelDiscoveryGP(X, Z, train_Yvar=_sems(Z), covar_module=warped.build(DIM)),
    }
    for model in models.values():  # hyperparameters away from their initial values
        for p in model.covar_module.parameters():
            p.data.add_(0.1 * torch.randn_like(p))
        model.eval()
    return models


def _pair(
    model: SingleTaskGP, X: torch.Tensor, **kwargs: object
) -> tuple[qLogNoisyExpectedImprovement, NewRowsqLogNEI]:
    transform = ScalarizedPosteriorTransform(weights=torch.tensor([-1.0], dtype=torch.float64))
    acqfs = []
    for cls in (qLogNoisyExpectedImprovement, NewRowsqLogNEI):
        torch.manual_seed(0)  # the baseline's pruning draws samples
        acqfs.append(cls(model, X_baseline=X, posterior_transform=transform, **kwargs))
    return acqfs[0], acqfs[1]  # type: ignore[return-value]


@pytest.mark.parametrize(
    "name", ["rbf", "transforms", "warped", "sems", "sems_transforms", "sems_warped"]
)
@pytest.mark.parametrize("q", [1, 3])
def test_values_and_gradients_are_botorchs(name: str, q: int) -> None:
    model = _models()[name]
    noise = FixedNoiseGaussianLikelihood if "sems" in name else GaussianLikelihood
    assert type(model.likelihood) is noise
    X = model.train_inputs[0] if "transforms" not in name else _data()[0] * 3 - 1
    stock, fast = _pair(model, X)
    assert fast._new_rows is not None  # served: the new rows are computed here
    g = torch.Generator().manual_seed(100 + q)  # not the training data's seed
    lo, hi = (-1.0, 2.0) if "transforms" in name else (0.0, 1.0)
    Xq = (lo + (hi - lo) * torch.rand(5, q, DIM, generator=g, dtype=torch.float64)).requires_grad_()
    v_stock = stock(Xq)
    (g_stock,) = torch.autograd.grad(v_stock.sum(), Xq)
    v_fast = fast(Xq)
    (g_fast,) = torch.autograd.grad(v_fast.sum(), Xq)
    assert torch.allclose(v_fast, v_stock, rtol=1e-9, atol=1e-9)
    assert torch.allclose(g_fast, g_stock, rtol=1e-7, atol=1e-9)
    # the kernel between baseline and training points is not evaluated again
    assert fast._new_rows.baseline_in_train is not None


@pytest.mark.parametrize("name", ["warped", "sems_warped"])
def test_pending_points_join_the_baseline_and_the_blocks_follow(name: str) -> None:
    model = _models()[name]
    X = model.train_inputs[0]
    pending = torch.rand(2, DIM, dtype=torch.float64)
    stock, fast = _pair(model, X)
    for acqf in (stock, fast):
        acqf.set_X_pending(pending)  # what sequential greedy optimization does
    assert fast._new_rows is not None
    assert fast._new_rows.baseline_inputs.shape[0] == fast.X_baseline.shape[0]
    Xq = torch.rand(4, 1, DIM, dtype=torch.float64, requires_grad=True)
    v_stock, v_fast = stock(Xq), fast(Xq)
    (g_stock,) = torch.autograd.grad(v_stock.sum(), Xq)
    (g_fast,) = torch.autograd.grad(v_fast.sum(), Xq)
    assert torch.allclose(v_fast, v_stock, rtol=1e-9, atol=1e-9)
    assert torch.allclose(g_fast, g_stock, rtol=1e-7, atol=1e-9)


def test_models_it_cannot_serve_take_botorchs_path() -> None:
    X, Y = _data()
    model_list = ModelListGP(SingleTaskGP(X, Y), SingleTaskGP(X, -Y))
    two_outputs = SingleTaskGP(X, torch.cat([Y, -Y], dim=-1))
    assert not serves(model_list) and not serves(two_outputs)
    assert serves(SingleTaskGP(X, Y))
    weights = torch.tensor([1.0, 0.5], dtype=torch.float64)
    fast = NewRowsqLogNEI(
        two_outputs, X_baseline=X, posterior_transform=ScalarizedPosteriorTransform(weights)
    )
    assert fast._new_rows is None
    assert torch.isfinite(fast(torch.rand(3, 2, DIM, dtype=torch.float64))).all()


def test_a_model_list_is_botorchs_qlognei_bit_for_bit_at_a_repeated_pending_point() -> None:
    """CI's repeated candidate on Ax's online fixture 1 (74555da): Ax builds qLogNEI there
    on a ModelListGP (the objective and a constrained metric, SEMs), which the new rows do
    not serve. Its values and gradients are then BoTorch's exactly, also in sequential
    greedy's second step, where the first candidate is pending (it joins the baseline) and
    the second one equals it: kd's two acquisition settings compute the same function, and
    the repeat comes from BoTorch's qLogNEI on that model (its value at a point equal to a
    baseline point is decided by rounding: the Cholesky jitter of a zero Schur complement)."""
    X, Y = _data()
    Z = (Y - Y.mean()) / Y.std()
    other = torch.sin(3 * X[:, :1]) + X[:, 1:2]
    model = ModelListGP(
        SingleTaskGP(X, Z, train_Yvar=_sems(Z)), SingleTaskGP(X, other, train_Yvar=_sems(other))
    ).eval()
    assert not serves(model)
    kwargs = {
        "objective": GenericMCObjective(lambda samples, X=None: -samples[..., 0]),
        "constraints": [lambda samples: samples[..., 1] - 0.5],
    }
    acqfs = []
    for cls in (qLogNoisyExpectedImprovement, NewRowsqLogNEI):
        torch.manual_seed(0)  # the baseline's pruning draws samples
        acqfs.append(cls(model, X_baseline=X, **kwargs))
    stock, fast = acqfs
    assert isinstance(fast, NewRowsqLogNEI) and fast._new_rows is None
    first = X[:1] + 0.01  # the first candidate, then pending
    for acqf in (stock, fast):
        torch.manual_seed(1)  # set_X_pending prunes the baseline again
        acqf.set_X_pending(first)  # what sequential greedy optimization does
    assert fast._new_rows is None and torch.equal(fast.X_baseline, stock.X_baseline)
    g = torch.Generator().manual_seed(4)
    points = {
        "the pending point": first.unsqueeze(0),
        "both at the pending point": first.expand(2, DIM).unsqueeze(0),
        "a baseline point twice": fast.X_baseline[:1].expand(2, DIM).unsqueeze(0),
        "random": torch.rand(6, 2, DIM, generator=g, dtype=torch.float64),
    }
    for name, Xq in points.items():
        Xq = Xq.clone().requires_grad_()
        v_stock, v_fast = stock(Xq), fast(Xq)
        (g_stock,) = torch.autograd.grad(v_stock.sum(), Xq)
        (g_fast,) = torch.autograd.grad(v_fast.sum(), Xq)
        assert torch.equal(v_fast, v_stock), name
        assert torch.equal(g_fast, g_stock), name


@pytest.mark.parametrize("sems", [False, True], ids=["noise_learned", "sems"])
def test_ax_builds_it_like_qlognei_and_optimizes_it(sems: bool) -> None:
    X, Y = _data(16)
    names = [f"x{i}" for i in range(DIM)]
    Z = (Y - Y.mean()) / Y.std()
    dataset = SupervisedDataset(
        X=X, Y=Z, Yvar=_sems(Z) if sems else None, feature_names=names, outcome_names=["f"]
    )
    digest = SearchSpaceDigest(feature_names=names, bounds=[(0.0, 1.0)] * DIM)
    surrogate = Surrogate()
    surrogate.fit([dataset], digest)
    candidates = {}
    for cls in (qLogNoisyExpectedImprovement, NewRowsqLogNEI):
        torch.manual_seed(0)
        acquisition = KernelDiscoveryAcquisition(
            surrogate=surrogate,
            search_space_digest=digest,
            torch_opt_config=TorchOptConfig(objective_weights=torch.tensor([[-1.0]])),
            botorch_acqf_class=cls,
        )
        assert type(acquisition.acqf) is cls
        if cls is NewRowsqLogNEI:  # with SEMs too (issue 30 item 16)
            assert acquisition.acqf._new_rows is not None
        candidates[cls], _, _ = acquisition.optimize(
            n=2,
            search_space_digest=digest,
            optimizer_options={"num_restarts": 2, "raw_samples": 32, "options": {"maxiter": 20}},
        )
    # the same optimization up to rounding (L-BFGS-B may amplify it: compare loosely)
    assert torch.allclose(
        candidates[NewRowsqLogNEI], candidates[qLogNoisyExpectedImprovement], atol=1e-4
    )


def _rows_in_unchunked(rows: torch.Tensor, table: torch.Tensor) -> torch.Tensor | None:
    """``_rows_in`` as it was (c00a207): the whole ``n_b x n x D`` comparison at once."""
    equal = (rows.unsqueeze(-2) == table.unsqueeze(-3)).all(dim=-1)
    found = equal.any(dim=-1)
    leading = int(found.to(torch.int8).cumprod(0).sum())
    if leading == 0:
        return None
    return equal[:leading].to(torch.int8).argmax(dim=-1)


class _LargestTensor(TorchFunctionMode):
    """Records the most elements of any tensor an operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor):
            self.largest = max(self.largest, out.numel())
        return out


def _baselines() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(7)
    table = torch.rand(30, 6, generator=g, dtype=torch.float64)
    table[4] = table[17]  # a repeated training point: the first one is found
    table[9, 0] = 0.0
    signed_zero = table[9].clone()
    signed_zero[0] = -0.0  # equal to 0.0, as == says
    pending = torch.rand(5, 6, generator=g, dtype=torch.float64)
    order = torch.randperm(30, generator=g)
    with_nan = table.clone()
    with_nan[2, 3] = float("nan")  # NaN == NaN is false: that row is found nowhere
    return {
        "nan": (with_nan[[0, 1, 2, 3]], with_nan),
        "observed": (table[order], table),
        "observed_then_pending": (torch.cat([table[order[:23]], pending]), table),
        "pending_between": (torch.cat([table[:3], pending[:1], table[3:]]), table),
        "repeated_and_signed_zero": (torch.stack([table[17], signed_zero, table[4]]), table),
        "none_found": (pending, table),
        "first_not_found": (torch.cat([pending[:1], table]), table),
        "empty": (table[:0], table),
    }


@pytest.mark.parametrize("case", list(_baselines()))
@pytest.mark.parametrize("max_elements", [1, 6 * 30 * 4, 6 * 30 * 7 + 5, 1 << 22])
def test_rows_in_equals_the_whole_comparison(case: str, max_elements: int) -> None:
    """Issue 30 item 15: the same index as comparing every row with every row, with its
    largest tensor bounded by the chunk."""
    rows, table = _baselines()[case]
    expected = _rows_in_unchunked(rows, table)
    with _LargestTensor() as probe:
        index = _rows_in(rows, table, max_elements=max_elements)
    if expected is None:
        assert index is None
    else:
        assert index is not None and torch.equal(index, expected)
    # a chunk of rows, one row, or the index itself
    assert probe.largest <= max(max_elements, table.shape[-1], rows.shape[0])


def test_rows_in_holds_no_n_b_by_n_by_d_tensor() -> None:
    """The default bound at a size where the whole comparison would be twice over it
    (at n = 400, D = 6392 it was 1 GB: +999 MB peak RSS)."""
    g = torch.Generator().manual_seed(0)
    table = torch.rand(64, 2048, generator=g, dtype=torch.float64)
    rows = torch.cat([table.flip(0), torch.rand(2, 2048, generator=g, dtype=torch.float64)])
    whole = rows.shape[0] * table.numel()
    assert whole > 2 * ROWS_IN_MAX_ELEMENTS
    with _LargestTensor() as probe:
        index = _rows_in(rows, table)
    assert index is not None and torch.equal(index, torch.arange(63, -1, -1))
    assert probe.largest <= ROWS_IN_MAX_ELEMENTS
    assert probe.largest < whole / 2
