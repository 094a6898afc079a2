"""Small models of our own, written from the cases where the gate once gave the wrong verdict
(issue 9): each isolates one numerical situation, and the C++ tests (verdict_test.cpp) check the
verdict on the real exported programs — the honest programs must agree, the edited ones drift.

- ``gelu_wide``: the exact (erf) GELU on inputs reaching ±10. The float32 golden is itself ~7e-7
  from float64 truth; judged against the golden alone, honest fp32 columns were called drifted.
- ``offset_linear``: a Linear whose input carries a +100 offset that its bias cancels, then tanh:
  float32 cancellation makes the golden 5e-5 from truth; the same false drift.
- ``topk``: values and int64 indices of torch.topk; the indices must be judged exactly.
- ``relu_mlp``: Linear -> ReLU, for the int8 recipes: judged against the recipe's own emulation.
- ``batch4``: a bias-free Linear on a batch of 4 whose third row is small (x0.3); a row that comes back
  all zeros must drift although the whole tensor's cosine stays near 1.
"""

from __future__ import annotations

from pathlib import Path

from etproof.runner import export_pairs

CASES = ("gelu_wide", "offset_linear", "topk", "relu_mlp", "batch4")
# (model, backend, recipe) exported by ``python -m etproof test-bundles`` into OUT/verdicts.
PAIRS = {
    "gelu_wide": [("portable", "fp32"), ("xnnpack", "fp32"), ("coreml", "fp16")],
    "offset_linear": [("portable", "fp32"), ("xnnpack", "fp32"), ("openvino", "fp32")],
    "topk": [("portable", "fp32")],
    "relu_mlp": [("xnnpack", "int8-dynamic-per-channel"), ("xnnpack", "int8-static-per-channel")],
    "batch4": [("xnnpack", "fp32"), ("xnnpack", "int8-dynamic-per-channel")],
}


def _randn(seed: int, *shape: int):
    import torch

    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def gelu_wide() -> dict:
    import torch
    from torch import nn

    cases = [("ramp", "synthetic", "torch.linspace(-10, 10, 512)",
              (torch.linspace(-10, 10, 512).reshape(1, 512),)),
             ("seed0", "synthetic", "torch.randn seed 0 x5",
              (_randn(0, 1, 512) * 5,))]
    return {"model": nn.GELU().eval(), "example_inputs": cases[0][3], "input_names": ["x"],
            "output_names": ["y"], "golden_inputs": cases, "model_name": "gelu_wide"}


class _OffsetLinear:
    @staticmethod
    def build():
        import torch
        from torch import nn

        torch.manual_seed(0)
        lin = nn.Linear(64, 16)
        with torch.no_grad():  # the bias cancels a +100 offset on every input: W(100 + d) + b = Wd
            lin.bias.copy_(-100.0 * lin.weight.sum(dim=1))
        return nn.Sequential(lin, nn.Tanh()).eval()


def offset_linear() -> dict:
    cases = [(f"seed{s}", "synthetic", f"100 + torch.randn seed {s}", (100 + _randn(s, 1, 64),))
             for s in (0, 1, 2)]
    return {"model": _OffsetLinear.build(), "example_inputs": cases[0][3], "input_names": ["x"],
            "output_names": ["y"], "golden_inputs": cases, "model_name": "offset_linear"}


def topk() -> dict:
    import torch

    class TopK(torch.nn.Module):
        def forward(self, x):
            values, indices = torch.topk(x, 5)
            return values, indices

    cases = [(f"seed{s}", "synthetic", f"torch.randn seed {s}", (_randn(s, 1, 32),))
             for s in (0, 1)]
    return {"model": TopK().eval(), "example_inputs": cases[0][3], "input_names": ["x"],
            "output_names": ["values", "indices"], "golden_inputs": cases, "model_name": "topk"}


def relu_mlp() -> dict:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU()).eval()
    cases = [(f"seed{s}", "synthetic", f"torch.randn seed {s}", (_randn(s, 4, 32),))
             for s in (0, 1, 2, 3)]
    return {"model": model, "example_inputs": cases[0][3], "input_names": ["x"],
            "output_names": ["y"], "golden_inputs": cases, "model_name": "relu_mlp"}


def batch4() -> dict:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16, bias=False)).eval()
    cases = []
    for s in (0, 1):
        x = _randn(s, 4, 16)
        x[2] *= 0.3  # row 2 carries ~3% of the energy: zeroing it leaves the cosine near 0.985
        cases.append((f"seed{s}", "synthetic", f"torch.randn seed {s}, row 2 x0.3", (x,)))
    return {"model": model, "example_inputs": cases[0][3], "input_names": ["x"],
            "output_names": ["y"], "golden_inputs": cases, "model_name": "batch4"}


def export_verdict_bundles(out, force: bool = False, log=print) -> list[dict]:
    """Exports every PAIRS entry into ``out`` (reusing up-to-date bundles unless ``force``)."""
    results = []
    for key in CASES:
        results += export_pairs(globals()[key], key, PAIRS[key], Path(out), force=force, log=log)
    return results
