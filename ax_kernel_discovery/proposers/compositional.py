"""Compositional kernel search (Duvenaud et al., 2013) as a proposer.

The baseline "Compositional Search" of the paper: each round, the kernel with the
best (lowest) BIC is expanded by adding and multiplying each base kernel,

.. math::

    S \\;\\to\\; S + B, \\qquad S \\;\\to\\; S \\times B,
    \\qquad B \\in \\{\\text{RBF}, \\text{Matern-5/2}, \\text{RQ}, \\text{BOCK}, \\text{SL}\\},

and the expansions compete with the population by BIC in the next fit. The search
depth of Duvenaud et al. counts the base kernels in an expression (level 1: a base
kernel, level 2: one operator, ...); ``max_depth=3`` allows at most three base
kernels, e.g. ``(RBF + RQ) x SL``. Sums are kept flat (``(A + B) + C`` is written
``A + B + C``, each summand with its own output scale), which also makes the reuse of
fitted hyperparameters a plain index shift (see
:class:`ax_kernel_discovery.baselines.compositional.CompositionalSearchSurrogate`).

Unlike the offline evolution operator there is no randomness. In the first round the
base kernels are only scored (level 1 of the search); from then on each BO round takes
one greedy expansion step of Duvenaud et al. from the best-scoring member whose
expansions have not all been tried yet (an expansion is proposed once per proposer
instance; when all of the best member's expansions were tried, the next best member is
expanded, and when none is left the proposer returns nothing and the population is
only re-scored on the new data).

The proposer never sees data; it reads the members' formulas and scores only.

Reference:
    D. Duvenaud, J. R. Lloyd, R. Grosse, J. B. Tenenbaum, Z. Ghahramani. Structure
    Discovery in Nonparametric Regression through Compositional Kernel Search.
    ICML 2013.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from ax_kernel_discovery.candidate import KernelCandidate, Rejection
from ax_kernel_discovery.expression import Spec, leaf, leaves, short_name
from ax_kernel_discovery.expression import formula as spec_formula
from ax_kernel_discovery.population import START_SET, MemberSummary, base_candidate
from ax_kernel_discovery.proposers.base import (
    Proposal,
    Proposer,
    SeenKeysMixin,
)

OPERATORS: tuple[str, ...] = ("sum", "product")


def expand(spec: Spec, base: Spec, op: str) -> Spec:
    """``spec + base`` or ``spec x base``, flattening nested sums (``(A + B) + C = A + B + C``).

    Products are not flattened: ``(A x B) x C`` keeps ``A x B`` as one part, so the
    parts of an expansion always map to sub-kernels of the parents (see
    :func:`expansion_parts`).
    """
    if op not in OPERATORS:
        raise ValueError(f"unknown operator {op!r}; use one of {OPERATORS}")
    base = copy.deepcopy(base)
    if op == "sum" and spec.get("op") == "sum":
        return {"op": "sum", "args": [copy.deepcopy(a) for a in spec["args"]] + [base]}
    return {"op": op, "args": [copy.deepcopy(spec), base]}


def num_base_kernels(spec: Spec) -> int:
    """Search depth of Duvenaud et al.: the number of base kernels in ``spec``."""
    return len(list(leaves(spec)))


class CompositionalProposer(SeenKeysMixin, Proposer):
    """Expand the best member by ``+ B`` and ``x B`` for each base kernel ``B``.

    Args:
        base_kernels: Names of the base kernels (default: the paper's start set).
        max_depth: Maximum number of base kernels in an expression (Duvenaud et al.'s
            search depth; the paper uses 3).
        operators: Which of ``"sum"`` / ``"product"`` to use.

    Example:
        >>> from ax_kernel_discovery.population import Population, start_candidates
        >>> pop = Population(start_candidates())
        >>> for i, m in enumerate(pop):
        ...     pop.set_score(m.name, float(i))
        >>> out = CompositionalProposer().propose(pop.summaries(), 10, 10, 1)
        >>> len(out.candidates)  # RBF x 5 base kernels x (sum, product)
        10
    """

    name = "compositional"

    def __init__(
        self,
        base_kernels: Sequence[str] = START_SET,
        max_depth: int = 3,
        operators: Sequence[str] = OPERATORS,
    ) -> None:
        if max_depth < 2:
            raise ValueError(f"max_depth must be >= 2 (one composition), got {max_depth}")
        bad = [op for op in operators if op not in OPERATORS]
        if bad or not operators:
            raise ValueError(
                f"operators must be a non-empty subset of {OPERATORS}, got {list(operators)}"
            )
        self.base_kernels = tuple(base_kernels)
        self.base_specs = [leaf(k) for k in self.base_kernels]
        self.max_depth = int(max_depth)
        self.operators = tuple(operators)
        self._seen: set[str] = set()

    def propose(
        self,
        members: Sequence[MemberSummary],
        dim: int,
        num_proposals: int,
        round_index: int,
    ) -> Proposal:
        proposal = Proposal()
        scored = [m for m in members if m.candidate.spec is not None and m.score is not None]
        if not scored:
            # level 1 of the search: the base kernels are scored before anything is expanded
            return proposal
        known = {m.candidate.key for m in members} | self._seen
        # members arrive best first; expand the best one that still has untried expansions
        for parent in scored:
            spec = parent.candidate.spec
            assert spec is not None
            if num_base_kernels(spec) >= self.max_depth:
                continue
            for base_name, base in zip(self.base_kernels, self.base_specs, strict=True):
                for op in self.operators:
                    if len(proposal.candidates) >= num_proposals:
                        return proposal
                    new = expand(spec, base, op)
                    cand = KernelCandidate(
                        name=f"cs_r{round_index}:{short_name(new)}",
                        formula=spec_formula(new),
                        origin="offline",
                        parents=(parent.name, base_candidate(base_name).name),
                        spec=new,
                    )
                    if cand.key in known:
                        continue
                    known.add(cand.key)
                    self._seen.add(cand.key)
                    proposal.candidates.append(cand)
            if proposal.candidates:
                return proposal
        proposal.rejections.append(
            Rejection(
                name=self.name,
                stage="proposal",
                reason=f"search exhausted: every expansion up to {self.max_depth} base kernels was tried",
            )
        )
        return proposal


__all__ = ["OPERATORS", "CompositionalProposer", "expand", "num_base_kernels"]
