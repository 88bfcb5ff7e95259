"""``ax-kernel-discovery``: run, sweep and report benchmark experiments.

Usage::

    ax-kernel-discovery run --problem rover100 --method kd --budget 1000 --batch 20 --seed 0 --out results/
    ax-kernel-discovery sweep --problems rover100,svm --methods kd,rbf --seeds 0,1 \\
        --budget 60 --batch 10 --out results/ --workers 2 [--executor local|dask]
    ax-kernel-discovery report results/ --out report/
    ax-kernel-discovery list
    ax-kernel-discovery data [--data-dir DIR]
    ax-kernel-discovery export run.json --top 3 --out kernels.json
    ax-kernel-discovery run --problem svm --method fixed --kernel kernels.json:NAME ...

A rerun of the same command continues interrupted runs from their checkpoints and
skips finished ones. Bad input (unknown problem or method, ``budget < num_sobol``,
``batch < 1``, missing data) prints one ``error:`` line and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ax_kernel_discovery.log import use_ax_handler

EXIT_USER_ERROR = 2
EXIT_RUN_FAILED = 1
EXIT_INTERRUPTED = 130


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so ``main`` can return a status."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _csv(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list, e.g. rover100,svm")
    return items


def _seeds(text: str) -> list[int]:
    """``0,1,2`` or ``0-3`` (inclusive) or a mix."""
    seeds: list[int] = []
    try:
        for part in _csv(text):
            if "-" in part:
                lo, hi = (int(p) for p in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                seeds.extend(range(lo, hi + 1))
            else:
                seeds.append(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"seeds must be integers like 0,1,2 or 0-3, got {text!r}"
        ) from None
    if any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError("seeds must be >= 0")
    return list(dict.fromkeys(seeds))


def _json_object(text: str) -> dict[str, Any]:
    """A JSON object given inline or as the path of a JSON file."""
    source = text
    inline = text.lstrip().startswith(("{", "[", '"')) or text.strip() in ("null", "true", "false")
    if not inline:
        path = Path(text)
        if not path.is_file():
            raise argparse.ArgumentTypeError(
                f"no such file: {text!r} (give a JSON file that exists, or the fields inline, "
                "e.g. '{\"population_size\": 8}')"
            )
        source = path.read_text()
    try:
        value = json.loads(source)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(
            f"not a JSON object or JSON file: {text!r} ({e})"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--budget",
        type=int,
        default=1000,
        help="evaluations per run, Sobol included (default 1000)",
    )
    p.add_argument(
        "--batch", type=int, default=20, help="points per BO round, one joint q-batch (default 20)"
    )
    p.add_argument("--num-sobol", type=int, default=20, help="Sobol points before BO (default 20)")
    p.add_argument("--out", default="results", help="output folder (default results/)")
    p.add_argument(
        "--num-restarts", type=int, default=4, help="acquisition optimizer restarts (default 4)"
    )
    p.add_argument(
        "--raw-samples", type=int, default=512, help="raw samples for the restarts (default 512)"
    )
    p.add_argument(
        "--maxiter",
        type=int,
        default=300,
        help="L-BFGS-B iterations of the acquisition optimizer (default 300)",
    )
    p.add_argument(
        "--kd-config",
        type=_json_object,
        default=None,
        help="KernelDiscoveryConfig fields for kd/compositional, inline JSON or a JSON file "
        '(e.g. \'{"population_size": 10, "proposer": "llm"}\')',
    )
    p.add_argument(
        "--llm",
        default=None,
        metavar="MODEL",
        help="kd with the LLM proposer: a litellm model string (gpt-4o, anthropic/..., "
        "openai/<alias> with llm_api_base in --kd-config) or 'local' (a GGUF code model run "
        "in-process: the [local] extra, the model is downloaded on first use); --kd-config "
        "fields win",
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help="folder of benchmark data files that replace the bundled ones "
        "(default: $AXKD_DATA_DIR)",
    )
    p.add_argument(
        "--device",
        default=None,
        help="torch device of the BO step for every method: cpu (the default, as in Ax), "
        "auto (CUDA when available, else CPU), cuda or cuda:N",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="ax-kernel-discovery",
        description="Benchmark kernel discovery for high-dimensional BO against baselines (Ax/BoTorch).",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_ArgumentParser)

    run = sub.add_parser("run", help="one problem x method x seed (resumes from its checkpoint)")
    run.add_argument("--problem", required=True, help="benchmark name (see `list`)")
    run.add_argument("--method", required=True, help="method name (see `list`)")
    run.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    run.add_argument(
        "--kernel",
        default=None,
        metavar="FILE:NAME",
        help="with --method fixed: the kernel, a library file written by `export` and the "
        "kernel's name (FILE alone for a library of one kernel)",
    )
    _add_run_options(run)

    sw = sub.add_parser("sweep", help="problems x methods x seeds, in parallel")
    sw.add_argument("--problems", type=_csv, required=True, help="comma-separated benchmark names")
    sw.add_argument("--methods", type=_csv, required=True, help="comma-separated method names")
    sw.add_argument("--seeds", type=_seeds, default=[0], help="seeds: 0,1,2 or 0-3 (default 0)")
    sw.add_argument("--workers", type=int, default=1, help="parallel runs (default 1)")
    sw.add_argument(
        "--executor", choices=("local", "dask"), default="local", help="local processes or Dask"
    )
    sw.add_argument("--scheduler-address", default=None, help="address of a running Dask scheduler")
    _add_run_options(sw)

    st = sub.add_parser(
        "study",
        help="the quality study (fixed protocol; see ax_kernel_discovery.study): run what is "
        "not finished, or regenerate its report",
    )
    st.add_argument(
        "--out",
        default=None,
        help="study folder (default: benchmarks/results/study, the committed study of a "
        "clone, when run from the clone's root)",
    )
    st.add_argument("--workers", type=int, default=1, help="parallel runs (default 1)")
    st.add_argument("--problems", type=_csv, default=None, help="only these of the protocol's")
    st.add_argument("--methods", type=_csv, default=None, help="only these of the protocol's")
    st.add_argument("--seeds", type=_seeds, default=None, help="only these seeds")
    st.add_argument(
        "--variant",
        default=None,
        help="name of a kd variant: runs kd (and cake, with --methods kd,cake) with "
        "--kd-config into <out>/<variant>",
    )
    st.add_argument(
        "--kd-config",
        type=_json_object,
        default=None,
        help="KernelDiscoveryConfig fields of the variant (JSON or a JSON file)",
    )
    st.add_argument(
        "--report",
        default=None,
        metavar="MARKDOWN",
        help="instead of running: write the study report to this file (and summary.json "
        "beside the results)",
    )
    st.add_argument("--no-progress", action="store_true", help="no per-run lines")

    rep = sub.add_parser(
        "report", help="rank table, learning curves and timing table from result JSONs"
    )
    rep.add_argument("results", help="folder with the result JSONs")
    rep.add_argument("--out", default="report", help="report folder (default report/)")
    rep.add_argument(
        "--problems", type=_csv, default=None, help="only these problems (and this column order)"
    )
    rep.add_argument(
        "--methods", type=_csv, default=None, help="only these methods (and this row order)"
    )
    rep.add_argument("--title", default=None, help="report title")

    sub.add_parser("list", help="list problems and methods")

    ex = sub.add_parser(
        "export", help="save the best kernels of a kernel-discovery run as a kernel library"
    )
    ex.add_argument(
        "source", help="an Ax Client JSON (save_to_json_file), or a result JSON of `run`"
    )
    ex.add_argument("--top", type=int, default=3, help="how many kernels, best first (default 3)")
    ex.add_argument("--out", default="kernels.json", help="library file (default kernels.json)")

    data = sub.add_parser(
        "data", help="the benchmark data files: where each is read from, checksum status"
    )
    data.add_argument(
        "--data-dir",
        default=None,
        help="folder of data files that replace the bundled ones (default: $AXKD_DATA_DIR)",
    )
    for command in sub.choices.values():
        command.add_argument(
            "-v", "--verbose", action="store_true", help="show Ax's INFO log lines"
        )
    return parser


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "budget": args.budget,
        "batch": args.batch,
        "num_sobol": args.num_sobol,
        "out": args.out,
        "num_restarts": args.num_restarts,
        "raw_samples": args.raw_samples,
        "maxiter": args.maxiter,
        "kd_config": (
            {"proposer": "llm", "llm_model": args.llm, **(args.kd_config or {})}
            if args.llm
            else args.kd_config
        ),
        "device": args.device,
    }
    if args.data_dir:
        settings["problem_options"] = {"data_dir": args.data_dir}
    return settings


def _console(stderr: bool = False) -> Any:
    """A rich console that prints text as it is (no markup: kernel formulas hold
    ``[u = tanh(...)]``, which rich would take for a style and drop)."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True, markup=False)


def _check_kd_options(args: argparse.Namespace, methods: Sequence[str]) -> None:
    """``--kd-config`` / ``--llm`` configure kernel discovery: refused when no method
    takes them, a note when only some do.

    Raises:
        UserInputError: None of ``methods`` takes them.
    """
    from ax_kernel_discovery.runner import KD_METHODS, UserInputError

    given = [
        flag
        for flag, value in (("--kd-config", args.kd_config), ("--llm", args.llm))
        if value is not None
    ]
    if not given:
        return
    names = [m.strip().lower() for m in methods]
    others = [m for m in names if m not in KD_METHODS]
    flags = " and ".join(given)
    if len(others) == len(names):
        one = len(names) == 1
        raise UserInputError(
            f"{flags} configure{'s' if len(given) == 1 else ''} kernel discovery (methods "
            f"{', '.join(KD_METHODS)}); method{'' if one else 's'} {', '.join(others)} "
            f"take{'s' if one else ''} none: drop {flags}, or run --method kd"
        )
    if others:
        _console(stderr=True).print(
            f"note: {flags} apply to {', '.join(m for m in names if m in KD_METHODS)} only; "
            f"{', '.join(others)} ignore{'s' if len(others) == 1 else ''} "
            f"{'it' if len(given) == 1 else 'them'}"
        )


def _warn_unused_discovery(cfgs: Sequence[Any], who: Sequence[str]) -> bool:
    """Print a warning for each run that would never use a discovered kernel (``who``
    names it); whether there was one."""
    warned = False
    for cfg, name in zip(cfgs, who, strict=True):
        note = cfg.unused_discovery_note()
        if note:
            _console(stderr=True).print(f"warning: {name}: {note}")
            warned = True
    return warned


def _cmd_run(args: argparse.Namespace) -> int:
    from ax_kernel_discovery.runner import (
        UserInputError,
        check_before_evaluations,
        finished_result,
        make_run_config,
        run_experiment,
    )

    _check_kd_options(args, [args.method])
    settings = _settings(args)
    if args.kernel is not None:
        from ax_kernel_discovery.library import KernelLibraryError, get_kernel

        if args.method.strip().lower() != "fixed":
            raise UserInputError("--kernel goes with --method fixed")
        try:
            settings["method_options"] = {"kernel": get_kernel(args.kernel).entry()}
        except KernelLibraryError as e:
            raise UserInputError(str(e)) from None
    cfg = make_run_config(problem=args.problem, method=args.method, seed=args.seed, **settings)
    if finished_result(cfg.result_path, cfg.budget) is None:
        check_before_evaluations(cfg)  # what cannot work is said first, before the warning
    unused = _warn_unused_discovery([cfg], [cfg.run_id])
    result = run_experiment(cfg, progress=not args.no_progress, verbose=args.verbose)
    console = _console()
    if result.get("skipped"):
        console.print(
            f"{cfg.run_id}: already complete with the same settings "
            f"({result['n_evaluations']} evaluations), skipped"
        )
    note = "; no discovered kernel was used (see the warning above)" if unused else ""
    console.print(
        f"{cfg.run_id}: best {result['best_value']} ({result['direction']}) after "
        f"{result['n_evaluations']} evaluations{_llm_note(result)}{note} -> {cfg.result_path}"
    )
    return 0


def _llm_note(result: dict[str, Any]) -> str:
    """``; the LLM's proposals were used in k of n rounds`` for a run with an LLM proposer."""
    counts = result.get("llm_rounds")
    if not counts:
        return ""
    note = f"; the LLM's proposals were used in {counts['used_llm']} of {counts['rounds']} rounds"
    if counts["without_llm"]:
        note += " (the other rounds' reasons are in the result's failures)"
    return note


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ax_kernel_discovery.runner import KD_METHODS, UserInputError, make_run_config
    from ax_kernel_discovery.runner.sweep import sweep

    if args.workers < 1:
        raise UserInputError(f"--workers must be >= 1, got {args.workers}")
    if args.scheduler_address and args.executor != "dask":
        raise UserInputError("--scheduler-address needs --executor dask")
    _check_kd_options(args, args.methods)
    settings = _settings(args)
    kd_methods = [m for m in dict.fromkeys(args.methods) if m.strip().lower() in KD_METHODS]
    _warn_unused_discovery(
        [
            make_run_config(problem=args.problems[0], method=m, seed=args.seeds[0], **settings)
            for m in kd_methods
        ],
        [f"every {m} run" for m in kd_methods],
    )
    summaries = sweep(
        args.problems,
        args.methods,
        args.seeds,
        workers=args.workers,
        executor=args.executor,
        scheduler_address=args.scheduler_address,
        progress=not args.no_progress,
        **settings,
    )
    failed = [s for s in summaries if s["status"] != "complete"]
    console = _console()
    console.print(f"{len(summaries) - len(failed)} of {len(summaries)} runs complete in {args.out}")
    for s in failed:
        _console(stderr=True).print(
            f"FAILED {s['run_id']}: {s.get('error')} (traceback: {s['path']})"
        )
    return EXIT_RUN_FAILED if failed else 0


def _study_folder(out: str | None) -> str:
    """``--out``, else the committed study folder of the clone the command runs in.

    Raises:
        UserInputError: No ``--out`` and no study folder here (not a clone's root).
    """
    from ax_kernel_discovery.runner import UserInputError
    from ax_kernel_discovery.study.protocol import DEFAULT_OUT, STUDY

    if out is not None:
        return out
    if Path(DEFAULT_OUT).is_dir():
        return DEFAULT_OUT
    runs = len(STUDY.problems) * len(STUDY.methods) * len(STUDY.seeds)
    raise UserInputError(
        f"no study folder here: the study's results live in {DEFAULT_OUT}/ of a clone of "
        f"ax-kernel-discovery, and {Path.cwd()} is not a clone's root. Run the command from "
        f"the clone's root, or give --out FOLDER for a study of your own (the protocol's "
        f"{runs} runs take a few minutes each)"
    )


def _cmd_study(args: argparse.Namespace) -> int:
    from ax_kernel_discovery.runner import UserInputError

    args.out = _study_folder(args.out)
    if args.report:
        from ax_kernel_discovery.study.report import write_study_report

        path = write_study_report(args.out, args.report)
        _console().print(f"study report written to {path}")
        return 0
    from ax_kernel_discovery.study.protocol import run_study

    if args.workers < 1:
        raise UserInputError(f"--workers must be >= 1, got {args.workers}")
    if (args.variant is None) != (args.kd_config is None):
        raise UserInputError("--variant and --kd-config go together")
    methods = args.methods
    if args.variant:
        from ax_kernel_discovery.study.protocol import VARIANT_METHODS

        methods = methods or ["kd"]
        if not set(methods) <= set(VARIANT_METHODS):
            raise UserInputError(
                f"a variant runs {' or '.join(VARIANT_METHODS)} with --kd-config, got "
                f"--methods {','.join(methods)}"
            )
    selection: dict[str, Any] = {
        "problems": args.problems,
        "methods": methods,
        "seeds": args.seeds,
    }
    if args.variant:
        selection.update(kd_config=args.kd_config, method_suffix=args.variant)
    summaries = run_study(
        args.out, workers=args.workers, progress=not args.no_progress, **selection
    )
    failed = [s for s in summaries if s["status"] != "complete"]
    _console().print(f"{len(summaries) - len(failed)} of {len(summaries)} study runs complete")
    for s in failed:
        _console(stderr=True).print(
            f"FAILED {s['run_id']}: {s.get('error')} (traceback: {s['path']})"
        )
    return EXIT_RUN_FAILED if failed else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from ax_kernel_discovery.runner.report import write_report

    path = write_report(
        args.results, args.out, problems=args.problems, methods=args.methods, title=args.title
    )
    _console().print(f"report written to {path}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from ax_kernel_discovery.library import KernelLibraryError, export_kernels, save_kernels
    from ax_kernel_discovery.runner import UserInputError

    try:
        kernels = export_kernels(args.source, top=args.top)
    except (ValueError, KernelLibraryError) as e:
        raise UserInputError(str(e)) from None
    path = save_kernels(kernels, args.out)
    console = _console()
    for k in kernels:
        score = f"{k.score:.4g}" if k.score is not None else "-"
        shown = (
            k.formula if len(k.formula) <= 400 else k.formula[:400] + " ... (in full in the file)"
        )
        console.print(f"{k.name}  ({k.origin}, {k.criterion} {score})\n  {shown}")
    console.print(
        f"{len(kernels)} kernel(s) written to {path}; use one with "
        f"--method fixed --kernel {path}:{kernels[0].name}"
    )
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from ax_kernel_discovery.baselines.methods import METHODS
    from ax_kernel_discovery.benchmarks import PROBLEMS

    console = _console()
    console.print("problems: " + ", ".join(sorted(PROBLEMS)))
    console.print("methods:")
    for info in METHODS.values():
        console.print(f"  {info.name:<14} {info.description}")
    return 0


def _cmd_data(args: argparse.Namespace) -> int:
    from ax_kernel_discovery.benchmarks.datasets import CT_SLICE_FULL, data_status

    rows = data_status(args.data_dir)
    console = _console()
    console.print(
        "benchmark data (shipped with the package; --data-dir or $AXKD_DATA_DIR replace "
        "files by name):"
    )
    width = max(len(r.name) for r in rows)
    for r in rows:
        where = f"{r.origin}: {r.path}" if r.path is not None else r.note
        console.print(f"  {r.name:<{width}}  {r.status:<9} {r.used_by}")
        console.print(f"  {'':<{width}}  {'':<9} {where}")
        if r.path is not None and r.note:
            console.print(f"  {'':<{width}}  {'':<9} {r.note}")
    if not any(r.name.startswith("slice_localization_data") for r in rows):
        console.print(f"svm runs on the 682-row sample. For the {CT_SLICE_FULL}.")
    bad = [r.name for r in rows if r.status in ("mismatch", "missing")]
    if bad:
        _console(stderr=True).print(f"error: {', '.join(bad)}: missing or not the published file")
        return EXIT_RUN_FAILED
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ax-kernel-discovery`` console script; returns the exit status."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    use_ax_handler()  # kd's log lines in Ax's format, beside Ax's
    parser = build_parser()
    err = _console(stderr=True)
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except _UsageError as e:
        err.print(f"error: {e}", markup=False)
        return EXIT_USER_ERROR
    except SystemExit as e:  # --help
        return int(e.code or 0)
    if args.command is None:
        parser.print_help()
        return EXIT_USER_ERROR
    import torch
    from ax.utils.common.logger import set_ax_logger_levels

    torch.set_num_threads(1)
    set_ax_logger_levels(logging.INFO if args.verbose else logging.WARNING)
    from ax_kernel_discovery.devices import DeviceUnavailableError
    from ax_kernel_discovery.library import KernelLibraryError
    from ax_kernel_discovery.llm.setup_check import LLMSetupError
    from ax_kernel_discovery.runner import UserInputError

    commands = {
        "run": _cmd_run,
        "sweep": _cmd_sweep,
        "study": _cmd_study,
        "report": _cmd_report,
        "list": _cmd_list,
        "data": _cmd_data,
        "export": _cmd_export,
    }
    try:
        return commands[args.command](args)
    except (
        UserInputError,
        KernelLibraryError,
        LLMSetupError,
        DeviceUnavailableError,
    ) as e:
        err.print(f"error: {e}", markup=False)
        return EXIT_USER_ERROR
    except (FileNotFoundError, NotADirectoryError) as e:
        err.print(f"error: {e}", markup=False)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        err.print("interrupted: rerun the same command to continue from the last checkpoint")
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
