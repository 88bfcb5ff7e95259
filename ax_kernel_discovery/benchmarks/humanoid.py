"""Humanoid: a linear locomotion policy for MuJoCo Humanoid (D = 17 x 376 = 6392).

The MuJoCo-policy benchmark of the LA-MCTS/BAxUS/BenchSuite line of work, on
Gymnasium's ``Humanoid-v4`` (``v5`` has 348 or 270 observation dimensions, not 376):

* ``x`` in ``[-1, 1]^6392`` **is** the policy matrix ``W`` (17 x 376, row-major), no
  extra scaling (the ARS policy's own entries lie in ``[-0.73, 0.73]``).
* Action ``a = clip(W (o - mean) / std, -0.4, 0.4)`` where ``mean``/``std`` are the
  ARS observation statistics from ``humanoid_v1_ars_lin_policy_plus.npz``
  (``arr_0 = [policy, mean, std]``). 41 of the 376 ``std`` entries are ``1e-8`` in
  that file (observations that were constant under the old MuJoCo 1.5 model) but
  vary under MuJoCo 3+/4, so every ``std < 1e-3`` is floored to 1.0 (``std_floor``);
  without the floor those inputs blow up by 1e8. Actions are clipped to the action
  space ``[-0.4, 0.4]^17``: upstream passes unclipped actions, which MuJoCo clamps
  but Gymnasium's control cost does not, giving rewards of -1e5 to -1e7.
* The value is the mean undiscounted return of ``n_rollouts`` episodes (default 1)
  reset with seeds ``seed, seed + 1, ...`` (default ``seed=0``), each at most 1000
  steps (the environment's time limit); maximise. Each evaluation is therefore
  deterministic. (BenchSuite averages 5 unseeded rollouts.)

Gymnasium and MuJoCo are optional (``pip install "gymnasium[mujoco]==1.4.0"``); the
module imports without them and :class:`Humanoid` raises
:class:`~ax_kernel_discovery.benchmarks.base.MissingDependencyError` when built.

References:
    H. Mania, A. Guy, B. Recht. Simple random search of static linear policies is
    competitive for reinforcement learning (ARS). NeurIPS 2018.
    L. Wang, R. Fonseca, Y. Tian. Learning Search Space Partition for Black-box
    Optimization using Monte Carlo Tree Search (LA-MCTS). NeurIPS 2020.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ax_kernel_discovery.benchmarks.base import BlackBoxProblem, MissingDependencyError
from ax_kernel_discovery.benchmarks.datasets import data_file

__all__ = ["Humanoid", "mujoco_available"]

ENV_ID = "Humanoid-v4"
POLICY_FILE = "humanoid_v1_ars_lin_policy_plus.npz"
N_ACTIONS = 17
N_OBS = 376
MAX_STEPS = 1000
INSTALL_HINT = 'pip install "gymnasium[mujoco]==1.4.0"'


def mujoco_available() -> bool:
    """Whether Gymnasium's MuJoCo environments can be imported."""
    try:
        import gymnasium  # noqa: F401
        import mujoco  # noqa: F401
    except ImportError:
        return False
    return True


def _make_env() -> Any:
    try:
        import gymnasium as gym
        import mujoco  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"Humanoid needs gymnasium with MuJoCo: {INSTALL_HINT} ({exc})"
        ) from exc
    with warnings.catch_warnings():
        # Humanoid-v4 is "out of date" in favour of v5, which has another observation size.
        warnings.simplefilter("ignore")
        return gym.make(ENV_ID)


class Humanoid(BlackBoxProblem):
    """Humanoid linear policy (D=6392, maximise the episode return).

    Args:
        data_dir: Folder whose ``humanoid_v1_ars_lin_policy_plus.npz`` replaces the
            bundled copy (default: ``AXKD_DATA_DIR``, else the copy shipped with the
            package).
        n_rollouts: Episodes averaged per evaluation.
        seed: Reset seed of the first episode (episode ``i`` uses ``seed + i``).
        max_steps: Step limit per episode (at most the environment's 1000).
        std_floor: ``std`` entries below 1e-3 are replaced by this value.
        n_workers: Default worker processes for batches.

    Example:
        >>> problem = Humanoid()
        >>> problem.evaluate_one(problem.ars_policy.ravel())
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        n_rollouts: int = 1,
        seed: int = 0,
        max_steps: int = MAX_STEPS,
        std_floor: float = 1.0,
        n_workers: int = 1,
    ) -> None:
        if n_rollouts < 1:
            raise ValueError(f"n_rollouts must be >= 1, got {n_rollouts}")
        self._env: Any = _make_env()  # fails early, with the install hint
        arr = np.load(data_file(POLICY_FILE, data_dir), allow_pickle=True)["arr_0"]
        policy, mean, std = (np.asarray(a, dtype=float) for a in arr)
        if policy.shape != (N_ACTIONS, N_OBS) or mean.shape != (N_OBS,):
            raise ValueError(f"{POLICY_FILE}: unexpected shapes {policy.shape}, {mean.shape}")
        self.ars_policy = policy
        self.obs_mean = mean
        self.obs_std = np.where(std < 1e-3, float(std_floor), std)
        self.n_rollouts = int(n_rollouts)
        self.seed = int(seed)
        self.max_steps = int(max_steps)
        space = self._env.action_space
        self.action_low = np.asarray(space.low, dtype=float)
        self.action_high = np.asarray(space.high, dtype=float)
        super().__init__(
            name="humanoid",
            dim=N_ACTIONS * N_OBS,
            lower=-1.0,
            upper=1.0,
            minimize=False,
            optimum=None,
            best_known=762.78,
            description=(
                f"Humanoid ({ENV_ID}, gymnasium + MuJoCo) linear policy 17x376 in [-1, 1], "
                "ARS observation normalisation (std floored at "
                f"{std_floor:g} where < 1e-3), actions clipped to [-0.4, 0.4]; mean return "
                f"of {n_rollouts} episode(s), seeds {seed}..{seed + n_rollouts - 1}, "
                f"<= {max_steps} steps; maximise."
            ),
            n_workers=n_workers,
        )

    def rollout(self, W: np.ndarray, seed: int) -> tuple[float, int]:
        """Run one episode with policy matrix ``W`` (17 x 376); return (return, steps)."""
        env = self._get_env()
        obs, _ = env.reset(seed=seed)
        total = 0.0
        steps = 0
        while steps < self.max_steps:
            action = W @ ((np.asarray(obs, dtype=float) - self.obs_mean) / self.obs_std)
            action = np.clip(action, self.action_low, self.action_high)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            steps += 1
            if terminated or truncated:
                break
        return total, steps

    def _evaluate_point(self, x: np.ndarray) -> float:
        W = np.asarray(x, dtype=float).reshape(N_ACTIONS, N_OBS)
        returns = [self.rollout(W, self.seed + i)[0] for i in range(self.n_rollouts)]
        return float(np.mean(returns))

    def _get_env(self) -> Any:
        if self._env is None:
            self._env = _make_env()
        return self._env

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_env"] = None  # environments are rebuilt in each process
        return state
