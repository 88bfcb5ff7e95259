"""Tests of :mod:`ax_kernel_discovery.sandbox`.

Most hostile code is rejected by the static check (no child process needed); the
child-process machinery is tested with tiny scripts that do not import torch; only a
handful of kernels run through the full sandboxed validation, two at a time, in one
module-scoped fixture.
"""

from __future__ import annotations

import io
import json
import re
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from gpytorch.kernels import Kernel

from ax_kernel_discovery import sandbox
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.population import base_candidate
from ax_kernel_discovery.sandbox import (
    SAFE_BUILTINS,
    UnsafeCodeError,
    check_source,
    load_kernel_class,
    run_isolated,
)
from ax_kernel_discovery.sandbox.isolation import (  # the module's own helpers, tested here
    _child_env,
    _interpret,
    _launch,
    _rlimits,
    _worker_main,
    address_space_limit_mb,
    startup_address_space_mb,
)
from ax_kernel_discovery.sandbox.restricted import _ModuleProxy
from ax_kernel_discovery.sandbox.validate import validate_candidate, validate_kernel_code
from ax_kernel_discovery.validation import (
    ValidationOptions,
    ValidationResult,
    check_kernel,
)

CORPUS = Path(__file__).parent / "kernel_corpus"


def corpus(name: str) -> str:
    return (CORPUS / f"{name}.py").read_text()


# ----------------------------------------------------------------------------------------
# Static check
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.py")), ids=lambda p: p.stem)
def test_corpus_passes_the_static_check(path: Path) -> None:
    check_source(path.read_text())  # broken kernels are buggy, not unsafe


HOSTILE = [
    ("import os", "import of 'os' is not allowed"),
    ("import os\nKEY = os.environ['OPENAI_API_KEY']", "import of 'os' is not allowed"),
    ("data = open('/etc/passwd').read()", "name 'open' is not allowed"),
    ("x = ().__class__.__bases__[0].__subclasses__()", "dunder attribute '__subclasses__'"),
    ("os = __import__('os')", "dunder name '__import__'"),
    ("import torch\nf = getattr(torch, 'lo' + 'ad')", "name 'getattr' is not allowed"),
    ("import torch\nm = torch.load('x.pt')", "attribute 'load' is not allowed"),
    ("from torch import load", "'from torch import load'"),
    ("import torch\ntorch.save(torch.zeros(1), 'x.pt')", "attribute 'save'"),
    ("import torch\nt = torch.from_file('/etc/passwd')", "attribute 'from_file'"),
    ("import torch.utils.cpp_extension", "import of 'torch.utils.cpp_extension'"),
    ("from torch.utils import cpp_extension", "import of 'torch.utils'"),
    ("import gpytorch.utils", "import of 'gpytorch.utils'"),
    ("from torch import _C", "private name '_C'"),
    ("import torch\nc = torch._C", "private attribute '_C'"),
    ("import torch\nh = torch.hub.load('a', 'b')", "attribute 'load'"),
    ("import torch\nh = torch.hub", "attribute 'hub'"),
    ("import torch\ntorch.ops.load_library('x.so')", "attribute 'load_library'"),
    ("import torch\nf = torch.compile", "attribute 'compile'"),
    ("import torch\ne = torch.os.environ", "attribute 'environ'"),
    ("import torch\ns = torch.sys", "attribute 'sys'"),
    ("g = (i for i in range(3))\nf = g.gi_frame.f_back", "attribute 'f_back'"),
    ("g = (i for i in range(3))\nf = g.gi_frame", "attribute 'gi_frame'"),
    ("eval('1 + 1')", "name 'eval'"),
    ("exec('x = 1')", "name 'exec'"),
    ("c = compile('1', 'f', 'eval')", "name 'compile'"),
    ("t = type(1)", "name 'type'"),
    ("o = object", "name 'object'"),
    ("b = __builtins__", "dunder name '__builtins__'"),
    ("f = (lambda: 0).__globals__", "dunder attribute '__globals__'"),
    ("import subprocess", "import of 'subprocess'"),
    ("import sys", "import of 'sys'"),
    ("import importlib", "import of 'importlib'"),
    ("import builtins", "import of 'builtins'"),
    ("import typing\nh = typing.get_type_hints", "attribute 'get_type_hints'"),
    ("from typing import cast", "name 'cast' is not allowed"),
    ("import torch\ntorch.set_default_dtype(torch.float16)", "'set_default_dtype'"),
    ("import torch\ntorch.manual_seed(0)", "attribute 'manual_seed'"),
    ("import torch\ntorch.exp = None", "assigning attribute 'exp' of anything but 'self'"),
    ("import gpytorch\ndel gpytorch.kernels", "assigning attribute 'kernels'"),
    ("x = '{0.__class__}'.format(1)", "attribute 'format'"),
    ("try:\n    pass\nexcept:\n    pass", "bare 'except:'"),
    ("def f():\n    global x\n    x = 1", "'global' statements"),
    ("def f():\n    yield 1", "generators ('yield')"),
    ("from . import x", "relative imports"),
    ("from torch import *", "import *"),
    ("import torch\nx = torch.zeros(4).as_strided((100,), (1,))", "attribute 'as_strided'"),
    ("import torch\ns = torch.zeros(1).untyped_storage()", "attribute 'untyped_storage'"),
    ("import torch\ntorch.zeros(1).numpy().tofile('f')", "attribute 'tofile'"),
    ("match 1:\n    case int(real=r):\n        pass", "'match' statements"),
    ("class K:\n    def __getattr__(self, n):\n        return 1", "dunder method '__getattr__'"),
    ("class K:\n    def f(self):\n        return self.__dict__", "dunder attribute '__dict__'"),
    ("import torch\nclass K:\n    def f(self, x):\n        return x._base", "private attribute"),
    ("import gpytorch\nclass K(gpytorch.kernels.Kernel, metaclass=abs):\n    pass", "metaclass"),
    ("@(lambda c: c)\nclass K:\n    pass", "class decorators are not allowed"),
    # the privileged `self`: private attributes and attribute assignment only there
    ("import torch\ndef f(self):\n    return self._C", "private attribute '_C'"),
    ("import torch\ndef f(self):\n    self.exp = None", "assigning attribute 'exp'"),
    ("class K:\n    def f(self):\n        self.a.b = 1", "assigning attribute 'b'"),
    ("class K:\n    def f(self):\n        self = 1", "rebinding 'self'"),
    ("class K:\n    def f(self):\n        return [self._x for self in (1,)]", "rebinding 'self'"),
    ("class K:\n    def f(self):\n        g = lambda self: self._x", "private attribute '_x'"),
    ("class K:\n    def f(self):\n        def g(self):\n            return self._x", "private"),
    ("class K:\n    @staticmethod\n    def f(self):\n        return self._x", "private"),
    ("class K:\n    def f(x, self):\n        return self._x", "private attribute '_x'"),
    (
        "def deco(f):\n    return f\nclass K:\n    @deco\n    def f(self):\n        pass",
        "decorators",
    ),
    ("def deco(f):\n    return f\n@deco\ndef g():\n    pass", "decorators are only allowed"),
    ("import torch\nclass K:\n    x = torch.zeros(1)", "a class body may only hold"),
    ("class K:\n    for i in range(3):\n        pass", "a class body may only hold"),
    ("import torch as self", "rebinding 'self'"),
]


@pytest.mark.parametrize(("code", "fragment"), HOSTILE)
def test_hostile_code_rejected_statically(code: str, fragment: str) -> None:
    with pytest.raises(UnsafeCodeError) as info:
        check_source(code)
    assert info.value.stage == "sandbox"
    assert info.value.reason.startswith("sandbox: line ")
    assert fragment in info.value.reason
    with pytest.raises(UnsafeCodeError):
        load_kernel_class(code)


def test_syntax_error() -> None:
    with pytest.raises(UnsafeCodeError) as info:
        check_source("def forward(self, x1, x2:\n    return x1\n")
    assert info.value.stage == "syntax"
    assert info.value.reason.startswith("syntax: ")
    assert isinstance(info.value, ValueError)
    res = run_isolated("class (:", 3)
    assert (res.ok, res.stage) == (False, "syntax")


def test_gpytorch_idioms_are_allowed() -> None:
    check_source(
        "from __future__ import annotations\n"
        "import math\n"
        "from typing import Optional\n"
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from gpytorch.kernels import Kernel\n"
        "from gpytorch.constraints import Positive\n"
        "class K(Kernel):\n"
        "    has_lengthscale = True\n"
        "    def __init__(self, ard_num_dims: Optional[int] = None, **kwargs):\n"
        "        super().__init__(ard_num_dims=ard_num_dims, **kwargs)\n"
        "        self.register_parameter('raw_a', torch.nn.Parameter(torch.zeros(1)))\n"
        "        self.register_constraint('raw_a', Positive())\n"
        "    @property\n"
        "    def a(self):\n"
        "        return self.raw_a_constraint.transform(self.raw_a)\n"
        "    @a.setter\n"
        "    def a(self, value):\n"
        "        self._set_a(value)\n"
        "    def _set_a(self, value):\n"
        "        self.initialize(raw_a=self.raw_a_constraint.inverse_transform(value))\n"
        "    def forward(self, x1, x2, diag=False, **params):\n"
        "        s = sum(v for v in (1.0, 2.0))\n"
        "        return F.softplus(self.covar_dist(x1, x2, diag=diag)) * math.pi * s\n"
    )


# ----------------------------------------------------------------------------------------
# Loading with restricted builtins
# ----------------------------------------------------------------------------------------


def test_load_kernel_class_returns_the_first_kernel_subclass() -> None:
    cls = load_kernel_class(corpus("valid_rbf"))
    assert issubclass(cls, Kernel) and cls.__name__ == "HandRBFKernel"
    kernel = cls(ard_num_dims=3)
    x = torch.rand(4, 3)
    assert kernel(x, x).to_dense().shape == (4, 4)
    # the class' functions see only the restricted builtins
    builtins_seen = cls.forward.__wrapped__.__globals__["__builtins__"]
    assert "open" not in builtins_seen and "eval" not in builtins_seen
    assert builtins_seen["__import__"] is SAFE_BUILTINS["__import__"]


def test_load_kernel_class_by_name_and_errors() -> None:
    two = (
        "from gpytorch.kernels import Kernel, RBFKernel\n"
        "class A(Kernel):\n    pass\n"
        "class B(Kernel):\n    pass\n"
    )
    assert load_kernel_class(two).__name__ == "A"
    assert load_kernel_class(two, "B").__name__ == "B"
    with pytest.raises(ValueError, match="no Kernel subclass named 'RBFKernel'"):
        load_kernel_class(two, "RBFKernel")  # imported, not defined by the code
    with pytest.raises(ValueError, match="defines no subclass"):
        load_kernel_class("class A:\n    pass\n")
    with pytest.raises(ValueError, match=r"load: executing the kernel code failed \(TypeError"):
        load_kernel_class("x = sorted(None)")


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("c = chr(65)", "NameError"),  # not among the safe builtins
        ("import torch\nd = torch.distributions", "not allowed in kernel code"),
        ("from torch import distributions", "not allowed in kernel code"),
        ("import typing\nc = typing.cast", "typing.cast is not allowed"),
    ],
)
def test_runtime_layer_blocks_what_the_static_check_lets_through(code, fragment) -> None:
    check_source(code)
    with pytest.raises(ValueError, match="load: executing the kernel code failed") as info:
        load_kernel_class(code)
    assert fragment in str(info.value)


def test_methods_only_run_on_instances_of_their_class() -> None:
    code = (
        "import torch\n"
        "class K:\n"
        "    def patch(self):\n"
        "        self.exp = None\n"
        "    @property\n"
        "    def p(self):\n"
        "        return self._x\n"
    )
    exp = torch.Tensor.exp
    with pytest.raises(ValueError, match="K.patch must be called on a K"):
        load_kernel_class(code + "K.patch(torch.Tensor)\n")
    with pytest.raises(ValueError, match="K.p must be called on a K"):
        load_kernel_class(code + "K.p.fget(torch.Tensor)\n")
    assert torch.Tensor.exp is exp


def test_module_proxy() -> None:
    proxy = _ModuleProxy(torch)
    assert proxy.exp is torch.exp
    assert isinstance(proxy.nn.functional, _ModuleProxy)
    for attr in ("os", "sys", "load", "save", "_C", "hub", "utils", "set_num_threads", "jit"):
        with pytest.raises(AttributeError):
            getattr(proxy, attr)
    with pytest.raises(AttributeError, match="read-only"):
        proxy.exp = None
    assert torch.exp is not None


def test_safe_import() -> None:
    safe_import = SAFE_BUILTINS["__import__"]
    assert "open" not in SAFE_BUILTINS and "getattr" not in SAFE_BUILTINS
    for name in ("os", "torch.utils", "gpytorch.utils", "ctypes"):
        with pytest.raises(ImportError, match="not allowed"):
            safe_import(name)
    with pytest.raises(ImportError, match="relative"):
        safe_import("torch", level=1)
    assert isinstance(safe_import("torch.nn.functional"), _ModuleProxy)


def test_prompt_conversion_example_passes() -> None:
    """The example the LLM is shown must pass the sandbox and the checks."""
    path = Path(__file__).parents[1] / "ax_kernel_discovery/llm/prompts/conversion_example.txt"
    if not path.exists():
        pytest.skip("no conversion example prompt")
    code = re.search(r"```python\n(.*?)```", path.read_text(), re.S).group(1)
    cls = load_kernel_class(code)
    res = check_kernel(lambda d: cls(ard_num_dims=d), 6, check_fit=False)
    assert res.ok, res.reason


def _run_worker_here(monkeypatch: pytest.MonkeyPatch, payload: dict) -> ValidationResult:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(payload)))
    monkeypatch.setattr(sys, "stdout", out)
    _worker_main()
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("AXKD-RESULT ")]
    assert len(lines) == 1
    return ValidationResult.from_dict(json.loads(lines[0][len("AXKD-RESULT ") :]))


def test_worker_protocol_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's entry point, run here (cheap): result line, load failures, timeout."""
    base = {
        "dim": 3,
        "class_name": None,
        "options": ValidationOptions(check_fit=False).model_dump(),
        "deadline": time.time() + 60,
    }
    res = _run_worker_here(monkeypatch, {**base, "code": corpus("valid_rbf")})
    assert res.ok and "child" in res.timings
    res = _run_worker_here(
        monkeypatch, {**base, "code": corpus("valid_rbf"), "class_name": "Missing"}
    )
    assert res.stage == "load" and "no Kernel subclass named 'Missing'" in res.reason
    code = corpus("hostile_infinite_loop")
    res = _run_worker_here(monkeypatch, {**base, "code": code, "deadline": time.time() + 0.3})
    assert res.stage == "timeout" and "wall-clock limit" in res.reason


# ----------------------------------------------------------------------------------------
# The child process (tiny scripts, no torch import)
# ----------------------------------------------------------------------------------------

_PROBE = (
    "import json, os, resource\n"
    "limits = {n: resource.getrlimit(getattr(resource, n)) for n in "
    "('RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_FSIZE', 'RLIMIT_NOFILE', 'RLIMIT_CORE')}\n"
    "print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'limits': limits}))\n"
)


def test_child_env_is_clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "PYTHONPATH"):
        monkeypatch.setenv(key, "secret")
    env = _child_env(str(tmp_path))
    assert set(env) <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "LITELLM_LOCAL_MODEL_COST_MAP",
        "PYTHONHASHSEED",
        "PYTHONDONTWRITEBYTECODE",
        "AXKD_STRICT_ERRORS",  # strict mode (the test suite's), ax_kernel_discovery.errors
    }
    assert env["HOME"] == str(tmp_path)
    assert env["OMP_NUM_THREADS"] == "1" and env["MKL_NUM_THREADS"] == "1"
    assert "secret" not in env.values()


def test_child_process_sees_no_secrets_and_has_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    opts = ValidationOptions(memory_mb=3000, fit_timeout=10, wall_margin=5)
    run = _launch(_PROBE, "", opts, timeout=30)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert "OPENAI_API_KEY" not in data["env"]
    assert "sk-test-secret" not in run.stdout
    assert data["env"]["HOME"] == data["cwd"]
    assert "axkd-sandbox-" in data["cwd"]
    assert not Path(data["cwd"]).exists()  # the temporary directory is gone
    expected = {name: [soft, hard] for name, soft, hard in _rlimits(opts)}
    assert data["limits"] == expected
    assert data["limits"]["RLIMIT_AS"][0] == 3000 * 2**20
    assert data["limits"]["RLIMIT_CPU"][0] == opts.cpu_seconds == 20
    assert data["limits"]["RLIMIT_NOFILE"] == [64, 64]


def _interpret_script(script: str, timeout: float = 30, **options) -> tuple:
    opts = ValidationOptions(**options)
    run = _launch(script, "", opts, timeout=timeout)
    res = _interpret(run, opts)
    assert not res.ok
    return res.stage, res.reason, run


def test_garbage_output_is_a_sandbox_failure() -> None:
    stage, reason, _ = _interpret_script("print('hello, I am not JSON')")
    assert stage == "sandbox"
    assert "without a valid result" in reason and "hello" in reason
    stage, reason, _ = _interpret_script("print('AXKD-RESULT {\"ok\": tru')")
    assert stage == "sandbox" and "unreadable result" in reason
    stage, reason, _ = _interpret_script("raise SystemExit(3)")
    assert stage == "sandbox" and "code 3" in reason


def test_crash_is_a_sandbox_failure() -> None:
    stage, reason, _ = _interpret_script("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert stage == "sandbox"
    assert "SIGSEGV" in reason


def test_too_much_output_hits_the_file_size_limit() -> None:
    stage, reason, _ = _interpret_script("import sys\nsys.stdout.write('x' * (3 << 20))")
    assert stage == "sandbox"
    assert "file-size limit" in reason  # Python ignores SIGXFSZ: the write fails


def test_address_space_limit_is_the_measured_start_up_plus_headroom() -> None:
    """Sized for the build at hand (a CUDA build maps several GB more than CPU torch)."""
    startup = startup_address_space_mb("cpu")
    assert startup is not None
    # the child's imports (torch, gpytorch, the checks) map hundreds of MB, not GBs, on CPU
    assert 200 < startup < 3000
    opts = ValidationOptions(memory_headroom_mb=2000)
    assert address_space_limit_mb(opts) == startup + 2000
    assert address_space_limit_mb(ValidationOptions(memory_mb=5000)) == 5000
    limits = {name: soft for name, soft, _ in _rlimits(opts)}
    assert limits["RLIMIT_AS"] == (startup + 2000) * 2**20
    assert "RLIMIT_AS" not in {name for name, _, _ in _rlimits(opts, address_space=False)}
    # the default leaves the checks ~3 GB beyond the start-up size; more is refused
    stage, reason, _ = _interpret_script(f"x = bytearray({startup + 3200} * 2**20)")
    assert stage == "sandbox" and f"address-space limit {startup + 3072} MB" in reason


def test_memory_limit() -> None:
    stage, reason, _ = _interpret_script("x = bytearray(3000 * 2**20)", memory_mb=1024)
    assert stage == "sandbox"
    assert "out of memory" in reason


def test_cpu_limit_is_a_timeout() -> None:
    stage, reason, run = _interpret_script("while True:\n    pass", cpu_seconds=1)
    assert stage == "timeout"
    assert "CPU-time limit" in reason
    assert run.wall < 10


def test_wall_clock_limit_kills_the_process_group() -> None:
    script = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "time.sleep(60)\n"
    )
    start = time.monotonic()
    stage, reason, run = _interpret_script(script, timeout=1.0, fit_timeout=0.5, wall_margin=0.5)
    assert stage == "timeout" and "wall-clock limit" in reason
    assert run.timed_out and time.monotonic() - start < 10


# ----------------------------------------------------------------------------------------
# Full sandboxed validation (each run imports torch in a child: ~3-5 s)
# ----------------------------------------------------------------------------------------

_PRINTING_KERNEL = """
import torch
from gpytorch.kernels import Kernel


class PrintingRBFKernel(Kernel):
    has_lengthscale = True

    def forward(self, x1, x2, diag=False, **params):
        print("AXKD-RESULT {'ok': true}")  # must not be taken for the result
        d2 = self.covar_dist(x1.div(self.lengthscale), x2.div(self.lengthscale),
                             square_dist=True, diag=diag)
        return torch.exp(-0.5 * d2)
"""

_SANDBOX_CASES: dict[str, tuple[str, int, dict]] = {
    "valid_rbf": (corpus("valid_rbf"), 30, {}),
    "valid_matern52_tanhpoly_rq": (corpus("valid_matern52_tanhpoly_rq"), 30, {}),
    "valid_rq_bezier_poly": (corpus("valid_rq_bezier_poly"), 30, {}),
    "valid_rq_spherelinear_matern_cos": (corpus("valid_rq_spherelinear_matern_cos"), 30, {}),
    "printing": (_PRINTING_KERNEL, 4, {"check_fit": False}),
    "broken_eye_shape": (corpus("broken_eye_shape"), 6, {}),
    "broken_deviceless_nugget": (corpus("broken_deviceless_nugget"), 6, {}),
    "hostile_infinite_loop": (
        corpus("hostile_infinite_loop"),
        4,
        {"fit_timeout": 1.0, "wall_margin": 6.0},
    ),
    "hostile_huge_allocation": (corpus("hostile_huge_allocation"), 4, {}),
}


@pytest.fixture(scope="module")
def sandbox_results() -> dict[str, tuple]:
    """Run every case once, two children at a time; (result, wall seconds) per case."""

    def run(item):
        name, (code, dim, options) = item
        start = time.monotonic()
        res = validate_kernel_code(code, dim, **options)
        return name, (res, time.monotonic() - start)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, _SANDBOX_CASES.items()))


@pytest.mark.parametrize(
    "name",
    [
        "valid_rbf",
        "valid_matern52_tanhpoly_rq",
        "valid_rq_bezier_poly",
        "valid_rq_spherelinear_matern_cos",
        "printing",
    ],
)
def test_sandbox_accepts_valid_kernels(sandbox_results, name: str) -> None:
    res, _ = sandbox_results[name]
    assert res.ok, res.reason
    assert res.stage is None
    assert {"sandbox", "child", "shape", "psd"} <= set(res.timings)
    if name != "printing":
        assert "fit" in res.timings


def test_sandbox_reports_check_failures(sandbox_results) -> None:
    res, _ = sandbox_results["broken_eye_shape"]
    assert res.stage == "shape"
    assert "(5,D)x(1,D) gave torch.Size([5, 5]), expected (5, 1)" in res.reason


def test_sandbox_runs_the_device_probe(sandbox_results) -> None:
    """A kernel that would fail on a GPU is refused in the child too, with the reason."""
    res, _ = sandbox_results["broken_deviceless_nugget"]
    assert res.stage == "device"
    assert "without device=" in res.reason and "x1.new_ones" in res.reason


def test_sandbox_stops_an_infinite_loop(sandbox_results) -> None:
    res, wall = sandbox_results["hostile_infinite_loop"]
    assert res.stage == "timeout"
    assert "limit" in res.reason
    assert wall < 7.0 + 5.0 + 3.0  # wall limit + parent's grace + slack


def test_sandbox_survives_a_huge_allocation(sandbox_results) -> None:
    res, _ = sandbox_results["hostile_huge_allocation"]
    assert not res.ok
    assert res.stage in {"error", "sandbox"}
    assert "memory" in res.reason


# ----------------------------------------------------------------------------------------
# One validation of a candidate: source in the sandbox, expression trees in process
# ----------------------------------------------------------------------------------------


def test_validate_candidate_sends_source_to_the_sandbox_with_every_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple] = []

    def fake_run_isolated(code, dim, class_name, opts):  # the child's result, recorded
        seen.append((code, dim, class_name, opts))
        return ValidationResult(True)

    monkeypatch.setattr(sandbox.validate, "run_isolated", fake_run_isolated)
    cand = KernelCandidate(
        name="k", formula="k", origin="direct", code=corpus("valid_rbf"), class_name="K"
    )
    assert validate_candidate(cand, 7, fit_timeout=3.0).ok
    ((code, dim, class_name, opts),) = seen
    assert (code, dim, class_name) == (cand.code, 7, "K")
    assert opts.check_fit and opts.fit_timeout == 3.0 and opts.device == "cpu"


def test_validate_candidate_rejects_unsafe_source_in_the_sandbox() -> None:
    cand = KernelCandidate(name="k", formula="k", origin="direct", code="import os\n")
    res = validate_candidate(cand, 3)
    assert (res.ok, res.stage) == (False, "sandbox")
    bad = validate_candidate(cand, 3, fit_timeout=-1.0)  # options reach the sandbox
    assert bad.stage == "error" and "bad options" in bad.reason


def test_validate_candidate_checks_expression_trees_in_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_child(*args, **kwargs):
        raise AssertionError("an expression tree must not start a sandbox child")

    monkeypatch.setattr(sandbox.validate, "run_isolated", no_child)
    tree = base_candidate("rbf")
    res = validate_candidate(tree, 4)
    assert res.ok and "shape" in res.timings
    assert "fit" not in res.timings  # trusted building blocks: no GP fit check
    fitted = validate_candidate(tree, 4, check_fit=True, fit_timeout=30.0)
    assert fitted.ok and "fit" in fitted.timings
    broken = KernelCandidate(name="b", formula="b", spec={"kernel": "rbf", "bad": 1})
    failed = validate_candidate(broken, 4)
    assert not failed.ok and failed.stage in {"load", "error"}


def test_rlimit_defaults_leave_room_for_torch() -> None:
    # RLIMIT_AS: the child's measured start-up size (CPU torch + gpytorch: ~0.65 GB) plus
    # 3 GB for the checks (the valid kernels above ran under it)
    names = {name: soft for name, soft, _ in _rlimits(ValidationOptions())}
    assert 3072 * 2**20 < names["RLIMIT_AS"] < 6144 * 2**20
    assert names["RLIMIT_FSIZE"] == 2**20
    assert names["RLIMIT_CORE"] == 0
    assert resource.RLIM_INFINITY not in names.values()
