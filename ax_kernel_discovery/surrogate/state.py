"""What a kernel-discovery surrogate carries from one round to the next, in storable form.

Ax saves a :class:`~ax_kernel_discovery.KernelDiscoverySurrogate` through
``_serialize_attributes_as_kwargs`` (JSON and SQL storage, ``clone_reset``); a run that
is saved and reloaded between every round (the Ax Service API behind a web service)
must make the same choices as one that never stops. Besides the population and the
history, the next round needs:

* **warm starts**: each member's fitted GP parameters (``named_parameters``, not
  buffers: priors, constraints and input transforms are rebuilt with the model). They
  are kept as float32 in memory *and* on disk, so that a reload reproduces them bit for
  bit; an L-BFGS start point needs no more than float32's seven digits. Stored as
  base64 of the raw float32 bytes: 4/3 x 4 bytes per number. One member of a
  D-dimensional problem holds about D numbers per ARD leaf (ARD lengthscales), so a
  population of 10 at D = 6392 with one or two ARD leaves per member stores about
  0.35-0.7 MB, once per saved strategy (Ax's own generator runs copy the search space,
  ~1.5 MB each at that D);
* **the last choice**, for the strike rule: the chosen member, how many training rows
  there were, and a digest of the best row for either direction. Rows are identified
  by a BLAKE2 digest of their bytes, stable across processes (Python's ``hash`` of
  bytes is salted per process by ``PYTHONHASHSEED``). Constant size, whatever the
  number of rounds;
* **the proposer's dedup keys** (the offline operator never proposes a kernel it has
  seen): 8 bytes per key seen, about 10-40 KB after 1000 rounds.

The dedup fingerprints (Gram signatures of the members on fixed reference points) are
recomputed from the members when needed, not saved: they depend only on the member and
the input dimension.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel
from torch import Tensor

from ax_kernel_discovery.candidate import decode_keys, encode_keys

__all__ = [
    "LastChoice",
    "decode_keys",
    "decode_tensors",
    "encode_keys",
    "encode_tensors",
    "row_digests",
    "warm_parameters",
]

_DIGEST_BYTES = 8


def row_digests(X: Tensor) -> list[str]:
    """A process-independent digest of each row of ``X`` (16 hex characters)."""
    rows = np.ascontiguousarray(X.detach().cpu().double().numpy())
    return [hashlib.blake2b(r.tobytes(), digest_size=_DIGEST_BYTES).hexdigest() for r in rows]


class LastChoice(BaseModel):
    """The kernel chosen last round and what the strike rule needs to judge its batch.

    Attributes:
        name: The chosen member.
        n: Number of training rows when it was chosen.
        best_high: Digest of the row with the highest observed value then.
        best_low: Digest of the row with the lowest observed value then (which one is
            the best depends on the objective's direction, unknown before the first
            acquisition).
    """

    name: str
    n: int
    best_high: str
    best_low: str

    @classmethod
    def of(cls, name: str, X: Tensor, Y: Tensor) -> LastChoice:
        y = Y.reshape(-1)
        digests = row_digests(X)
        return cls(
            name=name,
            n=int(X.shape[0]),
            best_high=digests[int(y.argmax())],
            best_low=digests[int(y.argmin())],
        )

    def improved(self, X: Tensor, Y: Tensor, weight: float) -> bool | None:
        """Whether the rows added since the choice beat the best value seen at the choice.

        Training data only grow between rounds, so the rows seen at the choice are
        still there and their best value is the best row's: the new rows improved on it
        exactly when the best value now is strictly above the old best row's (values
        times ``weight``, positive for maximization). Ax standardizes ``Y`` anew each
        round, an increasing affine map, which keeps the order of rows.

        Returns:
            ``None`` when there is nothing to judge: no rows were added, or the old
            best row is no longer in the data.
        """
        if X.shape[0] <= self.n or weight == 0:
            return None
        best = self.best_high if weight > 0 else self.best_low
        try:
            i = row_digests(X).index(best)
        except ValueError:
            return None
        y = Y.reshape(-1) * weight
        return bool(y.max() > y[i])


def warm_parameters(model: torch.nn.Module) -> dict[str, Tensor]:
    """A fitted model's parameters as float32 CPU copies (what the next fit starts from)."""
    return {
        name: p.detach().to(device="cpu", dtype=torch.float32, copy=True)
        for name, p in model.named_parameters()
    }


def encode_tensors(tensors: Mapping[str, Tensor]) -> dict[str, Any]:
    """float32 tensors -> ``{"keys", "shapes", "data"}`` (data: base64 of the raw bytes)."""
    keys = list(tensors)
    flat = [tensors[k].detach().to(device="cpu", dtype=torch.float32).reshape(-1) for k in keys]
    data = torch.cat(flat).numpy().astype("<f4").tobytes() if flat else b""
    return {
        "keys": keys,
        "shapes": [list(tensors[k].shape) for k in keys],
        "data": base64.b64encode(data).decode("ascii"),
    }


def decode_tensors(encoded: Mapping[str, Any]) -> dict[str, Tensor]:
    """Inverse of :func:`encode_tensors` (float32 CPU tensors)."""
    values = np.frombuffer(base64.b64decode(encoded["data"]), dtype="<f4")
    out: dict[str, Tensor] = {}
    start = 0
    for key, shape in zip(encoded["keys"], encoded["shapes"], strict=True):
        size = int(np.prod(shape)) if shape else 1
        out[key] = torch.from_numpy(values[start : start + size].copy()).reshape(shape)
        start += size
    if start != values.size:
        raise ValueError(f"encoded tensors hold {values.size} numbers, the shapes {start}")
    return out
