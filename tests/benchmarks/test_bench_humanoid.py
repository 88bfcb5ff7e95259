"""Humanoid (skipped without gymnasium + MuJoCo, except the missing-package error)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ax_kernel_discovery.benchmarks.base import MissingDependencyError
from ax_kernel_discovery.benchmarks.humanoid import Humanoid, mujoco_available


def test_missing_gymnasium_gives_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # import gymnasium -> ImportError
    assert not mujoco_available()
    with pytest.raises(MissingDependencyError, match=r"gymnasium\[mujoco\]"):
        Humanoid()


needs_mujoco = pytest.mark.skipif(not mujoco_available(), reason="gymnasium[mujoco] not installed")


@pytest.fixture
def humanoid() -> Humanoid:
    return Humanoid()


@needs_mujoco
def test_metadata(humanoid: Humanoid) -> None:
    assert (humanoid.name, humanoid.dim, humanoid.minimize) == ("humanoid", 6392, False)
    np.testing.assert_array_equal(humanoid.lower, -np.ones(6392))
    assert humanoid.obs_std.min() >= 1e-3  # floored
    assert humanoid.ars_policy.shape == (17, 376)


@needs_mujoco
def test_zero_policy_finite_and_deterministic(humanoid: Humanoid) -> None:
    x = np.zeros(6392)
    v1 = humanoid.evaluate_one(x)
    v2 = humanoid.evaluate_one(x)
    assert np.isfinite(v1) and v1 == v2
    # the alive bonus is 5 per step and the humanoid falls within ~1000 steps
    assert 0.0 < v1 < 5.0 * 1000 + 1.0


@needs_mujoco
def test_rollouts_and_seed() -> None:
    two = Humanoid(n_rollouts=2, seed=3, max_steps=50)
    W = two.ars_policy
    r3, steps3 = two.rollout(W, 3)
    r4, _ = two.rollout(W, 4)
    assert 0 < steps3 <= 50
    assert two.evaluate_one(W.ravel()) == pytest.approx((r3 + r4) / 2.0)


@needs_mujoco
def test_random_policies_clipped_actions_give_sane_returns(humanoid: Humanoid) -> None:
    X = np.random.default_rng(0).uniform(-1, 1, size=(2, 6392))
    y = humanoid.evaluate(X)
    assert np.all(np.isfinite(y)) and np.all(y > -1e3)  # no -1e5 control-cost blow-ups


@needs_mujoco
def test_picklable_without_env(humanoid: Humanoid) -> None:
    import pickle

    clone = pickle.loads(pickle.dumps(humanoid))
    assert clone._env is None
    x = np.zeros(6392)
    assert clone.evaluate_one(x) == humanoid.evaluate_one(x)
