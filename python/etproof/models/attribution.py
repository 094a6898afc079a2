"""The attribution model of the tapped twin (issue 13): a small MLP whose GELU asks for the tanh
approximation, which XNNPACK (ExecuTorch 1.5.1) computes as the exact (erf) GELU.

    x [2, 16] float32 -> fc1 Linear(16, 32) -> act GELU(approximate="tanh") -> fc2 Linear(32, 16)
      -> relu ReLU -> fc3 Linear(16, 4) -> y [2, 4] float32

Seeded weights (torch.manual_seed(0), torch's default init), three synthetic cases. Exported
with taps (etproof.taps), the twin's GELU tap on xnnpack/fp32 differs from its golden by the
erf-vs-tanh difference (up to ~5e-4) while fc1's tap agrees to float32 rounding; on portable
every tap agrees.

The outlier model (``outlier_spec``), for the PT2E-quantized twins (etproof.taps_quantized): an
MLP whose first layer carries one outlier channel, the failure of per-tensor int8 activations
that LLM.int8() describes (Dettmers et al., 2022, "LLM.int8(): 8-bit Matrix Multiplication for
Transformers at Scale": a few feature dimensions of large magnitude set the quantization range of
the whole tensor, and the rest round to a few levels):

    x [2, 16] -> fc1 Linear(16, 32), output channel 0 x OUTLIER_GAIN -> fc2 Linear(32, 16),
      blind to channel 0 -> fc3 Linear(16, 4) -> y [2, 4]

Quantized, fc2's input range is channel 0's, so the channels fc2 reads keep almost nothing: fc2 is
where the int8 program's error appears (static int8, judged against the golden: the culprit), and
where the recipe's own cost appears (dynamic int8, whose program follows its qd8 emulation).
"""

from __future__ import annotations

from etproof.models.synthetic import randn_cases

INPUT_SHAPE = (2, 16)
CASE_SEEDS = (300, 301, 302)


def build_model():
    """The MLP, eval mode, weights from torch.manual_seed(0)."""
    import torch
    from torch import nn

    class GeluMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.act = nn.GELU(approximate="tanh")
            self.fc2 = nn.Linear(32, 16)
            self.relu = nn.ReLU()
            self.fc3 = nn.Linear(16, 4)

        def forward(self, x):
            h = self.fc1(x)
            h = self.act(h)
            h = self.fc2(h)
            h = self.relu(h)
            return self.fc3(h)

    torch.manual_seed(0)
    return GeluMLP().eval()


# Gain of fc1's output channel 0 in the outlier model: its activations are ~OUTLIER_GAIN times the
# other channels', so a per-tensor (or per-row) int8 step is ~OUTLIER_GAIN/127 of their scale.
OUTLIER_GAIN = 1000.0


def build_outlier_model():
    """The outlier MLP (module docstring), eval mode, weights from torch.manual_seed(0) with fc1's
    row 0 (weight and bias) scaled by OUTLIER_GAIN and fc2's column 0 set to zero."""
    import torch
    from torch import nn

    class OutlierMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 16)
            self.fc3 = nn.Linear(16, 4)
            with torch.no_grad():
                self.fc1.weight[0] *= OUTLIER_GAIN
                self.fc1.bias[0] *= OUTLIER_GAIN
                self.fc2.weight[:, 0] = 0

        def forward(self, x):
            h = self.fc1(x)
            h = self.fc2(h)
            return self.fc3(h)

    torch.manual_seed(0)
    return OutlierMLP().eval()


def golden_inputs():
    """Three synthetic cases: torch.randn [2, 16] from a fixed seed, times 2 (so fc1's outputs
    reach the GELU's curved region and beyond)."""
    return randn_cases(INPUT_SHAPE, CASE_SEEDS)


def spec() -> dict:
    """export_model keyword arguments (the MODULE:FUNCTION contract of ``etproof export``)."""
    cases = golden_inputs()
    return {
        "model": build_model(),
        "example_inputs": cases[0][3],
        "input_names": ["x"],
        "output_names": ["y"],
        "golden_inputs": cases,
        "model_name": "gelu_mlp",
        "weights": {"kind": "seeded", "source": "torch.manual_seed(0), torch's default init"},
    }


def outlier_spec() -> dict:
    """export_model keyword arguments of the outlier model (the same inputs as ``spec``)."""
    return dict(spec(), model=build_outlier_model(), model_name="outlier_mlp",
                weights={"kind": "seeded", "source": "torch.manual_seed(0), torch's default init; "
                         f"fc1 row 0 x {OUTLIER_GAIN:g}, fc2 column 0 zero"})
