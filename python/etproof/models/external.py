"""A small model whose constant weights live outside the program (issue 10's .ptd bundle),
exported into the test bundles' ``ptd/`` directory (etproof.testbundles) for the C++ tests:

- ``external_weights``: Conv2d(3, 8, 3) -> ReLU -> flatten -> Linear(288, 10) on a [1, 3, 8, 8]
  float32 input, with ``external_weights: True``: the conv and linear weights go into
  NAME.ptd (ExecuTorch's external constants; XNNPACK's delegated weights included) and the
  manifest lists it in data_files.

``external_weights_spec()`` returns export_model's keyword arguments (the MODULE:FUNCTION
contract).
"""

from __future__ import annotations


def _model():
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 6 * 6, 10)).eval()


def external_weights_spec() -> dict:
    import torch

    cases = [(f"seed{s}", "synthetic", f"torch.randn seed {s}",
              (torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(s)),))
             for s in (1, 2)]
    return {"model": _model(), "example_inputs": cases[0][3], "input_names": ["x"],
            "output_names": ["y"], "golden_inputs": cases, "model_name": "extweights",
            "external_weights": True,
            "weights": {"kind": "seeded", "source": "torch.manual_seed(0), torch's init"}}
