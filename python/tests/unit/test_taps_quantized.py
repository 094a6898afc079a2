"""The tapped twin of the PT2E-quantized recipes (etproof.export.taps_quantized): the GELU and outlier
MLPs of etproof.fixtures.attribution on XNNPACK's int8 recipes, from the session's test bundles
(build/test-bundles/attribution-int8, python/etproof/fixtures/testbundles.py).

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_taps_quantized.py."""

from __future__ import annotations

import pytest
import torch

from etproof.export.taps_quantized import read_values


def test_reading_a_node_the_graph_does_not_have_names_it():
    gm = torch.fx.symbolic_trace(torch.nn.Linear(2, 2))

    class Case:
        inputs = (torch.ones(1, 2),)

    with pytest.raises(RuntimeError, match="'nowhere'"):
        read_values(gm, [Case()], ["nowhere"], [False])
    with pytest.raises(RuntimeError, match="not followed by a quantize"):
        read_values(gm, [Case()], ["linear"], [True])
    assert read_values(gm, [Case()], ["linear"], [False])[0][0].shape == (1, 2)
