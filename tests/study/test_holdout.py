"""The hold-out study's summary: the rule that picks kd's default on tuning seeds, and the
confirmation table and target (issue 31)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ax_kernel_discovery.baselines.methods import method_kd_config
from ax_kernel_discovery.study.holdout import (
    CHANCE_DRAWS,
    README_END,
    README_START,
    ROUND_1,
    all_confirmations,
    holdout_markdown,
    holdout_summary,
    readme_block,
    readme_table,
    target_chance,
    write_readme_table,
)
from ax_kernel_discovery.study.protocol import (
    CONFIRMATION_SEEDS,
    HOLDOUT_ROUNDS,
    TUNING_SEEDS,
    HoldoutRound,
)

PROBLEMS = {
    "rover100": "maximize",
    "hartmann6_100": "minimize",
    "lasso_dna": "minimize",
    "svm": "minimize",
}


def _write(
    folder: Path,
    problem: str,
    method: str,
    seed: int,
    best: float,
    kd: dict | None = None,
    round_seconds: float | None = None,
    resolved: dict | None = None,
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record: dict = {
        "status": "complete",
        "problem": problem,
        "method": method,
        "seed": seed,
        "direction": PROBLEMS[problem],
        "best_value": best,
        "best_so_far": [best],
        "config": {"kd_config": kd},
    }
    if resolved is not None:  # the settings the run's surrogate resolved, as the runner writes
        record["resolved_kd_config"] = resolved
    if round_seconds is not None:  # a run's own phase timings, as the runner writes them
        per_round = {"fit": 0.25 * round_seconds, "acquisition": 0.75 * round_seconds}
        record["timings"] = {"mean_per_bo_round": per_round, "bo_rounds": 10}
    (folder / f"{problem}__{method}__seed{seed}.json").write_text(json.dumps(record))


def _better(problem: str, value: float, by: float) -> float:
    """``value`` moved ``by`` in the problem's better direction."""
    return value + by if PROBLEMS[problem] == "maximize" else value - by


def _round(**changes: object) -> HoldoutRound:
    return ROUND_1.model_copy(update=changes)


def test_the_rule_ranks_variants_by_problems_ahead_then_mean_z(tmp_path: Path) -> None:
    round_ = _round(candidates=("steady", "bold"))
    tuning = tmp_path / "tuning"
    for p in PROBLEMS:
        for s in TUNING_SEEDS:
            # timed rounds on rover100 only (a run without timings has no cost to show)
            timed = p == "rover100"
            ax_seconds, kd_seconds = (4.0, 10.0 + s) if timed else (None, None)
            _write(tuning, p, "ax_default", s, 1.0 + 0.1 * s, None, ax_seconds)  # sd ~ 0.30
            # "steady": ahead on both tuning problems by 0.03; "bold": far ahead on rover100,
            # behind on svm (and far ahead on the problems the rule does not look at)
            steady_best = _better(p, 1.0 + 0.1 * s, 0.03)
            _write(tuning / "steady", p, "kd", s, steady_best, {}, kd_seconds)
            gap = -0.02 if p == "svm" else 0.5
            _write(tuning / "bold", p, "kd", s, _better(p, 1.0 + 0.1 * s, gap), {"x": 1})
            if p == "rover100" or s < 5:  # svm on half the seeds only: not eligible
                _write(tuning / "dropped", p, "kd", s, _better(p, 1.0 + 0.1 * s, 9.0), {"y": 2})
    tuning_summary = holdout_summary(tmp_path, round_)["tuning"]
    steady, bold = tuning_summary["variants"]["steady"], tuning_summary["variants"]["bold"]
    assert steady["ahead_on"] == 2 and bold["ahead_on"] == 1
    assert bold["mean_z"] > steady["mean_z"] > 0  # bold's mean z is larger, but it is behind once
    assert tuning_summary["ranked"] == ["steady", "bold"]
    assert tuning_summary["chosen"] == "steady"
    assert tuning_summary["variants"]["dropped"]["complete_on"] == ["rover100"]  # not svm
    section = "\n".join(holdout_markdown(holdout_summary(tmp_path, round_), tmp_path, round_))
    assert "| bold | hartmann6_100 | 10 | 10/0/0 |" in section  # reported, far ahead there...
    # the round cost: the mean over seeds of each run's seconds per BO round, kd / ax_default
    assert steady["problems"]["rover100"]["round_seconds"] == pytest.approx(
        {"kd": 14.5, "ax_default": 4.0}
    )
    rows = [line for line in section.splitlines() if line.startswith(("| steady", "| bold"))]
    for row in rows:
        if row.startswith("| steady | rover100 |"):
            assert row.endswith("| 14.5 / 4.0 |")
        elif "| rover100 |" in row:  # bold's kd runs are not timed, ax_default's are
            assert row.endswith("| – / 4.0 |")
        else:
            assert row.endswith("| – / – |")
    assert '- `bold` (`{"x": 1}`): of the rule\'s problems, complete on rover100, svm;' in section
    assert (  # ...and said not to count
        "The rows on hartmann6_100, lasso_dna (amendment 3: run after the confirmation, "
        "reported only) do not enter the rule." in section
    )
    assert "Reported only (amendment 2: they did not enter the decision): dropped." in section
    assert "By the rule: **steady** (ranking: steady, bold)." in section
    only_bold = _round(candidates=("bold",))  # amendment 2's kind of list
    assert holdout_summary(tmp_path, only_bold)["tuning"]["chosen"] == "bold"
    # a candidate not yet complete on the rule's problems: the rule waits for it
    waits = holdout_summary(tmp_path, _round(candidates=("steady", "bold", "dropped")))
    assert waits["tuning"]["chosen"] is None and waits["tuning"]["waiting"] == ["dropped"]
    assert waits["tuning"]["ranked"] == ["steady", "bold"]
    svm = steady["problems"]["svm"]
    assert (svm["wins"], svm["ties"], svm["losses"]) == (10, 0, 0)
    assert svm["mean_diff"] == pytest.approx(0.03)
    assert svm["z"] == pytest.approx(0.03 / svm_sd(), rel=1e-9)


def svm_sd() -> float:
    import numpy as np

    return float(np.std([1.0 + 0.1 * s for s in TUNING_SEEDS], ddof=1))


def test_the_confirmation_table_and_the_target(tmp_path: Path) -> None:
    root = tmp_path / "holdout"  # round 1's folder under the folder of the rounds' folders
    conf = root / "confirmation"
    for k, p in enumerate(PROBLEMS):
        for i, s in enumerate(CONFIRMATION_SEEDS):
            base = 2.0 + 0.01 * i
            _write(conf, p, "ax_default", s, base)
            _write(conf, p, "bock", s, _better(p, base, 0.2 if k == 0 else -0.2))
            # kd ahead of ax_default on 13 of 15 seeds everywhere; behind BOCK on rover100
            _write(conf, p, "kd", s, _better(p, base, 0.1 if i < 13 else -0.05), {}, 8.0 + i)
    summary = holdout_summary(root)
    # the runs' own round times: kd's mean over its seeds, none recorded for the others
    secs = summary["confirmation"]["problems"]["svm"]["round_seconds"]
    assert secs == {"kd": pytest.approx(15.0), "ax_default": None, "bock": None}
    assert "| 15.0 / – / – |" in "\n".join(holdout_markdown(summary, root))
    target = summary["confirmation"]["target"]
    assert target["complete"]
    assert target["mean_at_least_ax_default"] == 4
    assert target["beats_ax_default_sign_p"] == 4  # 13/15: sign p = 0.0074
    assert target["mean_at_least_bock"] == 3
    assert target["met"]
    table = readme_table(summary)
    assert "| rover100 | 13/0/2 |" in table and "0.007 /" in table
    assert "the protocol's target is met" in table
    # where kd is not ahead is said plainly, even when the target is met
    assert "Where kd is not ahead of Ax's default" not in table
    assert "Where kd is not ahead of BOCK: its mean is behind on rover100 (0/0/15" in table
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_START}\nold\n{README_END}\nrest\n")
    assert write_readme_table(readme, tmp_path)
    text = readme.read_text()
    block = readme_block(tmp_path)
    assert "\nold\n" not in text and block in text and text.endswith(f"{README_END}\nrest\n")
    assert "- Round 1 ([protocol](benchmarks/results/holdout/PROTOCOL.md);" in text
    assert "- Round 2 (" not in text  # no confirmation run of round 2 yet
    assert "the protocols' target was met in round 1." in text
    assert not write_readme_table(readme, tmp_path)  # unchanged the second time


def test_the_readme_shows_every_confirmation_round_pooled_with_holm(tmp_path: Path) -> None:
    """Issue 50 item 1: every confirmation round is shown, pooled per kd configuration and
    listed per round, with raw and Holm-adjusted sign p; a round under way is listed and not
    pooled; never only the latest or the best round."""
    round_2 = HOLDOUT_ROUNDS[1]
    for folder, seeds, gap in (
        ("holdout", CONFIRMATION_SEEDS, 0.1),  # round 1: kd ahead on every seed
        ("holdout2", round_2.confirmation_seeds, -0.1),  # round 2: kd behind on every seed
    ):
        conf = tmp_path / folder / "confirmation"
        for p in PROBLEMS:
            for i, s in enumerate(seeds):
                _write(conf, p, "ax_default", s, 2.0 + 0.01 * i)
                _write(conf, p, "bock", s, 2.0 + 0.01 * i)
                _write(conf, p, "kd", s, _better(p, 2.0 + 0.01 * i, gap), {})
    last = tmp_path / "holdout2" / "confirmation" / f"svm__kd__seed{round_2.confirmation_seeds[-1]}"
    Path(f"{last}.json").unlink()  # round 2 one run short: under way
    every = all_confirmations(tmp_path)
    assert [r["name"] for r in every["rounds"]] == ["round 1", "round 2"]
    assert [r["complete"] for r in every["rounds"]] == [True, False]
    # 4 problems x 2 rounds x 2 baselines, each with a sign test
    assert every["tests_per_round"] == 16
    # Holm over 16 tests: 15 of them at p = 2 / 2^15 and one (svm, 0/0/14) at 2 / 2^14
    first = every["rounds"][0]["problems"]["rover100"]["ax_default"]
    assert first["p_sign"] == pytest.approx(2 / 2**15)
    assert first["p_holm"] == pytest.approx(16 * 2 / 2**15)
    svm_2 = every["rounds"][1]["problems"]["svm"]["ax_default"]
    assert (svm_2["losses"], svm_2["p_holm"]) == (14, pytest.approx(min(1.0, 16 * 2 / 2**15)))
    # only the complete round is pooled
    (pooled,) = every["pooled"].values()
    assert pooled["rounds"] == ["round 1"] and pooled["seeds"] == 15
    assert every["tests_pooled"] == 8  # 4 problems x 1 configuration x 2 baselines
    block = readme_block(tmp_path)
    assert "| rover100 | `None`, round 1 (15) | 15/0/0 |" not in block  # a name, not None
    assert "| rover100 | `kd`, round 1 (15) | 15/0/0 |" in block
    assert "(under way: not pooled): vs Ax's default: rover100 0/0/15" in block
    assert "- Round 1 ([protocol](benchmarks/results/holdout/PROTOCOL.md); `kd`" in block
    closed = [r for r in HOLDOUT_ROUNDS if r.closed]
    assert closed and all(
        f"{r.name.capitalize()} ([protocol]({r.out}/PROTOCOL.md)) ended without a "
        f"confirmation: {r.closed}" in block
        for r in closed
    )
    assert "1 confirmation round is complete and 1 under way" in block
    # round 2 complete (a failed run counts as made): both pooled, 30 seeds, kd level
    Path(f"{last}.error.txt").write_text("Traceback ...\nRuntimeError: killed\n")
    every = all_confirmations(tmp_path)
    (pooled,) = every["pooled"].values()
    assert pooled["rounds"] == ["round 1", "round 2"] and pooled["seeds"] == 30
    rover = pooled["problems"]["rover100"]["ax_default"]
    assert (rover["wins"], rover["ties"], rover["losses"]) == (15, 0, 15)
    assert rover["p_sign"] == pytest.approx(1.0) and rover["p_holm"] == pytest.approx(1.0)
    block = readme_block(tmp_path)
    assert "| rover100 | `kd`, round 1, round 2 (30) | 15/0/15 |" in block
    assert "the protocols' target was met in round 1." in block
    assert "`kd` against Ax's default (ahead: Holm-adjusted sign p <= 0.05): ahead nowhere" in block


def test_the_readme_says_whether_its_kd_is_todays_default(tmp_path: Path) -> None:
    """A round's kd runs record the settings they resolved to: the README marks the rounds,
    and the pooled rows, that ran today's default (a run's seed and device,
    and settings added after it ran, are not compared)."""
    round_2 = HOLDOUT_ROUNDS[1]
    today = method_kd_config("kd").model_dump(mode="json")
    earlier = {**today, "fit_maxiter": 50}
    for folder, seeds, resolved in (
        ("holdout", CONFIRMATION_SEEDS, earlier),
        ("holdout2", round_2.confirmation_seeds[:3], today),
    ):
        conf = tmp_path / folder / "confirmation"
        for p in PROBLEMS:
            for s in seeds:
                for m in ("ax_default", "bock", "kd"):
                    own = {**resolved, "seed": s, "device": "cuda"} if m == "kd" else None
                    _write(conf, p, m, s, 1.0, {} if m == "kd" else None, resolved=own)
    block = readme_block(tmp_path)
    assert "| svm | `kd`, round 1 (15) |" in block  # not today's default: no mark
    assert "No confirmed configuration is today's default" in block
    assert "- Round 1 ([protocol](benchmarks/results/holdout/PROTOCOL.md); `kd`, seeds" in block
    assert "`kd` (today's default), seeds 2000-2014) (under way: not pooled)" in block
    # a run that predates a setting does not record it; round 1 now ran today's settings
    for f in (tmp_path / "holdout" / "confirmation").glob("*__kd__*.json"):
        run = json.loads(f.read_text())
        run["resolved_kd_config"] = {
            k: v for k, v in today.items() if k not in ("fit_maxiter", "history_limit")
        }
        f.write_text(json.dumps(run))
    block = readme_block(tmp_path)
    assert "| svm | `kd` (today's default), round 1 (15) |" in block
    assert "No confirmed configuration is today's default" not in block
    # round 2 under way with a default that has changed since it started
    for f in (tmp_path / "holdout2" / "confirmation").glob("*__kd__*.json"):
        run = json.loads(f.read_text())
        run["resolved_kd_config"] = earlier
        f.write_text(json.dumps(run))
    assert "`kd`, seeds 2000-2014) (under way: not pooled)" in readme_block(tmp_path)
    f = next((tmp_path / "holdout" / "confirmation").glob("*__kd__*.json"))
    run = json.loads(f.read_text())
    # a run resolved to a setting today's configuration no longer has: not today's
    run["resolved_kd_config"]["retired_setting"] = 1
    f.write_text(json.dumps(run))
    assert "| svm | `kd`, round 1 (15) |" in readme_block(tmp_path)


def test_an_incomplete_confirmation_makes_no_claim(tmp_path: Path) -> None:
    conf = tmp_path / "confirmation"
    _write(conf, "svm", "ax_default", CONFIRMATION_SEEDS[0], 1.0)
    table = readme_table(holdout_summary(tmp_path))
    assert "| svm | no pair yet |" in table
    assert (
        "not complete yet (kd/ax_default/bock made, of 15 each: rover100 0/0/0; "
        "hartmann6_100 0/0/0; lasso_dna 0/0/0; svm 0/1/0): no claim is made." in table
    )
    assert "Where kd is not ahead" not in table  # no pair, nothing to say


def test_complete_problems_that_already_miss_the_target_are_said(tmp_path: Path) -> None:
    """An incomplete confirmation makes no claim, but says when its complete problems
    already rule the target out (kd behind on the mean on one of them, or too few problems
    left to reach the counts)."""
    conf = tmp_path / "confirmation"
    for i, s in enumerate(CONFIRMATION_SEEDS):
        base = 2.0 + 0.01 * i
        for p, gap in (("hartmann6_100", 0.1), ("rover100", 0.1 if i < 9 else -0.5)):
            _write(conf, p, "ax_default", s, base)
            _write(conf, p, "bock", s, base)
            _write(conf, p, "kd", s, _better(p, base, gap), {})
    summary = holdout_summary(tmp_path)
    target = summary["confirmation"]["target"]
    assert not target["complete"] and "met" not in target
    assert target["missed"] == ["kd's mean is behind Ax's default's on rover100"]
    table = readme_table(summary)
    assert "no claim is made" in table
    assert (
        "already decide that the protocol's target cannot be met: kd's mean is behind Ax's "
        "default's on rover100. The remaining runs are made and reported as they come out." in table
    )
    # kd ahead with sign p <= 0.05 on hartmann6_100 only; with lasso_dna level, one problem
    # is left for the two more that the target needs
    for s in CONFIRMATION_SEEDS:
        for m in ("ax_default", "bock", "kd"):
            _write(conf, "lasso_dna", m, s, 0.3, {} if m == "kd" else None)
    missed = holdout_summary(tmp_path)["confirmation"]["target"]["missed"]
    assert missed[1:] == [
        "kd beats Ax's default with sign p <= 0.05 on 1 of 3 complete problems, with 1 still to come"
    ]
    # nothing is decided while every complete problem could still be part of a met target
    for p in ("rover100", "lasso_dna"):
        for f in conf.glob(f"{p}__*.json"):
            f.unlink()
    assert holdout_summary(tmp_path)["confirmation"]["target"]["missed"] == []
    assert "cannot be met" not in readme_table(holdout_summary(tmp_path))


def test_where_kd_is_not_ahead_is_said_plainly(tmp_path: Path) -> None:
    conf = tmp_path / "confirmation"
    for i, s in enumerate(CONFIRMATION_SEEDS[:8]):
        base = 2.0 + 0.01 * i
        for p, loss in (("svm", -0.05), ("rover100", -0.3)):
            _write(conf, p, "ax_default", s, base)
            _write(conf, p, "bock", s, _better(p, base, -0.5))  # kd beats bock on every seed
            # 5 wins of 0.1, 3 losses: svm ahead on the mean, rover100 behind on it
            _write(conf, p, "kd", s, _better(p, base, 0.1 if i < 5 else loss), {})
    table = readme_table(holdout_summary(tmp_path))
    assert (
        "Where kd is not ahead of Ax's default so far: its mean is behind on rover100 "
        "(5/0/3, sign p 0.727); it is ahead on the mean without a sign p <= 0.05 on svm "
        "(5/0/3, sign p 0.727)." in table
    )
    assert "not ahead of BOCK" not in table  # 8/0/0, sign p 0.008
    for s in CONFIRMATION_SEEDS[:8]:  # lasso_dna: every pair tied, so no sign test
        for m in ("ax_default", "kd"):
            _write(conf, "lasso_dna", m, s, 0.3, {} if m == "kd" else None)
    table = readme_table(holdout_summary(tmp_path))
    # no bock run yet: its three cells are empty, the row keeps the table's seven columns
    assert "| lasso_dna | 0/8/0 | 0.00 [0.00, 0.00] | – / – | – | – | – |" in table
    assert "its mean is level on lasso_dna (0/8/0, sign p –)" in table


def test_a_tie_in_the_rule_goes_to_the_simpler_variant(tmp_path: Path) -> None:
    # "a_two" sorts first by name but changes two settings; "z_none" changes none
    round_ = _round(candidates=("a_two", "z_none"))
    tuning = tmp_path / "tuning"
    for p in ("rover100", "svm"):
        for s in TUNING_SEEDS:
            _write(tuning, p, "ax_default", s, 1.0 + 0.1 * s)
            for name, kd in (("a_two", {"x": 1, "y": 2}), ("z_none", {})):
                _write(tuning / name, p, "kd", s, _better(p, 1.0 + 0.1 * s, 0.05), kd)
    summary = holdout_summary(tmp_path, round_)["tuning"]
    assert summary["variants"]["a_two"]["mean_z"] == summary["variants"]["z_none"]["mean_z"]
    assert summary["chosen"] == "z_none"


def test_a_failed_run_is_reported_and_the_others_are_paired(tmp_path: Path) -> None:
    conf = tmp_path / "confirmation"
    for p in PROBLEMS:
        for i, s in enumerate(CONFIRMATION_SEEDS):
            base = 2.0 + 0.01 * i
            _write(conf, p, "ax_default", s, base)
            _write(conf, p, "kd", s, _better(p, base, 0.1), {})
            if (p, i) == ("rover100", 12):  # bock's fit failed: a traceback, no result
                (conf / f"{p}__bock__seed{s}.error.txt").write_text(
                    "Traceback (most recent call last):\n  ...\n"
                    "botorch.exceptions.errors.ModelFittingError: All attempts failed.\n"
                )
            else:
                _write(conf, p, "bock", s, base)
    summary = holdout_summary(tmp_path)
    rover = summary["confirmation"]["problems"]["rover100"]
    failed_seed = CONFIRMATION_SEEDS[12]
    assert rover["failed"] == {
        "bock": {failed_seed: "botorch.exceptions.errors.ModelFittingError: All attempts failed."}
    }
    assert rover["vs_bock"]["n"] == 14 and rover["vs_ax_default"]["n"] == 15
    assert summary["confirmation"]["target"]["complete"]  # a failure is a run that was made
    table = readme_table(summary)
    assert f"The bock run of rover100 seed {failed_seed} failed (botorch" in table
    assert "the protocol's target is met" in table
    # without the traceback the run is simply missing: no claim is made
    (conf / f"rover100__bock__seed{failed_seed}.error.txt").unlink()
    assert not holdout_summary(tmp_path)["confirmation"]["target"]["complete"]


def test_a_later_round_reuses_an_earlier_rounds_tuning_runs(tmp_path: Path) -> None:
    """Round 2 reads its own tuning runs and an earlier round's (the baseline, its
    candidates' runs), decides on all four problems once every candidate is complete, and
    has no confirmation run before its decision."""
    round_2 = HOLDOUT_ROUNDS[1]
    assert round_2.reused_tuning == ("../holdout/tuning",)
    old, new = tmp_path / "holdout" / "tuning", tmp_path / "holdout2" / "tuning"
    for p in PROBLEMS:
        for s in TUNING_SEEDS:
            base = 1.0 + 0.1 * s
            _write(old, p, "ax_default", s, base)  # round 1's stock runs: the baseline
            _write(old / "preq_fixed", p, "kd", s, _better(p, base, 0.01), {})
            _write(old / "hedge2_bock", p, "kd", s, _better(p, base, 0.5), {"b": 1})
            if p in ("rover100", "svm"):  # hedge3: round 1 ran these two, round 2 the others
                _write(old / "hedge3", p, "kd", s, _better(p, base, 0.02), {"h": 3})
            else:
                _write(new / "hedge3", p, "kd", s, _better(p, base, -0.01), {"h": 3})
            _write(
                new / "notie", p, "kd", s, _better(p, base, 0.05 if p != "svm" else -0.1), {"n": 1}
            )
    root = tmp_path / "holdout2"
    summary = holdout_summary(root, round_2)
    tuning = summary["tuning"]
    assert set(tuning["variants"]) == {"preq_fixed", "hedge3", "notie"}  # not hedge2_bock
    hedge3 = tuning["variants"]["hedge3"]
    assert hedge3["complete_on"] == list(PROBLEMS) and hedge3["ahead_on"] == 2
    assert tuning["variants"]["notie"]["ahead_on"] == 3
    assert tuning["variants"]["preq_fixed"]["ahead_on"] == 4
    assert tuning["waiting"] == [] and tuning["chosen"] == "preq_fixed"
    assert tuning["ranked"] == ["preq_fixed", "notie", "hedge3"]
    section = "\n".join(holdout_markdown(summary, "holdout2", round_2))
    assert section.startswith("## The hold-out study, round 2: seeds nobody tuned on")
    assert "confirmation seeds 2000-2014" in section
    assert "No confirmation run yet" in section and "| problem | kd vs" not in section
    assert (
        '- `hedge3` (`{"h": 3}`): complete on rover100, hartmann6_100, lasso_dna, svm;' in section
    )
    # one candidate short of a seed on one problem: the rule waits for it
    (new / "notie" / "svm__kd__seed9.json").unlink()
    tuning = holdout_summary(root, round_2)["tuning"]
    assert tuning["chosen"] is None and tuning["waiting"] == ["notie"]
    assert "The rule has not chosen: it waits for notie to be complete on" in "\n".join(
        holdout_markdown(holdout_summary(root, round_2), "holdout2", round_2)
    )


def test_a_candidate_dropped_early_is_reported_and_not_waited_for(tmp_path: Path) -> None:
    """The early-drop rule: a dropped candidate, complete on two problems only, is in the
    table and named as dropped; the rule chooses among the others without waiting for it
    (and would not choose it, though it is ahead where it ran)."""
    round_ = _round(candidates=("base", "gone"), dropped=("gone",))
    tuning = tmp_path / "tuning"
    for p in ("rover100", "svm"):
        for s in TUNING_SEEDS:
            _write(tuning, p, "ax_default", s, 1.0 + 0.1 * s)
            _write(tuning / "base", p, "kd", s, _better(p, 1.0 + 0.1 * s, 0.01), {})
            if p == "rover100":
                _write(tuning / "gone", p, "kd", s, _better(p, 1.0 + 0.1 * s, 0.5), {"g": 1})
    summary = holdout_summary(tmp_path, round_)
    assert summary["tuning"]["waiting"] == [] and summary["tuning"]["chosen"] == "base"
    section = "\n".join(holdout_markdown(summary, "holdout", round_))
    assert "| gone | rover100 | 10 | 10/0/0 |" in section
    assert "Dropped by the protocol's early-drop rule (reported, not ranked): gone." in section
    assert "By the rule: **base** (ranking: base)." in section
    # without the drop, the rule waits for it
    waiting = holdout_summary(tmp_path, _round(candidates=("base", "gone")))["tuning"]
    assert waiting["chosen"] is None and waiting["waiting"] == ["gone"]


def test_a_candidate_that_can_no_longer_rank_first_is_not_waited_for(tmp_path: Path) -> None:
    """Round 3's amendment 3: a candidate behind in the mean on the problem it is complete
    on can reach at most one problem ahead, the leader has two, so the rule chooses; one
    that could still tie the leader's count (the mean z would decide) is waited for."""
    round_ = _round(candidates=("base", "behind", "close"))
    tuning = tmp_path / "tuning"
    for p in ("rover100", "svm"):
        for s in TUNING_SEEDS:
            base = 1.0 + 0.1 * s
            _write(tuning, p, "ax_default", s, base)
            _write(tuning / "base", p, "kd", s, _better(p, base, 0.01), {})
            if p == "rover100":  # neither has run svm yet
                _write(tuning / "behind", p, "kd", s, _better(p, base, -0.01), {"b": 1})
                _write(tuning / "close", p, "kd", s, _better(p, base, 0.001), {"c": 1})
    summary = holdout_summary(tmp_path, round_)
    tuning_summary = summary["tuning"]
    assert tuning_summary["out_of_reach"] == ["behind"]
    assert tuning_summary["waiting"] == ["close"] and tuning_summary["chosen"] is None
    section = "\n".join(holdout_markdown(summary, "holdout", round_))
    assert "can no longer rank first whatever their missing runs give: behind." in section
    assert "The rule has not chosen: it waits for close to be complete on" in section
    # without "close", the rule chooses now, and would choose the same after "behind"'s runs
    tuning_summary = holdout_summary(tmp_path, _round(candidates=("base", "behind")))["tuning"]
    assert tuning_summary["waiting"] == [] and tuning_summary["chosen"] == "base"
    for s in TUNING_SEEDS:  # the best "behind"'s svm runs could give
        _write(tuning / "behind", "svm", "kd", s, _better("svm", 1.0 + 0.1 * s, 9.0), {"b": 1})
    after = holdout_summary(tmp_path, _round(candidates=("base", "behind")))["tuning"]
    assert after["out_of_reach"] == [] and after["chosen"] == "base"
    assert after["ranked"] == ["base", "behind"]


def test_the_chance_of_the_target_counts_level_means_and_sign_tests() -> None:
    """round 4's forecast, on differences whose answer is known."""
    ahead = [1.0] * 10
    # ahead on every seed everywhere: every simulated confirmation meets the target
    assert target_chance(dict.fromkeys("abcd", ahead)) == 1.0
    # behind on every seed on one problem: none does
    assert target_chance({"a": ahead, "b": ahead, "c": ahead, "d": [-1.0] * 10}) == 0.0
    # level (every pair tied) on two problems: only two sign tests can pass
    assert target_chance({"a": ahead, "b": ahead, "c": [0.0] * 10, "d": [0.0] * 10}) == 0.0
    # a coin on the fourth problem: 15 draws of +-1 have a mean >= 0 half of the time
    coin = target_chance({"a": ahead, "b": ahead, "c": ahead, "d": [1.0, -1.0] * 5})
    assert coin == pytest.approx(0.5, abs=4 / CHANCE_DRAWS**0.5)
    # one small loss in ten on every problem: a sign p <= 0.05 on 15 seeds takes 12 wins
    # (p 0.035; 11 wins give 0.118), P(>= 12 of 15 | 0.9) = 0.944, needed on 3 of 4
    nine = [1.0] * 9 + [-0.01]
    win = sum(math.comb(15, k) * 0.9**k * 0.1 ** (15 - k) for k in range(12, 16))
    expected = win**4 + 4 * win**3 * (1 - win)
    assert target_chance(dict.fromkeys("abcd", nine)) == pytest.approx(expected, abs=0.005)
    # the seed of the draws makes the forecast repeatable
    assert target_chance(dict.fromkeys("abcd", nine)) == target_chance(dict.fromkeys("abcd", nine))


def test_round_4s_rule_ranks_by_the_chance_of_the_target(tmp_path: Path) -> None:
    """A candidate ahead in the mean everywhere, by a little, loses to one clearly ahead on
    three problems and behind by a little on the fourth: the old rule ranks them the other
    way. Chances within CHANCE_TIE tie, and a tie goes to the fewer fields."""
    round_ = _round(
        rule="target_chance",
        rule_problems=tuple(PROBLEMS),
        candidates=("steady", "trade", "trade_twin"),
    )
    tuning = tmp_path / "tuning"
    for p in PROBLEMS:
        for s in TUNING_SEEDS:
            base = 1.0 + 0.1 * s
            _write(tuning, p, "ax_default", s, base)
            # steady: 6 wins and 4 losses of the same size everywhere (mean ahead)
            _write(tuning / "steady", p, "kd", s, _better(p, base, 0.05 if s < 6 else -0.05), {})
            # trade: every seed on three problems, and 5/0/5 slightly behind on rover100
            gap = (0.1 if s < 5 else -0.12) if p == "rover100" else 0.05
            _write(tuning / "trade", p, "kd", s, _better(p, base, gap), {"t": 1})
            _write(tuning / "trade_twin", p, "kd", s, _better(p, base, gap), {"t": 1, "u": 2})
    summary = holdout_summary(tmp_path, round_)
    tuning_summary, variants = summary["tuning"], summary["tuning"]["variants"]
    assert variants["steady"]["ahead_on"] == 4 and variants["trade"]["ahead_on"] == 3
    rover = variants["trade"]["problems"]["rover100"]
    assert rover["diffs"] == pytest.approx([0.1] * 5 + [-0.12] * 5)
    assert variants["trade"]["chance"] == target_chance(
        {p: variants["trade"]["problems"][p]["diffs"] for p in PROBLEMS}
    )
    assert 0.2 < variants["trade"]["chance"] < 0.6  # rover100's mean decides
    assert variants["steady"]["chance"] < 0.01  # 12 wins of 15 at 0.6 are rare, on 3 problems
    assert variants["trade_twin"]["chance"] == variants["trade"]["chance"]
    assert tuning_summary["ranked"] == ["trade", "trade_twin", "steady"]
    assert tuning_summary["chosen"] == "trade"
    old_rule = holdout_summary(
        tmp_path, _round(rule_problems=tuple(PROBLEMS), candidates=("steady", "trade"))
    )
    assert old_rule["tuning"]["chosen"] == "steady"
    section = "\n".join(holdout_markdown(summary, "holdout4", round_))
    assert f"estimated chance of the target {variants['trade']['chance']:.3f}." in section
    assert "By the rule: **trade** (ranking: trade, trade_twin, steady)." in section


def test_round_4_reuses_the_earlier_rounds_candidates() -> None:
    round_4 = HOLDOUT_ROUNDS[3]
    assert round_4.rule == "target_chance" and round_4.confirmation_seeds == tuple(
        range(4000, 4015)
    )
    earlier = {s for r in HOLDOUT_ROUNDS[:3] for s in r.confirmation_seeds}
    assert not earlier & set(round_4.confirmation_seeds) and not set(TUNING_SEEDS) & earlier
    folders = {Path(round_4.out).parent / Path(f).parent.name for f in round_4.reused_tuning}
    assert folders == {Path(r.out) for r in HOLDOUT_ROUNDS[:3]}
