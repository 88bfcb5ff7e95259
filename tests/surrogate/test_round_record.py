"""The round's record and timer (issue 49): every timing goes through the round's one
timer, no module of the surrogate but ``round_record.py`` reads the clock, and the record
is built once, from the steps' frozen results, by ``RoundRecord.from_steps``: no step
writes it."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset

import ax_kernel_discovery.surrogate as surrogate_package
from ax_kernel_discovery.candidate import Rejection
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.population import Population, start_candidates
from ax_kernel_discovery.surrogate import round_record
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.fitting import KernelFitter
from ax_kernel_discovery.surrogate.round_record import RoundRecord, RoundTimer, Stopwatch
from ax_kernel_discovery.surrogate.state import OutcomeState, RoundContext
from ax_kernel_discovery.surrogate.steps import (
    Admitted,
    Chosen,
    Ended,
    FitReport,
    HeldoutScores,
    Opened,
    Proposed,
    rejections,
)

#: The clock functions of :mod:`time` (what a timing or a deadline would read).
CLOCKS = {
    "perf_counter",
    "perf_counter_ns",
    "monotonic",
    "monotonic_ns",
    "time",
    "time_ns",
    "process_time",
    "process_time_ns",
}


@pytest.fixture
def ticks(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A fake clock: each read returns the next of 0, 1, 2, ... seconds; the reads."""
    reads: list[float] = []

    def fake() -> float:
        reads.append(float(len(reads)))
        return reads[-1]

    monkeypatch.setattr(round_record, "clock", fake)
    return reads


class _Timed:
    """Timings and their timer (what a round context holds)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def timer(self) -> RoundTimer:
        return RoundTimer(self.timings)


def _record() -> _Timed:
    return _Timed()


def test_a_phase_writes_its_seconds_and_hands_them_on(ticks: list[float]) -> None:
    rec = _record()
    timer = rec.timer()
    with timer.phase("propose") as watch:
        assert watch.seconds is None  # still running
    assert watch.seconds == rec.timings["propose"] == 1.0
    with timer.phase("fit_and_score"):
        ticks.append(-1.0)  # a block that reads the clock once more: 2 seconds
    with timer.phase("fit_and_score", add=True):
        pass
    assert rec.timings == {"propose": 1.0, "fit_and_score": 3.0}
    with timer.phase("propose"):  # without add, a phase replaces its key
        pass
    assert rec.timings["propose"] == 1.0


def test_a_phase_that_raises_records_nothing(ticks: list[float]) -> None:
    rec = _record()
    with pytest.raises(ValueError), rec.timer().phase("validate"):
        raise ValueError("a failed step")
    assert rec.timings == {}


def test_a_stopwatch_counts_from_its_start_and_from_what_came_before(
    ticks: list[float],
) -> None:
    rec = _record()
    timer = rec.timer()
    watch = Stopwatch()  # read 0
    assert timer.record("refit:k", watch) == 1.0  # read 1
    assert timer.record("fit:k", watch, add=True) == 2.0  # read 2
    assert timer.record("fit:k", watch, add=True) == 3.0
    assert rec.timings == {"refit:k": 1.0, "fit:k": 5.0}
    # a worker's 10 seconds, continued here: started at read 4 - 10 s, read 5 stops it
    continued = Stopwatch(already=10.0)
    assert continued.stop() == 11.0 and continued.elapsed() == 11.0 == continued.seconds
    assert len(ticks) == 6  # a stopped watch reads the clock no more
    assert timer.record("background_fits", 2.5) == 2.5
    timer.update({"proposer:total_s": 0.5})
    assert rec.timings["background_fits"] == 2.5 and rec.timings["proposer:total_s"] == 0.5


def test_the_clock_is_perf_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one clock reads ``time.perf_counter`` when called (a test that slows it
    slows every timing)."""
    monkeypatch.setattr(round_record.time, "perf_counter", lambda: 42.0)
    assert round_record.clock() == 42.0


def _builder(
    dataset: SupervisedDataset,
    search_space_digest: SearchSpaceDigest,
    model_config: ModelConfig,
    state_dict: Mapping[str, torch.Tensor] | None,
    refit: bool,
) -> Model:
    """The candidate's GP at its initial hyperparameters (no fit: no clock reads)."""
    options = model_config.covar_module_options or {}
    covar = DiscoveredKernel(options["candidate"], dataset.X.shape[-1])
    return KernelDiscoveryGP(dataset.X, dataset.Y, covar_module=covar).eval()


def test_a_fit_is_timed_by_the_round_timer(ticks: list[float]) -> None:
    """``refit:NAME`` (build and fit) and ``fit:NAME`` (build, fit and score) are read
    off one stopwatch, and agree with the fit's ``refit_seconds``."""
    dim, names = 2, ["x0", "x1"]
    X = torch.quasirandom.SobolEngine(dim, scramble=True, seed=0).draw(8, dtype=torch.float64)
    y = (X - 0.4).pow(2).sum(-1, keepdim=True)
    dataset = SupervisedDataset(X, y - y.mean(), feature_names=names, outcome_names=["f"])
    cand = start_candidates()[0]
    ctx = RoundContext(
        outcome="f",
        state=OutcomeState(Population([cand], size=1)),
        dataset=dataset,
        search_space_digest=SearchSpaceDigest(feature_names=names, bounds=[(0.0, 1.0)] * dim),
        round=0,
    )
    fitted = (
        KernelFitter(KernelDiscoveryConfig(fit_maxiter=5).fit_options(), _builder)
        .fit_and_score(cand, ctx)
        .get(cand.name)
    )
    assert fitted is not None and fitted.refit_seconds == 1.0
    assert ctx.timings == {f"refit:{cand.name}": 1.0, f"fit:{cand.name}": 2.0}


def _clock_reads(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Where a module reads a clock of :mod:`time`: ``time.perf_counter()`` (under any
    alias of the module) or a clock imported by name."""
    modules = {"time"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "time"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            for alias in node.names:
                if alias.name in CLOCKS or alias.name == "*":
                    yield node.lineno, f"from time import {alias.name}"
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in CLOCKS
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            yield node.lineno, f"{node.value.id}.{node.attr}"


def test_only_the_round_record_reads_the_clock() -> None:
    """Timings go through one timer: no module of the surrogate but ``round_record.py``
    reads ``perf_counter``, ``monotonic`` or ``time.time``."""
    folder = Path(surrogate_package.__file__).parent
    modules = sorted(folder.rglob("*.py"))
    assert len(modules) > 10
    reads = {
        f"{path.relative_to(folder)}:{line}": what
        for path in modules
        if path.name != "round_record.py"
        for line, what in _clock_reads(ast.parse(path.read_text(), str(path)))
    }
    assert reads == {}
    own = list(_clock_reads(ast.parse((folder / "round_record.py").read_text())))
    assert [what for _, what in own] == ["time.perf_counter"]  # the one clock


def test_the_clock_scan_finds_every_spelling() -> None:
    source = (
        "import time\nimport time as t\nfrom time import monotonic\n"
        "a = time.perf_counter()\nb = t.time()\nc = monotonic()\nd = time.sleep(0)\n"
    )
    found = [what for _, what in _clock_reads(ast.parse(source))]
    assert sorted(found) == ["from time import monotonic", "t.time", "time.perf_counter"]


# --- the record's one builder -------------------------------------------------------------


def _rejection(name: str, stage: str = "fit") -> Rejection:
    return Rejection(name=name, stage=stage, reason=f"{name} failed")


def _steps() -> dict[str, Any]:
    """Hand-made results of every step of a round."""
    new = start_candidates()[1]
    return {
        "opened": Opened(
            struck="SL",
            previous_improved=False,
            dropped=("SL",),
            reset=False,
            portfolio_rewards={"RBF": 0.5},
            heldout=HeldoutScores(units="fit", failed=("RQ",)),
        ),
        "proposed": Proposed(
            candidates=(new,),
            rejected=(_rejection("llm", "proposal"),),
            usage={"tokens": 12.0},
            llm_used=True,
            prefetched=True,
        ),
        "admitted": Admitted(accepted=(new,), rejected=(_rejection("twin", "duplicate"),)),
        "fits": FitReport.of(
            FitReport(selection="full"),  # the choice, fitted first
            FitReport(rejected=(_rejection("BOCK"),), fit_starts={"inherited": 1}),
            FitReport(rejected=(_rejection("slow", "timeout"),), fit_capped=("slow",)),
        ),
        "chosen": Chosen(
            chosen="RBF",
            chosen_formula="k_rbf",
            chosen_score=0.25,
            mixture={"RBF": 0.75, "RQ": 0.25},
            portfolio={"RBF": 0.6, "RQ": 0.4},
        ),
        "ended": Ended(
            accepted=(new.name,),
            dropped=("BOCK", "slow"),
            scores={"RBF": 0.25, "RQ": 0.5},
            fit_scores={"RBF": 1.0, "RQ": 2.0},
            population=("RBF", "RQ", new.name),
            population_diversity=0.4,
            accepted_diversity=None,
            fits=FitReport(rejected=(_rejection("RQ", "converge"),), fit_starts={"inherited": 2}),
        ),
    }


def test_the_record_is_built_from_the_steps_results() -> None:
    steps = _steps()
    rec = RoundRecord.from_steps(
        round=4,
        outcome="f",
        n=20,
        dim=3,
        timings={"propose": 1.0, "total": 3.0},
        portfolio_points={"RBF": 2},
        **steps,
    )
    new = steps["proposed"].candidates[0].name
    assert (rec.round, rec.outcome, rec.n, rec.dim) == (4, "f", 20, 3)
    assert (rec.chosen, rec.chosen_formula, rec.chosen_score) == ("RBF", "k_rbf", 0.25)
    assert rec.mixture == {"RBF": 0.75, "RQ": 0.25} and not rec.guarded
    assert rec.portfolio == {"RBF": 0.6, "RQ": 0.4} and rec.portfolio_points == {"RBF": 2}
    assert rec.portfolio_rewards == {"RBF": 0.5}
    assert rec.scores == {"RBF": 0.25, "RQ": 0.5} and rec.fit_scores == {"RBF": 1.0, "RQ": 2.0}
    assert rec.population == ["RBF", "RQ", new] and rec.population_diversity == 0.4
    assert rec.proposed == [new] and rec.accepted == [new] and rec.accepted_diversity is None
    # the rejections in the order they were made: proposal, admission, fits, the end's
    assert [r.name for r in rec.rejected] == ["llm", "twin", "BOCK", "slow", "RQ"]
    assert rec.dropped == ["SL", "BOCK", "slow"]  # the strike's, then the end's
    assert (rec.struck, rec.previous_improved, rec.reset) == ("SL", False, False)
    assert rec.heldout_units == "fit" and rec.heldout_failed == ["RQ"]
    assert rec.timings == {"propose": 1.0, "total": 3.0}
    assert rec.proposer_usage == {"tokens": 12.0} and rec.llm_used and rec.llm_failure is None
    assert rec.prefetched and rec.selection == "full" and rec.finalists is None
    assert rec.fit_capped == ["slow"] and rec.fit_starts == {"inherited": 3}
    # the record owns its containers: the step results are not shared with it
    rec.timings["x"] = 1.0
    assert "x" not in steps["chosen"].mixture and steps["ended"].population[-1] == new
    # and it round-trips through the saved state's JSON
    assert RoundRecord.model_validate_json(rec.model_dump_json()) == rec


def test_the_rejections_so_far_are_the_records_but_the_ends() -> None:
    """The end's warning (every kernel rejected) reads the rejections the record keeps,
    before the end's own: one helper puts both together, so they cannot drift apart."""
    steps = _steps()
    so_far = rejections(steps["proposed"], steps["admitted"], steps["fits"])
    assert [r.name for r in so_far] == ["llm", "twin", "BOCK", "slow"]
    end = Ended(rejected=(_rejection("*", "fit"),))
    rec = RoundRecord.from_steps(
        round=0, outcome="f", n=5, dim=2, timings={}, **{**steps, "ended": end}
    )
    assert rec.rejected == [*so_far, *end.rejected]
    assert rejections() == [] and rejections(Proposed()) == []


def test_a_round_without_a_choice_records_no_choice() -> None:
    """Every kernel failed (no choice), or the round chose at its end (``ended.chosen``)."""
    steps = {**_steps(), "chosen": None}
    failed = Ended(rejected=(Rejection(name="*", stage="fit", reason="no kernel"),))
    rec = RoundRecord.from_steps(
        round=0, outcome="f", n=5, dim=2, timings={}, **{**steps, "ended": failed}
    )
    assert rec.chosen is None and rec.chosen_score is None and rec.mixture == {}
    assert rec.rejected[-1].name == "*" and rec.population == [] and rec.portfolio_points == {}
    guard = Chosen(chosen="ax_default", guarded=True)
    rec = RoundRecord.from_steps(
        round=0, outcome="f", n=5, dim=2, timings={}, **{**steps, "chosen": guard}
    )
    assert rec.guarded and rec.chosen == "ax_default" and rec.chosen_formula is None


def test_the_default_step_results_build_the_default_record() -> None:
    built = RoundRecord.from_steps(
        round=1,
        outcome="g",
        n=9,
        dim=4,
        opened=Opened(),
        proposed=Proposed(),
        admitted=Admitted(),
        fits=FitReport(),
        chosen=None,
        ended=Ended(),
        timings={},
    )
    assert built == RoundRecord(round=1, outcome="g", n=9, dim=4)


def test_fit_reports_add_up_in_order() -> None:
    a = FitReport(
        rejected=(_rejection("A"),), fit_starts={"x": 1}, fit_capped=("A",), selection="full"
    )
    b = FitReport(
        rejected=(_rejection("B"),),
        fit_starts={"y": 1, "x": 2},
        fit_capped=("B", "A"),
        selection="halving",
        finalists=2,
    )
    both = a.then(b)
    assert [r.name for r in both.rejected] == ["A", "B"]
    assert both.fit_starts == {"x": 3, "y": 1} and both.fit_capped == ("A", "B")
    assert (both.selection, both.finalists) == ("halving", 2)
    assert b.then(FitReport()) == b and FitReport().then(a) == a  # None says nothing
    assert FitReport.of(a, b) == both and FitReport.of() == FitReport()
    assert a.fit_starts == {"x": 1}  # the reports themselves are unchanged


@pytest.mark.parametrize(
    "result",
    [Opened(), HeldoutScores(), Proposed(), Admitted(), FitReport(), Chosen(), Ended()],
    ids=type,
)
def test_the_step_results_are_frozen(result: object) -> None:
    field = dataclasses.fields(result)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(result, field, None)


#: How a module would name a round's record (``rec``, ``record``, ``ctx.rec``, ...).
RECORD_NAMES = {"rec", "record"}
#: The record's fields.
FIELDS = set(RoundRecord.model_fields)
#: The methods that change a container in place.
MUTATORS = {
    "append",
    "extend",
    "insert",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
    "remove",
    "__setitem__",
}


def _names_a_record(node: ast.expr) -> bool:
    """``rec``, ``record``, ``x.rec`` or ``x.record``."""
    if isinstance(node, ast.Name):
        return node.id in RECORD_NAMES
    return isinstance(node, ast.Attribute) and node.attr in RECORD_NAMES


def _a_field_of_a_record(node: ast.expr) -> bool:
    """``rec.FIELD``, ``rec.FIELD[...]`` (and so on for every name of a record)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr in FIELDS and _names_a_record(node.value)


def _record_writes(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Where a module builds a ``RoundRecord`` (other than by reloading a saved one) or
    writes one: assigns to a field of a record, or changes a field's container in place;
    and where it reads ``ctx.rec`` (the round context holds no record)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "RoundRecord":
                yield node.lineno, "RoundRecord(...)"
            elif (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "RoundRecord"
                and func.attr != "model_validate"  # a saved record, reloaded
            ):
                yield node.lineno, f"RoundRecord.{func.attr}(...)"
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in MUTATORS
                and _a_field_of_a_record(func.value)
            ):
                yield node.lineno, f"record field .{func.attr}(...)"
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in {"model_copy", "__setattr__"}
                and _names_a_record(func.value)
            ):
                yield node.lineno, f"record.{func.attr}(...)"
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in targets:
            parts = target.elts if isinstance(target, ast.Tuple) else [target]
            for part in parts:
                if isinstance(part, (ast.Attribute, ast.Subscript)) and _a_field_of_a_record(part):
                    yield node.lineno, "record field ="
        if isinstance(node, ast.Attribute) and node.attr == "rec":
            yield node.lineno, ".rec"


def test_only_the_builder_makes_or_writes_a_round_record() -> None:
    """No step writes the round's record: outside ``round_record.py`` no module of the
    surrogate constructs a ``RoundRecord`` (but by reloading a saved one), assigns to
    its fields or changes them in place; the runner builds it with ``from_steps``."""
    folder = Path(surrogate_package.__file__).parent
    modules = sorted(folder.rglob("*.py"))
    assert len(modules) > 10
    writes = {
        f"{path.relative_to(folder)}:{line}": what
        for path in modules
        if path.name != "round_record.py"
        for line, what in _record_writes(ast.parse(path.read_text(), str(path)))
    }
    # one build, at the round's end, and no write
    assert [(k.split(":")[0], v) for k, v in writes.items()] == [
        ("runner.py", "RoundRecord.from_steps(...)")
    ]
    # in round_record.py, only the builder constructs a record
    own = ast.parse((folder / "round_record.py").read_text())
    builds = [
        f.name
        for f in ast.walk(own)
        if isinstance(f, ast.FunctionDef)
        for n in ast.walk(f)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in {"cls", "RoundRecord"}
    ]
    assert builds == ["from_steps"]


def test_the_record_scan_finds_every_spelling() -> None:
    source = (
        "rec = RoundRecord(round=0, outcome='f', n=1, dim=1)\n"
        "rec.chosen = 'RBF'\n"
        "ctx.rec.rejected.append(r)\n"
        "self.record.timings['total'] += 1.0\n"
        "rec.guarded, rec.chosen = True, 'x'\n"
        "record.fit_starts[k] = 1\n"
        "r = RoundRecord.model_construct()\n"
        "ok = RoundRecord.model_validate(saved)\n"
        "ctx.population.add(c)\n"
        "rec.count_points('RBF', 2)\n"
        "again = ctx.record.model_copy(update={'chosen': 'RQ'})\n"
    )
    found = sorted(what for _, what in _record_writes(ast.parse(source)))
    assert found == sorted(
        [
            "RoundRecord(...)",
            "record field =",
            ".rec",
            "record field .append(...)",
            "record field =",
            "record field =",  # the tuple's two fields
            "record field =",
            "record field =",
            "RoundRecord.model_construct(...)",
            "record.model_copy(...)",
        ]
    )
