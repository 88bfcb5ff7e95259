"""What one acquisition-optimizer step costs through each kernel family.

The acquisition optimizer (L-BFGS-B on qLogNEI) evaluates the model's joint posterior
and its gradient at every step, for every restart. This script builds, for each kernel
family, the GP Ax builds for it (``candidate_model_config`` through Ax's ``Surrogate``, default
initial hyperparameters, ``n`` Sobol training points in ``[0, 1]^D``), wraps it in
qLogNEI as Ax does (baseline = training points, pruned) and times, at the acquisition's
shapes (``restarts x q x D``; Ax optimizes a joint batch greedily, one point at a time
with the earlier ones pending, so ``q`` is the size of its last and largest step):

* ``step``: one forward + backward pass of the acquisition value (one L-BFGS-B step);
* ``raw``: one forward pass over ``raw_samples`` initial batches, without gradients (the
  initialization of the restarts);

each as the median of ``--repeats`` timings after a warm-up (the posterior caches are
then built, as during an optimization), and the ratio to Ax's default model (the
dimension-scaled RBF) measured in the same run, alternating family and reference.
The ``before`` columns time the family's step again with the member's cross-covariance
against the training rows computed once per batch entry, as it was before
:func:`~ax_kernel_discovery.surrogate.discovered.shared_rows` (issue 51: one copy of the
training rows for every candidate), and ``gain`` is before / now.

``--optimize`` measures a whole acquisition instead: each family's GP and Ax's default
model are *fitted* (Ax's ``Surrogate.fit``) to ``n`` Sobol points of a problem of
:data:`~ax_kernel_discovery.benchmarks.PROBLEMS` (``--problem``; its values standardized
and signed so that larger is better), and qLogNEI is optimized for ``q`` points as Ax's
``Client`` does by default (Ax's ``optimizer_defaults``: 20 restarts, 1024 raw samples,
batch limits 32 / 20, one point at a time with the earlier ones pending), through the
optimizer kd's acquisition uses (:func:`~ax_kernel_discovery.surrogate.acquisition.gen_candidates_scipy_unfixed`,
hyperparameters constant). It prints the number of acquisition evaluations (forward
passes; deterministic for a seed), the candidate rows they evaluated, and the CPU seconds
of the optimization, with each ratio to Ax's default model, and the CPU seconds *before*
(training rows once per batch entry, as above), their gain, and whether the optimization
found the same candidates both ways (``max |dx|``: the largest difference of a
coordinate):

    python benchmarks/kernel_cost.py --n 100 --dim 100
    python benchmarks/kernel_cost.py --families rbf "rbf@kumaraswamy" "(rbf+sl)"
    python benchmarks/kernel_cost.py --optimize --problem svm --n 60 --q 3 --families rbf sl

Families are short names of the kernel grammar (``rbf``, ``matern52@tanh``,
``(rq+poly2@tanh)``, ``(matern52*sl)``; see ``ax_kernel_discovery.expression``).
Torch runs single-threaded (``torch.set_num_threads(1)``, printed).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.optimizer_defaults import (
    BATCH_LIMIT,
    INIT_BATCH_LIMIT,
    NUM_RESTARTS,
    RAW_SAMPLES,
)
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.utils.common.logger import set_ax_logger_levels
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.optim import optimize_acqf
from botorch.utils.datasets import SupervisedDataset

from ax_kernel_discovery.benchmarks import get_problem
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import Spec, formula, leaf
from ax_kernel_discovery.surrogate import candidate_model_config, discovered
from ax_kernel_discovery.surrogate.acquisition import gen_candidates_scipy_unfixed

FAMILIES = (
    "rbf",
    "matern52",
    "matern32",
    "rq",
    "bock",
    "sl",
    "poly2",
    "rbf@tanh",
    "rbf@arctan",
    "rbf@kumaraswamy",
    "rbf@spherical",
    "rbf~iso",
    "(rbf+sl)",
    "(matern52*sl)",
    "(rq+poly2@tanh)",
    "(matern32@kumaraswamy*matern52)",
    "(rbf+rbf@kumaraswamy)",
    "(matern52+(rbf*poly2@kumaraswamy))",
)


def parse_short_name(text: str) -> Spec:
    """The spec of a short name (``expression.short_name``'s inverse), e.g. ``(rbf+sl@tanh)``."""
    tokens = re.findall(r"[()+*]|[a-z0-9_]+(?:@[a-z]+)?(?:~iso)?", text)
    if "".join(tokens) != text.replace(" ", ""):
        raise ValueError(f"not a kernel short name: {text!r}")
    pos = 0

    def node() -> Spec:
        nonlocal pos
        token = tokens[pos]
        pos += 1
        if token != "(":
            name, _, rest = token.partition("@")
            warp, iso = rest.removesuffix("~iso"), token.endswith("~iso")
            return leaf(name.removesuffix("~iso"), warp or "identity", ard=not iso)
        args, ops = [node()], set()
        while tokens[pos] != ")":
            ops.add(tokens[pos])
            pos += 1
            args.append(node())
        pos += 1
        if len(ops) != 1:
            raise ValueError(f"mixed operators in {text!r}: use parentheses")
        return {"op": "sum" if ops == {"+"} else "product", "args": args}

    spec = node()
    if pos != len(tokens):
        raise ValueError(f"trailing text in kernel short name {text!r}")
    return spec


def _surrogate(name: str | None, X: torch.Tensor, Y: torch.Tensor, fit: bool = False) -> Surrogate:
    names = [f"x{i}" for i in range(X.shape[-1])]
    dataset = SupervisedDataset(X=X, Y=Y, feature_names=names, outcome_names=["f"])
    digest = SearchSpaceDigest(feature_names=names, bounds=[(0.0, 1.0)] * X.shape[-1])
    if name is None:
        surrogate = Surrogate()
    else:
        spec = parse_short_name(name)
        cand = KernelCandidate(name=name, formula=formula(spec), origin="baseline", spec=spec)
        surrogate = Surrogate(
            surrogate_spec=SurrogateSpec(model_configs=[candidate_model_config(cand)])
        )
    surrogate.fit([dataset], digest, refit=fit)
    return surrogate


@contextlib.contextmanager
def batched_train_rows() -> Iterator[None]:
    """Members evaluate their cross-covariances against the training rows once per batch
    entry, as before :func:`~ax_kernel_discovery.surrogate.discovered.shared_rows`."""
    shared_rows = discovered.shared_rows
    discovered.shared_rows = lambda x1, x2: None  # type: ignore[assignment]
    try:
        yield
    finally:
        discovered.shared_rows = shared_rows  # type: ignore[assignment]


def _median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up: builds the posterior caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def step_costs(
    name: str | None,
    X: torch.Tensor,
    Y: torch.Tensor,
    q: int,
    restarts: int,
    raw: int,
    repeats: int,
) -> tuple[float, float]:
    """Median seconds of one forward+backward step and of one raw-sample pass."""
    model = _surrogate(name, X, Y).model
    acqf = qLogNoisyExpectedImprovement(model=model, X_baseline=X, prune_baseline=True)
    gen = torch.Generator().manual_seed(1)
    Xq = torch.rand(restarts, q, X.shape[-1], generator=gen, dtype=X.dtype)
    Xraw = torch.rand(raw, q, X.shape[-1], generator=gen, dtype=X.dtype)

    def step() -> None:
        x = Xq.clone().requires_grad_(True)
        acqf(x).sum().backward()

    def raw_pass() -> None:
        with torch.no_grad():
            acqf(Xraw)

    return _median_seconds(step, repeats), _median_seconds(raw_pass, max(repeats // 4, 1))


def problem_data(problem: str, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` scrambled Sobol points (seed 0) in ``[0, 1]^D`` and the problem's values
    there, standardized and signed so that larger is better."""
    prob = get_problem(problem)
    X = torch.quasirandom.SobolEngine(prob.dim, scramble=True, seed=0).draw(n).double()
    lower = torch.as_tensor(prob.lower, dtype=X.dtype)
    upper = torch.as_tensor(prob.upper, dtype=X.dtype)
    values = torch.as_tensor(prob.evaluate((lower + X * (upper - lower)).numpy()))
    Y = values.to(X).reshape(-1, 1)
    Y = (Y - Y.mean()) / Y.std()
    return X, -Y if prob.minimize else Y


def optimize_costs(
    name: str | None, X: torch.Tensor, Y: torch.Tensor, q: int, seed: int = 0
) -> dict[str, float]:
    """One acquisition as Ax's ``Client`` runs it by default, through ``name``'s fitted GP
    (``None``: Ax's default model): its evaluations (forward passes), the candidate rows
    they evaluated, its CPU seconds (``time.process_time``) and the candidates
    (``"x"``, a tensor)."""
    torch.manual_seed(seed)
    model = _surrogate(name, X, Y, fit=True).model
    acqf = qLogNoisyExpectedImprovement(model=model, X_baseline=X, prune_baseline=True)
    counts = {"evaluations": 0, "rows": 0}
    forward = acqf.forward

    def counted(x: torch.Tensor) -> torch.Tensor:
        counts["evaluations"] += 1
        counts["rows"] += x.shape[0]
        return forward(x)

    acqf.forward = counted  # type: ignore[method-assign]
    for p in model.parameters():  # constants while it optimizes, as in kd's acquisition
        p.requires_grad_(False)
    bounds = torch.stack([torch.zeros(X.shape[-1]), torch.ones(X.shape[-1])]).to(X)
    torch.manual_seed(seed)
    start = time.process_time()
    x, _ = optimize_acqf(
        acqf,
        bounds=bounds,
        q=q,
        num_restarts=NUM_RESTARTS,
        raw_samples=RAW_SAMPLES,
        sequential=True,
        gen_candidates=gen_candidates_scipy_unfixed,
        options={"init_batch_limit": INIT_BATCH_LIMIT, "batch_limit": BATCH_LIMIT},
    )
    return {**counts, "cpu": time.process_time() - start, "x": x}


def main_optimize(args: argparse.Namespace) -> None:
    """``--optimize``: whole acquisitions per family against Ax's default model."""
    X, Y = problem_data(args.problem, args.n)
    print(
        f"torch {torch.__version__}, threads={torch.get_num_threads()}, problem={args.problem} "
        f"(D={X.shape[-1]}), n={args.n}, q={args.q}, Ax's Client optimizer defaults "
        f"({NUM_RESTARTS} restarts, {RAW_SAMPLES} raw samples, sequential), fitted GPs"
    )
    ref = optimize_costs(None, X, Y, args.q)
    print(
        f"Ax's default model: {ref['evaluations']} evaluations, {ref['rows']} rows, "
        f"{ref['cpu']:.2f} CPU s"
    )
    print(
        "| family | evaluations | ratio | rows | ratio | CPU s | ratio | CPU ms / evaluation "
        "| CPU s before | gain | max abs dx |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.families:
        c = optimize_costs(name, X, Y, args.q)
        with batched_train_rows():
            b = optimize_costs(name, X, Y, args.q)
        dx = float((c["x"] - b["x"]).abs().max())
        print(
            f"| {name} | {c['evaluations']} | {c['evaluations'] / ref['evaluations']:.2f} | "
            f"{c['rows']} | {c['rows'] / ref['rows']:.2f} | {c['cpu']:.2f} | "
            f"{c['cpu'] / ref['cpu']:.2f} | {1e3 * c['cpu'] / c['evaluations']:.1f} | "
            f"{b['cpu']:.2f} | {b['cpu'] / c['cpu']:.2f} | {dx:.1e} |",
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100, help="training points")
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--q", type=int, default=15, help="joint batch size")
    parser.add_argument("--restarts", type=int, default=2)
    parser.add_argument("--raw-samples", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--optimize",
        action="store_true",
        help="whole acquisitions (Ax's Client defaults) through fitted GPs of --problem",
    )
    parser.add_argument("--problem", default="svm", help="--optimize: the problem's data")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    set_ax_logger_levels(logging.ERROR)
    if args.optimize:
        main_optimize(args)
        return
    torch.manual_seed(0)
    X = torch.quasirandom.SobolEngine(args.dim, scramble=True, seed=0).draw(args.n).double()
    Y = (X - 0.5).pow(2).sum(-1, keepdim=True)
    Y = (Y - Y.mean()) / Y.std()
    print(
        f"torch {torch.__version__}, threads={torch.get_num_threads()}, n={args.n}, "
        f"D={args.dim}, q={args.q}, restarts={args.restarts}, raw samples={args.raw_samples}, "
        f"repeats={args.repeats} (medians)"
    )
    print(
        "| family | step ms | ax_default step ms | step ratio | raw ms | raw ratio "
        "| step ms before | gain | raw ms before | gain |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    sizes = (args.q, args.restarts, args.raw_samples, args.repeats)
    for name in args.families:
        step, raw = step_costs(name, X, Y, *sizes)
        ref_step, ref_raw = step_costs(None, X, Y, *sizes)
        with batched_train_rows():
            old_step, old_raw = step_costs(name, X, Y, *sizes)
        print(
            f"| {name} | {1e3 * step:.1f} | {1e3 * ref_step:.1f} | {step / ref_step:.2f} | "
            f"{1e3 * raw:.0f} | {raw / ref_raw:.2f} | {1e3 * old_step:.1f} | "
            f"{old_step / step:.2f} | {1e3 * old_raw:.0f} | {old_raw / raw:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
