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

    python benchmarks/kernel_cost.py --n 100 --dim 100
    python benchmarks/kernel_cost.py --families rbf "rbf@kumaraswamy" "(rbf+sl)"

Families are short names of the kernel grammar (``rbf``, ``matern52@tanh``,
``(rq+poly2@tanh)``, ``(matern52*sl)``; see ``ax_kernel_discovery.expression``).
Torch runs single-threaded (``torch.set_num_threads(1)``, printed).
"""

from __future__ import annotations

import argparse
import logging
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.utils.common.logger import set_ax_logger_levels
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.utils.datasets import SupervisedDataset

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import Spec, formula, leaf
from ax_kernel_discovery.surrogate import candidate_model_config

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


def _surrogate(name: str | None, X: torch.Tensor, Y: torch.Tensor) -> Surrogate:
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
    surrogate.fit([dataset], digest, refit=False)
    return surrogate


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
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    set_ax_logger_levels(logging.ERROR)
    torch.manual_seed(0)
    X = torch.quasirandom.SobolEngine(args.dim, scramble=True, seed=0).draw(args.n).double()
    Y = (X - 0.5).pow(2).sum(-1, keepdim=True)
    Y = (Y - Y.mean()) / Y.std()
    print(
        f"torch {torch.__version__}, threads={torch.get_num_threads()}, n={args.n}, "
        f"D={args.dim}, q={args.q}, restarts={args.restarts}, raw samples={args.raw_samples}, "
        f"repeats={args.repeats} (medians)"
    )
    print("| family | step ms | ax_default step ms | step ratio | raw ms | raw ratio |")
    print("|---|---|---|---|---|---|")
    sizes = (args.q, args.restarts, args.raw_samples, args.repeats)
    for name in args.families:
        step, raw = step_costs(name, X, Y, *sizes)
        ref_step, ref_raw = step_costs(None, X, Y, *sizes)
        print(
            f"| {name} | {1e3 * step:.1f} | {1e3 * ref_step:.1f} | {step / ref_step:.2f} | "
            f"{1e3 * raw:.0f} | {raw / ref_raw:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
