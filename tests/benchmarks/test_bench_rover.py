"""Rover rewards checked against values computed independently in the test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ax_kernel_discovery.benchmarks.rover import Rover

START = np.array([0.05, 0.05])
GOAL = np.array([0.95, 0.95])


def to_unit(waypoints: np.ndarray) -> np.ndarray:
    """State coordinates in [-0.1, 1.1] -> the problem's [0, 1] inputs, (x1, y1, x2, ...)."""
    return ((np.asarray(waypoints) + 0.1) / 1.2).ravel()


@pytest.fixture
def rover100() -> Rover:
    return Rover(n_waypoints=50)


@pytest.fixture
def centers(data_dir) -> np.ndarray:
    return np.loadtxt(data_dir / "rover_obstacle_centers.txt")


def test_metadata(rover100: Rover) -> None:
    assert rover100.dim == 100 and rover100.name == "rover100"
    assert not rover100.minimize
    np.testing.assert_array_equal(rover100.lower, np.zeros(100))
    np.testing.assert_array_equal(rover100.upper, np.ones(100))
    assert "L1 miss penalty" in rover100.description
    assert "s = m - sqrt(2m)" in rover100.description
    small = Rover(n_waypoints=30)
    assert small.dim == 60 and small.name == "rover60"


def test_straight_path_outside_the_square(rover100: Rover) -> None:
    """All along y = -0.05: outside the unit square, so 20.05 per unit length.

    Collinear, equally spaced waypoints: the fitted spline (smoothing or not) is the
    segment itself, traversed at constant speed.

    Path from (-0.05, -0.05) to (1.05, -0.05): length 1.1, cost 1.1 * 20.05 = 22.055.
    Miss costs: 10 * (0.1 + 0.1) = 2 at the start, 10 * (0.1 + 1.0) = 11 at the goal.
    """
    xs = np.linspace(-0.05, 1.05, 50)
    waypoints = np.column_stack([xs, np.full(50, -0.05)])
    expected = 5.0 - (1.1 * 20.05 + 2.0 + 11.0)
    assert rover100.evaluate_one(to_unit(waypoints)) == pytest.approx(expected, abs=1e-9)
    assert expected == pytest.approx(-30.055)


def test_all_waypoints_in_one_place(rover100: Rover) -> None:
    """A zero-length path at (0.5, 0.5): only the miss costs, 2 * 10 * (0.45 + 0.45)."""
    assert rover100.evaluate_one(np.full(100, 0.5)) == pytest.approx(5.0 - 18.0, abs=1e-12)


def _diagonal_cost_numeric(centers: np.ndarray, n: int = 1000) -> float:
    """Trapezoid rule along the exact segment start -> goal, obstacles checked one by one."""
    t = np.linspace(0.0, 1.0, n)
    pts = START[None] + t[:, None] * (GOAL - START)[None]
    cost = np.full(n, 0.05)
    for i, p in enumerate(pts):
        inside_any = False
        for cx, cy in centers:
            if cx - 0.025 <= p[0] < cx + 0.025 and cy - 0.025 <= p[1] < cy + 0.025:
                inside_any = True
                break
        outside_square = not (0.0 <= p[0] < 1.0 and 0.0 <= p[1] < 1.0)
        if inside_any or outside_square:
            cost[i] += 20.0
    step = math.hypot(*(GOAL - START)) / (n - 1)
    return float(np.sum(0.5 * (cost[:-1] + cost[1:]) * step))


def _diagonal_cost_analytic(centers: np.ndarray) -> tuple[float, int]:
    """Exact line integral along (s, s), s in [0.05, 0.95]; also the number of box edges hit."""
    intervals = []
    for cx, cy in centers:
        lo, hi = max(cx, cy) - 0.025, min(cx, cy) + 0.025
        lo, hi = max(lo, 0.05), min(hi, 0.95)
        if hi > lo:
            intervals.append((lo, hi))
    intervals.sort()
    merged: list[list[float]] = []
    for lo, hi in intervals:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    inside = sum(hi - lo for lo, hi in merged) * math.sqrt(2.0)
    total = 0.05 * 0.9 * math.sqrt(2.0) + 20.0 * inside
    return total, 2 * len(merged)


def test_diagonal_path_through_obstacles(rover100: Rover, centers: np.ndarray) -> None:
    """Collinear, equally spaced waypoints: the interpolating spline is the segment itself."""
    waypoints = np.linspace(START, GOAL, 50)
    reward = rover100.evaluate_one(to_unit(waypoints))
    numeric = _diagonal_cost_numeric(centers)
    analytic, n_edges = _diagonal_cost_analytic(centers)
    assert n_edges > 0  # the diagonal does cross obstacles
    assert reward == pytest.approx(5.0 - numeric, abs=1e-9)
    # the trapezoid rule misses at most one step's worth of cost per obstacle edge
    step = 0.9 * math.sqrt(2.0) / 999
    assert reward == pytest.approx(5.0 - analytic, abs=n_edges * 20.0 * step)


def test_forced_endpoints_variant(centers: np.ndarray) -> None:
    """With start/goal forced, the same diagonal gives the same reward (no miss cost)."""
    forced = Rover(n_waypoints=50, endpoints="forced")
    waypoints = np.linspace(START, GOAL, 50)
    assert forced.evaluate_one(to_unit(waypoints)) == pytest.approx(
        5.0 - _diagonal_cost_numeric(centers), abs=1e-9
    )
    # a single-point "path" now runs start -> (0.5, 0.5) -> goal, without miss costs
    value = forced.evaluate_one(np.full(100, 0.5))
    assert -20.0 < value < 5.0
    with pytest.raises(ValueError, match="endpoints must be"):
        Rover(endpoints="sometimes")  # type: ignore[arg-type]


def test_deterministic_and_fast(rover100: Rover) -> None:
    X = np.random.default_rng(0).uniform(size=(20, 100))
    y1 = rover100.evaluate(X)
    y2 = rover100.evaluate(X)
    np.testing.assert_array_equal(y1, y2)
    assert np.all(np.isfinite(y1)) and np.all(y1 < 5.0)


def test_coincident_waypoints_do_not_break_the_spline(rover100: Rover) -> None:
    """Optimisers push inputs to the bounds; repeated corner waypoints must still work."""
    x = np.zeros(100)
    x[50:] = 1.0
    value = rover100.evaluate_one(x)
    assert np.isfinite(value)


def test_values_of_the_authors_code() -> None:
    """Pinned values from the authors' rover_utils.py logic, run outside this package.

    (``RoverDomain.estimate_cost`` with ``splprep(points, k=3)``, the large-domain costs,
    ``l2cost`` miss costs or forced endpoints, ``ConstantOffsetFn(f, 5)``, and the
    1e-4 input noise switched off.)
    """
    rng = np.random.default_rng(12345)
    x100, x60 = rng.uniform(size=100), rng.uniform(size=60)
    assert Rover(50).evaluate_one(x100) == pytest.approx(-19.717816158443767, abs=1e-9)
    forced = Rover(50, endpoints="forced")
    assert forced.evaluate_one(x100) == pytest.approx(-3.4082049537179664, abs=1e-9)
    assert Rover(30).evaluate_one(x60) == pytest.approx(-18.975537929197337, abs=1e-9)


def test_interpolating_variant() -> None:
    """``smoothing=0`` passes through every waypoint; the default smooths."""
    rng = np.random.default_rng(0)
    waypoints = rng.uniform(-0.1, 1.1, size=(30, 2))
    interp = Rover(30, smoothing=0.0)
    path = interp.domain.trajectory(waypoints)
    np.testing.assert_allclose(path[0], waypoints[0], atol=1e-12)
    np.testing.assert_allclose(path[-1], waypoints[-1], atol=1e-12)
    smooth = Rover(30).domain.trajectory(waypoints)
    assert np.abs(smooth[0] - waypoints[0]).max() > 1e-3
    assert "s=0" in interp.description
    with pytest.raises(ValueError, match="smoothing"):
        Rover(30, smoothing=-1.0)
