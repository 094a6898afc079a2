"""Quantization: PT2E (torchao prepare/convert) with XNNPACK's quantizer, for the int8 recipes.

``quantize`` turns an exported float program into an exported quantized one, calibrated on the
golden inputs, and returns the manifest's ``quantization`` record, each output's scale where
the converted graph has one, and the converted graph (run eagerly, the recipe's emulation). Convs fed by a constant pad are left float where XNNPACK fails on
them (PAD_WORKAROUND), each recorded under its owning module.

May import: errors and toolchain facts; torch, torchao and ExecuTorch only inside functions.
"""

from __future__ import annotations

from etproof.errors import QuantizationError
from etproof.toolchain import version

# Scheme (etproof.recipes.QUANT_OF) -> what it does, written as the manifest's quantization.scheme.
QUANT_SCHEMES = {
    "xnnpack-int8-dynamic-per-channel": (
        "int8 symmetric weights per output channel; activations quantized to int8 dynamically "
        "(per tensor, at run time)"
    ),
    "xnnpack-int8-static-per-channel": (
        "int8 symmetric weights per output channel; activations int8 per tensor with static "
        "scales calibrated on the golden inputs"
    ),
}

# Schemes that leave convs fed by constant_pad_nd in float (the XNNPACK run-time failure below).
# Only the dynamic scheme needs it: a statically quantized conv after constant_pad_nd runs
# (executorch 1.5.1, checked by running the lowered program; a test keeps checking).
PAD_WORKAROUND = {
    "xnnpack-int8-dynamic-per-channel": True,
    "xnnpack-int8-static-per-channel": False,
}

# quantization.skipped[].reason of each conv the workaround leaves float ({et}: ExecuTorch's
# version).
PAD_SKIP_REASON = (
    "conv fed by constant_pad_nd: XNNPACK (executorch {et}) fails at run time "
    "(Propagating input shapes failed with xnn_status_invalid_parameter)"
)


def _module_path(node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return path[len("L['self']."):] if path.startswith("L['self'].") else path


def _is_constant_pad(node) -> bool:
    import torch

    if getattr(node, "op", None) != "call_function":
        return False
    if node.target == torch.ops.aten.constant_pad_nd.default:
        return True
    if node.target == torch.ops.aten.pad.default:
        mode = node.args[2] if len(node.args) > 2 else node.kwargs.get("mode", "constant")
        return mode == "constant"
    return False


def _is_padded_conv(n) -> bool:
    import torch

    convs = (torch.ops.aten.conv1d.default, torch.ops.aten.conv2d.default,
             torch.ops.aten.convolution.default)
    return (n.op == "call_function" and n.target in convs and bool(n.args)
            and _is_constant_pad(n.args[0]))


def find_padded_convs(graph) -> list[tuple[str, str]]:
    """Conv nodes whose input is a constant pad: [(node name, owning module FQN or "")]."""
    return [(n.name, _module_path(n)) for n in graph.nodes if _is_padded_conv(n)]


def _padded_convs_quantized(ep, quantizer) -> list[tuple[str, str]]:
    """Padded convs (find_padded_convs) whose activation input the quantizer annotates."""
    padded = find_padded_convs(ep.graph)
    if not padded:
        return []
    gm = quantizer.transform_for_annotation(ep.module())
    quantizer.annotate(gm)
    by_name = {n.name: n for n in gm.graph.nodes}
    found = []
    for node_name, fqn in padded:
        n = by_name.get(node_name)
        ann = n.meta.get("quantization_annotation") if n is not None else None
        if n is None or (ann is not None and n.args and n.args[0] in ann.input_qspec_map):
            found.append((node_name, fqn))  # unknown (renamed) counts as quantized: stay safe
    return found


def quantize(ep, scheme: str, example_inputs: tuple, cases: list):
    """Quantizes the exported program ``ep`` with ``scheme`` (a QUANT_SCHEMES key), calibrating
    on ``cases`` (objects with ``.inputs``, the golden input tensors).

    Returns (the re-exported quantized program, the manifest's ``quantization`` record
    {"scheme", "quantizer", "skipped"}, output_quantization of the converted graph, the converted
    GraphModule itself: the recipe's eager emulation, etproof.references). Raises
    QuantizationError when the converted graph has no quantize/dequantize op.
    """
    import torch
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    assert scheme in QUANT_SCHEMES, scheme
    dynamic = scheme == "xnnpack-int8-dynamic-per-channel"
    quantizer = XNNPACKQuantizer()
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True,
                                                           is_dynamic=dynamic))

    # Work around XNNPACK's run-time failure on dynamically quantized convs fed by a constant
    # pad: leave those convs float (each recorded under its owning module, from
    # nn_module_stack). Only convs the quantizer would actually quantize count: it leaves e.g.
    # depthwise convs float on its own. XNNPACKQuantizer.set_module_name(fqn, None) asserts on
    # None in this version, so the exclusion goes through its public set_filter_function, with a
    # structural test (conv whose input is a constant pad) that touches nothing else in the
    # owning module.
    padded = _padded_convs_quantized(ep, quantizer) if PAD_WORKAROUND[scheme] else []
    reason = PAD_SKIP_REASON.format(et=version("executorch"))
    skipped: list[dict] = []
    for node_name, fqn in padded:
        entry = {"module": fqn or f"<root>:{node_name}", "reason": reason}
        if entry not in skipped:
            skipped.append(entry)
    if padded:
        quantizer.set_filter_function(lambda n: not _is_padded_conv(n))

    prepared = prepare_pt2e(ep.module(), quantizer)
    with torch.no_grad():
        for c in cases:  # calibration on the golden inputs (static scales; dynamic needs none)
            prepared(*c.inputs)
    converted = convert_pt2e(prepared)
    n_q = sum(1 for n in converted.graph.nodes
              if n.op == "call_function" and _is_quant_op(n.target))
    if n_q == 0:
        raise QuantizationError(
            "recipe claims int8 but quantized nothing: the converted graph has no "
            "quantize/dequantize op",
            "the model has no operator this quantizer handles (or all were skipped); use the "
            "fp32 recipe")
    out_quant = output_quantization(converted)
    ep_q = torch.export.export(converted, example_inputs)
    record = {"scheme": QUANT_SCHEMES[scheme], "quantizer": type(quantizer).__name__,
              "skipped": skipped}
    return ep_q, record, out_quant, converted


# Ops that move or reshape a tensor without changing its values: an output reached through them
# from a dequantize keeps that dequantize's scale.
_PASSTHROUGH = ("view", "reshape", "clone", "flatten", "squeeze", "unsqueeze", "permute",
                "contiguous", "dropout", "_to_copy", "transpose", "expand", "alias", "detach")


def output_quantization(gm) -> list:
    """Per graph output, in order: {"scale", "zero_point", "dtype"} of the last per-tensor
    dequantize feeding it (through value-preserving ops only), or None when there is none
    (dynamic int8, whose outputs are float, or a per-channel/float output)."""
    import torch
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outs = out_node.args[0]
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    result = []
    for n in outs:
        while (getattr(n, "op", None) == "call_function" and n.args
               and getattr(n.target, "_opname", str(n.target)) in _PASSTHROUGH):
            n = n.args[0]
        entry = None
        if (getattr(n, "op", None) == "call_function" and "dequantize_per_tensor" in str(n.target)
                and len(n.args) >= 6):
            scale, zp, dtype = n.args[1], n.args[2], n.args[5]

            def value(a):
                if getattr(a, "op", None) == "get_attr":
                    a = getattr(gm, a.target)
                if isinstance(a, torch.Tensor):
                    return a.item() if a.numel() == 1 else None
                return a
            scale, zp = value(scale), value(zp)
            dname = {torch.int8: "int8", torch.uint8: "uint8"}.get(dtype)
            if isinstance(scale, (int, float)) and scale > 0 and isinstance(zp, int) and dname:
                entry = {"scale": float(scale), "zero_point": int(zp), "dtype": dname}
        result.append(entry)
    return result


def _is_quant_op(target) -> bool:
    name = str(target)
    return ("quantize_per" in name or "dequantize_per" in name or "choose_qparams" in name
            or "quantize_affine" in name or "dequantize_affine" in name)
