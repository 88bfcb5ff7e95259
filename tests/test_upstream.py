"""Pins of the private Ax/BoTorch/GPyTorch behaviour kd relies on (``_upstream``).

One test per touchpoint of :mod:`ax_kernel_discovery._upstream`, named after it, so an
upgrade that changes one fails there, by name; and a scan of the package that fails
when a module outside ``_upstream`` names a private attribute of these libraries.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import math
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
import torch
from ax.adapter.base import Adapter
from ax.adapter.registry import Generators
from ax.analysis.analysis import Analysis
from ax.api import Client
from ax.core.analysis_card import AnalysisCard, AnalysisCardGroup
from ax.core.experiment import Experiment
from ax.core.generator_run import GeneratorRun
from ax.core.search_space import SearchSpaceDigest
from ax.generation_strategy.generation_node import GenerationNode
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generation_strategy.generator_spec import GeneratorSpec
from ax.generators.torch.botorch_modular.acquisition import Acquisition
from ax.generators.torch.botorch_modular.generator import BoTorchGenerator
from ax.generators.torch.botorch_modular.surrogate import Surrogate
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.acquisition.cached_cholesky import supports_cache_root
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from botorch.sampling.normal import SobolQMCNormalSampler
from botorch.utils.datasets import SupervisedDataset
from gpytorch.kernels import RBFKernel, ScaleKernel

import ax_kernel_discovery
from ax_kernel_discovery._upstream import ax as ax_up
from ax_kernel_discovery._upstream import botorch as botorch_up
from ax_kernel_discovery._upstream import gpytorch as gpytorch_up
from ax_kernel_discovery.testing import unit_box_client

UPSTREAM = ("ax", "botorch", "gpytorch")
PACKAGE = Path(ax_kernel_discovery.__file__).parent

#: Private names that torch owns (``nn.Module``, ``Tensor``, ``torch._C``): upstream code
#: uses them too, but they are no attribute of Ax, BoTorch or GPyTorch.
TORCH_NAMES = frozenset({"_parameters", "_buffers", "_modules", "_C", "_base"})

#: kd's own private attributes whose names Ax, BoTorch or GPyTorch happen to use too,
#: read on an object other than ``self`` (``module path: names``).
KD_OWN: dict[str, frozenset[str]] = {}


def _data(n: int = 8, d: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(n, d, generator=g, dtype=torch.float64)
    return X, (X.sum(-1, keepdim=True).sin() + 0.1 * X[:, :1])


def _fitted_gp(n: int = 8) -> SingleTaskGP:
    X, Y = _data(n)
    model = SingleTaskGP(X, Y)
    model.eval()
    return model


# -- GPyTorch -----------------------------------------------------------------------------


def test_gpytorch_kernel_batch_shape_storage() -> None:
    """``own_batch_shape`` / ``set_own_batch_shape``: ``Kernel._batch_shape``."""
    inner = RBFKernel(batch_shape=torch.Size([2]))
    outer = ScaleKernel(inner)
    assert gpytorch_up.own_batch_shape(inner) == torch.Size([2])
    assert gpytorch_up.own_batch_shape(outer) == torch.Size([])
    assert outer.batch_shape == torch.Size([2])  # the public one broadcasts sub-kernels
    outer.batch_shape = torch.Size([3, 1])  # GPyTorch's setter writes the same storage
    assert gpytorch_up.own_batch_shape(outer) == torch.Size([3, 1])
    gpytorch_up.set_own_batch_shape(outer, torch.Size([]))
    assert gpytorch_up.own_batch_shape(outer) == torch.Size([])
    assert outer.batch_shape == torch.Size([2])


def test_gpytorch_prediction_strategy_caches() -> None:
    """``prediction_caches``: ``prediction_strategy.mean_cache`` and ``covar_cache``."""
    model = _fitted_gp()
    X, Y = model.train_inputs[0], model.train_targets
    with torch.no_grad():
        model(X[:2])
        mean_cache, root = gpytorch_up.prediction_caches(model)
        K = model.covar_module(X).to_dense() + model.likelihood.noise * torch.eye(len(X))
        inverse = torch.linalg.inv(K)
        assert mean_cache.shape == (len(X),) and root.dim() == 2
        torch.testing.assert_close(root @ root.T, inverse, rtol=1e-6, atol=1e-6)
        residual = Y - model.mean_module(X)
        torch.testing.assert_close(mean_cache, inverse @ residual, rtol=1e-6, atol=1e-6)


# -- BoTorch ------------------------------------------------------------------------------


def test_botorch_input_batch_shape() -> None:
    """``input_batch_shape``: ``BatchedMultiOutputGPyTorchModel._input_batch_shape``."""
    X, Y = _data()
    assert botorch_up.input_batch_shape(SingleTaskGP(X, Y)) == torch.Size()
    batched = SingleTaskGP(X.expand(3, *X.shape), Y.expand(3, *Y.shape))
    assert botorch_up.input_batch_shape(batched) == torch.Size([3])
    assert botorch_up.input_batch_shape(object()) == torch.Size()


def test_botorch_fully_bayesian_has_jax() -> None:
    """``has_jax``: ``botorch.models.fully_bayesian._HAS_JAX``."""
    expected = all(importlib.util.find_spec(m) is not None for m in ("jax", "numpyro"))
    assert botorch_up.has_jax() is expected


def test_botorch_ensemble_and_cache_root_flags() -> None:
    """``EnsembleWithoutCachedRoot``: ``_is_ensemble`` and ``_supports_cache_root``."""

    class Flagged(botorch_up.EnsembleWithoutCachedRoot, Model):
        def posterior(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    assert supports_cache_root(_fitted_gp()) is True
    assert supports_cache_root(Flagged()) is False
    source = inspect.getsource(importlib.import_module("botorch.cross_validation"))
    assert 'getattr(model, "_is_ensemble", False)' in source


class _Recording(botorch_up.qLogNEIWithHooks):
    """Records the hooks; reproduces BoTorch's own sampling step through them."""

    calls: list[str]

    def baseline_changed(self) -> None:
        self.calls = [*getattr(self, "calls", []), f"baseline {self.X_baseline.shape[-2]}"]

    def samples_and_objectives(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        self.calls.append("samples")
        if not self.caches_root:
            return None
        X_full = torch.cat([self.X_baseline.expand(*X.shape[:-2], -1, -1), X], dim=-2)
        posterior = self.model.posterior(X_full, posterior_transform=self.posterior_transform)
        samples = self.joint_samples(posterior, X.shape[-2])
        return samples, self.objective(samples, X=X)


def test_botorch_qlognei_private_hooks() -> None:
    """``qLogNEIWithHooks``: qLogNEI's ``_init_baseline``, ``_get_samples_and_objectives``,
    ``_cache_root``, ``_set_sampler`` and ``_get_f_X_samples``, called as kd assumes."""
    model = _fitted_gp()
    X_baseline = model.train_inputs[0]
    X = torch.rand(4, 2, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)

    def build(cls: type[qLogNoisyExpectedImprovement]) -> qLogNoisyExpectedImprovement:
        sampler = SobolQMCNormalSampler(torch.Size([64]), seed=0)
        return cls(model, X_baseline, sampler=sampler, prune_baseline=False)

    hooked, plain = build(_Recording), build(qLogNoisyExpectedImprovement)
    assert isinstance(hooked, _Recording)
    assert hooked.calls == [f"baseline {len(X_baseline)}"]  # at construction, X_baseline set
    assert hooked.caches_root is True
    torch.testing.assert_close(hooked(X), plain(X), rtol=0, atol=0)
    assert hooked.calls[-1] == "samples"
    hooked.set_X_pending(X[0, :1])  # the pending points join the baseline
    assert hooked.calls[-2:] == ["samples", f"baseline {len(X_baseline) + 1}"]


# -- Ax: Surrogate ------------------------------------------------------------------------


def _dataset() -> tuple[SupervisedDataset, SearchSpaceDigest]:
    X, Y = _data()
    dataset = SupervisedDataset(X, Y, feature_names=["x0", "x1"], outcome_names=["f"])
    return dataset, SearchSpaceDigest(feature_names=["x0", "x1"], bounds=[(0.0, 1.0)] * 2)


def test_ax_surrogate_construct_model() -> None:
    """``model_builder`` / ``fresh_model_builder``: ``Surrogate._construct_model``, called
    positionally ``(dataset, search_space_digest, model_config, state_dict, refit)``."""
    params = list(inspect.signature(Surrogate._construct_model).parameters)
    assert params == [
        "self",
        "dataset",
        "search_space_digest",
        "model_config",
        "state_dict",
        "refit",
    ]
    dataset, digest = _dataset()
    model = ax_up.fresh_model_builder()(dataset, digest, ModelConfig(), None, True)
    assert isinstance(model, SingleTaskGP) and model.train_inputs[0].shape == (8, 2)
    surrogate = Surrogate()
    build = ax_up.model_builder(surrogate)
    assert build == surrogate._construct_model  # noqa: SLF001  (the pinned name)
    assert ax_up.model_builder(surrogate) is not ax_up.fresh_model_builder()


def test_ax_surrogate_submodel_cache() -> None:
    """``forget_datasets``: ``Surrogate.fit`` caches each outcome's model and dataset in
    ``_submodels`` and ``_last_datasets`` (keyed by the outcome names' tuple), and
    ``_construct_model`` hands the cached model back for an equal dataset."""
    dataset, digest = _dataset()
    surrogate = Surrogate()
    surrogate.fit([dataset], digest)
    build = ax_up.model_builder(surrogate)
    cached = build(dataset, digest, ModelConfig(), None, True)
    assert cached is surrogate.model
    assert ax_up.fresh_model_builder()(dataset, digest, ModelConfig(), None, True) is not cached
    ax_up.forget_datasets(surrogate, ("f",))
    assert build(dataset, digest, ModelConfig(), None, True) is not cached


def test_ax_surrogate_builds_with_ax() -> None:
    """``builds_with_ax``: whether a subclass overrides ``Surrogate._construct_model``."""

    class Own(Surrogate):
        def _construct_model(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            return super()._construct_model(*args, **kwargs)

    plain, own = Surrogate(), Own()
    assert ax_up.builds_with_ax(plain, ax_up.model_builder(plain))
    assert not ax_up.builds_with_ax(plain, ax_up.model_builder(Surrogate()))
    assert not ax_up.builds_with_ax(own, ax_up.model_builder(own))


def test_ax_surrogate_serialize_attributes_as_kwargs() -> None:
    """``HookedSurrogate`` / ``serialized_kwargs``: ``_serialize_attributes_as_kwargs``,
    which Ax's ``clone_reset`` (and its storage) rebuilds the surrogate from."""

    class Tagged(ax_up.HookedSurrogate):
        def __init__(self, tag: str = "", **kwargs: object) -> None:
            super().__init__(**kwargs)  # type: ignore[arg-type]
            self.tag = tag

        def serialize_kwargs(self, kwargs: dict[str, object]) -> dict[str, object]:
            return {**super().serialize_kwargs(kwargs), "tag": self.tag}

    surrogate = Tagged(tag="kd")
    kwargs = ax_up.serialized_kwargs(surrogate)
    assert kwargs["tag"] == "kd" and "surrogate_spec" in kwargs
    clone = surrogate.clone_reset()
    assert isinstance(clone, Tagged) and clone.tag == "kd"


# -- Ax: Acquisition ----------------------------------------------------------------------


def test_ax_acquisition_private_members() -> None:
    """``acquisition_model``, ``condition_on_candidates``, ``construct_botorch_acquisition``
    and ``botorch_acquisitions_built``: ``Acquisition._model``,
    ``_condition_on_prev_candidates`` and ``_construct_botorch_acquisition``."""
    build = inspect.signature(Acquisition._construct_botorch_acquisition).parameters
    assert list(build) == ["self", "botorch_acqf_class", "botorch_acqf_options", "model"]
    condition = inspect.signature(Acquisition._condition_on_prev_candidates).parameters
    assert list(condition) == ["self", "prev_candidates", "initial_X_pending"]
    assert "self._model" in inspect.getsource(Acquisition.__init__)
    client = unit_box_client(
        2,
        GenerationStrategy(
            name="bo",
            nodes=[
                GenerationNode(
                    name="bo",
                    generator_specs=[
                        GeneratorSpec(
                            Generators.BOTORCH_MODULAR,
                            model_gen_kwargs={
                                "model_gen_options": {
                                    "optimizer_kwargs": {"num_restarts": 1, "raw_samples": 8}
                                }
                            },
                        )
                    ],
                )
            ],
        ),
    )
    for i, x in enumerate((0.1, 0.5, 0.9)):
        client.attach_trial({"x0": x, "x1": 1 - x}, arm_name=f"a{i}")
        client.complete_trial(i, raw_data={"f": math.sin(3 * x)})
    with ax_up.botorch_acquisitions_built() as built:
        client.get_next_trials(max_trials=1)
    assert len(built) == 1 and isinstance(built[0], qLogNoisyExpectedImprovement)
    assert Acquisition._construct_botorch_acquisition.__name__ == "_construct_botorch_acquisition"


# -- Ax: Client, adapter, generator -------------------------------------------------------


def test_ax_client_private_properties() -> None:
    """``client_experiment`` / ``client_generation_strategy`` / ``experiment_of``:
    ``Client._experiment`` and ``_generation_strategy``, which assert while unset."""
    bare = Client()
    with pytest.raises(AssertionError):
        ax_up.client_experiment(bare)
    with pytest.raises(AssertionError):
        ax_up.client_generation_strategy(bare)
    strategy = GenerationStrategy(
        name="s",
        nodes=[GenerationNode(name="s", generator_specs=[GeneratorSpec(Generators.SOBOL)])],
    )
    client = unit_box_client(2, strategy)
    assert isinstance(ax_up.client_experiment(client), Experiment)
    assert ax_up.experiment_of(client) is ax_up.client_experiment(client)
    assert ax_up.experiment_of(object()) is None
    assert ax_up.client_generation_strategy(client) is strategy


def test_ax_adapter_and_generator_private_attributes() -> None:
    """``experiment_of``, ``adapter_training_data``, ``adapter_optimization_config`` and
    ``generator_surrogate``: ``Adapter._experiment``, ``_training_data``,
    ``_optimization_config`` and ``BoTorchGenerator._surrogate``."""
    init = inspect.getsource(Adapter)
    for name in ("_experiment", "_training_data", "_optimization_config"):
        assert f"self.{name}" in init, name
    assert "self._surrogate" in inspect.getsource(BoTorchGenerator.__init__)
    assert ax_up.adapter_training_data(object()) is None
    assert ax_up.adapter_optimization_config(object()) is None
    surrogate = Surrogate()
    assert ax_up.generator_surrogate(BoTorchGenerator(surrogate=surrogate)) is surrogate
    assert ax_up.generator_surrogate(None) is None


# -- Ax: generation strategy --------------------------------------------------------------


def test_ax_generation_strategy_nodes_and_pausing_criteria() -> None:
    """``strategy_nodes`` / ``set_pausing_criteria``: ``GenerationStrategy._nodes`` and
    ``GenerationNode._pausing_criteria`` (read by ``pausing_criteria``)."""
    nodes = [
        GenerationNode(name=n, generator_specs=[GeneratorSpec(Generators.SOBOL)])
        for n in ("a", "b")
    ]
    gs = GenerationStrategy(name="s", nodes=nodes)
    assert ax_up.strategy_nodes(gs) == nodes
    assert list(gs.nodes_by_name) == ["a", "b"]
    ax_up.set_pausing_criteria(nodes[0], [])
    assert list(nodes[0].pausing_criteria) == []


def test_ax_generator_run_private_keys() -> None:
    """``generator_key`` / ``generation_node_name``: ``GeneratorRun._generator_key`` and
    ``_generation_node_name``, as given to ``GeneratorRun(...)``."""
    run = GeneratorRun(arms=[], generator_key="Sobol", generation_node_name="init")
    assert ax_up.generator_key(run) == "Sobol"
    assert ax_up.generation_node_name(run) == "init"


# -- Ax: analysis -------------------------------------------------------------------------


def test_ax_analysis_card_constructors() -> None:
    """``create_analysis_card`` / ``create_analysis_card_group``:
    ``Analysis._create_analysis_card`` and ``_create_analysis_card_group``."""

    class Mine(Analysis):
        def compute(self, experiment=None, generation_strategy=None, adapter=None):  # type: ignore[no-untyped-def, override]
            raise NotImplementedError

    df = pd.DataFrame({"a": [1, 2]})
    card = ax_up.create_analysis_card(Mine(), title="t", subtitle="s", df=df)
    assert isinstance(card, AnalysisCard) and card.name == "Mine" and card.df.equals(df)
    group = ax_up.create_analysis_card_group(Mine(), title="g", subtitle=None, children=[card])
    assert isinstance(group, AnalysisCardGroup) and group.subtitle == "" and group.name == "Mine"


# -- the scan -----------------------------------------------------------------------------


@cache
def upstream_private_names() -> frozenset[str]:
    """Every private name Ax, BoTorch and GPyTorch define (functions, classes, attributes
    assigned, class attributes, names read with ``getattr``), less torch's own."""
    names: set[str] = set()
    for top in UPSTREAM:
        spec = importlib.util.find_spec(top)
        assert spec is not None and spec.origin is not None
        root = Path(spec.origin).parent
        for path in root.rglob("*.py"):
            # the library's own test folders, not those of the path it is installed under
            # (a nox session named "tests" installs it under .nox/tests/)
            if {"tests", "test"} & set(path.relative_to(root).parts):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names.update(n for n in _defined_names(node) if _private(n))
    assert len(names) > 1000, f"only {len(names)} private upstream names found"
    return frozenset(names - TORCH_NAMES)


def _defined_names(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        yield node.attr
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        yield node.id
    elif (name := _getattr_name(node)) is not None:
        yield name


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _getattr_name(node: ast.AST) -> str | None:
    """``"_x"`` of ``getattr(obj, "_x", ...)`` (``setattr``, ``hasattr`` alike)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


def _upstream_names_of(cls: type) -> set[str]:
    """The private names ``cls`` inherits from its Ax/BoTorch/GPyTorch bases."""
    names: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.partition(".")[0] not in UPSTREAM:
            continue
        names.update(n for n in vars(base) if _private(n))
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        for node in ast.walk(ast.parse(inspect.cleandoc("\n" + source))):
            names.update(n for n in _defined_names(node) if _private(n))
    return names - TORCH_NAMES


class _PrivateUse(ast.NodeVisitor):
    """The private Ax/BoTorch/GPyTorch names one kd module names, as ``line: what``."""

    def __init__(self, module: str, known: frozenset[str], own: frozenset[str]) -> None:
        self.module, self.known, self.own = module, known, own
        self.classes: list[set[str]] = []  # the enclosing classes' inherited names
        self.found: list[str] = []

    def _flag(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{self.module}:{getattr(node, 'lineno', 0)}: {what}")

    def _inherited(self, node: ast.ClassDef) -> set[str]:
        if not node.bases or self.classes:  # nested classes: their bases are local
            return set()
        cls = getattr(importlib.import_module(self.module), node.name, None)
        return _upstream_names_of(cls) if isinstance(cls, type) else set()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        inherited = self._inherited(node)
        for stmt in node.body:  # overrides of private hooks and flags
            targets: list[str] = []
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                targets = [stmt.name]
            elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    if isinstance(t, ast.Name) and inherited and t.id in self.known:
                        targets.append(t.id)  # a flag upstream reads (``getattr``)
            for name in targets:
                if name in inherited or isinstance(stmt, ast.Assign | ast.AnnAssign):
                    self._flag(stmt, f"{node.name} overrides {name}")
        self.classes.append(inherited)
        self.generic_visit(node)
        self.classes.pop()

    def _on_self(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Name):
            return value.id in ("self", "cls")
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "super"
        )

    def _check(self, node: ast.AST, receiver: ast.expr, name: str) -> None:
        if not _private(name):
            return
        if self.classes and self._on_self(receiver):
            if name in self.classes[-1]:
                self._flag(node, f"{ast.unparse(receiver)}.{name}")
        elif name in self.known and name not in self.own:
            self._flag(node, f"{ast.unparse(receiver)}.{name}")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._check(node, node.value, node.attr)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _getattr_name(node)
        if name is not None:
            self._check(node, node.args[0], name)
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0 and module.partition(".")[0] in UPSTREAM:
            self._check_module(node, module)
            for alias in node.names:
                if _private(alias.name):
                    self._flag(node, f"from {module} import {alias.name}")

    def _check_module(self, node: ast.AST, module: str) -> None:
        top, *rest = module.split(".")
        if top in UPSTREAM and any(_private(part) for part in rest):
            self._flag(node, f"import of {module}")


def private_uses(path: Path, source: str | None = None) -> list[str]:
    """The private Ax/BoTorch/GPyTorch names the kd module at ``path`` names."""
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    module = ".".join(parts)
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    own = KD_OWN.get(relative.relative_to(PACKAGE.name).as_posix() + ".py", frozenset())
    visitor = _PrivateUse(module, upstream_private_names(), own)
    visitor.visit(tree)
    return visitor.found


def _kd_modules() -> list[Path]:
    compat = PACKAGE / "_upstream"
    return sorted(p for p in PACKAGE.rglob("*.py") if compat not in p.parents)


def test_no_module_outside_upstream_names_a_private_upstream_attribute() -> None:
    found = [hit for path in _kd_modules() for hit in private_uses(path)]
    assert not found, "route these through ax_kernel_discovery._upstream:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("snippet", "what"),
    [
        ("def f(client):\n    return client._experiment\n", "client._experiment"),
        ("def f(gs):\n    return gs._nodes\n", "gs._nodes"),
        ("def f(a):\n    return getattr(a, '_training_data', None)\n", "a._training_data"),
        ("from botorch.models.fully_bayesian import _HAS_JAX\n", "import _HAS_JAX"),
        ("import gpytorch.kernels._private_mod\n", "import of gpytorch.kernels._private_mod"),
        (
            "from ax_kernel_discovery.kernels.input_map import InputMapKernel\n"
            "class K(InputMapKernel):\n    def f(self):\n        return self._batch_shape\n",
            "self._batch_shape",
        ),
        (
            "from ax_kernel_discovery.surrogate.new_rows_qlognei import NewRowsqLogNEI\n"
            "class Q(NewRowsqLogNEI):\n    def _get_samples_and_objectives(self, X):\n"
            "        return X\n",
            "Q overrides _get_samples_and_objectives",
        ),
    ],
)
def test_the_scan_flags_private_upstream_names(
    snippet: str, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan finds each kind of use (it found today's ~20 places before ``_upstream``)."""
    hits = _scan_snippet(snippet, monkeypatch)
    assert any(what in hit for hit in hits), hits


def test_the_scan_leaves_kds_own_private_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    snippet = (
        "from ax_kernel_discovery.kernels.input_map import InputMapKernel\n"
        "class K(InputMapKernel):\n    def f(self):\n        return self._map_cache\n"
        "class Plain:\n    def f(self):\n        return self._config, self._model\n"
    )
    assert _scan_snippet(snippet, monkeypatch) == []


def _scan_snippet(snippet: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """:func:`private_uses` of ``snippet`` as if it were a kd module (its classes are
    imported from it, as the scan imports a module to see its classes' bases)."""
    name = "ax_kernel_discovery.surrogate.core"
    if "class " in snippet:
        fake = type(sys)(name)
        exec(compile(snippet, "<snippet>", "exec"), fake.__dict__)
        monkeypatch.setitem(sys.modules, name, fake)
    return private_uses(PACKAGE / "surrogate" / "core.py", snippet)
