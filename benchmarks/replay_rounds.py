"""Replay recorded BO rounds: kd against Ax's default on the same data, in one process.

A *fixture* is one recorded round of a study run, stored small enough to commit
(``benchmarks/results/replay/*.json``): the training data the round's surrogate saw (X in
the parameters' units and the raw objective values, float64, zlib + base64), the
problem's name and bounds, the surrogate's saved state *before* the round (population,
history, warm starts, proposer keys: what the round started from) and the round's chosen
kernel (its candidate JSON and the hyperparameters it was fitted to in that round).

``extract`` builds a fixture from a run's result JSON and its Ax checkpoints
(``<study>/<variant>/checkpoints/<run_id>.json``, saved after every round; a checkpoint
holds the experiment's trials and the ``KernelDiscoverySurrogate`` state at that time).
Give it the checkpoint saved after round ``r - 1`` (the state the round started from)
and, when there is one, the checkpoint saved after round ``r`` (the chosen kernel's
fitted hyperparameters); without the latter the chosen kernel is refitted on the round's
data from its last warm start. ``extract`` tells which state each checkpoint holds.

``time`` times, per fixture, alternating kd and Ax's default (A/B, B/A, ...) in one
process on the same data, ``--repeats`` times, and prints medians. A method's round is
its fit, then its acquisition:

* ``fit``: one kd round's fit + selection (``KernelDiscoverySurrogate.fit``: strike,
  propose, validate, fit and score every member, choose), from the fixture's state and
  with the default ``KernelDiscoveryConfig`` (or ``--kd-config``), until it hands the
  acquisition a model, against Ax's default fit (``Surrogate()`` with the default
  ``ModelConfig``). With ``background_fits`` (the default on 2 or more cores) kd fits
  the chosen kernel, then the round's other kernels in a worker process while the
  acquisition runs; ``wait`` is what was left of them when the acquisition ended (the
  round is complete only then), ``background`` their own seconds in the worker;
* ``acquisition``: the runs' Ax ``Acquisition`` (``KernelDiscoveryAcquisition``, every
  method's) with qLogNEI, optimized for the round's joint batch (the study's settings:
  q = 15, 2 restarts, 128 raw samples, ``maxiter`` 50, ``sample_around_best``), through
  the recorded chosen kernel at its recorded hyperparameters (a fresh model each time,
  as in a run) against the dimension-scaled RBF Ax's default fit found; the same torch
  seed for both.

``--through replayed`` runs kd's acquisition through the model kd's own replayed fit
handed on (the surrogate itself, as in an Ax run), for a configuration that chooses
differently from the recorded runs. Each method's acquisition function is its default:
for kd ``KernelDiscoveryConfig.acquisition`` (by default
:class:`~ax_kernel_discovery.surrogate.new_rows_qlognei.NewRowsqLogNEI`, qLogNEI from the new
rows), for Ax's default BoTorch's qLogNEI; ``--acqf qlognei`` or ``--acqf new_rows``
gives both methods the same one.

The kd/ax_default ratio of a round is (fit + acquisition + wait) / (fit + acquisition);
per problem, the ratio of the mean round times over its fixtures. The main process runs
one torch thread (``--threads``); kd's background fits run in one more process (one
thread), Ax's default has nothing to run there. Acquisitions whose optimizer reported a
failure (``OptimizationWarning``) are counted.

    python benchmarks/replay_rounds.py extract RESULT.json CKPT_BEFORE.json [CKPT_AFTER.json] \\
        --round 5 --out benchmarks/results/replay/rover100__seed0__r5.json
    python benchmarks/replay_rounds.py time benchmarks/results/replay/*.json --repeats 3 \\
        --study benchmarks/results/study/preq_keep --through replayed --rounds 1

The committed fixtures are rounds of the study's variant ``preq_keep`` (prequential
criterion, one guard round, RBF and Matern-5/2 kept: the default until the cost tie rule,
``tie_break="auto"``): ``--study FOLDER`` (``benchmarks/results/study/preq_keep``) checks
that each is a round of those runs (same size, chosen kernel, ``kd_config`` and values)
and ``--rounds`` keeps the first few per problem, for a cheap run. Under the default
configuration kd may choose another kernel than the recorded one: ``--through replayed``
times the acquisition through kd's own choice (what ``nox -s bench`` runs).

``--device`` (``cpu``, the default; ``cuda``, ``cuda:N`` or ``auto``) puts the fixtures'
training data and objective weights on that device, for kd and Ax's default alike, and
sets kd's ``KernelDiscoveryConfig.device`` to it (over ``--kd-config``); both surrogates
follow their data's device, so both methods fit and optimize there. Timed parts end with
``torch.cuda.synchronize()`` when CUDA is in use. kd fits in the background only on CPU
data: on a GPU all of a round's fits run in the main process (``kd wait`` is then 0).

Torch runs single-threaded (``torch.set_num_threads(1)``, printed).
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import logging
import statistics
import sys
import time
import warnings
import zlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
from ax.generators.torch_base import TorchOptConfig
from ax.utils.common.logger import set_ax_logger_levels
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.exceptions.warnings import OptimizationWarning
from botorch.utils.datasets import SupervisedDataset

from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate
from ax_kernel_discovery.analysis import find_surrogate
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.devices import device_label, resolve_device
from ax_kernel_discovery.runner.run_config import METRIC
from ax_kernel_discovery.strategy import default_acqf_class, optimizer_options
from ax_kernel_discovery.surrogate import candidate_model_config
from ax_kernel_discovery.surrogate.acquisition import KernelDiscoveryAcquisition
from ax_kernel_discovery.surrogate.new_rows_qlognei import NewRowsqLogNEI
from ax_kernel_discovery.surrogate.state import decode_tensors, encode_tensors, warm_parameters

FORMAT = "axkd-replay-1"
GUARD = "AxDefault"


# --- fixtures ------------------------------------------------------------------------------


def encode_array(a: np.ndarray) -> dict[str, Any]:
    """A float64 array as ``{"shape", "data"}``, data: base64 of zlib of its bytes."""
    a = np.ascontiguousarray(a, dtype="<f8")
    return {
        "shape": list(a.shape),
        "data": base64.b64encode(zlib.compress(a.tobytes(), 9)).decode(),
    }


def decode_array(encoded: dict[str, Any]) -> np.ndarray:
    """Inverse of :func:`encode_array`."""
    raw = zlib.decompress(base64.b64decode(encoded["data"]))
    return np.frombuffer(raw, dtype="<f8").reshape(encoded["shape"]).copy()


@dataclass
class Fixture:
    """One recorded round (see the module docstring); ``data`` is the stored JSON."""

    data: dict[str, Any]
    path: Path | None = None
    device: str = "cpu"  # where dataset() and objective_weights() put their tensors
    X: np.ndarray = field(init=False)
    Y: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        if self.data.get("format") != FORMAT:
            raise ValueError(f"{self.path}: not a replay fixture (format {FORMAT!r} expected)")
        self.X = decode_array(self.data["X"])
        self.Y = decode_array(self.data["Y"])

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu") -> Fixture:
        return cls(json.loads(Path(path).read_text()), Path(path), device)

    @property
    def name(self) -> str:
        return self.path.stem if self.path else f"{self.data['problem']}__r{self.data['round']}"

    @property
    def problem(self) -> str:
        return str(self.data["problem"])

    def dataset(self) -> SupervisedDataset:
        """The training data as Ax hands it to a surrogate (``StandardizeY``: ddof = 1)."""
        y = self.Y.reshape(-1, 1)
        std = float(y.std(ddof=1)) if len(y) > 1 else 1.0
        Y = (y - y.mean()) / (std if std > 0 else 1.0)
        names = [f"x{i}" for i in range(self.X.shape[1])]
        return SupervisedDataset(
            X=torch.from_numpy(self.X).to(self.device),
            Y=torch.from_numpy(Y).to(self.device),
            feature_names=names,
            outcome_names=[METRIC],
        )

    def digest(self) -> SearchSpaceDigest:
        names = [f"x{i}" for i in range(self.X.shape[1])]
        bounds = list(zip(self.data["lower"], self.data["upper"], strict=True))
        return SearchSpaceDigest(feature_names=names, bounds=bounds)

    def objective_weights(self) -> torch.Tensor:
        # (n_objectives, n_outcomes), as Ax 1.3 passes them
        return torch.tensor(
            [[-1.0 if self.data["minimize"] else 1.0]], dtype=torch.float64, device=self.device
        )

    def chosen_candidate(self) -> KernelCandidate | None:
        chosen = self.data["chosen"]
        return (
            None if chosen.get("guarded") else KernelCandidate.model_validate(chosen["candidate"])
        )


def _load_checkpoint(path: Path) -> tuple[Any, KernelDiscoverySurrogate]:
    from ax.api import Client

    client = Client.load_from_json_file(str(path))
    return client, find_surrogate(client)


def _rows(client: Any) -> tuple[np.ndarray, list[float | None], list[tuple[float, float]]]:
    """Trial inputs in trial order, their objective values (None: not completed), bounds."""
    experiment = client._experiment
    params = list(experiment.search_space.parameters.values())
    trials = [experiment.trials[i] for i in sorted(experiment.trials)]
    X = np.array([[float(t.arm.parameters[p.name]) for p in params] for t in trials])
    values: list[float | None] = [None] * len(trials)
    df = experiment.lookup_data().df
    for idx, mean in zip(df["trial_index"], df["mean"], strict=True):
        if trials[int(idx)].status.is_completed and np.isfinite(mean):
            values[int(idx)] = float(mean)
    return X, values, [(float(p.lower), float(p.upper)) for p in params]


def _last_n(surrogate: KernelDiscoverySurrogate) -> int | None:
    """Training rows of the surrogate's last round (None before its first)."""
    rounds = [h for h in surrogate.history if h.outcome == METRIC]
    return rounds[-1].n if rounds else None


def extract(
    result_path: Path, checkpoints: Sequence[Path], round_index: int, out: Path | None
) -> dict[str, Any]:
    """Build the fixture of round ``round_index`` of a run (see the module docstring)."""
    result = json.loads(Path(result_path).read_text())
    rounds = {r["round"]: r for r in result["rounds"]}
    rec = rounds.get(round_index)
    if rec is None or rec.get("kind") != "bo":
        bo = sorted(r for r, x in rounds.items() if x.get("kind") == "bo")
        raise SystemExit(f"error: round {round_index} is not a BO round of {result_path} ({bo})")
    if rec.get("mixture"):
        raise SystemExit("error: the round chose a mixture; replay times single kernels only")
    n = int(rec["n_before"])
    previous = [x["n_before"] for r, x in rounds.items() if r < round_index and x["kind"] == "bo"]
    n_previous = max(previous) if previous else None
    loaded = []
    for path in checkpoints:
        client, surrogate = _load_checkpoint(path)
        print(f"{path}: state after the round with {_last_n(surrogate)} rows", file=sys.stderr)
        loaded.append((path, client, surrogate))
    before = next((x for x in loaded if _last_n(x[2]) == n_previous), None)
    if before is None:
        raise SystemExit(
            f"error: no checkpoint holds the state before round {round_index} (its last "
            f"round fitted {n_previous} rows); give the checkpoint saved after the round before"
        )
    after = next((x for x in loaded if _last_n(x[2]) == n), None)
    X, values, bounds = _rows(before[1])
    if len(values) < n or any(v is None for v in values[:n]):
        raise SystemExit(f"error: {before[0]} lacks completed values for the first {n} trials")
    fixture: dict[str, Any] = {
        "format": FORMAT,
        "problem": result["problem"],
        "problem_label": result.get("problem_label", result["problem"]),
        "dim": int(result["dim"]),
        "minimize": result["direction"] == "minimize",
        "seed": int(result["seed"]),
        "round": round_index,
        "n": n,
        "q": int(rec["q"]),
        "lower": [b[0] for b in bounds],
        "upper": [b[1] for b in bounds],
        "X": encode_array(X[:n]),
        "Y": encode_array(np.array(values[:n], dtype=float)),
        "kd_config": result["config"].get("kd_config"),
        "settings": {k: result["config"][k] for k in ("num_restarts", "raw_samples", "maxiter")},
        "state": before[2].state_dict_json(),
        "source": {
            "result": Path(result_path).name,
            "checkpoints": [Path(x[0]).name for x in (before, after) if x is not None],
        },
        "recorded": {
            k: rec.get(k) for k in ("chosen", "chosen_score", "timings", "warnings", "population")
        },
    }
    fixture["chosen"] = {"name": GUARD, "guarded": True}  # until the chosen kernel is known
    data = Fixture(fixture)
    fixture["chosen"] = _chosen(rec, before[2], after[2] if after else None, data)
    text = json.dumps(fixture)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out} ({len(text) / 1024:.0f} KB)", file=sys.stderr)
    return fixture


def _chosen(
    rec: dict[str, Any],
    before: KernelDiscoverySurrogate,
    after: KernelDiscoverySurrogate | None,
    fixture: Fixture,
) -> dict[str, Any]:
    """The chosen kernel: candidate and fitted hyperparameters (from the run when it can)."""
    name = rec["chosen"]
    if rec.get("guarded") or name == GUARD:
        return {"name": GUARD, "guarded": True}
    for surrogate, source in ((after, "run"), (before, "refit")):
        if surrogate is None or METRIC not in surrogate.state.outcomes:
            continue
        pop = surrogate.state.outcomes[METRIC].population
        if name not in pop.names:
            continue
        cand = pop.get(name).candidate
        params = surrogate.state.outcomes[METRIC].warm.get(name)
        if source == "refit":  # fit it on the round's data, from its last warm start
            config = before.config
            maxiter = config.fit_maxiter if params is not None else 4 * (config.fit_maxiter or 50)
            s = Surrogate(
                surrogate_spec=SurrogateSpec(
                    model_configs=[candidate_model_config(cand, config.fit_timeout, maxiter)]
                )
            )
            s.fit([fixture.dataset()], fixture.digest(), state_dict=params, refit=True)
            params = warm_parameters(s.model)
        assert params is not None
        return {
            "name": name,
            "candidate": cand.model_dump(mode="json"),
            "parameters": encode_tensors(params),
            "parameters_from": source,
        }
    raise SystemExit(f"error: the chosen kernel {name!r} is in no checkpoint's population")


# --- timing ---------------------------------------------------------------------------------


def _now() -> float:
    """``time.perf_counter()`` after the GPU's queued work is done (when CUDA is in use)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter()


def replay_surrogate(fixture: Fixture, config: dict[str, Any] | str) -> KernelDiscoverySurrogate:
    """A kd surrogate in the state the fixture's round started from.

    ``config``: fields of ``KernelDiscoveryConfig`` over the defaults, or ``"run"`` for
    the configuration the run was made with. Its ``device`` is the fixture's.
    """
    if config == "run":  # the configuration the run was made with
        config = fixture.data["kd_config"] or {}
    assert isinstance(config, dict)
    cfg = KernelDiscoveryConfig.model_validate(
        {"seed": fixture.data["seed"], **config, "device": fixture.device}
    )
    return KernelDiscoverySurrogate(cfg, state=copy.deepcopy(fixture.data["state"]))


def replay_fit(fixture: Fixture, config: dict[str, Any] | str) -> tuple[float, Any]:
    """Seconds of kd's fit + selection of the fixture's round until the round is
    complete (fits in the background included), and the round's record."""
    surrogate = replay_surrogate(fixture, config)
    t0 = _now()
    surrogate.fit([fixture.dataset()], fixture.digest())
    surrogate.finish_background()
    elapsed = _now() - t0
    surrogate.close()
    return elapsed, surrogate.history[-1] if surrogate.history else None


def _fit_ax(fixture: Fixture) -> tuple[float, dict[str, torch.Tensor]]:
    surrogate = Surrogate()
    t0 = _now()
    surrogate.fit([fixture.dataset()], fixture.digest())
    elapsed = _now() - t0
    return elapsed, {k: v.detach().clone() for k, v in surrogate.model.state_dict().items()}


def fitted_surrogate(
    fixture: Fixture, candidate: KernelCandidate | None, params: dict[str, torch.Tensor]
) -> Surrogate:
    """A fresh surrogate with the given fitted model (no fit): what Ax's fit hands over."""
    if candidate is None:
        surrogate = Surrogate()
    else:
        surrogate = Surrogate(
            surrogate_spec=SurrogateSpec(model_configs=[candidate_model_config(candidate)])
        )
    surrogate.fit([fixture.dataset()], fixture.digest(), state_dict=params, refit=False)
    return surrogate


ACQFS: dict[str, type[qLogNoisyExpectedImprovement]] = {
    "qlognei": qLogNoisyExpectedImprovement,
    "new_rows": NewRowsqLogNEI,
}


def _acquire(
    fixture: Fixture,
    surrogate: Surrogate,
    options: dict[str, Any],
    seed: int,
    acqf: type[qLogNoisyExpectedImprovement] = qLogNoisyExpectedImprovement,
) -> tuple[float, bool]:
    """Seconds of one acquisition optimization, and whether its optimizer reported a failure."""
    torch.manual_seed(seed)
    digest = fixture.digest()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = _now()
        acquisition = KernelDiscoveryAcquisition(
            surrogate=surrogate,
            search_space_digest=digest,
            torch_opt_config=TorchOptConfig(objective_weights=fixture.objective_weights()),
            botorch_acqf_class=acqf,
        )
        acquisition.optimize(
            n=int(fixture.data["q"]), search_space_digest=digest, optimizer_options=options
        )
        elapsed = _now() - t0
    failed = any(
        issubclass(w.category, OptimizationWarning) or "Optimization failed" in str(w.message)
        for w in caught
    )
    return elapsed, failed


@dataclass
class Timing:
    """Seconds of each repetition, per part: ``kd_fit`` (the round's fit + selection until
    it hands the acquisition a model), ``kd_acq``, ``kd_wait`` (what was left of the
    round's background fits when the acquisition ended), ``ax_fit``, ``ax_acq``; and
    ``kd_background`` (the background fits' own seconds, in the worker: not part of the
    round time)."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    failures: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    replay_choice: str | None = None

    def median(self, part: str) -> float:
        values = self.seconds.get(part)
        return statistics.median(values) if values else 0.0

    def round(self, method: str) -> float:
        wait = self.median("kd_wait") if method == "kd" else 0.0
        return self.median(f"{method}_fit") + self.median(f"{method}_acq") + wait


def time_fixture(
    fixture: Fixture,
    repeats: int,
    kd_config: dict[str, Any] | str,
    options: dict[str, Any],
    parts: Sequence[str] = ("fit", "acquisition"),
    seed: int = 0,
    through: str = "recorded",
    acqf: str | None = None,
) -> Timing:
    """Alternating A/B timings of one fixture's round (see the module docstring).

    A kd round is its fit + selection, then the acquisition while the round's other
    kernels are fitted in the background (``background_fits``), then the wait for what
    is left of them: the time until the round is complete.

    ``through="replayed"``: kd's acquisition runs through the model kd's own fit handed on
    (the surrogate itself, as in an Ax run; its wait for the background fits is then
    part of the acquisition), not through the recorded chosen kernel: for a
    configuration that chooses differently from the recorded runs. ``acqf``: ``None``
    for each method's default (kd's ``config.acquisition``, Ax's qLogNEI), or BoTorch's
    ``qlognei`` or ``new_rows``
    (:class:`~ax_kernel_discovery.surrogate.new_rows_qlognei.NewRowsqLogNEI`) for both methods.
    """
    out = Timing()
    chosen = fixture.chosen_candidate()
    kd_params = decode_tensors(fixture.data["chosen"]["parameters"]) if chosen is not None else None
    _, ax_params = _fit_ax(fixture)  # untimed: Ax's default model for the acquisition
    for rep in range(repeats):
        order = ("kd", "ax") if rep % 2 == 0 else ("ax", "kd")
        for method in order:
            kd = replay_surrogate(fixture, kd_config) if method == "kd" else None
            if "fit" in parts:
                if kd is not None:
                    t0 = _now()
                    kd.fit([fixture.dataset()], fixture.digest())
                    out.seconds["kd_fit"].append(_now() - t0)
                else:
                    out.seconds["ax_fit"].append(_fit_ax(fixture)[0])
            if "acquisition" in parts:
                if kd is not None and through == "replayed":
                    surrogate = kd
                elif method == "kd" and kd_params is not None:
                    surrogate = fitted_surrogate(fixture, chosen, kd_params)
                else:  # ax, or a guarded round (kd handed Ax's default model on)
                    surrogate = fitted_surrogate(fixture, None, ax_params)
                # each method's own, as botorch_step resolves it, unless --acqf names one
                acqf_class = ACQFS[acqf] if acqf is not None else default_acqf_class(kd)
                seconds, failed = _acquire(fixture, surrogate, options, seed, acqf_class)
                out.seconds[f"{method}_acq"].append(seconds)
                out.failures[method] += int(failed)
            if kd is not None and "fit" in parts:
                t0 = _now()
                kd.finish_background()
                out.seconds["kd_wait"].append(_now() - t0)
                rec = kd.history[-1] if kd.history else None
                out.replay_choice = rec.chosen if rec is not None else None
                if rec is not None and "background_fits" in rec.timings:
                    out.seconds["kd_background"].append(rec.timings["background_fits"])
                kd.close()
    return out


def check_against_study(fixture: Fixture, study: Path) -> None:
    """Stop unless ``fixture`` is a round of a kd run in ``study`` (a variant's folder).

    The run file ``<problem>__kd__seed<seed>.json`` must hold the fixture's round, with
    the same training size, chosen kernel and ``kd_config``, and the run's first ``n``
    objective values must be the fixture's: the fixture is then a round of that study,
    replayed from the state the run started it with.
    """
    d = fixture.data
    run = study / f"{d['problem']}__kd__seed{d['seed']}.json"
    if not run.is_file():
        raise SystemExit(f"error: {fixture.name}: no run {run.name} in {study}")
    result = json.loads(run.read_text())
    rec = next((r for r in result["rounds"] if r["round"] == d["round"]), None)
    found: tuple[Any, ...] | None = None
    if rec is not None:
        found = (rec.get("n_before"), rec.get("chosen"), result["config"].get("kd_config"))
    wanted = (d["n"], d["recorded"]["chosen"], d["kd_config"])
    values = np.asarray(result.get("values", [])[: d["n"]], dtype=float)
    same_values = values.shape == fixture.Y.shape and np.allclose(values, fixture.Y)
    if found != wanted or not same_values:
        what = f"(n, chosen, kd_config) = {found}" if found != wanted else "other values"
        raise SystemExit(
            f"error: {fixture.name} is not round {d['round']} of {run}: the run has "
            f"{what}, the fixture {wanted}; extract the fixture from this study's "
            "checkpoints or pass the study it was taken from"
        )


def select_fixtures(
    fixtures: Sequence[Fixture], study: Path | None = None, rounds: int | None = None
) -> list[Fixture]:
    """The fixtures to time: checked against ``study``, at most ``rounds`` per problem.

    Per problem, the first ``rounds`` fixtures in name order (seed, then round) are kept.
    """
    if rounds is not None and rounds < 1:
        raise SystemExit(f"error: --rounds must be at least 1, got {rounds}")
    kept: list[Fixture] = []
    per_problem: dict[str, int] = defaultdict(int)
    for fixture in sorted(fixtures, key=lambda f: f.name):
        if study is not None:
            check_against_study(fixture, study)
        if rounds is None or per_problem[fixture.problem] < rounds:
            per_problem[fixture.problem] += 1
            kept.append(fixture)
    return kept


def _print_fixture_row(fixture: Fixture, t: Timing) -> None:
    kd, ax = t.round("kd"), t.round("ax")
    recorded = fixture.data["chosen"]["name"]
    print(
        f"| {fixture.name} | {fixture.data['n']} | {recorded} | {t.median('kd_fit'):.1f} | "
        f"{t.median('kd_acq'):.1f} | {t.median('kd_wait'):.1f} | "
        f"{t.median('kd_background'):.1f} | {t.median('ax_fit'):.1f} | "
        f"{t.median('ax_acq'):.1f} | {kd:.1f} | {ax:.1f} | **{kd / ax:.2f}** | "
        f"{t.failures['kd']}/{t.failures['ax']} | {t.replay_choice or '-'} |",
        flush=True,
    )


def print_summary(results: Sequence[tuple[Fixture, Timing]]) -> None:
    """Per problem: mean over its fixtures of each median, and the round-time ratio."""
    by_problem: dict[str, list[Timing]] = defaultdict(list)
    for fixture, t in results:
        by_problem[fixture.problem].append(t)
    print(
        "\n| problem | rounds | kd fit+selection | kd acquisition | kd wait | kd round | "
        "ax_default fit | ax_default acquisition | ax_default round | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for problem, ts in by_problem.items():
        m = {
            p: float(np.mean([t.median(p) for t in ts]))
            for p in ("kd_fit", "kd_acq", "kd_wait", "ax_fit", "ax_acq")
        }
        kd = float(np.mean([t.round("kd") for t in ts]))
        ax = float(np.mean([t.round("ax") for t in ts]))
        print(
            f"| {problem} | {len(ts)} | {m['kd_fit']:.1f} | {m['kd_acq']:.1f} | "
            f"{m['kd_wait']:.1f} | {kd:.1f} | {m['ax_fit']:.1f} | {m['ax_acq']:.1f} | "
            f"{ax:.1f} | **{kd / ax:.2f}** |"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("extract", help="build a fixture from a run's result and checkpoints")
    ex.add_argument("result", type=Path, help="the run's result JSON")
    ex.add_argument("checkpoints", type=Path, nargs="+", help="Ax checkpoints of the run")
    ex.add_argument("--round", type=int, required=True, help="the BO round (result 'round')")
    ex.add_argument("--out", type=Path, required=True)
    tm = sub.add_parser("time", help="time fixtures, kd against Ax's default")
    tm.add_argument("fixtures", type=Path, nargs="+")
    tm.add_argument("--repeats", type=int, default=3)
    tm.add_argument(
        "--kd-config",
        type=lambda text: text if text == "run" else json.loads(text),
        default={},
        help="KernelDiscoveryConfig fields (JSON), or 'run': each fixture's run's own "
        "(default: the default configuration)",
    )
    tm.add_argument(
        "--study",
        type=Path,
        help="the folder of the kd runs the fixtures come from (benchmarks/results/study): every "
        "fixture must be a round of one of its kd runs, with the same chosen kernel",
    )
    tm.add_argument(
        "--rounds", type=int, help="time at most this many fixtures per problem (name order)"
    )
    tm.add_argument("--parts", nargs="+", default=["fit", "acquisition"])
    tm.add_argument(
        "--through",
        choices=["recorded", "replayed"],
        default="recorded",
        help="kd's acquisition through the recorded chosen kernel (default) or through the "
        "model kd's replayed fit hands on (for a configuration that chooses differently)",
    )
    tm.add_argument(
        "--acqf",
        choices=sorted(ACQFS),
        default=None,
        help="both methods' acquisition function: BoTorch's qLogNEI or NewRowsqLogNEI (the "
        "joint posterior from cached baseline blocks); default: each method's own (kd's "
        "config.acquisition, NewRowsqLogNEI by default; BoTorch's qLogNEI for Ax's default)",
    )
    tm.add_argument("--threads", type=int, default=1)
    tm.add_argument(
        "--device",
        default="cpu",
        help="torch device of both methods' data, fits and acquisitions: cpu (default), "
        "cuda, cuda:N or auto (CUDA when available)",
    )
    tm.add_argument("--json", type=Path, help="also write the timings here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads if args.command == "time" else 1)
    set_ax_logger_levels(logging.ERROR)
    if args.command == "extract":
        extract(args.result, args.checkpoints, args.round, args.out)
        return
    device = resolve_device(args.device)
    fixtures = [Fixture.load(p, device) for p in args.fixtures]
    fixtures = select_fixtures(fixtures, args.study, args.rounds)
    print(
        f"torch {torch.__version__}, device {device_label(device)}, "
        f"threads={torch.get_num_threads()}, repeats={args.repeats} "
        f"(alternating kd/ax, medians), kd config: {args.kd_config or 'default'}, "
        f"kd's acquisition through the {args.through} choice, acquisition function "
        + (args.acqf or "each method's default")
        + (f", rounds of {args.study}" if args.study else "")
    )
    print(
        "| fixture | n | chosen (recorded) | kd fit | kd acq | kd wait | kd background | "
        "ax fit | ax acq | kd round | ax round | ratio | optimizer failures kd/ax | "
        "replayed choice |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    results = []
    for fixture in fixtures:
        s = fixture.data["settings"]
        options = optimizer_options(s["num_restarts"], s["raw_samples"], True, s["maxiter"])
        if args.through == "replayed" and "fit" not in args.parts:
            raise SystemExit(
                "error: --through replayed needs the fit part (--parts fit acquisition)"
            )
        t = time_fixture(
            fixture,
            args.repeats,
            args.kd_config,
            options,
            args.parts,
            through=args.through,
            acqf=args.acqf,
        )
        _print_fixture_row(fixture, t)
        results.append((fixture, t))
    print_summary(results)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    f.name: {
                        "seconds": dict(t.seconds),
                        "failures": dict(t.failures),
                        "device": device_label(device),
                        "acqf": args.acqf or "default",
                    }
                    for f, t in results
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
