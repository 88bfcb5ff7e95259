"""What a user pays per BO round: Ax's ``Client`` loop, kd's default strategy against Ax's own.

Per problem, two Ax ``Client`` runs in one process on the same problem, seed and initial
design: ``kd``, :func:`~ax_kernel_discovery.kernel_discovery_generation_strategy` with its
defaults, and ``ax``, the strategy ``Client()`` chooses itself
(``choose_generation_strategy``, method ``"fast"``), given only the initialization budget
and seed that the kd strategy gets (``configure_generation_strategy(
initialization_budget=N, initialization_random_seed=S)``; unconfigured, Ax would use 5
unseeded trials). Both start with the box centre and the same seeded Sobol points: the
script checks that the initial trials' parameters are equal. Both use Ax's acquisition
settings (the kd strategy's optimizer settings are left ``None``, which is Ax's own);
``--acquisition`` gives both the same other settings (the smoke run's tiny ones).

The problems are :data:`~ax_kernel_discovery.benchmarks.PROBLEMS`' (``NAME@D`` sets the
dimension of an embedded synthetic one): by default ``hartmann6_100`` (D = 100, Hartmann-6
in 6 of 100 inputs) and ``svm`` (D = 388, the SVM problem on the bundled CT-slice sample).

After the initial design, each round asks ``client.get_next_trials(q)`` of each method
(alternating which goes first), evaluates the trials and completes them; ``n`` is the
number of trials when it asks. Ax's own Sobol node caps the request at the hand-over to
BO at one trial: that round asks Ax again for the rest, within the same measurement (the
``calls`` column; a user who wants ``q`` trials does the same). Per round and
method it records the wall seconds and the CPU seconds of the ``get_next_trials`` call
and, for kd, of the wait for the rest of its round after it (the fits its worker goes
on with while the trials run, ``finish_background``: counted as if the trials took no
time; ``wall_call`` is the calls alone): this process's and its worker processes' (kd's
persistent workers, ``surrogate/worker.py``: every descendant's user + system time read
with ``psutil``, reaped children included), and the kd/ax ratios of both. Inside the
call it splits the time into the surrogate's ``fit`` (for kd, its round up to the
hand-over to the acquisition) and the acquisition (``BoTorchGenerator.gen``).

The profile (``--profile``, also in the JSON) is kd's rounds by phase and by member, from
each round's :class:`~ax_kernel_discovery.surrogate.round_record.RoundRecord` (propose,
validate, forecast scoring, the fits in this process and in the worker, the wait) and the
split above; per member, its fit seconds and the L-BFGS iterations of its fits. The
iterations are counted in this process (BoTorch's ``scipy_minimize``; fits by its batched
L-BFGS-B are not seen): fits that run in kd's background worker are not counted (``-``);
``--kd-config '{"background_fits": "off"}'`` runs every fit here (the same fits and
choices; the round's time structure changes).

Output in ``--out``: ``user_pays.txt`` (the tables as printed), ``user_pays.json`` (the
data), ``user_pays.png`` (wall and CPU seconds per round against n, both methods, drawn
from the JSON; ``python benchmarks/user_pays.py --plot user_pays.json`` redraws it). The
JSON and the text are written after every round (``"complete": false`` until the end).

**Resuming.** Both clients are checkpointed every ``--checkpoint-every`` rounds (default
4) and after a problem's last round (Ax's
``Client.save_to_json_file``, which keeps kd's population and history: a reloaded run
continues as an uninterrupted one would) in ``--out``'s ``checkpoints/``. ``--resume``
continues a run in ``--out`` that stopped (its settings must be the same; the checkpoint
interval may differ) at the first round after its last checkpoint (the rounds after it are
measured again): the hours of the full benchmark can be spread over several quiet
stretches of the machine that holds the checkpoints (they are not committed: an Ax
``Client`` file at n = 400 and D = 388 is of the order of 100 MB). Each stretch is a
*session* in the JSON (the round it started at, the machine, the load and the commit) and
a line in the tables; the first kd round of a resumed session includes the start of kd's
worker process.

The full benchmark (run it on a quiet machine; hours):

    python benchmarks/user_pays.py --problems hartmann6_100 svm --sobol 50 --rounds 36 \\
        --q 10 --profile --out benchmarks/results/user_pays

A smoke run (seconds): ``python benchmarks/user_pays.py --smoke --out /tmp/user_pays``.

Torch runs single-threaded (``torch.set_num_threads(1)``, printed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.generators.torch.botorch_modular.generator import BoTorchGenerator
from ax.utils.common.logger import set_ax_logger_levels

from ax_kernel_discovery import KernelDiscoveryConfig, kernel_discovery_generation_strategy
from ax_kernel_discovery.benchmarks import BlackBoxProblem, get_problem
from ax_kernel_discovery.runner.environment import device_info, package_versions, source_commit
from ax_kernel_discovery.strategy import AcquisitionOptions, surrogate_of
from ax_kernel_discovery.surrogate.fitting import KernelFitter
from ax_kernel_discovery.testing import TINY_ACQUISITION

METHODS = ("kd", "ax")
METRIC = "f"
#: The label of the MLL fits of Ax's default model (ax's, and kd's in a guard round).
AX_MODEL = "(Ax default model)"
#: The smoke run's settings: a few seconds in all.
SMOKE: dict[str, Any] = {
    "problems": ["branin100@5"],
    "sobol": 5,
    "rounds": 2,
    "q": 2,
    "acquisition": TINY_ACQUISITION,
    "kd_config": {"population_size": 3, "proposals_per_round": 1, "fit_maxiter": 5},
}


# --- measuring ---------------------------------------------------------------------------


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds used so far by this process and by its descendants (user + system).

    The descendants' are every live descendant's own time and the time of those reaped
    (``children_*``); a worker that lives across rounds (kd's) is counted while it lives.
    """
    me = psutil.Process()
    t = me.cpu_times()
    workers = t.children_user + t.children_system
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            c = child.cpu_times()
            workers += c.user + c.system + c.children_user + c.children_system
    return t.user + t.system, workers


@dataclass
class Phases:
    """Seconds of the surrogate fits and the acquisitions in the calls being measured, the
    L-BFGS iterations of the MLL fits made in this process, by model, and the CPU seconds
    of each kd member's fit and score in this process."""

    fit: float = 0.0
    acquisition: float = 0.0
    iterations: dict[str, int] = field(default_factory=dict)
    member_cpu: dict[str, float] = field(default_factory=dict)


class Meter:
    """Times ``BoTorchGenerator.fit`` / ``gen`` and counts MLL-fit iterations while on."""

    def __init__(self) -> None:
        self.phases = Phases()
        self._member: str | None = None

    @contextlib.contextmanager
    def installed(self) -> Iterator[Meter]:
        """Wrap Ax's generator, kd's fitter and BoTorch's ``scipy_minimize`` for the block."""
        import botorch.optim.core as core

        patches: list[tuple[Any, str, Callable[..., Any]]] = [
            (BoTorchGenerator, "fit", self._timed("fit", BoTorchGenerator.fit)),
            (BoTorchGenerator, "gen", self._timed("acquisition", BoTorchGenerator.gen)),
            (KernelFitter, "fit_and_score", self._named(KernelFitter.fit_and_score)),
            (core, "minimize_with_timeout", self._counted(core.minimize_with_timeout)),
        ]
        saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
        for owner, name, fn in patches:
            setattr(owner, name, fn)
        try:
            yield self
        finally:
            for owner, name, fn in saved:
                setattr(owner, name, fn)

    def take(self) -> Phases:
        """The phases since the last ``take``."""
        out, self.phases = self.phases, Phases()
        return out

    def _timed(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                setattr(self.phases, phase, getattr(self.phases, phase) + time.perf_counter() - t0)

        return wrapper

    def _named(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(fitter: Any, cand: Any, *args: Any, **kwargs: Any) -> Any:
            self._member = cand.name
            t0 = time.process_time()
            try:
                return fn(fitter, cand, *args, **kwargs)
            finally:
                cpu = self.phases.member_cpu
                cpu[cand.name] = cpu.get(cand.name, 0.0) + time.process_time() - t0
                self._member = None

        return wrapper

    def _counted(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            raw = fn(*args, **kwargs)
            key = self._member or AX_MODEL  # ax's model, or kd's in a guard round
            self.phases.iterations[key] = self.phases.iterations.get(key, 0) + int(raw.nit)
            return raw

        return wrapper


@dataclass
class Call:
    """One ``get_next_trials`` call of one method: seconds and what happened in it."""

    wall: float
    cpu: float
    cpu_main: float
    cpu_workers: float
    fit: float
    acquisition: float
    iterations: dict[str, int]
    calls: int  # get_next_trials calls it took to get q trials (see ask)
    record: dict[str, Any] | None = None  # kd: the round's RoundRecord (JSON)
    wall_call: float = 0.0  # the get_next_trials calls alone (wall: these + wait_after)
    wait_after: float = 0.0  # kd: the wait for the rest of its round after the calls


def ask(client: Client, q: int) -> tuple[dict[int, Any], int]:
    """``q`` trials from ``client.get_next_trials``, and how many calls it took.

    Ax's own Sobol node caps the request that hands over to BO at one trial; a user who
    wants ``q`` asks again for the rest (kd's strategy returns ``q`` at once).
    """
    trials: dict[int, Any] = {}
    calls = 0
    while len(trials) < q:
        calls += 1
        more = client.get_next_trials(max_trials=q - len(trials))
        if not more:
            raise RuntimeError(f"get_next_trials returned no trial after {len(trials)} of {q}")
        trials.update(more)
    return trials, calls


def measured_call(
    client: Client, q: int, meter: Meter, finish: Callable[[], None] = lambda: None
) -> tuple[dict[int, Any], Call]:
    """:func:`ask` for ``q`` trials, timed, with ``finish`` after it: kd's wait for the
    rest of its round (the fits its worker goes on with after the calls,
    ``finish_background``), counted in the round's wall and CPU seconds as if the trials
    took no time to run (a user whose trials take longer than those fits does not wait
    for them: ``wall_call``)."""
    meter.take()
    main0, workers0 = cpu_seconds()
    t0 = time.perf_counter()
    trials, calls = ask(client, q)
    t1 = time.perf_counter()
    finish()
    t2 = time.perf_counter()
    main1, workers1 = cpu_seconds()
    p = meter.take()
    main, workers = main1 - main0, workers1 - workers0
    call = Call(
        t2 - t0,
        main + workers,
        main,
        workers,
        p.fit,
        p.acquisition,
        p.iterations,
        calls,
        wall_call=t1 - t0,
        wait_after=t2 - t1,
    )
    return trials, call


# --- the two clients ---------------------------------------------------------------------


def new_client(problem: BlackBoxProblem, method: str, args: argparse.Namespace) -> Client:
    """A ``Client`` over the problem's box with ``method``'s strategy (see the docstring)."""
    width = len(str(problem.dim - 1))
    client = Client(random_seed=args.seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(
                name=f"x{i:0{width}d}", parameter_type="float", bounds=(float(lo), float(hi))
            )
            for i, (lo, hi) in enumerate(zip(problem.lower, problem.upper, strict=True))
        ],
        name=f"{problem.name}__{method}",
    )
    client.configure_optimization(f"-{METRIC}" if problem.minimize else METRIC)
    acquisition = AcquisitionOptions(**(args.acquisition or {}))
    if method == "kd":
        config = KernelDiscoveryConfig.model_validate({"seed": args.seed, **args.kd_config})
        client.set_generation_strategy(
            kernel_discovery_generation_strategy(
                config, num_sobol=args.sobol, seed=args.seed, **(args.acquisition or {})
            )
        )
    else:
        client.configure_generation_strategy(
            initialization_budget=args.sobol, initialization_random_seed=args.seed
        )
        if acquisition.optimizer_kwargs():  # the same settings as kd's (else Ax's own)
            spec = client._generation_strategy._nodes[-1].generator_specs[0]
            spec.generator_gen_kwargs = {
                "model_gen_options": {"optimizer_kwargs": acquisition.optimizer_kwargs()}
            }
    return client


def evaluate(client: Client, problem: BlackBoxProblem, trials: dict[int, Any]) -> None:
    """Evaluate the trials and complete them."""
    names = list(client._experiment.search_space.parameters)
    for index, params in trials.items():
        x = np.array([[params[name] for name in names]], dtype=float)
        client.complete_trial(index, raw_data={METRIC: float(problem.evaluate(x)[0])})


def initial_parameters(client: Client) -> np.ndarray:
    """The parameters of the client's trials, in trial order."""
    names = list(client._experiment.search_space.parameters)
    trials = client._experiment.trials
    return np.array([[trials[i].arm.parameters[k] for k in names] for i in sorted(trials)])


def checkpoint_path(args: argparse.Namespace, spec: str, method: str) -> Path:
    """Where ``method``'s client on ``spec`` is checkpointed after every round."""
    return args.out / "checkpoints" / f"{spec.replace('@', '_at_')}__{method}.json"


def checkpoint_due(round: int, args: argparse.Namespace) -> bool:
    """Whether both clients are checkpointed after ``round`` (1-based): every
    ``--checkpoint-every`` rounds and after the last one (0: only after the last one). A
    client file at n = 400 and D = 388 is of the order of 100 MB: writing it less often
    keeps the benchmark's own run short; a resumed run measures again the rounds after
    its last checkpoint."""
    every = args.checkpoint_every
    return round == args.rounds or (every > 0 and round % every == 0)


def save_client(client: Client, path: Path) -> None:
    """``client.save_to_json_file``, atomically (a kill leaves the previous checkpoint)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    client.save_to_json_file(str(tmp))
    os.replace(tmp, path)


def resumed_clients(
    spec: str, args: argparse.Namespace, rounds: list[dict[str, Any]]
) -> dict[str, Client] | None:
    """Both clients from their checkpoints, with ``rounds`` cut to the rounds they hold
    (the JSON is written before the checkpoints, and the checkpoints only every
    ``--checkpoint-every`` rounds: the rounds measured after the last checkpoint are
    measured again). ``None`` (and ``rounds`` emptied): neither client was checkpointed
    yet; the problem starts over from its initial design.

    Raises:
        SystemExit: One checkpoint is missing, or the two hold different numbers of trials.
    """
    paths = {m: checkpoint_path(args, spec, m) for m in METHODS}
    if not any(path.is_file() for path in paths.values()):
        rounds.clear()
        return None
    clients: dict[str, Client] = {}
    for m, path in paths.items():
        if not path.is_file():
            raise SystemExit(f"--resume: {path} is missing; start over in another --out")
        clients[m] = Client.load_from_json_file(str(path))
    trials = {m: len(clients[m]._experiment.trials) for m in METHODS}
    if trials["kd"] != trials["ax"] or (trials["kd"] - args.sobol) % args.q:
        raise SystemExit(f"--resume: the checkpoints of {spec} hold {trials} trials")
    del rounds[(trials["kd"] - args.sobol) // args.q :]
    return clients


def run_problem(
    spec: str,
    args: argparse.Namespace,
    meter: Meter,
    after_round: Callable[[dict[str, Any]], None] = lambda result: None,
    resume: dict[str, Any] | None = None,
    resumed: Callable[[int], None] = lambda round: None,
) -> dict[str, Any]:
    """Both methods' Client loops on one problem, round by round; the data of the rounds
    (also handed to ``after_round`` after each round, e.g. to save them). ``resume``: the
    problem's data so far, to go on from its checkpoints (``resumed`` is told the round
    it goes on at)."""
    name, _, dim = spec.partition("@")
    problem = get_problem(name, **({"dim": int(dim)} if dim else {}))
    rounds: list[dict[str, Any]] = list((resume or {}).get("rounds", []))
    held = resumed_clients(spec, args, rounds) if rounds else None
    if held is not None:
        clients = held
        resumed(len(rounds) + 1)
    else:
        clients = {m: new_client(problem, m, args) for m in METHODS}
        for m in METHODS:
            trials, _ = ask(clients[m], args.sobol)
            evaluate(clients[m], problem, trials)
        design = {m: initial_parameters(clients[m]) for m in METHODS}
        if not np.array_equal(design["kd"], design["ax"]):
            raise AssertionError(f"{spec}: kd's and Ax's initial designs differ")
    surrogate = surrogate_of(clients["kd"])
    result = {
        "problem": spec,
        "name": problem.name,
        "dim": problem.dim,
        "initial_design": args.sobol,
        "same_initial_design": True,
        "rounds": rounds,
        "total": totals(rounds),
        "complete": False,
    }
    start = len(rounds)
    for r in range(start, args.rounds):
        n = len(clients["kd"]._experiment.trials)
        row: dict[str, Any] = {"round": r + 1, "n": n}
        for m in METHODS if r % 2 == 0 else METHODS[::-1]:
            finish = surrogate.finish_background if m == "kd" else lambda: None
            trials, call = measured_call(clients[m], args.q, meter, finish)
            if m == "kd":
                call.record = surrogate.history[-1].model_dump(mode="json")
            evaluate(clients[m], problem, trials)
            row[m] = asdict(call)
        if len(clients["ax"]._experiment.trials) != n + args.q:
            raise AssertionError(f"{spec}: kd and ax have different numbers of trials")
        row["ratio_wall"] = ratio(row["kd"]["wall"], row["ax"]["wall"])
        row["ratio_cpu"] = ratio(row["kd"]["cpu"], row["ax"]["cpu"])
        rounds.append(row)
        result["total"] = totals(rounds)
        result["profile"] = profile(result)
        print_round(spec, row, first=r == start)
        after_round(result)
        if checkpoint_due(r + 1, args):
            for m in METHODS:  # after the JSON (see resumed_clients)
                save_client(clients[m], checkpoint_path(args, spec, m))
    surrogate.close()
    result["complete"] = True
    return result


def totals(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums over the rounds per method and the ratios of the sums."""
    out: dict[str, Any] = {
        m: {k: sum(r[m][k] for r in rounds) for k in ("wall", "cpu", "fit", "acquisition")}
        for m in METHODS
    }
    out["ratio_wall"] = ratio(out["kd"]["wall"], out["ax"]["wall"])
    out["ratio_cpu"] = ratio(out["kd"]["cpu"], out["ax"]["cpu"])
    return out


def ratio(kd: float, ax: float) -> float:
    """kd's seconds over ax's (NaN when ax's are 0: no round)."""
    return kd / ax if ax > 0 else float("nan")


# --- tables ------------------------------------------------------------------------------

_LINES: list[str] = []


def emit(line: str = "") -> None:
    """Print a line and keep it for ``user_pays.txt``."""
    print(line, flush=True)
    _LINES.append(line)


def print_round(spec: str, row: dict[str, Any], first: bool) -> None:
    if first:
        emit(f"\n{spec}: seconds of get_next_trials per BO round (CPU: this process + workers)")
        emit(
            "| round | n | kd wall | kd CPU | ax wall | ax CPU | kd/ax wall | kd/ax CPU | "
            "calls kd/ax | kd chose |"
        )
        emit("|---" * 10 + "|")
    kd, ax = row["kd"], row["ax"]
    chosen = str((kd["record"] or {}).get("chosen"))[:40]
    emit(
        f"| {row['round']} | {row['n']} | {kd['wall']:.2f} | {kd['cpu']:.2f} | {ax['wall']:.2f} | "
        f"{ax['cpu']:.2f} | {row['ratio_wall']:.2f} | {row['ratio_cpu']:.2f} | "
        f"{kd['calls']}/{ax['calls']} | {chosen} |"
    )


def print_total(result: dict[str, Any]) -> None:
    t = result["total"]
    emit(
        f"| total | {len(result['rounds'])} rounds | {t['kd']['wall']:.2f} | {t['kd']['cpu']:.2f} | "
        f"{t['ax']['wall']:.2f} | {t['ax']['cpu']:.2f} | **{t['ratio_wall']:.2f}** | "
        f"**{t['ratio_cpu']:.2f}** | | |"
    )


def profile(result: dict[str, Any]) -> dict[str, Any]:
    """kd's rounds by phase and by member (see the module docstring)."""
    phases = []
    members: dict[str, dict[str, float]] = {}
    for row in result["rounds"]:
        kd, ax, rec = row["kd"], row["ax"], row["kd"]["record"] or {}
        t = rec.get("timings", {})
        phases.append(
            {
                "round": row["round"],
                "n": row["n"],
                "wall": kd["wall"],
                "propose": t.get("propose", 0.0),
                "validate": t.get("validate", 0.0),
                "forecast": t.get("heldout", 0.0),
                "fit_here": t.get("fit_and_score", 0.0),
                "fit_worker": t.get("background_fits", 0.0),
                "wait": kd["wait_after"],  # for the round's worker, after the calls
                "surrogate_fit": kd["fit"],
                "acquisition": kd["acquisition"],
                "other": kd["wall_call"] - kd["fit"] - kd["acquisition"],
                "ax_fit": ax["fit"],
                "ax_acquisition": ax["acquisition"],
                "ax_iterations": sum(ax["iterations"].values()),
            }
        )
        for key, seconds in t.items():
            kind, _, member = key.partition(":")
            if kind in ("fit", "refit") and member:
                m = members.setdefault(member, {"rounds": 0, "fit": 0.0, "lbfgs": 0.0})
                m["rounds" if kind == "fit" else "lbfgs"] += 1 if kind == "fit" else seconds
                if kind == "fit":
                    m["fit"] += seconds
        for member, its in kd["iterations"].items():
            m = members.setdefault(member, {"rounds": 0, "fit": 0.0, "lbfgs": 0.0})
            m["iterations"] = m.get("iterations", 0) + its
            m["counted_rounds"] = m.get("counted_rounds", 0) + 1
    return {"phases": phases, "members": members}


def print_profile(spec: str, prof: dict[str, Any]) -> None:
    emit(
        f"\n{spec}: kd's rounds by phase (seconds; fit_worker runs beside the acquisition; "
        "wait: for the worker after the calls)"
    )
    cols = [
        "propose",
        "validate",
        "forecast",
        "fit_here",
        "fit_worker",
        "wait",
        "surrogate_fit",
        "acquisition",
        "other",
        "ax_fit",
        "ax_acquisition",
    ]
    emit(f"| round | n | kd wall | {' | '.join(cols)} | ax fit iterations |")
    emit("|---" * (len(cols) + 4) + "|")
    for p in prof["phases"]:
        values = " | ".join(f"{p[c]:.2f}" for c in cols)
        emit(f"| {p['round']} | {p['n']} | {p['wall']:.2f} | {values} | {p['ax_iterations']} |")
    sums = {c: sum(p[c] for p in prof["phases"]) for c in ["wall", *cols, "ax_iterations"]}
    values = " | ".join(f"{sums[c]:.2f}" for c in cols)
    emit(f"| total | | {sums['wall']:.2f} | {values} | {sums['ax_iterations']:.0f} |")
    emit(f"\n{spec}: kd's members over the rounds (iterations: fits in this process only)")
    emit("| member | rounds fitted | fit s | L-BFGS s | mean fit s | iterations (rounds) |")
    emit("|---|---|---|---|---|---|")
    for name, m in sorted(prof["members"].items(), key=lambda kv: -kv[1]["fit"]):
        its = f"{m['iterations']} ({m['counted_rounds']})" if "iterations" in m else "-"
        if not m["rounds"]:  # Ax's default model in kd's guard rounds: iterations only
            emit(f"| {name[:50]} | - | - | - | - | {its} |")
            continue
        emit(
            f"| {name[:50]} | {m['rounds']:.0f} | {m['fit']:.2f} | {m['lbfgs']:.2f} | "
            f"{m['fit'] / m['rounds']:.2f} | {its} |"
        )


def plot(json_path: Path, png_path: Path) -> None:
    """Wall and CPU seconds per round against n, kd and Ax, one panel pair per problem."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(json_path.read_text())
    results = data["results"]
    fig, axes = plt.subplots(
        len(results), 2, figsize=(10, 3.5 * len(results)), squeeze=False, sharex="row"
    )
    for row, result in zip(axes, results, strict=True):
        n = [r["n"] for r in result["rounds"]]
        for ax, key in zip(row, ("wall", "cpu"), strict=True):
            for m, style in zip(METHODS, ("o-", "s--"), strict=True):
                ax.plot(n, [r[m][key] for r in result["rounds"]], style, label=m, markersize=3)
            ax.set_title(f"{result['name']} (D={result['dim']}): {key} s / get_next_trials")
            ax.set_xlabel("n (observed points)")
            ax.set_ylabel("seconds")
            ax.legend()
    fig.suptitle(f"q = {data['settings']['q']}, seed {data['settings']['seed']}")
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)


# --- main --------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--problems",
        nargs="+",
        default=["hartmann6_100", "svm"],
        help="names of ax_kernel_discovery.benchmarks.PROBLEMS; NAME@D sets a problem's dim",
    )
    parser.add_argument("--sobol", type=int, default=50, help="initial trials (centre + Sobol)")
    parser.add_argument(
        "--rounds", type=int, default=36, help="BO rounds after the design (n = 50..400)"
    )
    parser.add_argument("--q", type=int, default=10, help="trials per get_next_trials")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--acquisition", type=json.loads, default=None, help="optimizer settings, both methods"
    )
    parser.add_argument(
        "--kd-config", type=json.loads, default={}, help="KernelDiscoveryConfig fields (JSON)"
    )
    parser.add_argument("--profile", action="store_true", help="print kd's round profile")
    parser.add_argument(
        "--smoke", action="store_true", help=f"a small run: {SMOKE} (options given override these)"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/user_pays"))
    parser.add_argument("--plot", type=Path, help="only redraw the PNG of this JSON")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with the run in --out where it stopped (the same settings)",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        default=4,
        help="checkpoint both clients every K rounds and after the last one (0: only the "
        "last); --resume measures again the rounds after the last checkpoint",
    )
    args = parser.parse_args(argv)
    if args.checkpoint_every < 0:
        parser.error(f"--checkpoint-every must be 0 or more, not {args.checkpoint_every}")
    if args.smoke:  # the smoke run's settings, under the options given
        parser.set_defaults(**SMOKE)
        args = parser.parse_args(argv)
    return args


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    args = parse_args(argv)
    if args.plot:
        plot(args.plot, args.plot.with_suffix(".png"))
        return None
    torch.set_num_threads(1)
    set_ax_logger_levels(logging.WARNING)
    _LINES.clear()
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {
        k: v
        for k, v in vars(args).items()
        if k not in ("out", "plot", "resume", "checkpoint_every")
    }
    before = previous_run(args, settings) if args.resume else None
    if before is not None and before["complete"]:
        print(f"{args.out}: the run is complete; nothing to resume")
        return before
    machine = device_info()
    session = {
        "machine": machine,
        "load": psutil.getloadavg(),
        "commit": source_commit(),
        "started_at": [],  # the problems resumed, at the rounds they went on at
    }
    if before is None:
        emit(
            f"user_pays: {settings}; torch threads {torch.get_num_threads()}, "
            f"{psutil.cpu_count()} CPUs, load {psutil.getloadavg()}, "
            f"python {platform.python_version()}"
        )
    else:
        _LINES.extend((args.out / "user_pays.txt").read_text().splitlines())
    emit(
        f"session {len((before or {}).get('sessions', [])) + 1}: {machine['cpu_model']}, "
        f"{machine['cpu_count']} CPUs, load {session['load']}"
    )

    def resumed(spec: str, round: int) -> None:
        session["started_at"].append({"problem": spec, "round": round})
        emit(f"{spec}: resumed at round {round}")

    results: list[dict[str, Any]] = []
    earlier = {r["problem"]: r for r in (before or {}).get("results", [])}
    data = {
        "settings": settings,
        "command": "python benchmarks/user_pays.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "commit": source_commit(),
        "versions": package_versions(),
        "cpus": psutil.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "complete": False,
        "sessions": [*(before or {}).get("sessions", []), session],
        "results": results,
    }

    def save(running: dict[str, Any] | None = None) -> None:  # after every round: hours
        done = results + ([running] if running is not None else [])
        text = json.dumps({**data, "results": done}, indent=1, default=str)
        (args.out / "user_pays.json").write_text(text)
        (args.out / "user_pays.txt").write_text("\n".join(_LINES) + "\n")

    with Meter().installed() as meter:
        for spec in args.problems:
            done = earlier.get(spec)
            if done is not None and done.get("complete"):
                results.append(done)  # finished in an earlier session
                continue
            result = run_problem(
                spec, args, meter, save, resume=done, resumed=partial(resumed, spec)
            )
            print_total(result)
            results.append(result)
    if args.profile:
        for result in results:
            print_profile(result["problem"], result["profile"])
    data["complete"] = True
    save()
    plot(args.out / "user_pays.json", args.out / "user_pays.png")
    return data


def previous_run(args: argparse.Namespace, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The run in ``--out`` that ``--resume`` goes on with (``None``: there is none).

    Raises:
        SystemExit: It was made with other settings.
    """
    path = args.out / "user_pays.json"
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    if data["settings"] != json.loads(json.dumps(settings, default=str)):
        raise SystemExit(
            f"--resume: {path} was made with other settings ({data['settings']}); use "
            "another --out for these"
        )
    return data


if __name__ == "__main__":
    main()
