"""Prompt templates: packaged, fully substituted, ablation toggles, no raw data."""

from __future__ import annotations

import dataclasses
import re
from importlib import resources

import pytest

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.llm import templates as T
from ax_kernel_discovery.llm.parsing import FormulaBlock, extract_code_block
from ax_kernel_discovery.population import MemberSummary


def _members() -> list[MemberSummary]:
    scores = [0.41, 0.39, None, 0.5, 0.45]
    return [
        MemberSummary(n, f, "base", s, KernelCandidate(name=n, formula=f, spec={"kernel": n}))
        for (n, f), s in zip(T.seed_formulas().items(), scores, strict=True)
    ]


def _all_messages() -> list[list[dict[str, str]]]:
    members = _members()
    return [
        T.discovery_messages(members, 60, 3),
        T.composition_messages(members, 60),
        T.conversion_messages(FormulaBlock(name="K", formula="k(x, x') = exp(-r)"), 60),
        T.direct_messages(members, 60, 2),
        T.repair_messages("class K(Kernel): pass", "shape: (3, 7) != (3, 3)", formula="k", dim=60),
    ]


def test_prompts_are_packaged_files() -> None:
    folder = resources.files("ax_kernel_discovery.llm").joinpath("prompts")
    names = {p.name for p in folder.iterdir()}
    for stage in ("discovery", "conversion", "composition", "direct", "repair", "seed_formulas"):
        assert f"{stage}.txt" in names


@pytest.mark.parametrize("index", range(5))
def test_templates_fully_substituted(index: int) -> None:
    messages = _all_messages()[index]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert not re.search(r"\$\{?[a-z_]+", messages[1]["content"])


def test_discovery_ranks_population_and_shows_scores() -> None:
    text = T.discovery_messages(_members(), 60, 3)[1]["content"]
    order = [text.index(f"{n} (") for n in ("Matern52", "RBF", "SL", "BOCK", "RQ")]
    assert order == sorted(order)  # best (lowest LOO-CRPS) first, unscored last
    assert "LOO-CRPS 0.39" in text and "not scored yet" in text
    for label in (
        "KERNEL:",
        "PARAMETERS:",
        "INPUT TRANSFORM:",
        "COVARIANCE FUNCTION:",
        "PSD GUARANTEE:",
    ):
        assert label in text
    assert "D = 60" in text and "exactly 3" in text


@pytest.mark.parametrize(
    ("criterion", "label", "phrase"),
    [
        ("lbo_crps", "LBO-CRPS 0.39", "latest BO batches"),
        ("loo_crps", "LOO-CRPS 0.39", "leave-one-out CRPS"),
        ("mll", "-MLL/n 0.39", "log marginal likelihood"),
    ],
)
def test_prompts_name_the_members_criterion(criterion: str, label: str, phrase: str) -> None:
    members = [dataclasses.replace(m, criterion=criterion) for m in _members()]
    prompts = [
        T.discovery_messages(members, 60, 3),
        T.composition_messages(members, 60),
        T.direct_messages(members, 60, 2),
        T.expression_messages(
            members,
            60,
            2,
            leaves=["rbf"],
            warps=["tanh"],
            isotropic=["rbf"],
            max_depth=3,
            max_leaves=4,
            max_args=2,
        ),
    ]
    for messages in prompts:
        text = messages[1]["content"]
        assert label in text and phrase in text
        others = {w[0] for c, w in T.CRITERION_WORDING.items() if c != criterion}
        assert not any(f"{o} 0." in text for o in others - {label.split()[0]})


HDBO, PSD, SIMPLE = "High-dimensional Bayesian", "Bochner", "Simplicity guidance"


def test_guidance_toggles() -> None:
    members = _members()
    full = T.discovery_messages(members, 60, 3)[1]["content"]
    assert HDBO in full and PSD in full and SIMPLE in full
    off = T.PromptOptions(hdbo_guidance=False, psd_guidance=False, simplicity_guidance=False)
    bare = T.discovery_messages(members, 60, 3, off)[1]["content"]
    assert HDBO not in bare and PSD not in bare and SIMPLE not in bare
    assert "\n\n\n" not in bare
    no_psd = T.discovery_messages(members, 60, 3, T.PromptOptions(psd_guidance=False))[1]["content"]
    assert HDBO in no_psd and PSD not in no_psd
    comp = T.composition_messages(members, 60, T.PromptOptions(psd_guidance=False))[1]["content"]
    assert PSD not in comp and "PARENTS:" in comp


def test_conversion_rules_and_example() -> None:
    text = T.conversion_messages("k(x, x') = exp(-||x - x'||_1)", 20)[1]["content"]
    for rule in ("ard_num_dims", "torch.cdist", ".item()", "register_constraint", "Positive()"):
        assert rule in text
    assert text.rstrip().endswith("with the imports and the class NewKernel.")
    assert text.index("Example") < text.index("exp(-||x - x'||_1)")  # fixed prefix first
    bare = T.conversion_messages("k = 1", 20, T.PromptOptions(conversion_example=False))
    assert "WarpedRationalQuadratic" not in bare[1]["content"]


def test_worked_example_code_is_a_valid_kernel() -> None:
    import torch

    code = extract_code_block(T.load_prompt("conversion_example")).code
    namespace: dict[str, object] = {}
    exec(compile(code, "example", "exec"), namespace)  # trusted packaged file
    kernel = namespace["WarpedRationalQuadratic"](ard_num_dims=4).double()  # type: ignore[operator]
    x = torch.rand(6, 4, dtype=torch.float64)
    gram = kernel(x, x).to_dense()
    assert torch.linalg.eigvalsh(gram).min() > -1e-9
    assert T.copies_example(code) and not T.copies_example(code.replace("2.0 * alpha", "alpha"))


def test_population_formula_only() -> None:
    text = T.format_population(_members(), max_members=2)
    assert text.count("\n") == 1 and text.startswith("1. Matern52")
    assert T.format_population([]) == "(empty population)"


def test_seed_formulas() -> None:
    assert list(T.seed_formulas()) == ["RBF", "Matern52", "RQ", "BOCK", "SL"]
