"""The one place that names private Ax, BoTorch and GPyTorch attributes.

Kernel discovery reads, calls and overrides a few private names of the libraries it
extends (Ax's ``Surrogate._construct_model``, BoTorch's qLogNEI hooks, GPyTorch's
kernel batch shape, ...). Every such touchpoint is a small documented function,
constant or base class here, and nowhere else: a test pins the upstream behaviour each
relies on (``tests/test_upstream.py``, one test per touchpoint, named after it), so an
upgrade that changes one fails there, by name; another test scans the package and
fails when a module outside this one names a private attribute of these libraries.

Where kd must *override* a private hook (``Surrogate._serialize_attributes_as_kwargs``,
qLogNEI's ``_init_baseline`` and ``_get_samples_and_objectives``), the override lives in
a thin base class here that forwards to a public-named hook, and kd's class subclasses
it and overrides the public hook: the private name is written once, here. Class flags
that BoTorch reads by their private names come as a mixin.

The touchpoints are split by library, one module each, so that a module importing the
GPyTorch ones imports no Ax (the import contracts keep the proposers and the kernels
free of Ax): :mod:`.gpytorch` imports only torch and GPyTorch, :mod:`.botorch` BoTorch
and GPyTorch, :mod:`.ax` Ax and BoTorch. None imports another module of the package.
Checked on ax-platform 1.3.1, botorch 0.18.1 and gpytorch 1.15.2.
"""
