"""The attribution model of the tapped twin (issue 13): a small MLP whose GELU asks for the tanh
approximation, which XNNPACK (ExecuTorch 1.5.1) computes as the exact (erf) GELU.

    x [2, 16] float32 -> fc1 Linear(16, 32) -> act GELU(approximate="tanh") -> fc2 Linear(32, 16)
      -> relu ReLU -> fc3 Linear(16, 4) -> y [2, 4] float32

Seeded weights (torch.manual_seed(0), torch's default init), three synthetic cases. Exported
with taps (etproof.taps), the twin's GELU tap on xnnpack/fp32 differs from its golden by the
erf-vs-tanh difference (up to ~5e-4) while fc1's tap agrees to float32 rounding; on portable
every tap agrees.
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
