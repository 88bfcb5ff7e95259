"""Selection rules: how a round scores its kernels and chooses among them, by name.

``KernelDiscoveryConfig.criterion`` names a :class:`SelectionRule`, registered in
:data:`SELECTION_RULES` by :func:`register_selection_rule`. The rule answers every
question of a round that depends on the criterion, so that no part of the surrogate
compares criterion names:

* how a fitted model is scored (:meth:`SelectionRule.fit_score`, from the noisy prior
  covariance with the maths of :mod:`ax_kernel_discovery.selection`), and whether that
  score leaves out the last BO batches (:attr:`SelectionRule.scores_batches`: the round
  hands it their rows);
* whether the members are judged by their forecasts of each new batch
  (:attr:`SelectionRule.scores_forecasts`: the round scores and keeps the forecasts, and
  records the fit scores beside the scores the choice compared);
* the score a member has before the round's fits (:meth:`SelectionRule.score_before_fits`):
  the members that have one, best first, are the order of choice, and the round takes
  the first of them whose fit succeeds, so its choice is known before its fits and
  its other kernels can be fitted in the background; where no member has one, the fit
  scores decide. The choice after the fits and the choice before them both read this
  one order, so they agree by construction;
* the score a member is ranked by after the fits (:meth:`SelectionRule.member_score`),
  and which members truncation keeps whatever their scores (:meth:`SelectionRule.protected`).

A rule of your own is a subclass registered by name before the config that names it is
made::

    @register_selection_rule("loo_crps_half")
    class HalfLOOCRPS(LOOCRPS):
        summary = "half the LOO-CRPS"

        def fit_score(self, K, y, num_params, blocks=None):
            return 0.5 * super().fit_score(K, y, num_params, blocks)

    KernelDiscoveryConfig(criterion="loo_crps_half")
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar, Literal, Protocol, TypeVar

from torch import Tensor

from ax_kernel_discovery.population import Member
from ax_kernel_discovery.selection import lbo_crps, log_marginal_likelihood, loo_crps

__all__ = [
    "BIC",
    "LBOCRPS",
    "LOOCRPS",
    "LOOCRPSBIC",
    "SELECTION_RULES",
    "NegativeMLL",
    "Prequential",
    "RuleSettings",
    "SelectionRule",
    "register_selection_rule",
    "selection_rule",
    "unknown_rule_message",
]


class RuleSettings(Protocol):
    """The settings a rule reads (a :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig`)."""

    @property
    def heldout_score(self) -> str:
        """The held-out loss: ``log`` or ``crps``."""
        ...

    @property
    def score_batches(self) -> int:
        """The most recent batches a score is over."""
        ...


class SelectionRule(ABC):
    """What a selection criterion decides in a round (see the module docstring).

    Subclasses implement :meth:`fit_score` and set :attr:`summary`; a rule that judges
    members before the fits overrides :meth:`score_before_fits`.

    Args:
        settings: The surrogate's settings (``heldout_score``, ``score_batches``).
    """

    #: The name it is registered by (the value of ``config.criterion``).
    name: ClassVar[str] = ""
    #: What it scores, in a line (the docs' table of criteria).
    summary: ClassVar[str] = ""
    #: Whether :meth:`fit_score` leaves out the last ``score_batches`` BO batches (they
    #: are handed to it as ``blocks``; ``score_top_k`` cannot be used with it).
    scores_batches: ClassVar[bool] = False
    #: Whether the members are judged by their forecasts of each new batch: each round
    #: scores the forecasts of the new batch and keeps them, and records the fit scores
    #: beside the scores the choice compared (mixtures, batch portfolios and the cost tie
    #: rule need this).
    scores_forecasts: ClassVar[bool] = False
    #: The tie rule that ``tie_break="auto"`` stands for under this rule.
    default_tie_break: ClassVar[Literal["none", "cost"]] = "none"

    def __init__(self, settings: RuleSettings) -> None:
        self.settings = settings

    @abstractmethod
    def fit_score(
        self, K: Tensor, y: Tensor, num_params: int, blocks: Sequence[Tensor] | None = None
    ) -> float:
        """The score of a fitted GP (lower is better).

        Args:
            K: Its noisy prior covariance (train mode).
            y: The centred targets.
            num_params: The kernel's number of scalar hyperparameters.
            blocks: Row indices of the last BO batches (only for a rule that
                :attr:`scores_batches`; ``None`` before the first BO batch).
        """

    def score_before_fits(self, member: Member) -> float | None:
        """The score ``member`` is chosen by before the round's fits (lower is better).

        ``None`` (here, for every member): the choice waits for this round's fit scores.
        """
        return None

    def member_score(self, member: Member, fit_score: float) -> float | None:
        """The score ``member`` is ranked by in the population once this round's fit
        scored it ``fit_score`` (``None``: not judged yet)."""
        return fit_score

    def protected(self, members: Iterable[Member]) -> list[str]:
        """The names of ``members`` that truncation keeps whatever their scores (here,
        none)."""
        return []


#: The selection rules by the name ``config.criterion`` takes.
SELECTION_RULES: dict[str, type[SelectionRule]] = {}

_RuleT = TypeVar("_RuleT", bound=type[SelectionRule])


def register_selection_rule(name: str) -> Callable[[_RuleT], _RuleT]:
    """Class decorator: register a :class:`SelectionRule` under ``name``.

    Example:
        >>> @register_selection_rule("doc_rule")
        ... class DocRule(LOOCRPS):
        ...     summary = "LOO-CRPS, registered again"
        >>> DocRule.name, SELECTION_RULES.pop("doc_rule") is DocRule
        ('doc_rule', True)

    Raises:
        ValueError: A rule is registered under ``name`` already.
    """

    def register(cls: _RuleT) -> _RuleT:
        if name in SELECTION_RULES:
            raise ValueError(
                f"a selection rule named {name!r} is registered already "
                f"({SELECTION_RULES[name].__qualname__})"
            )
        cls.name = name
        SELECTION_RULES[name] = cls
        return cls

    return register


def unknown_rule_message(name: str) -> str:
    """Why ``name`` is not a criterion, with the names of the registered rules."""
    names = [repr(k) for k in SELECTION_RULES]
    listed = " or ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)
    return (
        f"unknown criterion {name!r}: the selection rules are {listed} (a rule of your own "
        "is registered with ax_kernel_discovery.selection_rules.register_selection_rule)"
    )


def selection_rule(name: str, settings: RuleSettings) -> SelectionRule:
    """The rule registered under ``name``, reading ``settings``.

    Raises:
        ValueError: No rule is registered under ``name``.
    """
    cls = SELECTION_RULES.get(name)
    if cls is None:
        raise ValueError(unknown_rule_message(name))
    return cls(settings)


@register_selection_rule("loo_crps")
class LOOCRPS(SelectionRule):
    """The paper's criterion: the mean CRPS of the closed-form leave-one-out predictives
    (:func:`~ax_kernel_discovery.selection.loo_crps`)."""

    summary = "mean CRPS of the closed-form leave-one-out predictions (``loo_crps``)"

    def fit_score(
        self, K: Tensor, y: Tensor, num_params: int, blocks: Sequence[Tensor] | None = None
    ) -> float:
        return float(loo_crps(K, y))


@register_selection_rule("loo_crps_bic")
class LOOCRPSBIC(SelectionRule):
    """LOO-CRPS plus a BIC-like penalty :math:`|\\theta| \\log n / n` (for D >> n)."""

    summary = "LOO-CRPS plus ``|theta| log n / n`` (for D >> n)"

    def fit_score(
        self, K: Tensor, y: Tensor, num_params: int, blocks: Sequence[Tensor] | None = None
    ) -> float:
        n = y.shape[-1]
        return float(loo_crps(K, y) + num_params * math.log(n) / n)


@register_selection_rule("lbo_crps")
class LBOCRPS(LOOCRPS):
    """The mean CRPS of the closed-form leave-block-out predictives, the blocks being the
    last BO batches (:func:`~ax_kernel_discovery.selection.lbo_crps`); LOO-CRPS while
    there are none."""

    summary = (
        "mean CRPS of the closed-form leave-block-out predictions, the blocks being "
        "the last BO batches (``lbo_crps``); LOO-CRPS while there are none (the first BO "
        "round sees only the initial design)"
    )
    scores_batches = True

    def fit_score(
        self, K: Tensor, y: Tensor, num_params: int, blocks: Sequence[Tensor] | None = None
    ) -> float:
        if blocks and any(len(b) for b in blocks):
            return float(lbo_crps(K, y, blocks))
        return super().fit_score(K, y, num_params, blocks)


@register_selection_rule("mll")
class NegativeMLL(SelectionRule):
    """The negative log marginal likelihood per data point."""

    summary = "negative log marginal likelihood per data point"

    def fit_score(
        self, K: Tensor, y: Tensor, num_params: int, blocks: Sequence[Tensor] | None = None
    ) -> float:
        return float(-log_marginal_likelihood(K, y) / y.shape[-1])


@register_selection_rule("bic")
class BIC(SelectionRule):
    """The Bayesian information criterion :math:`|\\theta| \\log n - 2 \\log p(y)`."""

    summary = "``|theta| log n - 2 log p(y)``"

    def fit_score(
        self, K: Tensor, y: Tensor, num_params: int, blocks: Sequence[Tensor] | None = None
    ) -> float:
        n = y.shape[-1]
        return float(num_params * math.log(n) - 2.0 * log_marginal_likelihood(K, y))


@register_selection_rule("prequential")
class Prequential(LBOCRPS):
    """Prequential selection (Dawid 1984): each member is judged by the forecasts its
    earlier fits made of the last ``score_batches`` batches before they were observed
    (``heldout_score``: log or CRPS; :meth:`~ax_kernel_discovery.population.Member.heldout_loss`).

    The forecasts come from earlier fits, so the choice is known before the round's
    fits; a member that has not forecast a batch yet (a new kernel) cannot be chosen and
    is kept from truncation until it has. The fitted model's own score, used while no
    member has forecast a batch, is LBO-CRPS.
    """

    summary = (
        "each member's forecast of the next batch, scored when the batch arrives "
        "by the surrogate from earlier fits (see ``ax_kernel_discovery.selection``); its "
        "fitted model's in-sample score, used before any forecast, is ``lbo_crps``"
    )
    scores_forecasts = True
    default_tie_break = "cost"

    def score_before_fits(self, member: Member) -> float | None:
        """The member's held-out loss (``None``: it has not forecast a batch yet)."""
        return member.heldout_loss(self.settings.heldout_score, self.settings.score_batches)

    def member_score(self, member: Member, fit_score: float) -> float | None:
        """The member's held-out loss, whatever its fit score."""
        return self.score_before_fits(member)

    def protected(self, members: Iterable[Member]) -> list[str]:
        """The members that have not forecast a batch yet (new kernels)."""
        return [m.name for m in members if not m.heldout]
