"""Kernel libraries: keep the kernels a discovery run found, and use them elsewhere.

The paper's transferability study reused a kernel discovered on SVM as a fixed kernel on
the other benchmarks. This module is that path:

1. :func:`export_kernels` takes the best members of a run (a live
   :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`, an Ax ``Client``, or a
   ``Client`` saved with ``save_to_json_file``), each with its name, formula, origin,
   score and the definition that rebuilds it (an expression tree or kernel source);
2. :func:`save_kernels` / :func:`load_kernels` keep them in a versioned JSON file;
3. a kernel then drives any Ax experiment as its only kernel
   (:func:`fixed_kernel_generation_strategy`), goes into a user's own ``SurrogateSpec``
   (:func:`model_config_for`), or seeds a new population
   (``KernelDiscoveryConfig(start_kernels=path_or_list)``).

A library file is untrusted input. Loading checks, entry by entry, the file's format and
version, every field, each entry's SHA-256 (written over the rest of the entry on save,
so an edited or corrupted entry is caught) and expression trees against the grammar. A
kernel is *validated* before it is used, as proposals are during discovery: expression
trees with :func:`~ax_kernel_discovery.validation.check_kernel`, kernel source (written
by an LLM) with :func:`~ax_kernel_discovery.validation.validate_kernel_code` in the
sandboxed child process. Every failure is a :class:`KernelLibraryError` that names the
file and the entry.

Example:
    >>> kernels = export_kernels("run.json", top=3)  # doctest: +SKIP
    >>> save_kernels(kernels, "kernels.json")  # doctest: +SKIP
    >>> best = load_kernels("kernels.json")[0]  # doctest: +SKIP
    >>> client.set_generation_strategy(fixed_kernel_generation_strategy(best))  # doctest: +SKIP

File format (version 1)::

    {"format": "ax-kernel-discovery kernel library", "version": 1,
     "package_version": "0.1.0", "created": "2026-11-23T12:00:00+00:00",
     "kernels": [{"name": ..., "formula": ..., "origin": ..., "parents": [...],
                  "spec": {...} | null, "code": "..." | null, "class_name": ... | null,
                  "score": 0.031, "criterion": "loo_crps", "experiment": ..., "dim": 100,
                  "n_observations": 120, "sha256": "..."}]}
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula as spec_formula

if TYPE_CHECKING:
    from ax.generation_strategy.generation_strategy import GenerationStrategy
    from ax.generators.torch.botorch_modular.utils import ModelConfig
    from botorch.acquisition import AcquisitionFunction

    from ax_kernel_discovery.config import KernelDiscoveryConfig
    from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate

__all__ = [
    "LIBRARY_FORMAT",
    "LIBRARY_VERSION",
    "KernelLibraryError",
    "LibraryKernel",
    "export_kernels",
    "fixed_kernel_generation_strategy",
    "get_kernel",
    "library_entries",
    "library_start_candidates",
    "load_kernels",
    "model_config_for",
    "save_kernels",
    "validate_library_kernel",
]

LIBRARY_FORMAT = "ax-kernel-discovery kernel library"
"""The ``format`` field of a library file."""

LIBRARY_VERSION = 1
"""The library file version this package writes and reads."""

VALIDATION_DIM = 10
"""Input dimension a kernel is validated at when neither the caller nor the entry gives one."""


class KernelLibraryError(ValueError):
    """A kernel library file, or one of its entries, cannot be used (the message says why)."""


class LibraryKernel(BaseModel):
    """One kernel of a library: what it is, where it was found, how to rebuild it.

    Args:
        name: The member's name in the run it comes from (unique within a library).
        formula: The covariance function as readable math. For an expression tree it is
            derived from the tree (when left out) and checked against it (when given);
            for kernel source it is the text the code was written from.
        origin: How it was made in that run (``base``, ``offline``, ``discovery``...).
        parents: Names of the members it was made from, in that run.
        spec: Expression tree of trusted building blocks (exclusive with ``code``).
        code: Source of a ``gpytorch.kernels.Kernel`` subclass (exclusive with ``spec``).
        class_name: Class to take from ``code`` (first Kernel subclass if ``None``).
        score: Its selection score in that run (lower is better), if it had one.
        criterion: The selection criterion of the score (``loo_crps``...).
        experiment: Name of the experiment (or file) it was found on.
        dim: Input dimension of that experiment.
        n_observations: Observations its last score was computed on.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=200)
    formula: str = Field("", max_length=20000)
    origin: str = Field(min_length=1, max_length=40)
    parents: tuple[str, ...] = ()
    spec: dict[str, Any] | None = None
    code: str | None = Field(None, max_length=200000)
    class_name: str | None = Field(None, max_length=200)
    score: float | None = None
    criterion: str | None = None
    experiment: str | None = None
    dim: int | None = Field(None, ge=1)
    n_observations: int | None = Field(None, ge=0)

    @field_validator("spec")
    @classmethod
    def _grammar(cls, spec: dict[str, Any] | None) -> dict[str, Any] | None:
        if spec is not None:
            from ax_kernel_discovery.expression import validate_spec

            validate_spec(spec)
        return spec

    @model_validator(mode="after")
    def _one_definition(self) -> LibraryKernel:
        if (self.spec is None) == (self.code is None):
            raise ValueError("a library kernel needs exactly one of 'spec' or 'code'")
        return self

    @model_validator(mode="before")
    @classmethod
    def _derived_formula(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("spec") is not None and not data.get("formula"):
            try:
                data = {**data, "formula": spec_formula(data["spec"])}
            except (KeyError, TypeError, ValueError):
                pass  # a tree outside the grammar: the spec's own check says why
        return data

    @model_validator(mode="after")
    def _formula_of_spec(self) -> LibraryKernel:
        """An expression tree's formula is derived from the tree: an edited one is refused.

        The formula may carry a note after the derived text (``"   [idea: ...]"``, the
        LLM's rationale of a structured proposal). Kernel source has no formula to derive:
        there the formula is the text the code was written from, and the code is the kernel.
        """
        if self.spec is None:
            return self
        derived = spec_formula(self.spec)
        if self.formula != derived and not self.formula.startswith(derived + "   ["):
            raise ValueError(
                f"its formula does not match its expression tree: the tree's formula is "
                f"{derived!r}, the entry says {self.formula[:200]!r}; re-export the kernel"
            )
        return self

    @classmethod
    def from_candidate(cls, candidate: KernelCandidate, **fields: Any) -> LibraryKernel:
        """A library kernel from a population candidate (``fields``: score, dim...)."""
        return cls(
            name=candidate.name,
            formula=candidate.formula,
            origin=candidate.origin,
            parents=candidate.parents,
            spec=candidate.spec,
            code=candidate.code,
            class_name=candidate.class_name,
            **fields,
        )

    @property
    def candidate(self) -> KernelCandidate:
        """The kernel as a population candidate (origin ``library``)."""
        return KernelCandidate(
            name=self.name,
            formula=self.formula,
            origin="library",
            parents=self.parents,
            spec=self.spec,
            code=self.code,
            class_name=self.class_name,
        )

    def entry(self) -> dict[str, Any]:
        """The kernel as a library file (or a run config) stores it, with its SHA-256."""
        return {**self.model_dump(mode="json"), "sha256": self.sha256}

    @property
    def sha256(self) -> str:
        """SHA-256 of the entry's content (what a library file records beside it)."""
        payload = json.dumps(self.model_dump(mode="json"), sort_keys=True, allow_nan=True)
        return hashlib.sha256(payload.encode()).hexdigest()


# --------------------------------------------------------------------------- export


def export_kernels(
    source: KernelDiscoverySurrogate | Any | str | os.PathLike[str], top: int = 3
) -> list[LibraryKernel]:
    """The best members of a kernel-discovery run, best first.

    Args:
        source: A :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`, an Ax
            ``Client`` whose strategy holds one, or the path of a ``Client`` saved with
            ``save_to_json_file`` (a result JSON of ``ax-kernel-discovery run`` also
            works: its checkpoint is read).
        top: How many members to export (the population's best scores).

    Returns:
        Up to ``top`` :class:`LibraryKernel` (members that were never scored are left
        out), each with its name, formula, origin, score and definition.

    Raises:
        ValueError: ``top < 1``, no kernel-discovery surrogate in ``source``, or no
            member has a score yet (no BO round has run).
    """
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    surrogate, experiment = _surrogate_of(source)
    population = surrogate.population
    population.rank()
    outcome = next((k for k, p in surrogate.populations.items() if p is population), None)
    last = next((r for r in reversed(surrogate.history) if r.outcome == outcome), None)
    members = [m for m in population if m.score is not None][:top]
    if not members:
        when = (
            "criterion='prequential' scores a member by its forecast of the next BO batch: "
            "export after at least two BO rounds"
            if surrogate.config.criterion == "prequential"
            else "export after at least one BO round"
        )
        raise ValueError(
            f"{experiment or 'the surrogate'}: no population member has a score yet ({when})"
        )
    return [
        LibraryKernel.from_candidate(
            m.candidate,
            score=m.score,
            criterion=surrogate.config.criterion,
            experiment=experiment,
            dim=last.dim if last is not None else None,
            n_observations=last.n if last is not None else None,
        )
        for m in members
    ]


def _surrogate_of(source: Any) -> tuple[KernelDiscoverySurrogate, str | None]:
    """The surrogate held by ``source`` and a label of where it ran."""
    from ax_kernel_discovery.analysis import find_surrogate, load_surrogate
    from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate

    if isinstance(source, KernelDiscoverySurrogate):
        return source, None
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {str(path)!r}")
        checkpoint = _checkpoint_of_result(path)
        return load_surrogate(checkpoint or path), str(path)
    experiment = getattr(getattr(source, "_experiment", None), "name", None)
    return find_surrogate(source), experiment


def _checkpoint_of_result(path: Path) -> Path | None:
    """The Client checkpoint of a runner result JSON, ``None`` for an Ax Client JSON.

    Raises:
        KernelLibraryError: The file is neither (not JSON, a kernel library, other JSON).
    """
    what = (
        "export reads a run: an Ax Client saved with save_to_json_file, or a result JSON "
        "of `ax-kernel-discovery run`"
    )
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise KernelLibraryError(f"{path}: not a JSON file ({e}); {what}") from None
    if isinstance(data, dict) and data.get("format") == LIBRARY_FORMAT:
        raise KernelLibraryError(
            f"{path} is a kernel library, not a run: its kernels are already exported. Use "
            f"them as they are (--method fixed --kernel {path}:NAME, or "
            f"KernelDiscoveryConfig(start_kernels={str(path)!r})); {what}"
        )
    if not isinstance(data, dict) or not ({"experiment", "checkpoint_path"} & set(data)):
        raise KernelLibraryError(f"{path} is not a run; {what}")
    if "checkpoint_path" not in data:
        return None
    checkpoint = Path(str(data["checkpoint_path"]))
    if not checkpoint.is_absolute() and not checkpoint.is_file():
        checkpoint = path.parent / "checkpoints" / checkpoint.name
    if not checkpoint.is_file():
        raise FileNotFoundError(
            f"{path} is a run result; its Ax checkpoint {str(checkpoint)!r} (which holds the "
            "population) is missing"
        )
    return checkpoint


# --------------------------------------------------------------------------- files


def save_kernels(kernels: Iterable[LibraryKernel | KernelCandidate], path: str | Path) -> Path:
    """Write a library file (version :data:`LIBRARY_VERSION`).

    Args:
        kernels: Library kernels (e.g. from :func:`export_kernels`) or candidates.
        path: File to write (parent folders are created).

    Returns:
        The path written.

    Raises:
        KernelLibraryError: Two kernels share a name.
    """
    from ax_kernel_discovery import __version__

    entries = [
        k if isinstance(k, LibraryKernel) else LibraryKernel.from_candidate(k) for k in kernels
    ]
    _check_unique([k.name for k in entries], str(path))
    data = {
        "format": LIBRARY_FORMAT,
        "version": LIBRARY_VERSION,
        "package_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "kernels": [k.entry() for k in entries],
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)
    return path


def load_kernels(
    path: str | Path, *, validate: bool = True, dim: int | None = None
) -> list[LibraryKernel]:
    """Read a library file, checking every entry.

    Args:
        path: A file written by :func:`save_kernels`.
        validate: Also validate each kernel as discovery validates proposals (kernel
            source in the sandboxed child process; a few seconds per code kernel, once
            per process). Without it only the file's structure and checksums are checked,
            and the kernel is validated when it is first used.
        dim: Input dimension to validate at (default: the dimension each kernel was
            found at, else :data:`VALIDATION_DIM`).

    Returns:
        The kernels, in file order.

    Raises:
        KernelLibraryError: The file is not a library of a supported version, or an
            entry is malformed, edited (checksum), or fails validation; the message
            names the file and the entry.
    """
    where = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise KernelLibraryError(f"{where}: cannot read the kernel library ({e})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise KernelLibraryError(f"{where}: not a kernel library (invalid JSON: {e})") from None
    kernels = parse_library(data, where)
    if validate:
        for kernel in kernels:
            validate_library_kernel(kernel, dim, where=where)
    return kernels


def parse_library(data: Any, where: str = "kernel library") -> list[LibraryKernel]:
    """The kernels of a parsed library file (structure and checksums; no validation).

    Raises:
        KernelLibraryError: As :func:`load_kernels`, for everything but validation.
    """
    if not isinstance(data, dict) or data.get("format") != LIBRARY_FORMAT:
        raise KernelLibraryError(
            f"{where}: not a kernel library (expected a JSON object with "
            f'"format": "{LIBRARY_FORMAT}")'
        )
    version = data.get("version")
    if version != LIBRARY_VERSION:
        raise KernelLibraryError(
            f"{where}: unsupported kernel library version {version!r} (this package reads "
            f"version {LIBRARY_VERSION}); upgrade ax-kernel-discovery or re-export the kernels"
        )
    entries = data.get("kernels")
    if not isinstance(entries, list) or not entries:
        raise KernelLibraryError(f"{where}: 'kernels' must be a non-empty list")
    kernels = [_parse_entry(entry, i, where) for i, entry in enumerate(entries)]
    _check_unique([k.name for k in kernels], where)
    return kernels


def _parse_entry(entry: Any, index: int, where: str) -> LibraryKernel:
    name = entry.get("name") if isinstance(entry, dict) else None
    label = f"{where}: entry {index}" + (f" ({name!r})" if isinstance(name, str) else "")
    if not isinstance(entry, dict):
        raise KernelLibraryError(f"{label}: expected a JSON object, got {type(entry).__name__}")
    fields = dict(entry)
    recorded = fields.pop("sha256", None)
    try:
        kernel = LibraryKernel.model_validate(fields)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'entry'}: {err['msg']}" for err in e.errors()
        )
        raise KernelLibraryError(f"{label} is malformed: {problems}") from None
    if recorded != kernel.sha256:
        reason = "has no sha256" if recorded is None else "does not match its sha256"
        raise KernelLibraryError(
            f"{label} {reason}: the entry was edited or corrupted after export; re-export "
            "the kernel (or remove the entry)"
        )
    return kernel


def _check_unique(names: Sequence[str], where: str) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise KernelLibraryError(f"{where}: entry {i} ({name!r}): name used twice")
        seen.add(name)


def get_kernel(reference: LibraryKernel | KernelCandidate | dict[str, Any] | str) -> LibraryKernel:
    """One kernel from a reference: ``"kernels.json:NAME"``, a file of one kernel, or data.

    Args:
        reference: ``"path:NAME"`` (a named entry of a library file), ``"path"`` (a
            library of exactly one kernel), a :class:`LibraryKernel`, a candidate, or
            an entry's dict (as a run config stores it).

    Raises:
        KernelLibraryError: The file or entry is bad, the name is not in the file, or
            a file of several kernels was named without ``:NAME``.
    """
    if isinstance(reference, LibraryKernel):
        return reference
    if isinstance(reference, KernelCandidate):
        return LibraryKernel.from_candidate(reference)
    if isinstance(reference, dict):
        return _parse_entry(reference, 0, "kernel") if "sha256" in reference else _model(reference)
    text = str(reference)
    path, name = text, None
    if not Path(text).is_file() and ":" in text:
        # names may hold ":" (``off_r9_3:(bock+sl)``) and paths may too: the file is the
        # longest prefix before a ":" that exists
        cuts = [i for i, c in enumerate(text) if c == ":"]
        cut = next((i for i in reversed(cuts) if Path(text[:i]).is_file()), cuts[0])
        path, name = text[:cut], text[cut + 1 :]
    if not Path(path).is_file():
        raise KernelLibraryError(f"{path}: no such kernel library (expected FILE or FILE:NAME)")
    kernels = load_kernels(path, validate=False)
    if name is None:
        if len(kernels) != 1:
            names = ", ".join(k.name for k in kernels)
            raise KernelLibraryError(f"{path} holds {len(kernels)} kernels: name one ({names})")
        return kernels[0]
    for kernel in kernels:
        if kernel.name == name:
            return kernel
    names = ", ".join(k.name for k in kernels)
    raise KernelLibraryError(f"{path}: no kernel named {name!r}; it holds: {names}")


def library_entries(value: Any, validate: bool = False) -> list[dict[str, Any]]:
    """Kernels as a config or run record stores them: the library's checksummed entries.

    Args:
        value: A library file path, one kernel, or a list of kernels (library kernels,
            candidates, entry dicts or ``"kernels.json:NAME"`` references).
        validate: Also validate each kernel (see :func:`validate_library_kernel`), so
            that a kernel the sandbox refuses fails here, before any evaluation.

    Raises:
        KernelLibraryError: A bad file, entry or reference, a name used twice, or (with
            ``validate``) a kernel that fails validation.
    """
    where = "start_kernels"
    if isinstance(value, str | os.PathLike) and Path(value).is_file():
        where = f"start_kernels={str(value)!r}"
        kernels = load_kernels(Path(value), validate=False)
    elif isinstance(value, LibraryKernel | KernelCandidate | dict | str):
        kernels = [get_kernel(value)]
    else:
        kernels = [get_kernel(v) for v in value]
    _check_unique([k.name for k in kernels], "start_kernels")
    if validate:
        for kernel in kernels:
            validate_library_kernel(kernel, where=where)
    return [k.entry() for k in kernels]


def _model(data: dict[str, Any]) -> LibraryKernel:
    try:
        return LibraryKernel.model_validate(data)
    except ValidationError as e:
        raise KernelLibraryError(f"kernel {data.get('name')!r} is malformed: {e}") from None


# --------------------------------------------------------------------------- validation

_VALIDATED: dict[tuple[str, int], str | None] = {}


def validate_library_kernel(
    kernel: LibraryKernel, dim: int | None = None, *, where: str = "kernel library"
) -> None:
    """Validate a kernel before use, as discovery validates a proposal (once per process).

    Expression trees go through :func:`~ax_kernel_discovery.validation.check_kernel`
    (trusted building blocks); kernel source through
    :func:`~ax_kernel_discovery.validation.validate_kernel_code`, in the sandboxed
    child process with the same checks and limits as LLM code.

    Args:
        kernel: The kernel.
        dim: Input dimension to validate at (default: ``kernel.dim``, else
            :data:`VALIDATION_DIM`).
        where: Label of the library for the error message.

    Raises:
        KernelLibraryError: The kernel failed; the message names it, the failed stage
            and the reason.
    """
    from ax_kernel_discovery.validation import check_kernel, validate_kernel_code

    d = int(dim or kernel.dim or VALIDATION_DIM)
    key = (kernel.sha256, d)
    if key not in _VALIDATED:
        if kernel.code is not None:
            result = validate_kernel_code(kernel.code, d, class_name=kernel.class_name)
        else:
            result = check_kernel(kernel.candidate.build, d, check_fit=False)
        _VALIDATED[key] = None if result.ok else f"stage {result.stage!r}: {result.reason}"
    failure = _VALIDATED[key]
    if failure is not None:
        kind = "kernel source" if kernel.code is not None else "expression tree"
        raise KernelLibraryError(
            f"{where}: kernel {kernel.name!r}: its {kind} failed validation at D={d} ({failure})"
        )


# --------------------------------------------------------------------------- use


def model_config_for(
    kernel: LibraryKernel | KernelCandidate | dict[str, Any] | str,
    fit_timeout: float | None = None,
    maxiter: int | None = None,
) -> ModelConfig:
    """The Ax ``ModelConfig`` of one kernel, for a user's own ``SurrogateSpec``.

    The kernel is validated first (see :func:`validate_library_kernel`).

    Args:
        kernel: A library kernel, a candidate, an entry's dict, or ``"kernels.json:NAME"``.
        fit_timeout: Seconds allowed for each MLL fit (``None``: no limit).
        maxiter: L-BFGS iterations of each fit (``None``: BoTorch's default).

    Example:
        >>> spec = SurrogateSpec(model_configs=[model_config_for("kernels.json:SL")])  # doctest: +SKIP
    """
    from ax_kernel_discovery.surrogate import model_config_for as candidate_model_config

    entry = get_kernel(kernel)
    validate_library_kernel(entry)
    return candidate_model_config(entry.candidate, fit_timeout, maxiter)


def fixed_kernel_generation_strategy(
    kernel: LibraryKernel | KernelCandidate | dict[str, Any] | str,
    num_sobol: int = 20,
    *,
    seed: int = 0,
    botorch_acqf_class: type[AcquisitionFunction] | None = None,
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    device: str | None = None,
) -> GenerationStrategy:
    """Sobol, then BO with one kernel: a library kernel in any Ax experiment.

    The BO step is Ax's plain ``Surrogate`` with the kernel's single ``ModelConfig``
    (so no model selection), with the same acquisition settings as every method of the
    package (:func:`~ax_kernel_discovery.strategy.botorch_step`). The strategy saves
    and loads with Ax's JSON storage.

    Args:
        kernel: A library kernel, a candidate, an entry's dict, or ``"kernels.json:NAME"``;
            validated first (see :func:`validate_library_kernel`).
        num_sobol: Sobol trials before BO (paper: 20).
        seed: Seed of the Sobol step.
        botorch_acqf_class: Acquisition function (default ``qLogNoisyExpectedImprovement``).
        num_restarts: Acquisition optimizer restarts (default: Ax's).
        raw_samples: Raw samples of the restarts' initialization (default: Ax's).
        sample_around_best: RAASP, sampling around the best points (default: Ax's, off).
        maxiter: L-BFGS-B iterations of the acquisition optimizer (default: BoTorch's).
        device: torch device of the BO step (default ``auto``: CUDA when available).

    Returns:
        A ``GenerationStrategy`` for ``Client.set_generation_strategy``.
    """
    from ax.generation_strategy.generation_strategy import GenerationStrategy
    from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec
    from botorch.acquisition.logei import qLogNoisyExpectedImprovement

    from ax_kernel_discovery.strategy import botorch_step, sobol_step

    if num_sobol < 1:
        raise ValueError(f"num_sobol must be >= 1 (a GP needs data to start from), got {num_sobol}")
    entry = get_kernel(kernel)
    surrogate = Surrogate(surrogate_spec=SurrogateSpec(model_configs=[model_config_for(entry)]))
    step = botorch_step(
        surrogate,
        botorch_acqf_class=botorch_acqf_class or qLogNoisyExpectedImprovement,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        sample_around_best=sample_around_best,
        maxiter=maxiter,
        device=device,
        generator_name=f"Fixed-{entry.name}",
    )
    return GenerationStrategy(
        name=f"Sobol+fixed:{entry.name}", nodes=[sobol_step(num_sobol, seed), step]
    )


def library_start_candidates(
    config: KernelDiscoveryConfig, dim: int | None = None
) -> list[KernelCandidate]:
    """The start set of a new population under ``config.start_kernels``.

    The paper's start set (unless ``config.keep_start_set`` is false) followed by the
    library's kernels, each validated first (see :func:`validate_library_kernel`). A
    library kernel identical to a start kernel (same definition) is taken once.

    Args:
        config: Settings with ``start_kernels`` (entries as the config stores them).
        dim: Input dimension of the problem (for validation).

    Raises:
        KernelLibraryError: A library kernel fails validation, or its name is taken by
            a different start kernel.
    """
    from ax_kernel_discovery.population import start_candidates

    start = start_candidates() if config.keep_start_set else []
    for data in config.start_kernels or []:
        kernel = get_kernel(dict(data))
        validate_library_kernel(kernel, dim, where="start_kernels")
        candidate = kernel.candidate
        if any(c.key == candidate.key for c in start):
            continue
        if any(c.name == candidate.name for c in start):
            raise KernelLibraryError(
                f"start_kernels: kernel {candidate.name!r}: the name is taken by a different "
                "start kernel; rename the entry (and re-export it)"
            )
        start.append(candidate)
    return start
