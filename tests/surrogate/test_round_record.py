"""The round's timer (issue 49): every timing goes through ``RoundRecord.timer``, and no
module of the surrogate but ``round_record.py`` reads the clock."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset

import ax_kernel_discovery.surrogate as surrogate_package
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.population import Population, start_candidates
from ax_kernel_discovery.surrogate import round_record
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.fitting import KernelFitter
from ax_kernel_discovery.surrogate.round_record import RoundRecord, Stopwatch
from ax_kernel_discovery.surrogate.state import OutcomeState, RoundContext

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


def _record() -> RoundRecord:
    return RoundRecord(round=0, outcome="f", n=8, dim=2)


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
        rec=RoundRecord(round=0, outcome="f", n=8, dim=dim),
    )
    fitted = KernelFitter(
        KernelDiscoveryConfig(fit_maxiter=5).fit_options(), _builder
    ).fit_and_score(cand, ctx)
    assert fitted is not None and fitted.refit_seconds == 1.0
    assert ctx.rec.timings == {f"refit:{cand.name}": 1.0, f"fit:{cand.name}": 2.0}


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
