"""A golden that certifies nothing is refused at export (issue 11, §2): every floating input
entirely non-finite, or a floating output of the eager model without one finite value. Tried on
cases that must pass as well as on cases that must fail (real exports, portable fp32)."""

import math
import re

import pytest
import torch
from torch import nn

from etproof.errors import GoldenInvalid
from etproof.export.pipeline import export_model
from etproof.manifest import read_manifest
from etproof.export.runner import result_for_error


class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


def _export(tmp_path, model, x, name="g"):
    return export_model(model.eval(), (x,), name, tmp_path, "portable", "fp32", ["x"], ["y"],
                        [("c0", "synthetic", "hand-made", (x,))])


@pytest.mark.parametrize("model, x, words", [
    (nn.ReLU(), torch.full((1, 4), math.nan), "every floating input (x) is entirely NaN"),
    (nn.ReLU(), torch.full((1, 4), math.inf), "every floating input (x) is entirely NaN"),
    (Log(), -torch.ones(1, 4), "output 'y' of the eager model has no finite value"),
])
def test_a_golden_that_certifies_nothing_is_refused(tmp_path, model, x, words):
    with pytest.raises(GoldenInvalid, match=re.escape(words)) as e:
        _export(tmp_path, model, x)
    assert e.value.stage == "goldens" and e.value.kind == "golden-invalid"
    assert result_for_error("portable", "fp32", e.value)["status"] == "export-failed"
    assert not any(tmp_path.iterdir()), "nothing written"


@pytest.mark.parametrize("model, x", [
    # some NaN among finite values: kept (the gate compares those positions exactly)
    (nn.ReLU(), torch.tensor([[math.nan, 1.0, -2.0, 3.0]])),
    # an output with infinities among finite values: kept
    (Log(), torch.tensor([[0.0, 1.0, 2.0, 3.0]])),
])
def test_goldens_with_some_finite_values_export(tmp_path, model, x):
    path = _export(tmp_path, model, x)
    assert read_manifest(path)["goldens"][0]["id"] == "c0"
