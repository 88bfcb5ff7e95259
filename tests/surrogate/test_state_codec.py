"""The storable next-round state: row digests, the last choice, warm starts, dedup keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from ax_kernel_discovery.candidate import decode_keys, encode_keys
from ax_kernel_discovery.surrogate.state import (
    LastChoice,
    decode_tensors,
    encode_tensors,
    row_digests,
    warm_parameters,
)


def _rows(n: int, d: int = 4, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_row_digests_are_the_same_in_every_process() -> None:
    X = _rows(5)
    code = (
        "import torch, json; from ax_kernel_discovery.surrogate.state import row_digests; "
        "X = torch.rand(5, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64); "
        "print(json.dumps(row_digests(X)))"
    )
    outs = []
    for seed in ("1", "2"):  # Python's hash() of bytes differs between these processes
        env = {**os.environ, "PYTHONHASHSEED": seed, "OMP_NUM_THREADS": "1"}
        res = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert outs[0] == outs[1] == row_digests(X)
    assert len(set(row_digests(X))) == 5


def _old_rule(X_then: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, w: float) -> bool | None:
    """The strike rule as it was: new rows' best vs old rows' best, rows told by value."""
    seen = {r.numpy().tobytes() for r in X_then}
    is_new = torch.tensor([r.numpy().tobytes() not in seen for r in X])
    if not is_new.any() or is_new.all():
        return None
    y = Y.reshape(-1) * w
    return bool(y[is_new].max() > y[~is_new].max())


@pytest.mark.parametrize("weight", [1.0, -1.0])
def test_last_choice_judges_like_the_set_of_rows(weight: float) -> None:
    gen = torch.Generator().manual_seed(3)
    verdicts = set()
    for trial in range(200):
        n, k = 8 + trial % 5, 1 + trial % 3
        X = _rows(n + k, seed=trial)
        raw = torch.randn(n + k, 1, generator=gen, dtype=torch.float64)
        # Ax standardizes Y anew each round: an increasing affine map of the raw values
        y_then = (raw[:n] - raw[:n].mean()) / raw[:n].std()
        y_now = (raw - raw.mean()) / raw.std()
        choice = LastChoice.of("K", X[:n], y_then)
        got = choice.improved(X, y_now, weight)
        assert got == _old_rule(X[:n], X, y_now, weight)
        verdicts.add(got)
    assert verdicts == {True, False}
    same = LastChoice.of("K", X[:n], y_then)
    assert same.improved(X[:n], y_then, weight) is None  # no new rows
    assert same.improved(X[n:], y_now[n:], weight) is None  # old best row gone


def test_last_choice_is_small_and_json() -> None:
    X = _rows(1000, d=6392)
    choice = LastChoice.of("SL", X, torch.randn(1000, 1, dtype=torch.float64))
    assert len(json.dumps(choice.model_dump())) < 120  # whatever n and D
    assert LastChoice.model_validate_json(choice.model_dump_json()) == choice


def test_warm_parameters_round_trip_bit_for_bit() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(7, 3), torch.nn.Linear(3, 1)).double()
    warm = warm_parameters(model)
    assert all(v.dtype == torch.float32 for v in warm.values())
    assert warm.keys() == dict(model.named_parameters()).keys()
    back = decode_tensors(json.loads(json.dumps(encode_tensors(warm))))
    assert back.keys() == warm.keys()
    for key, value in warm.items():
        assert back[key].shape == value.shape
        assert torch.equal(back[key], value)
    with pytest.raises(ValueError, match="hold"):
        decode_tensors({**encode_tensors(warm), "shapes": [[1]] * len(warm)})


def test_warm_state_for_humanoid_size_is_bounded() -> None:
    """D = 6392: a population of 10 with one or two ARD leaves each, about 0.5 MB."""
    D = 6392
    warm = {
        f"m{i}": {
            "likelihood.noise_covar.raw_noise": torch.zeros(1),
            "mean_module.raw_constant": torch.zeros(()),
            "covar_module.inner.raw_outputscale": torch.zeros(()),
            **{
                f"covar_module.inner.base_kernel.kernels.{j}.raw_lengthscale": torch.zeros(1, D)
                for j in range(1 + i % 2)
            },
        }
        for i in range(10)
    }
    size = len(json.dumps({k: encode_tensors(v) for k, v in warm.items()}))
    numbers = 15 * D
    assert size < 1.4 * 4 * numbers + 10_000  # base64 of float32: 4/3 x 4 bytes a number
    assert size < 600_000


def test_dedup_keys_round_trip_compactly() -> None:
    keys = {f"{i:016x}" for i in range(0, 4000 * 7919, 7919)}
    encoded = encode_keys(keys)
    assert decode_keys(encoded) == keys
    assert len(encoded) <= 4 * len(keys) * 8 / 3 + 4  # 8 bytes a key, base64
    assert decode_keys(encode_keys([])) == set()
