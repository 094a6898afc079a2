"""A program with two methods (issue 10), exported into the test bundles' ``methods/``
directory (etproof.testbundles) for the C++ tests and the schema-2 manifest:

- ``encode(x)``: x float32 [batch, 6] with a dynamic batch 1..4 -> code = tanh(Linear(6, 3)(x)),
  float32 [batch, 3]; goldens at batch 1, 2 and 4 (the Dim's minimum, one between, maximum).
- ``decode(code, ids)``: code float32 [1, 3], ids int64 [1] -> y = Linear(3, 6)(code) +
  Embedding(10, 6)(ids), float32 [1, 6]; two goldens.

Both methods share nothing but the module; each is exported (torch.export of a module whose
forward calls the method) and the two are lowered into one program with methods ``encode`` and
``decode``, whose manifest is schema_version 2 (docs/manifest.md).

``encdec_spec()`` returns export_model's keyword arguments (the MODULE:FUNCTION contract);
``encdec_ptd_spec()`` the same program with ``external_weights``: both methods' weights in the
one NAME.ptd beside the .pte (model name ``encdec_ptd``).
"""

from __future__ import annotations


def _model():
    import torch
    from torch import nn

    class EncDec(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(6, 3)
            self.dec = nn.Linear(3, 6)
            self.emb = nn.Embedding(10, 6)

        def encode(self, x):
            return torch.tanh(self.enc(x))

        def decode(self, code, ids):
            return self.dec(code) + self.emb(ids)

        def forward(self, x):  # what a one-method export would take; not exported here
            return self.decode(self.encode(x)[:1], torch.zeros(1, dtype=torch.long))

    torch.manual_seed(0)
    return EncDec().eval()


def encdec_spec() -> dict:
    import torch

    g = torch.Generator().manual_seed(0)
    enc_cases = [(f"batch{b}", "synthetic", f"torch.randn [{b}, 6], generator seed 0",
                  (torch.randn(b, 6, generator=g),)) for b in (1, 2, 4)]
    dec_cases = [(f"id{i}", "synthetic", f"torch.randn [1, 3], generator seed 0; ids [{i}]",
                  (torch.randn(1, 3, generator=g), torch.tensor([i]))) for i in (3, 7)]
    batch = torch.export.Dim("batch", min=1, max=4)
    return {
        "model": _model(),
        "methods": {
            "encode": {"example_inputs": enc_cases[1][3], "input_names": ["x"],
                       "output_names": ["code"], "golden_inputs": enc_cases,
                       "dynamic_shapes": {"x": {0: batch}}},
            "decode": {"example_inputs": dec_cases[0][3], "input_names": ["code", "ids"],
                       "output_names": ["y"], "golden_inputs": dec_cases},
        },
        "model_name": "encdec",
        "weights": {"kind": "seeded", "source": "torch.manual_seed(0), torch's init"},
    }


def encdec_ptd_spec() -> dict:
    spec = encdec_spec()
    spec.update(external_weights=True, model_name="encdec_ptd")
    return spec
