"""SVM on the shared CT-slice sample, and the full-file loader on a made-up file."""

from __future__ import annotations

import numpy as np
import pytest

from ax_kernel_discovery.benchmarks.svm import SVM, load_ct_slice


@pytest.fixture
def svm() -> SVM:
    return SVM()


def test_sample_is_labelled(svm: SVM) -> None:
    assert svm.is_sample
    assert svm.name == "svm (682-row sample)"
    assert "(682-row sample)" in svm.description
    assert (svm.dim, svm.minimize) == (388, True)
    assert svm.X_train.shape == (250, 385) and svm.X_test.shape == (250, 385)


def test_patient_id_is_the_first_feature(data_dir) -> None:
    X, y = load_ct_slice(data_dir / "ct_slice_sample.csv.gz")
    assert X.shape == (682, 385) and y.shape == (682,)
    assert set(np.unique(X[:, 0])) == {0.0, 1.0}  # patientId of patients 0 and 1


def test_hyperparameter_mapping() -> None:
    x = np.zeros(388)
    x[:385] = 0.5
    x[385:] = [0.0, 1.0, 0.5]
    hp = SVM.hyperparameters(x)
    np.testing.assert_allclose(hp["length_scales"], np.ones(385))
    assert hp["epsilon"] == pytest.approx(0.01)
    assert hp["gamma"] == pytest.approx(3.0)
    assert hp["C"] == pytest.approx(0.01 * 500**0.5)


def test_fixed_point_finite_plausible_deterministic(svm: SVM) -> None:
    X = np.vstack([np.full(388, 0.5), np.random.default_rng(0).uniform(size=388)])
    y = svm.evaluate(X)
    np.testing.assert_array_equal(y, svm.evaluate(X))
    # RMSE of a [0, 1]-scaled target: 0 < value < std-ish of the target
    assert np.all(np.isfinite(y)) and np.all((y > 0.0) & (y < 0.5))
    assert y[0] == pytest.approx(0.1779, abs=2e-3)


def test_full_file_is_preferred_and_unlabelled(tmp_path) -> None:
    rng = np.random.default_rng(0)
    n = 40
    cols = ["patientId"] + [f"value{i}" for i in range(384)] + ["reference"]
    data = np.column_stack(
        [np.repeat(np.arange(4), 10), rng.uniform(size=(n, 384)), rng.uniform(0, 180, n)]
    )
    header = ",".join(cols)
    np.savetxt(
        tmp_path / "slice_localization_data.csv", data, delimiter=",", header=header, comments=""
    )
    np.savetxt(
        tmp_path / "ct_slice_sample.csv.gz", data[:5], delimiter=",", header=header, comments=""
    )
    problem = SVM(data_dir=tmp_path)
    assert not problem.is_sample and problem.name == "svm"
    assert problem.X_train.shape == (20, 385) and problem.X_test.shape == (20, 385)
    assert np.isfinite(problem.evaluate_one(np.full(388, 0.5)))
    explicit = SVM(path=tmp_path / "slice_localization_data.csv", n_rows=10)
    assert explicit.X_train.shape == (5, 385)


def test_missing_explicit_file(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="SVM data file"):
        SVM(path=tmp_path / "missing.csv")
