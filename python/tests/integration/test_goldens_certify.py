"""A golden that certifies nothing is refused at export (issue 11, §2): every floating input
entirely non-finite, or a floating output of the eager model without one finite value. Tried on
cases that must pass as well as on cases that must fail (real exports, portable fp32).

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_goldens_certify.py."""

import math

import pytest
import torch
from torch import nn

from etproof.manifest import read_manifest

from support import Log, _export


@pytest.mark.parametrize("model, x", [
    # some NaN among finite values: kept (the gate compares those positions exactly)
    (nn.ReLU(), torch.tensor([[math.nan, 1.0, -2.0, 3.0]])),
    # an output with infinities among finite values: kept
    (Log(), torch.tensor([[0.0, 1.0, 2.0, 3.0]])),
])
def test_goldens_with_some_finite_values_export(tmp_path, model, x):
    path = _export(tmp_path, model, x)
    assert read_manifest(path)["goldens"][0]["id"] == "c0"
