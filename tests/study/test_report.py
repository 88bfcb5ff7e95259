"""Tests of the quality study's report: paired statistics, diagnostics, summary.json."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ax_kernel_discovery.study import STUDY, StudyProtocol, study_configs
from ax_kernel_discovery.study.report import (
    checkpoint_comparison,
    chosen_timeline,
    kernel_family,
    paired_comparison,
    proposal_diagnostics,
    search_diagnostics,
    selection_diagnostics,
    standard_error,
    study_summary,
    write_study_report,
)


def test_paired_comparison_counts_signs_with_a_t_interval_and_exact_tests() -> None:
    kd = {0: 1.0, 1: 2.0, 2: 3.0, 3: 4.0, 4: 5.0}
    base = {0: 2.0, 1: 3.0, 2: 3.0, 3: 5.0, 4: 7.0, 9: 0.0}  # seed 9 has no kd partner
    out = paired_comparison(kd, base, minimize=True)
    assert (out["n"], out["wins"], out["ties"], out["losses"]) == (5, 4, 1, 0)
    diff = [1.0, 1.0, 0.0, 1.0, 2.0]
    assert out["mean_diff"] == pytest.approx(sum(diff) / 5)
    from scipy import stats

    half = stats.t.ppf(0.975, 4) * stats.tstd(diff) / 5**0.5  # textbook paired t-interval
    assert out["ci"] == pytest.approx([1.0 - half, 1.0 + half])
    assert out["p_sign"] == pytest.approx(stats.binomtest(4, 4).pvalue)  # 0.125
    # sign flips of (1, 1, 0, 1, 2): |mean| >= 1 only with all non-zero signs alike
    assert out["p_perm"] == pytest.approx(4 / 32)
    flipped = paired_comparison(kd, base, minimize=False)  # maximizing: kd now loses
    assert (flipped["wins"], flipped["losses"]) == (0, 4)
    assert flipped["mean_diff"] == pytest.approx(-out["mean_diff"])
    assert flipped["p_sign"] == out["p_sign"] and flipped["p_perm"] == out["p_perm"]


def test_five_seeds_cannot_reach_p_below_0_0625() -> None:
    out = paired_comparison({s: 0.0 for s in range(5)}, {s: 1.0 + s for s in range(5)}, True)
    assert out["wins"] == 5 and out["p_sign"] == out["p_perm"] == pytest.approx(0.0625)


def test_the_exact_permutation_test_counts_up_to_40_pairs() -> None:
    from scipy import stats

    from ax_kernel_discovery.study.statistics import permutation_test

    # equal magnitudes: |sum| depends only on how many signs are positive, so the
    # permutation test is the two-sided sign test (30 pairs: counted by meeting in the middle)
    for plus in (15, 20, 22, 30):
        d = [1.0] * plus + [-1.0] * (30 - plus)
        assert permutation_test(d) == pytest.approx(stats.binomtest(plus, 30).pvalue, rel=1e-12)
    # one pair outweighs the rest: only the two patterns with all signs alike reach |sum|
    assert permutation_test([100.0] + [1.0] * 29) == pytest.approx(2 / 2**30)
    # mixed magnitudes: against sampled sign flips (standard error below 0.0011)
    rng = np.random.default_rng(3)
    d = rng.normal(0.3, 1.0, 33)
    flips = rng.choice([-1.0, 1.0], size=(200_000, 33))
    sampled = float(np.mean(np.abs(flips @ d) >= abs(d.sum())))
    assert 0.01 < sampled < 0.5
    assert permutation_test(d) == pytest.approx(sampled, abs=0.005)
    # the enumeration and the split agree where both apply (20 pairs, split by hand)
    d20 = rng.normal(0.0, 1.0, 20)
    assert permutation_test(d20) == pytest.approx(permutation_test(np.r_[d20, 0.0]))
    with pytest.raises(ValueError, match="n <= 40, got 41"):
        permutation_test(np.ones(41))


def test_a_p_value_below_0_001_is_not_printed_as_zero() -> None:
    from ax_kernel_discovery.study.statistics import format_p, paired_comparison

    c = paired_comparison({s: 1.0 for s in range(15)}, {s: 2.0 for s in range(15)}, True)
    assert c["p_sign"] == pytest.approx(2 / 2**15)
    assert format_p(c["p_sign"]) == "6.1e-05"
    assert format_p(0.0494) == "0.049" and format_p(0.001) == "0.001"
    assert format_p(None) == "–"


def test_paired_comparison_all_ties_has_no_p_value() -> None:
    out = paired_comparison({0: 1.0, 1: 2.0}, {0: 1.0, 1: 2.0}, minimize=True)
    assert out["ties"] == 2 and out["p_sign"] is None and out["p_perm"] is None
    assert out["ci"] == [0.0, 0.0]


def test_the_bootstrap_under_covers_on_five_pairs_and_the_t_interval_does_not() -> None:
    from ax_kernel_discovery.study.statistics import bootstrap_coverage

    cov = bootstrap_coverage(n_pairs=5, trials=1500, n_boot=1000, seed=1)
    assert cov["bootstrap"] < 0.88  # about 83% for a nominal 95%
    assert 0.93 < cov["t"] < 0.97


def test_standard_error() -> None:
    assert standard_error([1.0, 3.0]) == pytest.approx(1.0)
    assert standard_error([5.0]) == 0.0


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("SL", "SL"),
        ("off_r0_0:(bock+sl)", "evolved[BOCK+SL]"),
        ("off_r3_1:(rbf*poly2@tanh)", "evolved[RBF]"),
        ("llm_r1_0", "evolved"),
        (None, "none"),
    ],
)
def test_kernel_family(name: str | None, family: str) -> None:
    assert kernel_family(name) == family


def test_kernel_family_knows_every_leaf_of_the_registry() -> None:
    """Issue 53 item 1: the families come from ``kernels.LEAVES`` (the extended leaves
    included), and the guard's name from ``surrogate.choice``; polynomial feature maps
    are not a family of their own."""
    from ax_kernel_discovery.kernels import LEAVES
    from ax_kernel_discovery.study.diagnostics import GUARD_CHOICE
    from ax_kernel_discovery.surrogate.choice import GUARD_NAME

    assert kernel_family("off_r2_0:(imq+saas@tanh)") == "evolved[IMQ+SAAS]"
    assert kernel_family("off_r2_1:(cosine*poly3)") == "evolved[Cosine]"
    families = {name: kernel_family(f"off_r0_0:{name}@tanh") for name in LEAVES}
    for name, leaf in LEAVES.items():
        expected = "evolved" if leaf.polynomial else f"evolved[{leaf.title or name}]"
        assert families[name].lower() == expected.lower(), name
    assert len(set(families.values())) == len([x for x in LEAVES.values() if not x.polynomial]) + 1
    assert GUARD_CHOICE == GUARD_NAME and kernel_family(GUARD_NAME) == GUARD_NAME


def _round(chosen: str, crit: dict[str, float], crps: dict[str, float], **extra: object) -> dict:
    return {
        "kind": "bo",
        "chosen": chosen,
        "kd_scores": crit,
        "next_batch": {k: {"crps": v, "log_lik": -v} for k, v in crps.items()},
        **extra,
    }


def test_selection_diagnostics_agree_and_disagree() -> None:
    crit = {"RBF": 0.1, "SL": 0.2, "BOCK": 0.3, "RQ": 0.4}
    agree = _round("RBF", crit, {"RBF": 1.0, "SL": 2.0, "BOCK": 3.0, "RQ": 4.0})
    reverse = _round("RBF", crit, {"RBF": 4.0, "SL": 3.0, "BOCK": 2.0, "RQ": 1.0})
    out = selection_diagnostics([{"rounds": [agree, reverse]}])
    assert out["rounds"] == 2
    assert out["spearman_crps"] == pytest.approx(0.0)  # +1 and -1
    assert out["chosen_is_best"] == pytest.approx(0.5)
    assert out["chosen_in_top3"] == pytest.approx(0.5)
    assert out["best_next_batch_kernels"] == {"RBF": 1, "RQ": 1}
    # the chosen kernel ranks 1st of 4, then 4th of 4; without it, +1 and -1 again
    assert out["chosen_rank"] == pytest.approx((1 / 4 + 4 / 4) / 2)
    assert out["spearman_crps_others"] == pytest.approx(0.0)


def test_selection_diagnostics_without_the_chosen_kernel() -> None:
    # the chosen kernel predicts its own batch worst (winner's curse), the others in order
    crit = {"SL": 0.1, "RBF": 0.2, "BOCK": 0.3, "RQ": 0.4}
    curse = _round("SL", crit, {"SL": 9.0, "RBF": 1.0, "BOCK": 2.0, "RQ": 3.0})
    out = selection_diagnostics([{"rounds": [curse]}])
    assert out["spearman_crps"] == pytest.approx(-0.2)
    assert out["spearman_crps_others"] == pytest.approx(1.0)
    assert out["chosen_rank"] == pytest.approx(1.0)


def test_search_diagnostics_and_timeline() -> None:
    runs = [
        {
            "rounds": [
                {"kind": "init", "boundary_hit": 0.0, "path_length": 5.0},
                _round("SL", {}, {}, boundary_hit=0.5, path_length=1.0, population_diversity=0.2),
                _round("off_r1_0:(sl*bock)", {}, {}, boundary_hit=1.0, path_length=2.0),
            ]
        },
        {
            "rounds": [
                {"kind": "init", "boundary_hit": 0.0, "path_length": 3.0},
                _round("RBF", {}, {}, boundary_hit=0.0, path_length=1.0, population_diversity=0.4),
                _round("RBF", {}, {}, boundary_hit=0.0, path_length=1.0),
            ]
        },
    ]
    search = search_diagnostics(runs)
    assert search["boundary_hit"] == pytest.approx((0.75 + 0.0) / 2)
    assert search["otsd"] == pytest.approx((8.0 + 5.0) / 2)
    timeline = chosen_timeline(runs)
    assert timeline[0]["families"] == {"SL": 1, "RBF": 1}
    assert timeline[0]["population_diversity"] == pytest.approx(0.3)
    assert timeline[1]["evolved_share"] == pytest.approx(0.5)


def test_proposal_diagnostics_counts_acceptance_rejections_and_llm_cost() -> None:
    def bo(chosen: str, accepted: int, stages: list[str], **extra: object) -> dict:
        failures = [
            {"kind": "rejection", "stage": st, "name": f"k{i}"} for i, st in enumerate(stages)
        ]
        failures.append({"kind": "evaluation", "stage": "x"})  # not a proposal's rejection
        return _round(
            chosen, {}, {}, accepted=[f"a{i}" for i in range(accepted)], failures=failures, **extra
        )

    llm = {
        "llm_calls": 1.0,
        "llm_cached_calls": 0.0,
        "llm_failed_calls": 0.0,
        "llm_latency_s": 50.0,
    }
    runs = [
        {
            "rounds": [
                {"kind": "init", "accepted": ["ignored"], "timings": {"round_wall": 99.0}},
                bo(
                    "RBF",
                    3,
                    ["duplicate"],
                    llm_usage=llm,
                    timings={"propose": 40.0, "round_wall": 60.0},
                    accepted_diversity=0.2,
                ),
                bo(
                    "e_r1_0:(rbf+rq)",
                    2,
                    ["duplicate", "fit"],
                    llm_usage=llm,
                    timings={"propose": 60.0, "round_wall": 80.0},
                ),
            ]
        },
        {
            "rounds": [
                bo(
                    "e_r0_1:rq@tanh",
                    4,
                    [],
                    llm_usage={
                        **llm,
                        "llm_calls": 2.0,
                        "llm_failed_calls": 1.0,
                        "llm_latency_s": 70.0,
                    },
                    timings={"propose": 80.0, "round_wall": 100.0},
                    accepted_diversity=0.4,
                )
            ]
        },
    ]
    out = proposal_diagnostics(runs, asked_per_round=4, start_kernels=["RBF", "RQ"])
    assert (out["n_runs"], out["rounds"], out["asked"], out["accepted"]) == (2, 3, 12, 9)
    assert out["acceptance"] == pytest.approx(0.75)
    assert out["rejections"] == {"duplicate": 2, "fit": 1}
    assert out["chosen_proposed"] == pytest.approx(2 / 3)
    assert out["llm_calls"] == 4 and out["accepted_diversity"] == pytest.approx(0.3)
    assert out["llm_latency_s"] == pytest.approx(170.0 / 3)  # the failed call is not a latency
    assert (out["propose_s"], out["round_s"]) == (pytest.approx(60.0), pytest.approx(80.0))
    offline = proposal_diagnostics([{"rounds": [bo("RBF", 1, [])]}], 4, ["RBF"])
    assert offline["llm_calls"] == 0 and offline["llm_latency_s"] is None
    assert offline["chosen_proposed"] == 0.0 and offline["propose_s"] is None


def _fake_result(problem: str, method: str, seed: int, best: float) -> dict:
    values = [best + 1.0, best + 0.5, best]
    return {
        "format": 1,
        "status": "complete",
        "problem": problem,
        "problem_label": problem,
        "direction": "minimize",
        "method": method,
        "seed": seed,
        "budget": 3,
        "batch": 1,
        "num_sobol": 1,
        "config": {"kd_config": {"criterion": "mll"} if method == "kd" else None},
        "n_evaluations": 3,
        "values": values,
        "best_so_far": values,
        "best_value": best,
        "rounds": [
            {"kind": "init", "boundary_hit": 0.0, "path_length": 1.0, "timings": {}},
            {"kind": "bo", "boundary_hit": 0.5, "path_length": 1.0, "chosen": "RBF", "timings": {}},
        ],
        "timings": {"mean_per_bo_round": {}, "bo_rounds": 0},
        "versions": {"torch": "x"},
        "torch_threads": 1,
    }


def test_write_study_report_summary(tmp_path) -> None:
    protocol = StudyProtocol(problems=("p1", "p2"), methods=("kd", "sl"), seeds=(0, 1, 2))
    folder = tmp_path / "study"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for p in protocol.problems:
        for s in protocol.seeds:
            kd_best = float(rng.normal())
            for m, best in (("kd", kd_best), ("sl", kd_best + 1.0)):
                (folder / f"{p}__{m}__seed{s}.json").write_text(
                    json.dumps(_fake_result(p, m, s, best))
                )
    variant = folder / "mll"
    variant.mkdir()
    lbo = _fake_result("p1", "kd", 0, -9.0)
    crit = {"RBF": 0.1, "SL": 0.2, "BOCK": 0.3}
    lbo["rounds"].append(_round("RBF", crit, {"RBF": 1.0, "SL": 2.0, "BOCK": 3.0}))
    (variant / "p1__kd__seed0.json").write_text(json.dumps(lbo))
    (variant / "p1__cake__seed0.json").write_text(json.dumps(_fake_result("p1", "cake", 0, 9.0)))
    md = write_study_report(folder, tmp_path / "docs" / "results.md", protocol)
    summary = json.loads((folder / "summary.json").read_text())
    cell = summary["problems"]["p1"]["methods"]["kd"]
    assert cell["n_seeds"] == 3 and cell["budget"] == 3 and cell["rank"] == 1
    assert summary["average_rank"] == {"kd": 1.0, "sl": 2.0}
    pair = summary["paired"]["p2"]["sl"]
    assert (pair["wins"], pair["losses"]) == (3, 0) and pair["mean_diff"] == pytest.approx(1.0)
    assert summary["search"]["p1"]["sl"]["boundary_hit"] == pytest.approx(0.5)
    assert summary["variants"]["mll"]["problems"]["p1"]["n"] == 1
    assert summary["variants"]["mll"]["selection"]["p1"]["spearman_crps"] == pytest.approx(1.0)
    values = summary["variants"]["mll"]["values"]["p1"]
    kd_p1_seed0 = json.loads((folder / "p1__kd__seed0.json").read_text())["best_value"]
    assert values["mean"] == -9.0 and values["seeds"] == [0]
    assert values["kd_mean"] == pytest.approx(kd_p1_seed0)
    cake = summary["variants"]["mll:cake"]  # an LLM variant's cake runs, against default kd
    assert cake["method"] == "cake" and cake["problems"]["p1"]["losses"] == 1
    # the cake runs ask 4 kernels per round by default; their start kernels are CAKE's
    assert summary["proposals"]["mll:cake"]["p1"]["asked"] == 4
    assert summary["proposals"]["mll:cake"]["p1"]["chosen_proposed"] == 1.0  # RBF is not one
    assert summary["proposals"]["kd"]["p1"]["chosen_proposed"] == 0.0
    text = md.read_text()
    assert "| mll:cake | p1 | 1 | 0/4 (0%) | none | 100% | – | – |" in text
    assert "| mll | p1 | 1 | +1.00 |" in text
    assert "kd vs sl" in text and "3/0/0" in text
    assert (tmp_path / "docs" / "img" / "study_curves_p1.png").is_file()
    assert not math.isnan(summary["problems"]["p2"]["methods"]["sl"]["se"])


def test_checkpoints_compare_the_seeds_both_sides_reached() -> None:
    # a longer-budget kd run still going (seed 1 stopped at 3 evaluations) is left out of
    # both sides' means at the checkpoints it has not reached, not only of the pairing
    def run(method: str, seed: int, best: list[float]) -> dict:
        return {"problem": "p", "method": method, "seed": seed, "best_so_far": best}

    kd = [run("kd", 0, [1.0, 2.0, 3.0, 4.0]), run("kd", 1, [5.0, 5.0, 5.0])]
    ax = [run("ax", 0, [0.0, 1.0, 2.0, 3.0]), run("ax", 1, [9.0, 9.0, 9.0, 9.0])]
    rows = checkpoint_comparison(kd, ax, "p", "kd", "ax", False, checkpoints=(3, 4))
    assert [r["evaluations"] for r in rows] == [3, 4]
    assert rows[0]["mean"] == 4.0 and rows[0]["reference_mean"] == 5.5  # seeds 0 and 1
    assert rows[1]["mean"] == 4.0 and rows[1]["reference_mean"] == 3.0  # seed 0 only
    assert rows[1]["paired"]["n"] == 1 and rows[1]["paired"]["wins"] == 1


def test_study_configs_order_and_protocol() -> None:
    cfgs = study_configs("out")
    assert len(cfgs) == len(STUDY.problems) * len(STUDY.methods) * len(STUDY.seeds)
    assert len(STUDY.seeds) >= 5 and STUDY.budget - STUDY.num_sobol >= 150
    assert {"kd", "ax_default", "matern52", "bock", "sl", "compositional"} <= set(STUDY.methods)
    # seed-major: every run of seed 0 comes before any run of seed 1
    seeds = [c.seed for c in cfgs]
    assert seeds == sorted(seeds)
    first = cfgs[0]
    assert (first.budget, first.batch, first.num_restarts, first.raw_samples) == (170, 15, 2, 128)
    variant = study_configs(
        "out", methods=["kd"], kd_config={"criterion": "mll"}, method_suffix="v"
    )
    assert all(c.out == "out/v" and c.kd_config == {"criterion": "mll"} for c in variant)
    llm = {"llm_model": "local"}
    both = study_configs("out", methods=["kd", "cake"], kd_config=llm, method_suffix="llm")
    assert {c.method for c in both} == {"kd", "cake"}
    assert all(c.kd_config == llm for c in both)  # cake takes the variant's LLM settings


def test_transfer_summary_pairs_the_transferred_kernel(tmp_path) -> None:
    from ax_kernel_discovery.study.report import transfer_summary

    transfer = tmp_path / "transfer"
    transfer.mkdir()
    kernel = {"name": "off_r1_0:(sl*bock)", "formula": "k = SL * BOCK"}
    (transfer / "kernels.json").write_text(json.dumps({"kernels": [kernel]}))
    for s, (mine, rbf) in enumerate([(1.0, 2.0), (1.5, 1.0)]):
        for m, best in (("fixed:off_r1_0:(sl*bock)", mine), ("rbf", rbf)):
            (transfer / f"p1__{m.split(':')[0]}__seed{s}.json").write_text(
                json.dumps(_fake_result("p1", m, s, best))
            )
    study = [_fake_result("p1", "sl", 0, 3.0), _fake_result("p1", "sl", 7, 0.0)]
    out = transfer_summary(transfer, study)
    assert out is not None and out["kernel"] == kernel["name"]
    rows = out["problems"]["p1"]
    assert rows["transferred"]["mean"] == pytest.approx(1.25)
    vs_rbf = rows["rbf"]["transferred_vs"]
    assert (vs_rbf["wins"], vs_rbf["losses"]) == (1, 1)  # minimise: 1 < 2, 1.5 > 1
    assert rows["sl"]["n_seeds"] == 1  # only seed 0 is shared with the transfer runs
    assert rows["sl"]["transferred_vs"]["wins"] == 1
    assert transfer_summary(tmp_path / "missing", study) is None


def test_ranks_use_the_seeds_every_method_has(tmp_path) -> None:
    protocol = StudyProtocol(problems=("p1",), methods=("kd", "sl"), seeds=(0, 1))
    folder = tmp_path / "study"
    folder.mkdir()
    # seed 0: sl better; seed 1 (kd only) a very good kd value that would flip the means
    for m, s, best in (("kd", 0, 2.0), ("sl", 0, 1.0), ("kd", 1, -10.0)):
        (folder / f"p1__{m}__seed{s}.json").write_text(json.dumps(_fake_result("p1", m, s, best)))
    md = write_study_report(folder, tmp_path / "results.md", protocol)
    summary = json.loads((folder / "summary.json").read_text())
    methods = summary["problems"]["p1"]["methods"]
    assert methods["kd"]["mean"] == pytest.approx(-4.0) and methods["kd"]["n_seeds"] == 2
    assert summary["rank_seeds"] == {"p1": [0]}
    assert (methods["sl"]["rank"], methods["kd"]["rank"]) == (1, 2)
    assert summary["average_rank"] == {"kd": 2.0, "sl": 1.0}
    assert "Seeds ranked: p1: 0." in md.read_text()


def test_variants_pair_with_the_default_they_were_screened_against(tmp_path) -> None:
    protocol = StudyProtocol(problems=("p1",), methods=("kd", "sl"), seeds=(0, 1))
    folder = tmp_path / "study"
    folder.mkdir()
    for s in protocol.seeds:  # today's default (kd rows) has seed 0 only
        (folder / f"p1__sl__seed{s}.json").write_text(json.dumps(_fake_result("p1", "sl", s, 5.0)))
    (folder / "p1__kd__seed0.json").write_text(json.dumps(_fake_result("p1", "kd", 0, -100.0)))
    for name, bests in (("preq_fixed", (1.0, 2.0)), ("mll", (0.0, 3.0))):
        (folder / name).mkdir()
        for s, best in zip(protocol.seeds, bests, strict=True):
            run = _fake_result("p1", "kd", s, best)
            (folder / name / f"p1__kd__seed{s}.json").write_text(json.dumps(run))
    md = write_study_report(folder, tmp_path / "results.md", protocol)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["variant_reference"] == "preq_fixed"
    # mll against preq_fixed on both seeds (0 < 1 wins, 3 > 2 loses; minimize), not against
    # the kd rows' -100 on seed 0
    pair = summary["variants"]["mll"]["problems"]["p1"]
    assert (pair["n"], pair["wins"], pair["losses"]) == (2, 1, 1)
    assert summary["variants"]["mll"]["values"]["p1"]["kd_mean"] == pytest.approx(1.5)
    assert summary["variants"]["preq_fixed"]["problems"] == {}  # not paired with itself
    assert summary["variants"]["preq_fixed"]["vs_ax_default"] == {}  # no ax_default rows
    assert summary["paired"]["p1"]["sl"]["n"] == 1  # the study's own table uses the kd rows
    text = md.read_text()
    assert "paired by seed with `preq_fixed`" in text and "(preq_fixed 1.500)" in text
    # without a preq_fixed variant, the variants pair with the kd rows
    summary = study_summary(
        [_fake_result("p1", "kd", 0, 0.5)], {"mll": [_fake_result("p1", "kd", 0, 0.0)]}, protocol
    )
    assert summary["variant_reference"] == "kd"
    assert summary["variants"]["mll"]["problems"]["p1"]["wins"] == 1


def test_the_protocol_says_which_runs_predate_the_stock_baseline(tmp_path) -> None:
    protocol = StudyProtocol(problems=("p1",), methods=("ax_default", "sl"), seeds=(0,))
    folder = tmp_path / "study"
    folder.mkdir()
    runs = {m: _fake_result("p1", m, 0, 1.0) for m in protocol.methods}
    for m, run in runs.items():
        (folder / f"p1__{m}__seed0.json").write_text(json.dumps(run))
    text = write_study_report(folder, tmp_path / "results.md", protocol).read_text()
    assert "- No run records a code commit: they predate the stock baseline" in text
    runs["ax_default"]["code"] = {"commit": "0" * 40, "dirty": False}
    (folder / "p1__ax_default__seed0.json").write_text(json.dumps(runs["ax_default"]))
    text = write_study_report(folder, tmp_path / "results.md", protocol).read_text()
    assert "- 1 of the 2 runs record no code commit: those predate the stock baseline" in text
    runs["sl"]["code"] = {"commit": "0" * 40, "dirty": False}
    (folder / "p1__sl__seed0.json").write_text(json.dumps(runs["sl"]))
    text = write_study_report(folder, tmp_path / "results.md", protocol).read_text()
    assert "stock baseline" not in text


def test_a_run_from_an_installed_package_does_not_predate_the_stock_baseline(tmp_path) -> None:
    """Issue 50 item 5: ``code: None`` (recorded, no git checkout) is not "no code entry"."""
    protocol = StudyProtocol(problems=("p1",), methods=("ax_default", "sl"), seeds=(0,))
    folder = tmp_path / "study"
    folder.mkdir()
    for m in protocol.methods:
        run = {**_fake_result("p1", m, 0, 1.0), "code": None}  # an installed wheel's run
        (folder / f"p1__{m}__seed0.json").write_text(json.dumps(run))
    text = write_study_report(folder, tmp_path / "results.md", protocol).read_text()
    assert "stock baseline" not in text
