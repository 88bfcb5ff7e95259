"""Lasso-DNA: LassoBench's weighted-Lasso hyperparameter problem on the DNA data.

Our own re-implementation of ``LassoBench.RealBenchmark(pick_data="dna").evaluate``
(Šehić et al. 2022; PyPI ``lasso-bench-fork-leoiv`` 0.0.6 with
``sparse-ho-fork-leoiv``), not the package: the package pulls ``GPy``,
``ax-platform`` (unpinned), ``hyperopt``, ``numba``, ``seaborn``, ``pyDOE``,
``libsvmdata`` and ``download`` and fetches its data from the network, while the
objective itself is a few lines of scikit-learn. The construction, step by step as
in LassoBench:

1. ``X, y`` = LIBSVM ``dna.scale`` (2000 rows, 180 binary features, labels 1/2/3 used
   as a regression target), read from ``dna.scale.gz`` (shipped with the package).
2. ``train_test_split(X, y, test_size=0.15, random_state=42)``; only the 1700
   training rows are used by the objective.
3. ``alpha_max = max |X_train^T y_train| / n_train``, ``alpha_min = alpha_max / 1e5``.
4. ``x`` in ``[-1, 1]^180`` maps to per-feature log-penalties
   ``log w = x (log alpha_max - log alpha_min) / 2 + (log alpha_max + log alpha_min) / 2``
   (natural logarithms).
5. For each fold of ``KFold(n_splits=5, shuffle=True, random_state=42)`` on the
   training rows, fit the weighted Lasso without intercept,
   ``min_b 1/(2 n) ||y - X b||^2 + sum_j w_j |b_j|``, on the fold's training part
   and take the mean squared error on its validation part.
6. The value is the mean of the five validation MSEs (minimise).

LassoBench solves step 5 with ``celer.Lasso(tol=1e-4, max_iter=100)``, an inexact
solve. By default we solve it to convergence (scikit-learn coordinate descent on the
problem rescaled to a plain Lasso, ``b_j = b'_j / w_j`` with ``X'_j = X_j / w_j``, on a
precomputed Gram matrix, duality-gap tolerance 1e-10): at ``x = 0`` this gives
0.30467, LassoBench (celer 0.7.4) gives 0.30446 (the published 0.3045); on random
points the two agree to about 4e-5. ``solver="celer"`` reproduces LassoBench's exact
numbers when ``celer`` is installed.

Reference:
    K. Šehić, A. Gramfort, J. Salmon, L. Nardi. LassoBench: A High-Dimensional
    Hyperparameter Optimization Benchmark Suite for Lasso. AutoML 2022.
"""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path
from typing import Literal

import numpy as np

from ax_kernel_discovery.benchmarks.base import BlackBoxProblem, MissingDependencyError
from ax_kernel_discovery.benchmarks.datasets import data_file

__all__ = ["LassoDNA"]

N_FEATURES = 180
TEST_SIZE = 0.15
N_SPLITS = 5
SEED = 42
ALPHA_SCALE = 1e5
VALUE_AT_ZERO_LASSOBENCH = 0.3045

Solver = Literal["sklearn", "celer"]


def _require_sklearn() -> None:
    try:
        import sklearn  # noqa: F401
    except ImportError as exc:  # pragma: no cover - sklearn is in the bench extra
        raise MissingDependencyError(
            "Lasso-DNA needs scikit-learn: pip install scikit-learn (or, in a clone of "
            "ax-kernel-discovery, pip install '.[bench]')"
        ) from exc


class LassoDNA(BlackBoxProblem):
    """Lasso-DNA (D=180, minimise the 5-fold cross-validation MSE).

    Args:
        data_dir: Folder whose ``dna.scale.gz`` replaces the bundled copy (default:
            ``AXKD_DATA_DIR``, else the copy shipped with the package).
        solver: ``"sklearn"`` (default, converged solve, see the module docstring) or
            ``"celer"`` (LassoBench's own inexact solver settings; needs ``celer``).
        tol: Duality-gap tolerance of the scikit-learn solver.
        n_workers: Default worker processes for batches.

    Example:
        >>> problem = LassoDNA()
        >>> problem.evaluate_one(np.zeros(180))  # about 0.3047
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        solver: Solver = "sklearn",
        tol: float = 1e-10,
        n_workers: int = 1,
    ) -> None:
        if solver not in ("sklearn", "celer"):
            raise ValueError(f"solver must be 'sklearn' or 'celer', got {solver!r}")
        _require_sklearn()
        if solver == "celer":
            try:
                import celer  # noqa: F401
            except ImportError as exc:
                raise MissingDependencyError(
                    "LassoDNA(solver='celer') needs the celer package: pip install celer"
                ) from exc
        from scipy import sparse
        from sklearn.datasets import load_svmlight_file
        from sklearn.model_selection import KFold, train_test_split

        with gzip.open(data_file("dna.scale.gz", data_dir), "rb") as fh:
            X, y = load_svmlight_file(fh, n_features=N_FEATURES)
        X = sparse.csc_matrix(X)
        X_train, _, y_train, _ = train_test_split(X, y, test_size=TEST_SIZE, random_state=SEED)
        alpha_max = np.max(np.abs(X_train.T @ y_train)) / len(y_train)
        self.log_alpha_max = float(np.log(alpha_max))
        self.log_alpha_min = float(np.log(alpha_max / ALPHA_SCALE))
        self.solver = solver
        self.tol = float(tol)
        kf = KFold(n_splits=N_SPLITS, shuffle=True, random_state=SEED)
        self._folds: list[tuple[np.ndarray, ...]] = []
        for idx_tr, idx_va in kf.split(X_train):
            Xa = X_train[idx_tr].toarray()
            ya = y_train[idx_tr]
            Xv = X_train[idx_va].toarray()
            yv = y_train[idx_va]
            self._folds.append((Xa, ya, Xa.T @ Xa, Xv, yv))
        if solver == "celer":
            self._sparse_folds = [
                (X_train[idx_tr], y_train[idx_tr], X_train[idx_va], y_train[idx_va])
                for idx_tr, idx_va in kf.split(X_train)
            ]
        super().__init__(
            name="lasso_dna",
            dim=N_FEATURES,
            lower=-1.0,
            upper=1.0,
            minimize=True,
            optimum=None,
            best_known=0.286,
            description=(
                "Lasso-DNA (LassoBench, Sehic et al. 2022): 180 per-feature weighted-Lasso "
                "log-penalties in [-1, 1], 5-fold CV MSE on the LIBSVM dna training split; "
                f"own re-implementation, solver={solver}; minimise."
            ),
            n_workers=n_workers,
        )

    def log_penalties(self, x: np.ndarray) -> np.ndarray:
        """Natural-log per-feature penalties for one point ``x`` in ``[-1, 1]^180``."""
        lo, hi = self.log_alpha_min, self.log_alpha_max
        return np.asarray(x) * (hi - lo) / 2.0 + (hi + lo) / 2.0

    def _evaluate_point(self, x: np.ndarray) -> float:
        w = np.exp(self.log_penalties(x))
        if self.solver == "celer":
            return self._evaluate_celer(w)
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import Lasso

        losses = []
        for Xa, ya, gram, Xv, yv in self._folds:
            model = Lasso(
                alpha=1.0,
                fit_intercept=False,
                precompute=gram / np.outer(w, w),
                tol=self.tol,
                max_iter=100_000,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(Xa / w, ya)
            coef = model.coef_ / w
            losses.append(float(np.mean((yv - Xv @ coef) ** 2)))
        return float(np.mean(losses))

    def _evaluate_celer(self, w: np.ndarray) -> float:
        from celer import Lasso as CelerLasso

        losses = []
        for Xa, ya, Xv, yv in self._sparse_folds:
            est = CelerLasso(fit_intercept=False, max_iter=100, warm_start=False, tol=1e-4)
            est.weights = w
            est.fit(Xa, ya)
            mask = est.coef_ != 0
            resid = yv - Xv[:, mask] @ est.coef_[mask]
            losses.append(float(np.linalg.norm(resid) ** 2 / len(yv)))
        return float(np.mean(losses))
