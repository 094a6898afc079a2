#!/usr/bin/env python3
"""How far a quantized recipe's emulation moves when its float parts are rounded: the measurement
behind judging an int8 column against its emulation or falling back to its golden row (issue 36,
docs/design.md sec. 5).

For each golden case of MODEL, the recipe's PT2E emulation (the converted graph, as the export
half captures it) is run as is and with every value an operator other than a quantize/dequantize
computes rounded to K significant bits (K = 24 is float32 itself; bfloat16 keeps 8, float16 11),
by the same rewrite the export half uses for the bfloat16 reference
(etproof.export.quantize.rounded_emulation), and the rounded output is compared with the
unrounded one: max|delta| as a fraction of max|emulation| (R) and SQNR in dB. The row "bfloat16"
is the reference the export half captures (RECIPE-bfloat16).

A model whose emulation moves as far at K = 18 or 22 (a perturbation of float32's last bits, the
size of a kernel's reordered sum) as at bfloat16 is one no emulation can hold a program to more
tightly than that distance: its int8 steps amplify any sub-step change, so a faithful program on
any backend is that far from the emulation, and the gate judges it by the golden row instead
(the fallback in applied_on_emulation).

usage: emulation_sensitivity.py MODEL BACKEND/RECIPE [K ...]   (default K: 22 18 14 8)
MODEL: tiny, efficientnet_lite0, or a golden-set model key (mobilenet_v3_small, op_conv2d, ...).
Exit 0 with the table printed; 2 for an unknown model or a recipe that is not PT2E-quantized.
Takes 20 to 60 s per model on 2 cores (quantization and calibration included).
"""

from __future__ import annotations

import sys
from types import SimpleNamespace


def spec_of(model: str) -> dict:
    if model == "tiny":
        from etproof.fixtures import tiny
        return tiny.spec()
    if model == "efficientnet_lite0":
        from etproof.demo import efficientnet_lite0
        return efficientnet_lite0.spec()
    from etproof.demo.photos import golden_photos
    from etproof.goldens import golden_set
    for key, factory, _ in golden_set.models(golden_photos()):
        if key == model:
            return factory()
    raise SystemExit(f"emulation_sensitivity: no model {model!r} (tiny, efficientnet_lite0, "
                     f"or a key of etproof.goldens.golden_set.models)")


def round_to_bits(x, bits):
    """x (a float32 tensor) with each value rounded to ``bits`` significant bits; else x."""
    import torch
    if not (isinstance(x, torch.Tensor) and x.dtype == torch.float32):
        return x
    mantissa, exponent = torch.frexp(x)
    scale = float(2 ** bits)
    return torch.ldexp(torch.round(mantissa * scale) / scale, exponent)


def distance(a, ref) -> tuple[float, float]:
    """(max|a-ref| / max|ref|, SQNR of a against ref in dB; inf when identical)."""
    import math
    a, ref = a.double(), ref.double()
    err = ((a - ref) ** 2).sum().item()
    peak = ref.abs().max().item()
    gap = (a - ref).abs().max().item()
    sqnr = math.inf if err == 0 else 10 * math.log10((ref ** 2).sum().item() / err)
    return (gap / peak if peak > 0 else math.inf), sqnr


def measure(model: str, backend: str, recipe: str, bits: list[int]) -> dict:
    """{case id: {variant: (max|delta|/R, SQNR dB)}} for MODEL's golden cases on the PT2E recipe
    BACKEND/RECIPE; variants "K bits" for each K and "bfloat16". Raises SystemExit(2-message) for
    an unknown model or a recipe that is not PT2E-quantized."""
    import torch
    import etproof.export.quantize as quantize_module
    from etproof.contract.recipes import QUANT_OF
    scheme = QUANT_OF.get((backend, recipe))
    if scheme is None or scheme in quantize_module.TORCHAO_SCHEMES:
        raise SystemExit(f"emulation_sensitivity: {backend}/{recipe} is not a PT2E-quantized recipe")
    spec = spec_of(model)
    net = spec["model"].eval()
    cases = [SimpleNamespace(id=c[0], inputs=tuple(c[3]), carries=False) for c in spec["golden_inputs"]]
    ep = torch.export.export(net, tuple(spec["example_inputs"]))
    converted = quantize_module.quantize(ep, scheme, tuple(spec["example_inputs"]), cases)[3]

    variants = {}
    real_round = quantize_module._round_to
    try:  # the export half's own rewrite, with rounding to K significant bits in its place
        quantize_module._round_to = round_to_bits
        for k in bits:
            variants[f"{k} bits"] = quantize_module.rounded_emulation(converted, k)
    finally:
        quantize_module._round_to = real_round
    variants["bfloat16"] = quantize_module.rounded_emulation(converted, torch.bfloat16)

    def first(out):
        return out[0] if isinstance(out, (tuple, list)) else out

    table = {}
    for case in cases:
        with torch.no_grad():
            emulation = first(converted(*case.inputs))
            table[str(case.id)] = {name: distance(first(v(*case.inputs)), emulation)
                                   for name, v in variants.items()}
    return table


def main(argv: list[str]) -> int:
    if len(argv) < 3 or "/" not in argv[2]:
        print(__doc__[__doc__.index("usage:"):].rstrip(), file=sys.stderr)
        return 2
    model, (backend, recipe) = argv[1], argv[2].split("/", 1)
    bits = [int(k) for k in argv[3:]] or [22, 18, 14, 8]
    try:
        table = measure(model, backend, recipe, bits)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    print(f"{model} {backend}/{recipe}: the emulation against itself with its float parts rounded "
          f"(max|delta|/R, SQNR dB), per golden case")
    names = list(next(iter(table.values())))
    print("case".ljust(24) + "".join(name.rjust(22) for name in names))
    for case, row in table.items():
        print(case[:23].ljust(24) + "".join(f"{row[n][0]:.4f} {row[n][1]:6.1f}".rjust(22) for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
