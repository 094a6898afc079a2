"""Op-family goldens: one tiny model per operator family that delegates disagree on.

One table (``OPS``): each entry names its family, builds its module (weights from
``torch.manual_seed(0)`` and PyTorch's default init, plus the stated extras), and makes synthetic
golden inputs that reach the ranges where kernels differ: hardswish above +3 / below -3 and its
transition, gelu's tails, softmax on logits of ±50 and more, batch norm with non-trivial running
statistics, layer norm on inputs with a large mean. Each case's ``origin`` states its recipe.

Quantized recipes: int8 maps each tensor's observed extremes to the ends of its int8 range
(dynamic: per tensor at run time; static: calibrated on these golden inputs), so the cases
with large values drive quantized inputs and outputs to -128/127 (or saturate there); the
linspace cases ("wide", "ramp") also fill the range between evenly. ``reaches`` records, per
input, bounds the inputs of all cases go beyond (min below the first, max above the second);
python/tests/unit/test_golden_set.py checks them. Parameter-free families carry no ``weights``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

PREFIX = "op_"
WEIGHTS_SOURCE = "torch.manual_seed(0), PyTorch's default init"


@dataclass(frozen=True)
class OpGolden:
    family: str                         # bundle stem: op_FAMILY
    what: str                           # the operators, for the manifest's reader
    inputs: dict                        # input name -> shape
    outputs: tuple                      # output names, in order
    layers: Callable[[], dict]          # name -> nn.Module (built after manual_seed(0))
    forward: Callable                   # forward(layers, *inputs) -> tensor or tuple
    cases: Callable[[dict], list]       # shapes -> [(case_id, origin, tensors)]
    reaches: dict = field(default_factory=dict)  # input -> (lo, hi): min < lo and max > hi
    extra: str = ""                     # how weights differ from the default init

    @property
    def name(self) -> str:
        return PREFIX + self.family


def _g(seed: int):
    import torch

    return torch.Generator().manual_seed(seed)


def _randn(shape, seed: int, scale: float = 1.0, shift: float = 0.0):
    import torch

    return torch.randn(shape, generator=_g(seed)) * scale + shift


def _ramp(shape, lo: float, hi: float):
    import math

    import torch

    return torch.linspace(lo, hi, math.prod(shape)).reshape(shape)


def _seeded(shapes: dict, scale: float, seed0: int = 0, shift: float = 0.0, label=None):
    """One case: every input torch.randn(seed s) × scale (+ shift), s = seed0, seed0+1, …"""
    ts = tuple(_randn(s, seed0 + i, scale, shift) for i, s in enumerate(shapes.values()))
    what = f"torch.randn seed {seed0}" + ("" if len(shapes) == 1 else f"..{seed0 + len(shapes) - 1}")
    what += f" ×{scale:g}" + (f" {shift:+g}" if shift else "")
    return (label or f"seed{seed0}x{scale:g}", what, ts)


def _ramped(shapes: dict, lo: float, hi: float, label="ramp", flip_second=True):
    """One case: each input torch.linspace(lo, hi) reshaped (the second one reversed)."""
    ts = []
    for i, s in enumerate(shapes.values()):
        t = _ramp(s, lo, hi)
        ts.append(t.flip(-1) if (i and flip_second) else t)
    rev = " (second input reversed)" if len(shapes) > 1 and flip_second else ""
    return (label, f"torch.linspace({lo:g}, {hi:g}) reshaped to each input{rev}", tuple(ts))


def _bn_layers():
    import torch
    from torch import nn

    bn = nn.BatchNorm2d(8)
    g = _g(1)
    with torch.no_grad():  # non-trivial running statistics and affine terms
        bn.running_mean.copy_(torch.randn(8, generator=g) * 3.0)
        bn.running_var.copy_(torch.rand(8, generator=g) * 4.0 + 0.05)
        bn.weight.copy_(torch.randn(8, generator=g))
        bn.bias.copy_(torch.randn(8, generator=g))
    return {"bn": bn}


def _ln_layers():
    import torch
    from torch import nn

    ln = nn.LayerNorm(64)
    g = _g(1)
    with torch.no_grad():
        ln.weight.copy_(torch.randn(64, generator=g))
        ln.bias.copy_(torch.randn(64, generator=g))
    return {"ln": ln}


def _nn():
    from torch import nn

    return nn


def _F():
    import torch.nn.functional as F

    return F


def _torch():
    import torch

    return torch


IMG = (1, 4, 16, 16)

OPS: tuple[OpGolden, ...] = (
    OpGolden(
        "conv2d", "aten.convolution (3x3, 4 -> 8 channels, padding 1)",
        {"x": IMG}, ("y",),
        lambda: {"conv": _nn().Conv2d(4, 8, 3, padding=1)},
        lambda m, x: m["conv"](x),
        lambda s: [_seeded(s, 4.0), _ramped(s, -8.0, 8.0, "wide")],
        {"x": (-6.0, 6.0)}),
    OpGolden(
        "depthwise_conv2d", "aten.convolution (3x3, groups = channels = 8, padding 1)",
        {"x": (1, 8, 16, 16)}, ("y",),
        lambda: {"conv": _nn().Conv2d(8, 8, 3, padding=1, groups=8)},
        lambda m, x: m["conv"](x),
        lambda s: [_seeded(s, 4.0), _ramped(s, -8.0, 8.0, "wide")],
        {"x": (-6.0, 6.0)}),
    OpGolden(
        "linear", "aten.linear (64 -> 32, with bias)",
        {"x": (1, 8, 64)}, ("y",),
        lambda: {"fc": _nn().Linear(64, 32)},
        lambda m, x: m["fc"](x),
        lambda s: [_seeded(s, 10.0), _ramped(s, -20.0, 20.0, "wide")],
        {"x": (-15.0, 15.0)}),
    OpGolden(
        "matmul", "aten.matmul of two inputs ([1,16,32] @ [1,32,8])",
        {"a": (1, 16, 32), "b": (1, 32, 8)}, ("y",),
        lambda: {},
        lambda m, a, b: _torch().matmul(a, b),
        lambda s: [_seeded(s, 4.0), _ramped(s, -6.0, 6.0, "wide")],
        {"a": (-5.0, 5.0), "b": (-5.0, 5.0)}),
    OpGolden(
        "add_mul", "aten.add and aten.mul of two inputs (outputs sum, product)",
        {"a": IMG, "b": IMG}, ("sum", "product"),
        lambda: {},
        lambda m, a, b: (a + b, a * b),
        lambda s: [_seeded(s, 10.0), _ramped(s, -30.0, 30.0, "wide")],
        {"a": (-25.0, 25.0), "b": (-25.0, 25.0)}),
    OpGolden(
        "activations", "relu, relu6 (hardtanh 0..6), hardswish, sigmoid, gelu (erf), one output "
        "each, same input",
        {"x": IMG}, ("relu", "relu6", "hardswish", "sigmoid", "gelu"),
        lambda: {},
        lambda m, x: (_F().relu(x), _F().relu6(x), _F().hardswish(x), _torch().sigmoid(x),
                      _F().gelu(x)),
        # ramp: every region of every activation, densely (-3..3 is hardswish's transition,
        # |x| > 5 gelu's and sigmoid's tails); seed0×4: the same regions, unordered
        lambda s: [_ramped(s, -10.0, 10.0), _seeded(s, 4.0)],
        {"x": (-8.0, 8.0)}),
    OpGolden(
        "softmax", "aten._softmax over the last dimension (32 logits)",
        {"x": (1, 8, 32)}, ("y",),
        lambda: {},
        lambda m, x: _torch().softmax(x, dim=-1),
        # large logits: exp overflows in float32 without the max subtraction
        lambda s: [_seeded(s, 50.0), _ramped(s, -100.0, 100.0, "ramp")],
        {"x": (-50.0, 50.0)}),
    OpGolden(
        "layer_norm", "aten.layer_norm over 64 features, seeded affine weight and bias",
        {"x": (1, 8, 64)}, ("y",),
        _ln_layers,
        lambda m, x: m["ln"](x),
        # a large mean against a small spread: where one-pass variance loses precision
        lambda s: [_seeded(s, 1.0, shift=100.0, label="offset100"), _seeded(s, 20.0, seed0=1)],
        {"x": (-20.0, 100.0)},
        extra="; LayerNorm weight/bias torch.randn seed 1"),
    OpGolden(
        "batch_norm", "aten._native_batch_norm_legit_no_training (eval), 8 channels, "
        "non-trivial running mean/var",
        {"x": (1, 8, 16, 16)}, ("y",),
        _bn_layers,
        lambda m, x: m["bn"](x),
        lambda s: [_seeded(s, 3.0, shift=2.0), _ramped(s, -10.0, 10.0, "wide")],
        {"x": (-8.0, 8.0)},
        extra="; BatchNorm running_mean torch.randn×3, running_var U(0.05, 4.05), weight/bias "
              "torch.randn (seed 1)"),
    OpGolden(
        "pooling", "max_pool2d (3x3, stride 2, padding 1) and avg_pool2d (2x2), one output each",
        {"x": IMG}, ("max", "avg"),
        lambda: {"maxp": _nn().MaxPool2d(3, 2, 1), "avgp": _nn().AvgPool2d(2)},
        lambda m, x: (m["maxp"](x), m["avgp"](x)),
        lambda s: [_seeded(s, 5.0), _ramped(s, -20.0, 20.0, "wide")],
        {"x": (-15.0, 15.0)}),
    OpGolden(
        "mean", "aten.mean over H, W (keepdim), the global average pool",
        {"x": IMG}, ("y",),
        lambda: {},
        lambda m, x: x.mean(dim=(2, 3), keepdim=True),
        lambda s: [_seeded(s, 5.0, shift=10.0), _ramped(s, -20.0, 20.0, "wide")],
        {"x": (-15.0, 15.0)}),
    OpGolden(
        "upsample", "upsample ×2: nearest and bilinear (align_corners=False), one output each",
        {"x": (1, 4, 8, 8)}, ("nearest", "bilinear"),
        lambda: {},
        lambda m, x: (_F().interpolate(x, scale_factor=2.0, mode="nearest"),
                      _F().interpolate(x, scale_factor=2.0, mode="bilinear",
                                       align_corners=False)),
        lambda s: [_seeded(s, 4.0), _ramped(s, -10.0, 10.0, "wide")],
        {"x": (-8.0, 8.0)}),
    OpGolden(
        "concat_reshape_permute", "aten.cat (channels) then reshape and permute to channels-last",
        {"a": (1, 4, 8, 8), "b": (1, 4, 8, 8)}, ("y",),
        lambda: {},
        lambda m, a, b: _torch().cat([a, b * 2.0], dim=1).reshape(1, 8, 64).permute(0, 2, 1),
        lambda s: [_seeded(s, 4.0), _ramped(s, -10.0, 10.0, "wide")],
        {"a": (-8.0, 8.0), "b": (-8.0, 8.0)}),
)

BY_NAME = {op.name: op for op in OPS}


def _module_class():
    from torch import nn

    class OpModule(nn.Module):
        """forward(*inputs) = op.forward(layers, *inputs)."""

        def __init__(self, op: OpGolden):
            super().__init__()
            self.op_name = op.name
            self._fwd = op.forward
            self.layers = nn.ModuleDict(op.layers())

        def forward(self, *xs):
            return self._fwd(self.layers, *xs)

    return OpModule


def build_model(op: OpGolden):
    import torch

    torch.manual_seed(0)
    return _module_class()(op).eval()


def golden_inputs(op: OpGolden) -> list:
    return [(cid, "synthetic", origin, ts) for cid, origin, ts in op.cases(op.inputs)]


def spec(op: OpGolden) -> dict:
    """export_model keyword arguments (the MODULE:FUNCTION contract's dict less 'name')."""
    cases = golden_inputs(op)
    model = build_model(op)
    d = {
        "model": model,
        "example_inputs": cases[0][3],
        "input_names": list(op.inputs),
        "output_names": list(op.outputs),
        "golden_inputs": cases,
        "model_name": op.name,
    }
    if any(True for _ in model.parameters()):  # parameter-free ops have no weights to describe
        d["weights"] = {"kind": "seeded", "source": WEIGHTS_SOURCE + op.extra}
    return d
