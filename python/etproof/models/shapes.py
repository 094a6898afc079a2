"""Small models for what real models need beyond one fixed float input (issue 10's shapes and
inputs), exported into the test bundles (etproof.testbundles) for the C++ tests:

- ``dynamic_batch``: Linear(6, 4) -> ReLU -> Linear(4, 3) with a dynamic batch dimension,
  torch.export.Dim("batch", min=1, max=8); goldens at the minimum, one between and the maximum.
- ``token_inputs``: int64 token ids [2, 5], a bool mask [2, 5] and a scalar-shaped float32
  scale [] in; a float32 embedding sum [2, 2] and the int64 sum of the ids [2] out.
- ``no_inputs``: forward() takes nothing and returns tanh(a parameter) * 3 (a parameter, so
  ExecuTorch's constant folding keeps an operator to run).

Each ``*_spec()`` returns export_model's keyword arguments (the MODULE:FUNCTION contract).
"""

from __future__ import annotations

BATCH_SIZES = (1, 3, 8)  # the Dim's minimum, one between, its maximum


def _randn(shape, seed: int):
    import torch

    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def dynamic_batch_spec() -> dict:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 3)).eval()
    cases = [(f"batch{n}", "synthetic", f"torch.randn seed {n}", (_randn((n, 6), n),))
             for n in BATCH_SIZES]
    return {"model": model, "example_inputs": (_randn((3, 6), 0),), "input_names": ["x"],
            "output_names": ["y"], "golden_inputs": cases,
            "dynamic_shapes": {"x": {0: torch.export.Dim("batch", min=1, max=8)}},
            "model_name": "dynbatch",
            "weights": {"kind": "seeded", "source": "torch.manual_seed(0), torch's init"}}


def _token_model():
    import torch
    from torch import nn

    class TokenSum(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 2)

        def forward(self, ids, mask, scale):
            h = self.embed(ids) * mask.unsqueeze(-1).to(torch.float32) * scale
            return self.head(h.sum(1)), ids.sum(1)

    torch.manual_seed(0)
    return TokenSum().eval()


def token_inputs_spec() -> dict:
    import torch

    cases = []
    for seed in (1, 2):
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, 10, (2, 5), generator=g)
        mask = torch.rand(2, 5, generator=g) > 0.3
        cases.append((f"tokens{seed}", "synthetic", f"torch.randint/rand seed {seed}",
                      (ids, mask, torch.tensor(0.5 * seed))))
    return {"model": _token_model(), "example_inputs": cases[0][3],
            "input_names": ["ids", "mask", "scale"], "output_names": ["y", "idsum"],
            "golden_inputs": cases, "model_name": "tokens",
            "weights": {"kind": "seeded", "source": "torch.manual_seed(0), torch's init"}}


def no_inputs_spec() -> dict:
    import torch
    from torch import nn

    class Constant(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.linspace(-2.0, 2.0, 6).reshape(2, 3))

        def forward(self):
            return torch.tanh(self.w) * 3.0

    return {"model": Constant().eval(), "example_inputs": (), "input_names": [],
            "output_names": ["y"], "golden_inputs": [("none", "synthetic", "no inputs", ())],
            "model_name": "noinputs",
            "weights": {"kind": "seeded", "source": "torch.linspace(-2, 2, 6)"}}
