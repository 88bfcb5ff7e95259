"""GPyTorch's kernel contract and the SAAS prior of :class:`SaasMatern52Kernel`."""

from __future__ import annotations

import pickle
import unittest
from typing import Any

import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.kernels import ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import HalfCauchyPrior

from ax_kernel_discovery.kernels import DimScaledMatern52Kernel, SaasMatern52Kernel
from ax_kernel_discovery.testing import KernelContractMixin


class TestSaasMatern52Kernel(KernelContractMixin, unittest.TestCase):
    data_dim = 2

    def create_kernel_for_dim(self, dim: int, **kwargs: Any) -> SaasMatern52Kernel:
        return SaasMatern52Kernel(ard_num_dims=dim, **kwargs)

    def test_formula(self) -> None:
        """The function is Matern-5/2's (DimScaledMatern52Kernel's at the same
        lengthscales, whose test checks the formula); only the prior differs."""
        kernel = self.create_kernel_for_dim(3).double()
        matern = DimScaledMatern52Kernel(ard_num_dims=3).double()
        kernel.lengthscale = matern.lengthscale = torch.tensor([[0.3, 0.7, 1.5]]).double()
        x1, x2 = torch.rand(4, 3, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
        torch.testing.assert_close(kernel(x1, x2).to_dense(), matern(x1, x2).to_dense())
        self.assertEqual(kernel.nu, 2.5)

    def test_tau_setter_and_bounds(self) -> None:
        kernel = self.create_kernel_for_dim(4).double()
        kernel.tau = 0.37
        torch.testing.assert_close(kernel.tau, torch.tensor(0.37, dtype=torch.float64))
        # log-scale parameters with L-BFGS-B bounds, as BoTorch's MAP-SAAS models have them
        bounds = [
            bound.item()
            for c in (kernel.raw_tau_constraint, kernel.raw_lengthscale_constraint)
            for bound in (c.lower_bound, c.upper_bound)
        ]
        assert bounds == pytest.approx([1e-3, 10.0, 0.01, 1e4])
        torch.testing.assert_close(kernel.raw_tau, torch.log(torch.tensor(0.37)).double())

    def test_log_prior_is_the_saas_prior(self) -> None:
        kernel = self.create_kernel_for_dim(5).double()
        kernel.tau = 0.05
        kernel.lengthscale = torch.tensor([[0.2, 0.5, 1.0, 3.0, 40.0]], dtype=torch.float64)
        priors = {
            name: (prior, closure(module))
            for name, module, prior, closure, _ in kernel.named_priors()
        }
        self.assertEqual(sorted(priors), ["inv_lengthscale_prior", "tau_prior"])
        tau = torch.tensor(0.05, dtype=torch.float64)
        inv = tau / kernel.lengthscale.pow(2)
        # the log densities BoTorch's helper closures feed GPyTorch's MAP objective
        got = sum(p.log_prob(v).sum() for p, v in priors.values())
        half_cauchy = (
            HalfCauchyPrior(torch.tensor(0.1)).double(),
            HalfCauchyPrior(torch.tensor(1.0)).double(),
        )
        want = half_cauchy[0].log_prob(tau) + half_cauchy[1].log_prob(inv).sum()
        torch.testing.assert_close(got, want)

    def test_rejects_a_lengthscale_prior(self) -> None:
        from gpytorch.priors import GammaPrior

        with pytest.raises(ValueError, match="SAAS prior on its lengthscales"):
            SaasMatern52Kernel(ard_num_dims=3, lengthscale_prior=GammaPrior(3.0, 6.0))

    def test_pickles_with_its_prior(self) -> None:
        kernel = self.create_kernel_for_dim(3)
        kernel.tau = 0.2
        back = pickle.loads(pickle.dumps(kernel))
        torch.testing.assert_close(back.tau, kernel.tau)
        self.assertEqual(
            sorted(n for n, *_ in back.named_priors()), sorted(n for n, *_ in kernel.named_priors())
        )

    def test_the_fit_keeps_the_inputs_that_matter(self) -> None:
        # 40 points in 20 dimensions, the value depends on inputs 0 and 1 only: the SAAS
        # fit gives those two the shortest lengthscales, far below the others' median
        gen = torch.Generator().manual_seed(3)
        x = torch.rand(40, 20, generator=gen, dtype=torch.float64)
        y = (torch.sin(6 * x[:, :1]) + (x[:, 1:2] - 0.5).pow(2) * 4).double()
        y = (y - y.mean()) / y.std()
        model = SingleTaskGP(x, y, covar_module=ScaleKernel(SaasMatern52Kernel(ard_num_dims=20)))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        ls = model.covar_module.base_kernel.lengthscale.detach().squeeze(0)
        self.assertEqual(set(ls.argsort()[:2].tolist()), {0, 1})
        self.assertLess(ls[:2].max().item() * 10, ls[2:].median().item())
