"""A golden that certifies nothing is refused at export (issue 11, §2): every floating input
entirely non-finite, or a floating output of the eager model without one finite value. Tried on
cases that must pass as well as on cases that must fail (real exports, portable fp32).

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_goldens_certify.py."""

import math
import re

import pytest
import torch
from torch import nn

from etproof.errors import GoldenInvalid
from etproof.export.runner import result_for_error

from support import Log, _export


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
