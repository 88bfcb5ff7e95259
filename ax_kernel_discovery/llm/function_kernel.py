"""Wrap an LLM-written covariance *function* into a complete GPyTorch Kernel class.

With ``conversion_style="function"`` the conversion LLM call writes only

.. code-block:: python

    PARAMETERS = {"lengthscale": "ard", "alpha": "positive"}

    def covariance(x1, x2, p):
        ...

and :func:`build_kernel_source` writes the class around it: the constructor
(``__init__(self, ard_num_dims=None, **kwargs)``), the raw parameters and their
constraints, the transforms, the input clamp and the ``diag`` branch. Small models get
the formula right much more often than the GPyTorch boilerplate, and this part can no
longer be wrong. The result is ordinary kernel source: it goes through
:func:`~ax_kernel_discovery.sandbox.check_source` and
:func:`~ax_kernel_discovery.sandbox.validate.validate_kernel_code` like any other candidate.

Parameter kinds:

* ``"ard"``: one positive value per input dimension, tensor of shape ``(..., 1, D)``
  (``"lengthscale"`` of this kind is GPyTorch's own lengthscale, ``has_lengthscale``);
* ``"positive"``: a scalar > 0, shape ``(..., 1, 1)``;
* ``"unit"``: a scalar in ``(0, 1)``, shape ``(..., 1, 1)``.

The shapes broadcast against inputs ``(..., N, D)`` and Gram matrices ``(..., N, M)``.

Example:
    >>> src = build_kernel_source(
    ...     {"lengthscale": "ard"},
    ...     "def covariance(x1, x2, p):\\n"
    ...     "    d = torch.cdist(x1 / p['lengthscale'], x2 / p['lengthscale'])\\n"
    ...     "    return torch.exp(-0.5 * d.pow(2))\\n",
    ...     "MyRBF",
    ...     "k(x, x') = exp(-r^2 / 2)",
    ... )
    >>> "class MyRBF(Kernel):" in src
    True
"""

from __future__ import annotations

import ast
import keyword
import textwrap

from ax_kernel_discovery._ast_lock import parse_python

__all__ = [
    "FUNCTION_NAME",
    "PAIRWISE_HELPER",
    "PARAMETER_KINDS",
    "build_kernel_source",
    "kernel_class_name",
]

#: The function the LLM writes.
FUNCTION_NAME = "covariance"

#: Parameter kinds and what they mean (shown in the prompt and used in errors).
PARAMETER_KINDS: dict[str, str] = {
    "ard": "one positive value per input dimension",
    "positive": "a scalar > 0",
    "unit": "a scalar in (0, 1)",
}

_HEADER = (
    "import math\n\n"
    "import torch\n"
    "from gpytorch.constraints import Interval, Positive\n"
    "from gpytorch.kernels import Kernel\n"
)
_HEADER_NAMES = {"math", "torch", "Interval", "Positive", "Kernel"}

#: Name of the helper that vectorises a pair function (defined in the generated source).
PAIRWISE_HELPER = "pairwise_covariance"

# Written into every pair-style module: ``covariance(x, y, p)`` on one pair of points ->
# Gram matrix with ``torch.vmap`` (over the rows of x1, the rows of x2 and any batch).
_PAIRWISE_SOURCE = '''
def pairwise_covariance(fn, x1, x2, vectors, scalars, diag=False):
    """k(x1[..., i, :], x2[..., j, :]) for all i, j (diag: i == j) from one-pair fn(x, y, p)."""
    n, m, d = x1.size(-2), x2.size(-2), x1.size(-1)
    tensors = [x1, x2, *vectors.values(), *scalars.values()]
    batch = torch.broadcast_shapes(*[t.shape[:-2] for t in tensors])

    def flat(t, tail):
        if t.shape[:-2] == batch and len(batch) > 0:
            return t.reshape((-1, *tail)), 0
        if t.shape[:-2].numel() == 1:
            return t.reshape(tail), None
        return t.expand(*batch, *t.shape[-2:]).reshape((-1, *tail)), 0

    a, a_dim = flat(x1, (n, d))
    b, b_dim = flat(x2, (m, d))
    p, p_dims = {}, {}
    for key, value in vectors.items():
        # one value for every dimension when the kernel has no ARD (ard_num_dims=None)
        p[key], p_dims[key] = flat(value.expand(*value.shape[:-1], d), (d,))
    for key, value in scalars.items():
        p[key], p_dims[key] = flat(value, ())
    if diag:
        one = torch.vmap(fn, in_dims=(0, 0, None))
    else:
        one = torch.vmap(torch.vmap(fn, in_dims=(None, 0, None)), in_dims=(0, None, None))
    if a_dim is None and b_dim is None and all(v is None for v in p_dims.values()):
        out = one(a, b, p)
    else:
        out = torch.vmap(one, in_dims=(a_dim, b_dim, p_dims))(a, b, p)
    want = (n,) if diag else (n, m)
    if tuple(out.shape[-len(want):]) != want or out.dim() not in (len(want), len(want) + 1):
        raise ValueError(
            "covariance(x, y, p) must return one number per pair of points; "
            f"the pairs gave an output of shape {tuple(out.shape)}"
        )
    return out.reshape(*batch, *want)
'''


def kernel_class_name(name: str, taken: set[str] | None = None) -> str:
    """A valid class name from a formula's KERNEL name that collides with nothing in ``taken``."""
    cleaned = "".join(ch for ch in name if ch.isalnum() or ch == "_").lstrip("_")
    if not cleaned or not cleaned[0].isalpha():
        cleaned = "K" + cleaned if cleaned else "GeneratedKernel"
    cleaned = cleaned[0].upper() + cleaned[1:]
    taken = (taken or set()) | _HEADER_NAMES | {FUNCTION_NAME, PAIRWISE_HELPER}
    while cleaned in taken or keyword.iskeyword(cleaned):
        cleaned += "Kernel"
    return cleaned


def _module_code(function_source: str) -> str:
    """The reply's module code minus imports already in the header (no rebinding)."""
    source = textwrap.dedent(function_source).strip("\n") + "\n"
    try:
        tree = parse_python(source)
    except SyntaxError:
        return source  # check_source reports the syntax error with its line
    lines = source.splitlines()
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
            if names <= _HEADER_NAMES:
                drop.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    return "\n".join(line for i, line in enumerate(lines) if i not in drop).strip("\n") + "\n"


def _docstring(text: str) -> str:
    text = " ".join(text.split()).replace("\\", "\\\\").replace('"""', "'''")
    return text[:500] or "Kernel generated from an LLM-written covariance function."


def build_kernel_source(
    parameters: dict[str, str],
    function_source: str,
    class_name: str,
    formula: str,
    pairwise: bool = False,
) -> str:
    """Complete kernel module source around an LLM-written ``covariance`` function.

    Args:
        parameters: ``name -> kind`` (:data:`PARAMETER_KINDS`); names are identifiers.
        function_source: Module code defining ``covariance`` (and any helpers).
        class_name: Name of the generated Kernel subclass.
        formula: The formula (becomes the class docstring).
        pairwise: ``covariance(x, y, p)`` computes one pair of points (x, y of shape
            ``(D,)``, ard parameters ``(D,)``, scalars 0-dim) and the generated module
            vectorises it with ``torch.vmap`` (the ``"pair"`` conversion style).
            Otherwise ``covariance(x1, x2, p)`` maps ``(..., N, D)`` and ``(..., M, D)``
            to ``(..., N, M)`` (the ``"function"`` style).

    Returns:
        Python source of a module with the imports, the function and the class.

    Raises:
        ValueError: Unknown kind or a parameter name that is not a plain identifier.
    """
    for name, kind in parameters.items():
        if kind not in PARAMETER_KINDS:
            raise ValueError(f"parameter {name!r} has unknown kind {kind!r}")
        if not name.isidentifier() or name.startswith("_") or keyword.iskeyword(name):
            raise ValueError(f"parameter name {name!r} is not a plain identifier")
    if not class_name.isidentifier():
        raise ValueError(f"class name {class_name!r} is not an identifier")

    use_lengthscale = parameters.get("lengthscale") == "ard"
    init: list[str] = []
    values: list[str] = []
    for name, kind in parameters.items():
        if name == "lengthscale" and use_lengthscale:
            values.append(f'"{name}": self.lengthscale')
            continue
        raw = f"raw_{name}"
        shape = "1, dims" if kind == "ard" else "1, 1"
        constraint = "Interval(0.0, 1.0)" if kind == "unit" else "Positive()"
        init += [
            f"self.register_parameter(\n"
            f'    "{raw}", torch.nn.Parameter(torch.zeros(*self.batch_shape, {shape}))\n'
            f")",
            f'self.register_constraint("{raw}", {constraint})',
        ]
        values.append(f'"{name}": self.{raw}_constraint.transform(self.{raw})')

    init_body = "\n".join(init) or "pass"
    p_lines = "".join(f"    {v},\n" for v in values)
    lines = [
        _HEADER,
        "",
        _module_code(function_source),
        "",
        f"class {class_name}(Kernel):",
        f'    """{_docstring(formula)}"""',
        "",
    ]
    if use_lengthscale:
        lines += ["    has_lengthscale = True", ""]
    lines += [
        "    def __init__(self, ard_num_dims=None, **kwargs):",
        "        super().__init__(ard_num_dims=ard_num_dims, **kwargs)",
        "        dims = 1 if ard_num_dims is None else ard_num_dims",
        textwrap.indent(init_body, " " * 8),
        "",
        "    def forward(self, x1, x2, diag=False, **params):",
    ]
    if pairwise:
        kinds = list(parameters.values())
        vectors = "".join(f"    {v},\n" for v, k in zip(values, kinds, strict=True) if k == "ard")
        scalars = "".join(f"    {v},\n" for v, k in zip(values, kinds, strict=True) if k != "ard")
        lines += [
            textwrap.indent("vectors = {\n" + vectors + "}", " " * 8),
            textwrap.indent("scalars = {\n" + scalars + "}", " " * 8),
            "        x1 = x1.clamp(0.0, 1.0)",
            "        x2 = x2.clamp(0.0, 1.0)",
            f"        return {PAIRWISE_HELPER}({FUNCTION_NAME}, x1, x2, vectors, scalars, diag)",
            "",
        ]
        lines[2:2] = [_PAIRWISE_SOURCE.strip("\n"), ""]
        return "\n".join(lines)
    lines += [
        textwrap.indent("p = {\n" + p_lines + "}", " " * 8),
        "        x1 = x1.clamp(0.0, 1.0)",
        "        x2 = x2.clamp(0.0, 1.0)",
        f"        covar = {FUNCTION_NAME}(x1, x2, p)",
        "        shape = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])",
        "        covar = covar.expand(*shape, x1.size(-2), x2.size(-2))",
        "        if diag:",
        "            return torch.diagonal(covar, dim1=-2, dim2=-1)",
        "        return covar",
        "",
    ]
    return "\n".join(lines)
