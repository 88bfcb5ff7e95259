"""background_fits: the chosen kernel first, the round's other kernels in a worker process.

Rounds run with the default configuration (prequential criterion, a guard round, kept
kernels, offline proposals) on the same data with fits in the background and in this
process, and must agree bit for bit: every decision and score of every round, the warm
starts the next round starts from, and the saved state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import torch
from ax.core.search_space import SearchSpaceDigest
from botorch.utils.datasets import SupervisedDataset

from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.surrogate import worker
from ax_kernel_discovery.surrogate.fitting import FitStart

DIM = 8
NAMES = [f"x{i}" for i in range(DIM)]
SIZES = (14, 18, 22, 26)  # a guard round, then rounds chosen by held-out forecasts
SETTINGS = {"population_size": 6, "proposals_per_round": 2, "fit_maxiter": 30, "seed": 0}


def _data(n: int) -> SupervisedDataset:
    X = torch.quasirandom.SobolEngine(DIM, scramble=True, seed=3).draw(n, dtype=torch.float64)
    y = (X[:, :3] - 0.3).pow(2).sum(-1) + 0.2 * torch.sin(6 * X[:, 3])
    Y = ((y - y.mean()) / y.std()).unsqueeze(-1)
    return SupervisedDataset(X, Y, feature_names=NAMES, outcome_names=["f"])


DIGEST = SearchSpaceDigest(feature_names=NAMES, bounds=[(0.0, 1.0)] * DIM)


def _run(
    mode: str,
    fields: Mapping[str, Any] | None = None,
    sizes: Sequence[int] = SIZES,
    **kwargs: Any,
) -> tuple[KernelDiscoverySurrogate, list[dict[str, Any]]]:
    """A round per size (four by default); after each, the saved state (which completes a
    background round)."""
    config = KernelDiscoveryConfig(background_fits=mode, **{**SETTINGS, **(fields or {})})  # type: ignore[arg-type]
    s = KernelDiscoverySurrogate(config, **kwargs)
    s.state.objective_weights = {"f": -1.0}
    states = []
    for n in sizes:
        s.fit([_data(n)], DIGEST)
        states.append(s.state_dict_json())
    s.close()
    return s, states


def _without_timings(state: Mapping[str, Any]) -> dict[str, Any]:
    return {
        **state,
        "history": [{k: v for k, v in r.items() if k != "timings"} for r in state["history"]],
    }


def _same_rounds(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> None:
    assert [_without_timings(x) for x in a] == [_without_timings(x) for x in b]


@pytest.fixture(scope="module")
def in_process() -> tuple[KernelDiscoverySurrogate, list[dict[str, Any]]]:
    return _run("off")


def test_rounds_fitted_in_the_background_equal_rounds_fitted_in_process(
    in_process: tuple[KernelDiscoverySurrogate, list[dict[str, Any]]],
) -> None:
    off, off_states = in_process
    on, on_states = _run("on")
    _same_rounds(on_states, off_states)
    history = on.history
    assert history[0].guarded and not history[-1].guarded
    assert any(r.accepted for r in history), "no new kernel joined: nothing was compared"
    for rec in history:  # every round fitted its other kernels in a worker
        assert rec.timings["background_fits"] > 0
    for rec in off.history:
        assert "background_fits" not in rec.timings
    warm_off = off.state.outcomes["f"].warm
    warm_on = on.state.outcomes["f"].warm
    assert warm_on.keys() == warm_off.keys()
    for name, params in warm_off.items():
        assert all(torch.equal(warm_on[name][k], v) for k, v in params.items()), name


def test_the_cost_tie_break_chooses_before_the_fits_as_after_them() -> None:
    fields = {"tie_break": "cost"}
    off, off_states = _run("off", fields)
    on, on_states = _run("on", fields)
    _same_rounds(on_states, off_states)
    assert all(rec.timings["background_fits"] > 0 for rec in on.history)
    chosen = [rec.chosen for rec in on.history[1:]]  # after the guard round
    assert all(name is not None for name in chosen)


def test_fits_that_cannot_go_to_a_worker_run_in_process_with_the_same_result(
    in_process: tuple[KernelDiscoverySurrogate, list[dict[str, Any]]],
) -> None:
    # a start rule defined in a function cannot be pickled for the worker: the round's
    # other kernels are then fitted here when the round is completed, as fits in process
    def local_rule(
        cand: KernelCandidate,
        members: Sequence[KernelCandidate],
        warm: Mapping[str, Mapping[str, torch.Tensor]],
        dim: int,
    ) -> FitStart | None:
        return None  # GPyTorch's initial values, as without a start rule

    on, on_states = _run("on", start_rule=local_rule)
    _same_rounds(on_states, in_process[1])
    for rec in on.history:
        assert "background_fits" not in rec.timings and "background_wait" in rec.timings


def test_a_round_that_needs_its_fits_to_choose_fits_in_process() -> None:
    config = KernelDiscoveryConfig(
        background_fits="on", criterion="lbo_crps", guard_rounds=0, **SETTINGS
    )  # type: ignore[arg-type]
    s = KernelDiscoverySurrogate(config)
    s.fit([_data(14)], DIGEST)
    assert "background_fits" not in s.history[-1].timings
    s.close()


def test_an_interrupt_while_waiting_for_the_fits_loses_no_round(
    in_process: tuple[KernelDiscoverySurrogate, list[dict[str, Any]]],
) -> None:
    """Issue 30 item 6: Ctrl-C (Jupyter's stop button) while the surrogate waits for the
    worker's fits leaves the round pending; the run then makes the same choices as one
    that was never interrupted."""
    config = KernelDiscoveryConfig(background_fits="on", **SETTINGS)  # type: ignore[arg-type]
    s = KernelDiscoverySurrogate(config)
    s.state.objective_weights = {"f": -1.0}
    states = []
    for i, n in enumerate(SIZES):
        s.fit([_data(n)], DIGEST)
        if i == 2:
            future = s.runner.open_rounds["f"].pending.future
            assert future is not None
            real = future.result
            interrupted: list[bool] = []

            def result(
                *args: Any,
                real: Any = real,
                interrupted: list[bool] = interrupted,
                **kwargs: Any,
            ) -> Any:
                if not interrupted:
                    interrupted.append(True)
                    raise KeyboardInterrupt
                return real(*args, **kwargs)

            future.result = result  # type: ignore[method-assign]
            with pytest.raises(KeyboardInterrupt):
                s.finish_background()
            assert "f" in s.runner.open_rounds  # still to be completed
        states.append(s.state_dict_json())
    s.close()
    _same_rounds(states, in_process[1])


def test_close_ends_the_worker_of_the_background_fits() -> None:
    """Issue 30 item 13: after ``close()`` no idle worker process (460 MB once it has
    fitted) nor its thread stayed for the life of the process."""
    worker.shutdown_shared_pools()  # the pool below is the one this surrogate starts
    s = KernelDiscoverySurrogate(KernelDiscoveryConfig(background_fits="on", **SETTINGS))  # type: ignore[arg-type]
    s.state.objective_weights = {"f": -1.0}
    s.fit([_data(14)], DIGEST)
    pool = worker._SHARED[1]
    assert pool.alive
    assert s.history[-1].timings["background_fits"] > 0  # the round used the worker
    s.close()
    assert all(w.process.poll() is not None for w in pool.workers)
    assert not any(w.thread.is_alive() for w in pool.workers)
    assert 1 not in worker._SHARED


def test_the_acquisition_never_waits_for_the_background_fits() -> None:
    """Issue 30 item 13: an exception (or an interrupt) in the acquisition surfaces at once;
    the fits whose round it was stay pending, completed when the surrogate is next read
    (before this, the acquisition's ``finally`` waited for them first). Nor does an
    acquisition that succeeds wait (issue 51's profile: Ax's ``Client`` asks for a batch
    one trial at a time, and a wait at the first trial's end left the worker idle through
    the other trials' acquisitions): the round ends at the next fit or read."""
    from concurrent.futures import Future

    from ax_kernel_discovery.surrogate.acquisition import KernelDiscoveryAcquisition

    config = KernelDiscoveryConfig(background_fits="on", **SETTINGS)  # type: ignore[arg-type]
    s = KernelDiscoverySurrogate(config)
    s.state.objective_weights = {"f": -1.0}
    for n in SIZES[:2]:
        s.fit([_data(n)], DIGEST)
    pending = s.runner.open_rounds["f"].pending
    real = pending.future
    assert real is not None

    class NotWaitedFor(Future):  # type: ignore[type-arg]
        def result(self, timeout: float | None = None) -> Any:
            raise AssertionError("the acquisition's error waited for the background fits")

    pending.future = NotWaitedFor()
    acquisition = object.__new__(KernelDiscoveryAcquisition)
    acquisition.surrogate = s

    def optimize(n: int, **kwargs: Any) -> Any:
        raise RuntimeError("the optimizer failed")

    acquisition._optimize = optimize  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="the optimizer failed"):
        acquisition.optimize(2, search_space_digest=DIGEST)
    assert s.runner.open_rounds["f"].pending is pending  # not waited for, not lost
    acquisition._optimize = lambda n, **kwargs: ("candidates", n)  # type: ignore[method-assign]
    for n in (1, 1):  # the client's one-trial asks of one batch
        assert acquisition.optimize(n, search_space_digest=DIGEST) == ("candidates", n)
    assert s.runner.open_rounds["f"].pending is pending  # still fitting, not waited for
    pending.future = real
    s.finish_background()  # the next read completes the round
    assert "f" not in s.runner.open_rounds and s.history[-1].timings["background_fits"] > 0
    s.close()


def _fit_loss(surrogate: KernelDiscoverySurrogate) -> float:
    """The negative marginal log likelihood per point the fit of Ax's model minimises."""
    from botorch.optim.closures.model_closures import get_loss_closure
    from gpytorch.mlls import ExactMarginalLogLikelihood

    model = surrogate.model
    mll = ExactMarginalLogLikelihood(model.likelihood, model)  # type: ignore[arg-type]
    mll.train()
    with torch.no_grad():
        return float(get_loss_closure(mll)())


def test_converge_chosen_fits_the_choice_to_convergence_and_the_others_by_their_budget() -> None:
    fields = {**SETTINGS, "fit_maxiter": 3, "background_fits": "off"}
    budget = KernelDiscoverySurrogate(KernelDiscoveryConfig(**fields))  # type: ignore[arg-type]
    converged = KernelDiscoverySurrogate(KernelDiscoveryConfig(**fields, converge_chosen=True))  # type: ignore[arg-type]
    for s in (budget, converged):
        s.state.objective_weights = {"f": -1.0}
        for n in SIZES[:2]:  # a guard round (both fit alike), then a chosen kernel
            s.fit([_data(n)], DIGEST)
    a, b = budget.history[-1], converged.history[-1]
    assert not b.guarded and a.chosen == b.chosen  # chosen from the guard round's forecasts
    # the chosen GP's fit went on well past the 3 steps' optimum...
    assert _fit_loss(converged) < _fit_loss(budget) - 1e-3
    # ...while every other member got the same 3 warm-started steps
    warm_a, warm_b = budget.state.outcomes["f"].warm, converged.state.outcomes["f"].warm
    assert warm_a.keys() == warm_b.keys()
    others = [k for k in warm_a if k != b.chosen]
    assert others
    for name in others:
        assert all(torch.equal(warm_b[name][k], v) for k, v in warm_a[name].items()), name
    assert not all(torch.equal(warm_b[b.chosen][k], v) for k, v in warm_a[b.chosen].items())
    for s in (budget, converged):
        s.close()


def test_converge_chosen_in_the_background_equals_converge_chosen_in_process() -> None:
    # a guard round, then two rounds whose choice is converged while the others fit
    fields = {"converge_chosen": True, "population_size": 4}
    off, off_states = _run("off", fields, SIZES[:3])
    on, on_states = _run("on", fields, SIZES[:3])
    _same_rounds(on_states, off_states)
    assert all(rec.timings["background_fits"] > 0 for rec in on.history)


def _record_choice_orders(s: KernelDiscoverySurrogate) -> list[list[str]]:
    """The choice orders of ``s``'s rounds from now on, in a list that grows as they run."""
    order = s.runner.chooser.choice_order
    captured: list[list[str]] = []

    def spy(ctx: Any) -> Any:
        ranked, losses = order(ctx)
        captured.append(list(ranked))
        return ranked, losses

    s.runner.chooser.choice_order = spy  # type: ignore[method-assign]
    return captured


def test_converge_contenders_converges_the_next_members_of_the_choice_order() -> None:
    fields = {**SETTINGS, "fit_maxiter": 3, "background_fits": "off", "converge_chosen": True}
    chosen_only = KernelDiscoverySurrogate(KernelDiscoveryConfig(**fields))  # type: ignore[arg-type]
    contenders = KernelDiscoverySurrogate(
        KernelDiscoveryConfig(**fields, converge_contenders=1)  # type: ignore[arg-type]
    )
    orders = []
    for s in (chosen_only, contenders):
        s.state.objective_weights = {"f": -1.0}
        s.fit([_data(SIZES[0])], DIGEST)  # the guard round: every member forecasts next
        captured = _record_choice_orders(s)
        s.fit([_data(SIZES[1])], DIGEST)
        orders.append(captured[0])
    a, b = chosen_only.history[-1], contenders.history[-1]
    assert orders[0] == orders[1] and a.chosen == b.chosen == orders[0][0]
    warm_a, warm_b = chosen_only.state.outcomes["f"].warm, contenders.state.outcomes["f"].warm
    assert warm_a.keys() == warm_b.keys()
    differ = {
        name
        for name in warm_a
        if not all(torch.equal(warm_b[name][k], v) for k, v in warm_a[name].items())
    }
    # the chosen member converged in both; the next of the order only with a contender
    assert differ == {orders[0][1]}
    for s in (chosen_only, contenders):
        s.close()


@pytest.mark.parametrize("contenders", [0, 1])
def test_refit_members_contenders_scores_the_other_members_without_a_fit(
    contenders: int,
) -> None:
    fields = {
        **SETTINGS,
        "fit_maxiter": 3,
        "background_fits": "off",
        "converge_chosen": True,
        "converge_contenders": contenders,
        "refit_members": "contenders",
    }
    s = KernelDiscoverySurrogate(KernelDiscoveryConfig(**fields))  # type: ignore[arg-type]
    s.state.objective_weights = {"f": -1.0}
    s.fit([_data(SIZES[0])], DIGEST)  # the guard round fits every member
    before = {
        k: {n: v.clone() for n, v in w.items()} for k, w in s.state.outcomes["f"].warm.items()
    }
    captured = _record_choice_orders(s)
    s.fit([_data(SIZES[1])], DIGEST)
    warm = s.state.outcomes["f"].warm
    refitted = set(captured[0][: 1 + contenders])  # the choice and its contenders
    kept = {k for k in before if k in warm} - refitted
    assert kept and refitted <= set(warm)
    for name in kept:  # scored at last round's hyperparameters
        assert all(torch.equal(warm[name][k], v) for k, v in before[name].items()), name
    for name in refitted:
        assert not all(torch.equal(warm[name][k], v) for k, v in before[name].items()), name
    new = set(warm) - set(before)
    assert new  # this round's proposals, fitted from a cold start
    record = s.history[-1]
    assert all(name in record.scores for name in kept)  # scored all the same
    s.close()


def test_converge_contenders_in_the_background_equals_in_process() -> None:
    fields = {"converge_chosen": True, "converge_contenders": 2, "population_size": 4}
    off, off_states = _run("off", fields, SIZES[:3])
    on, on_states = _run("on", fields, SIZES[:3])
    _same_rounds(on_states, off_states)
    fields = {**fields, "refit_members": "contenders"}
    off, off_states = _run("off", fields, SIZES[:3])
    on, on_states = _run("on", fields, SIZES[:3])
    _same_rounds(on_states, off_states)


def test_converge_chosen_converges_a_choice_made_from_the_fits() -> None:
    # lbo_crps chooses from this round's fit scores: every member gets its 3 steps, the
    # choice is then fitted on to convergence before Ax gets it
    fields = {
        **SETTINGS,
        "population_size": 3,
        "proposals_per_round": 0,
        "fit_maxiter": 3,
        "criterion": "lbo_crps",
        "guard_rounds": 0,
        "background_fits": "off",
    }
    budget = KernelDiscoverySurrogate(KernelDiscoveryConfig(**fields))  # type: ignore[arg-type]
    converged = KernelDiscoverySurrogate(KernelDiscoveryConfig(**fields, converge_chosen=True))  # type: ignore[arg-type]
    for s in (budget, converged):
        s.state.objective_weights = {"f": -1.0}
        s.fit([_data(SIZES[0])], DIGEST)
    a, b = budget.history[-1], converged.history[-1]
    assert a.chosen == b.chosen and a.scores == b.scores  # the same choice, same scores
    assert _fit_loss(converged) < _fit_loss(budget) - 1e-3
    for s in (budget, converged):
        s.close()
