"""The benchmark data files: what each one is, where it comes from and where it is read from.

The package ships the four data files its benchmarks need (about 380 KB together) in
``ax_kernel_discovery/benchmarks/data/`` (source, licence and checksum of each in the
``README.md`` there). They are read with :mod:`importlib.resources`, so they work from
a wheel as well as from an editable install, with no download and no setting.

A data folder given as ``data_dir=...`` (CLI ``--data-dir``), or else named by the
environment variable ``AXKD_DATA_DIR``, overrides the bundled copies: a file found
there is read instead of the package's copy, and files it lacks still come from the
package. That is how a user runs SVM on the full 53,500-row CT-slice file
(``slice_localization_data.csv``, see :data:`CT_SLICE_FULL`).

Example:
    >>> from ax_kernel_discovery.benchmarks.datasets import data_file
    >>> data_file("rover_obstacle_centers.txt").name
    'rover_obstacle_centers.txt'
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ax_kernel_discovery.benchmarks.base import DATA_DIR_ENV, setting_path

__all__ = [
    "CT_SLICE_FULL",
    "FULL_FILE_NAMES",
    "DATA_FILES",
    "DataFile",
    "DataFileStatus",
    "bundled_file",
    "data_dir",
    "data_file",
    "data_status",
    "override_dir",
    "sha256_of",
]

_PACKAGE = "ax_kernel_discovery.benchmarks"
_FOLDER = "data"


@dataclass(frozen=True)
class DataFile:
    """One data file the package ships.

    Attributes:
        name: File name inside the data folder.
        description: What the file holds.
        source: Where it comes from (and where a user gets another copy).
        licence: Its licence, as the source states it.
        sha256: Checksum of the file as shipped (its bytes, compressed or not).
        used_by: The benchmark problems that read it.
    """

    name: str
    description: str
    source: str
    licence: str
    sha256: str
    used_by: str


DATA_FILES: dict[str, DataFile] = {
    f.name: f
    for f in (
        DataFile(
            name="rover_obstacle_centers.txt",
            description="113 obstacle centres 'x y' of the 'large' rover domain "
            "(squares of half-width 0.025)",
            source="create_cost_large() in github.com/zi-w/Ensemble-Bayesian-Optimization, "
            "test_functions/rover_function.py (Wang et al. 2018)",
            licence="MIT",
            sha256="90335602c9f38183d88da70a2c541ae25b7e23be0a71a70e70a12b338d4d575a",
            used_by="rover100, rover60",
        ),
        DataFile(
            name="dna.scale.gz",
            description="LIBSVM 'dna.scale' (Statlog DNA, 2000 rows x 180 binary features, "
            "labels 1..3), gzip-compressed",
            source="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/dna.scale "
            "(Statlog/UCI; Noordewier, Towell & Shavlik 1991)",
            licence="Statlog/UCI data, redistributed by LIBSVM with attribution",
            sha256="fa1052878001a53657bab377aae4184af8edf1e69a706e8274e479c89cd2960b",
            used_by="lasso_dna",
        ),
        DataFile(
            name="ct_slice_sample.csv.gz",
            description="first 682 rows (patients 0 and 1) of UCI 'Relative location of CT "
            "slices on axial axis'; SVM results on it are labelled '(682-row sample)'",
            source="slice_localization_data.csv of the UCI Machine Learning Repository",
            licence="CC BY 4.0",
            sha256="5b21214a71610fa883f7bfe0d778c181d804fb533c0b463ba1adee5c11c046bf",
            used_by="svm (when no full file is given)",
        ),
        DataFile(
            name="humanoid_v1_ars_lin_policy_plus.npz",
            description="Augmented Random Search linear policy for Humanoid-v1: 17x376 "
            "weights, observation mean and std",
            source="github.com/modestyachts/ARS, trained_policies/Humanoid-v1/"
            "lin_policy_plus.npz (Mania et al. 2018), as in BenchSuite",
            licence="BSD-2-Clause",
            sha256="df94565626aa86f6ad65ea8b058a8d80f8e94483a57a7a37155769ee44b2598f",
            used_by="humanoid",
        ),
    )
}
"""The bundled data files by name."""

FULL_FILE_NAMES = (
    "slice_localization_data.csv",
    "slice_localization_data.csv.gz",
    "slice_localization_data.csv.xz",
)
"""Names the full CT-slice file may have in the user's data folder (svm reads the first found)."""

CT_SLICE_FULL = (
    "full CT-slice file (53,500 rows): download the dataset 'Relative location of CT slices "
    "on axial axis' from the UCI Machine Learning Repository (archive.ics.uci.edu, CC BY 4.0), "
    "put slice_localization_data.csv (or a .csv.gz/.csv.xz copy) in a folder and point "
    f"{DATA_DIR_ENV} or --data-dir at that folder; svm then uses it instead of the sample"
)
"""How a user gets the full CT-slice file (the package never downloads anything)."""

_RESOURCES = contextlib.ExitStack()
atexit.register(_RESOURCES.close)


def override_dir(explicit: str | Path | None = None) -> Path | None:
    """The user's data folder, if one is set.

    Args:
        explicit: A folder given by the caller (``data_dir=...``, ``--data-dir``); wins
            over ``AXKD_DATA_DIR``.

    Returns:
        The folder, or ``None`` when neither is set (the bundled files are used).

    Raises:
        FileNotFoundError: The folder is set but does not exist (the message says
            which setting named it).
    """
    path = setting_path(explicit, DATA_DIR_ENV)
    if path is not None and not path.is_dir():
        origin = "data_dir argument" if explicit is not None else DATA_DIR_ENV
        raise FileNotFoundError(
            f"benchmark data directory {str(path)!r} (from {origin}) does not exist; point it "
            "to a folder holding benchmark files, or unset it to use the files bundled with "
            "the package"
        )
    return path


def bundled_file(name: str) -> Path:
    """Path of a data file shipped in the package (extracted first if installed zipped).

    Raises:
        FileNotFoundError: ``name`` is not a bundled file, or the installation lacks it.
    """
    if name not in DATA_FILES:
        raise FileNotFoundError(
            f"{name!r} is not a data file bundled with the package; bundled: "
            f"{', '.join(DATA_FILES)}"
        )
    resource = resources.files(_PACKAGE).joinpath(_FOLDER).joinpath(name)
    if not resource.is_file():
        raise FileNotFoundError(
            f"bundled benchmark data file {name!r} is missing from this installation of "
            f"ax-kernel-discovery; reinstall it, or set {DATA_DIR_ENV} to a folder holding "
            f"the file ({DATA_FILES[name].source})"
        )
    if isinstance(resource, Path):
        return resource
    return _RESOURCES.enter_context(resources.as_file(resource))


def _locate(name: str, explicit_dir: str | Path | None) -> tuple[Path, str]:
    """Where ``name`` is read from, and which setting put it there."""
    folder = override_dir(explicit_dir)
    if folder is not None and (folder / name).is_file():
        return folder / name, "data_dir argument" if explicit_dir is not None else DATA_DIR_ENV
    if name not in DATA_FILES:
        where = f"in {str(folder)!r}" if folder is not None else "(no data folder is set)"
        raise FileNotFoundError(
            f"benchmark data file {name!r} not found {where}, and it is not bundled with the "
            "package"
        )
    return bundled_file(name), "package"


def data_file(name: str, explicit_dir: str | Path | None = None) -> Path:
    """Path of one data file: the user's copy if there is one, else the bundled one.

    Args:
        name: File name (a key of :data:`DATA_FILES`, or another file a problem looks
            for in the user's folder).
        explicit_dir: Data folder given by the caller (see :func:`override_dir`).

    Raises:
        FileNotFoundError: The user's folder does not exist, or the file is neither
            there nor bundled.
    """
    return _locate(name, explicit_dir)[0]


def data_dir(explicit: str | Path | None = None) -> Path:
    """The folder data files are read from: the user's, else the bundled one.

    Args:
        explicit: A folder given by the caller; wins over ``AXKD_DATA_DIR``.

    Raises:
        FileNotFoundError: The user's folder is set but does not exist.
    """
    folder = override_dir(explicit)
    return folder if folder is not None else bundled_file(next(iter(DATA_FILES))).parent


def sha256_of(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class DataFileStatus:
    """Where one data file is read from and whether it is the published file.

    Attributes:
        name: File name.
        path: Where it is read from (``None`` when it is missing).
        origin: ``package``, ``data_dir argument`` or ``AXKD_DATA_DIR``.
        status: ``ok`` (checksum as published), ``mismatch`` (another file of that name),
            ``missing``, or ``user file`` (a file with no checksum on record, e.g. the
            full CT-slice file).
        used_by: The problems that read it.
        note: A line of explanation (the error, or what the file replaces).
    """

    name: str
    path: Path | None
    origin: str
    status: str
    used_by: str
    note: str = ""


def data_status(explicit_dir: str | Path | None = None) -> list[DataFileStatus]:
    """Each data file: where it is read from and its checksum status (no network).

    Args:
        explicit_dir: Data folder given by the caller (see :func:`override_dir`).

    Returns:
        One :class:`DataFileStatus` per bundled file, plus one for the full CT-slice
        file when the user's folder holds it.

    Raises:
        FileNotFoundError: The user's folder is set but does not exist.
    """
    folder = override_dir(explicit_dir)
    rows: list[DataFileStatus] = []
    for info in DATA_FILES.values():
        try:
            path, origin = _locate(info.name, explicit_dir)
        except FileNotFoundError as e:
            rows.append(DataFileStatus(info.name, None, "-", "missing", info.used_by, str(e)))
            continue
        status = "ok" if sha256_of(path) == info.sha256 else "mismatch"
        note = "" if status == "ok" else f"expected sha256 {info.sha256}"
        rows.append(DataFileStatus(info.name, path, origin, status, info.used_by, note))
    full = [folder / name for name in FULL_FILE_NAMES] if folder is not None else []
    for path in full:
        if path.is_file():
            origin = "data_dir argument" if explicit_dir is not None else DATA_DIR_ENV
            rows.append(
                DataFileStatus(
                    path.name,
                    path,
                    origin,
                    "user file",
                    "svm",
                    "full CT-slice file: svm uses it instead of ct_slice_sample.csv.gz",
                )
            )
            break
    return rows
