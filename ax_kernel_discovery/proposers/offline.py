"""The offline evolution operator: the default proposer, no LLM and no network.

Each round it makes new kernels from the population's expression trees by

* **mutation** of one member: change a leaf's input warp (tanh, arctan, Kumaraswamy,
  spherical/stereographic), swap the base function of a distance kernel (RBF,
  Matern-5/2, Matern-3/2, RQ), make a distance kernel isotropic with
  :math:`\\sqrt{D}`-scaled distance (one lengthscale instead of D), or multiply/add a
  polynomial feature map of the inner product :math:`(u^\\top u' + c)^2`;
* **composition** of two members: sum or product (the paper's composition call).

With ``grammar="extended"`` (config ``offline_grammar``) the same operations also draw
the extended grammar of :mod:`ax_kernel_discovery.expression`: the feature maps
``bezier``, ``radius`` and ``direction`` as warps, the inverse multiquadric in the
base-function swap, and a cubic polynomial feature. The default, ``"classic"``, makes
exactly the proposals it made before the grammar was extended (same random draws).

Every operation maps PSD kernels to PSD kernels, so the results are PSD by
construction (they are still validated). The operator is deterministic given its seed
and the round index. Members written as code (LLM kernels) take part in compositions
only through the LLM proposer; this operator works on expression trees.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Literal

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.expression import (
    DISTANCE_KERNELS,
    EXTENDED_DISTANCE_KERNELS,
    ISOTROPIC_LEAVES,
    WARPS,
    Spec,
    depth,
    formula,
    leaves,
    short_name,
    validate_spec,
)
from ax_kernel_discovery.kernels import LEAVES
from ax_kernel_discovery.kernels.warped import WARP_FORMULAS
from ax_kernel_discovery.population import MemberSummary
from ax_kernel_discovery.proposers.base import (
    Proposal,
    Proposer,
    SeenKeysMixin,
)

MUTATIONS: tuple[str, ...] = ("warp", "swap_base", "isotropic", "poly_feature")
CLASSIC_WARPS: tuple[str, ...] = tuple(w for w in WARP_FORMULAS if w != "identity")
EXTENDED_WARPS: tuple[str, ...] = tuple(w for w in WARPS if w != "identity")
Grammar = Literal["classic", "extended"]


class OfflineEvolutionProposer(SeenKeysMixin, Proposer):
    """Mutation and composition of expression-tree members (deterministic per seed).

    Args:
        seed: Base seed; round ``r`` uses ``seed * 100003 + r``.
        composition_fraction: Share of proposals made by composition.
        max_depth: Maximum depth of composed trees.
        max_leaves: Maximum number of leaf kernels in a tree.
        max_tries: Attempts per proposal before giving up on a novel kernel.
        grammar: ``"classic"`` (default: the leaves and warps it always used) or
            ``"extended"`` (also the feature maps, the inverse multiquadric and a
            cubic polynomial feature).

    Example:
        >>> from ax_kernel_discovery.population import Population, start_candidates
        >>> pop = Population(start_candidates())
        >>> out = OfflineEvolutionProposer(seed=0).propose(pop.summaries(), dim=10, num_proposals=3, round_index=0)
        >>> len(out.candidates)
        3
    """

    name = "offline"

    def __init__(
        self,
        seed: int = 0,
        composition_fraction: float = 0.34,
        max_depth: int = 3,
        max_leaves: int = 4,
        max_tries: int = 50,
        grammar: Grammar = "classic",
    ) -> None:
        if grammar not in ("classic", "extended"):
            raise ValueError(f"grammar must be 'classic' or 'extended', got {grammar!r}")
        extended = grammar == "extended"
        self.grammar = grammar
        self._warps = EXTENDED_WARPS if extended else CLASSIC_WARPS
        self._distance = EXTENDED_DISTANCE_KERNELS if extended else DISTANCE_KERNELS
        self._polys = tuple(
            k for k, v in LEAVES.items() if v.polynomial and (extended or v.tier == "classic")
        )
        self.seed = seed
        self.composition_fraction = composition_fraction
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.max_tries = max_tries
        self._seen: set[str] = set()

    def propose(
        self,
        members: Sequence[MemberSummary],
        dim: int,
        num_proposals: int,
        round_index: int,
    ) -> Proposal:
        rng = random.Random(self.seed * 100003 + round_index)
        trees = [m for m in members if m.candidate.spec is not None]
        proposal = Proposal()
        if not trees:
            proposal.rejections.append(
                Rejection(
                    name="offline", stage="proposal", reason="no expression-tree members to evolve"
                )
            )
            return proposal
        self._seen.update(m.candidate.key for m in members)
        num_compose = round(num_proposals * self.composition_fraction) if len(trees) > 1 else 0
        for i in range(num_proposals):
            for attempt in range(self.max_tries):
                # compositions can run out (depth/leaf limits): fall back to mutation
                compose = i < num_compose and attempt < self.max_tries // 2
                made = self._compose(trees, rng) if compose else self._mutate(trees, rng)
                if made is None:
                    continue
                spec, parents, op = made
                cand = self._candidate(spec, parents, op, round_index, i)
                if cand.key in self._seen:
                    continue
                self._seen.add(cand.key)
                proposal.candidates.append(cand)
                break
            else:
                proposal.rejections.append(
                    Rejection(
                        name=f"off_r{round_index}_{i}",
                        stage="proposal",
                        reason="no novel kernel found",
                    )
                )
        return proposal

    # --- operators -----------------------------------------------------------------

    @staticmethod
    def _pick(trees: Sequence[MemberSummary], rng: random.Random) -> MemberSummary:
        """Rank-weighted choice: the best member is the most likely parent."""
        weights = [1.0 / (rank + 1) for rank in range(len(trees))]
        return rng.choices(list(trees), weights=weights, k=1)[0]

    def _mutate(
        self, trees: Sequence[MemberSummary], rng: random.Random
    ) -> tuple[Spec, list[str], str] | None:
        parent = self._pick(trees, rng)
        spec = copy.deepcopy(parent.candidate.spec)
        assert spec is not None
        op = rng.choice(MUTATIONS)
        nodes = list(leaves(spec))
        if op == "warp":
            node = rng.choice(nodes)
            node["warp"] = rng.choice(
                [w for w in (*self._warps, "identity") if w != node.get("warp", "identity")]
            )
        elif op == "swap_base":
            dist = [n for n in nodes if n["kernel"] in self._distance]
            if not dist:
                return None
            node = rng.choice(dist)
            node["kernel"] = rng.choice([k for k in self._distance if k != node["kernel"]])
        elif op == "isotropic":
            dist = [n for n in nodes if n["kernel"] in ISOTROPIC_LEAVES]
            if not dist:
                return None
            node = rng.choice(dist)
            node["ard"] = not node.get("ard", True)
        else:  # poly_feature
            poly_warps = ("identity", "tanh", "bezier") if self.grammar == "extended" else None
            kernel = rng.choice(self._polys) if self.grammar == "extended" else "poly2"
            warp = rng.choice(poly_warps or ("identity", "tanh"))
            poly = {"kernel": kernel, "warp": warp, "ard": True}
            spec = {"op": rng.choice(("sum", "product")), "args": [spec, poly]}
        return self._checked(spec, [parent.name], op)

    def _compose(
        self, trees: Sequence[MemberSummary], rng: random.Random
    ) -> tuple[Spec, list[str], str] | None:
        first = self._pick(trees, rng)
        others = [t for t in trees if t.name != first.name]
        if not others:
            return None
        second = rng.choice(others)
        op = rng.choice(("sum", "product"))
        spec = {
            "op": op,
            "args": [copy.deepcopy(first.candidate.spec), copy.deepcopy(second.candidate.spec)],
        }
        return self._checked(spec, [first.name, second.name], op)

    def _checked(
        self, spec: Spec, parents: list[str], op: str
    ) -> tuple[Spec, list[str], str] | None:
        if depth(spec) > self.max_depth or len(list(leaves(spec))) > self.max_leaves:
            return None
        try:
            validate_spec(spec)
        except ValueError:
            return None
        return spec, parents, op

    @staticmethod
    def _candidate(
        spec: Spec, parents: list[str], op: str, round_index: int, i: int
    ) -> KernelCandidate:
        return KernelCandidate(
            name=f"off_r{round_index}_{i}:{short_name(spec)}",
            formula=formula(spec),
            origin="offline",
            parents=tuple(parents),
            spec=spec,
        )
