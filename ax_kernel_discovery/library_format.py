"""The kernel-library file: its format, reading and writing, validation, start kernels.

The low half of :mod:`~ax_kernel_discovery.library` (which re-exports every name here):
what :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig` (``start_kernels``) and
the surrogate (a population's start set) need, with no dependency on the surrogate,
Ax or a run. Exporting the kernels of a run and using a kernel in an Ax strategy are in
:mod:`~ax_kernel_discovery.library`.

A library file is untrusted input. Loading checks, entry by entry, the file's format and
version, every field, each entry's SHA-256 (written over the rest of the entry on save,
so an edited or corrupted entry is caught) and expression trees against the grammar. A
kernel is *validated* before it is used, as proposals are during discovery: expression
trees with :func:`~ax_kernel_discovery.validation.check_kernel`, kernel source (written
by an LLM) with :func:`~ax_kernel_discovery.sandbox.validate.validate_kernel_code` in the
sandboxed child process. Every failure is a :class:`KernelLibraryError` that names the
file and the entry.

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
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ax_kernel_discovery._version import __version__
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.expression import formula as spec_formula
from ax_kernel_discovery.expression import validate_spec
from ax_kernel_discovery.kernels import LEAVES
from ax_kernel_discovery.population import base_candidate, start_candidates
from ax_kernel_discovery.sandbox.validate import validate_candidate

__all__ = [
    "LIBRARY_FORMAT",
    "LIBRARY_VERSION",
    "MAX_LIBRARY_BYTES",
    "VALIDATION_DIM",
    "KernelLibraryError",
    "LibraryKernel",
    "StartSettings",
    "get_kernel",
    "library_entries",
    "library_start_candidates",
    "load_kernels",
    "parse_library",
    "save_kernels",
    "validate_library_kernel",
    "validate_start_kernels",
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


#: The largest library file read: anything larger is refused before it is read (the
#: kernels of a library are formulas and short sources; 1000 exported kernels take ~1 MB).
MAX_LIBRARY_BYTES = 16 * 2**20


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
        size = Path(path).stat().st_size
        if size > MAX_LIBRARY_BYTES:  # refused before it is read
            raise KernelLibraryError(
                f"{where}: {size / 2**20:.0f} MB is too large for a kernel library (at most "
                f"{MAX_LIBRARY_BYTES // 2**20} MB; a library of 1000 exported kernels takes "
                "about 1 MB): is it the right file? A library is written by "
                "`ax-kernel-discovery export` or save_kernels"
            )
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
    """One kernel from a reference: ``"kernels.json:NAME"``, a file of one kernel, a leaf
    of the grammar by name, or data.

    Args:
        reference: ``"path:NAME"`` (a named entry of a library file), ``"path"`` (a
            library of exactly one kernel), the name of a leaf of the grammar where no
            file has that name (``"saas"``: the leaf as the start set builds its
            kernels, e.g. ``KernelDiscoveryConfig(start_kernels=["saas"])``), a
            :class:`LibraryKernel`, a candidate, or an entry's dict (as a run config
            stores it).

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
    if text in LEAVES and not Path(text).exists():
        return LibraryKernel.from_candidate(base_candidate(text))
    path, name = text, None
    if not Path(text).is_file() and ":" in text:
        # names may hold ":" (``off_r9_3:(bock+sl)``) and paths may too: the file is the
        # longest prefix before a ":" that exists
        cuts = [i for i, c in enumerate(text) if c == ":"]
        cut = next((i for i in reversed(cuts) if Path(text[:i]).is_file()), cuts[0])
        path, name = text[:cut], text[cut + 1 :]
    if not Path(path).is_file():
        raise KernelLibraryError(
            f"{path}: no such kernel library (expected FILE, FILE:NAME or a leaf of the "
            f"grammar: {', '.join(LEAVES)})"
        )
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
            that a kernel the sandbox refuses fails here (a config stores its start kernels
            without: its surrogate validates them, :func:`validate_start_kernels`).

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

    Through :func:`~ax_kernel_discovery.sandbox.validate.validate_candidate`, as a
    proposal: expression trees in this process (trusted building blocks), kernel source
    in the sandboxed child process with the same checks and limits as LLM code.

    Args:
        kernel: The kernel.
        dim: Input dimension to validate at (default: ``kernel.dim``, else
            :data:`VALIDATION_DIM`).
        where: Label of the library for the error message.

    Raises:
        KernelLibraryError: The kernel failed; the message names it, the failed stage
            and the reason.
    """
    d = int(dim or kernel.dim or VALIDATION_DIM)
    key = (kernel.sha256, d)
    if key not in _VALIDATED:
        result = validate_candidate(kernel.candidate, d)
        _VALIDATED[key] = None if result.ok else f"stage {result.stage!r}: {result.reason}"
    failure = _VALIDATED[key]
    if failure is not None:
        kind = "kernel source" if kernel.code is not None else "expression tree"
        raise KernelLibraryError(
            f"{where}: kernel {kernel.name!r}: its {kind} failed validation at D={d} ({failure})"
        )


# --------------------------------------------------------------------------- start set


class StartSettings(Protocol):
    """The settings a population's start set is made from (a
    :class:`~ax_kernel_discovery.config.KernelDiscoveryConfig` has them)."""

    @property
    def keep_start_set(self) -> bool: ...

    @property
    def start_kernels(self) -> Sequence[Mapping[str, Any]] | None: ...


def validate_start_kernels(config: StartSettings) -> None:
    """Validate each kernel of ``config.start_kernels`` (:func:`validate_library_kernel`,
    at its own dimension): what a surrogate does when it is built, so that a kernel the
    sandbox refuses fails before any evaluation. Building a config validates none.

    Raises:
        KernelLibraryError: A kernel failed; the message names it, the failed stage and
            the reason.
    """
    for data in config.start_kernels or []:
        validate_library_kernel(get_kernel(dict(data)), where="start_kernels")


def library_start_candidates(
    config: StartSettings, dim: int | None = None
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
