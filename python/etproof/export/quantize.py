"""Quantization: PT2E (torchao prepare/convert) with each backend's own quantizer, for the int8
recipes (XNNPACK's, OpenVINO's on NNCF, Core ML's on coremltools, Vulkan's: _quantizer);
torchao's ``quantize_`` on the eager model for the language-model recipes (8da4w, int8
weight-only on XNNPACK: ``quantize_module``).

``quantize`` turns an exported float program into an exported quantized one, calibrated on the
golden inputs, and returns the manifest's ``quantization`` record, each output's scale where
the converted graph has one, and the recipe's emulation: the converted graph run eagerly — for
the dynamic scheme with its activations quantized as XNNPACK's qd8 kernels do (qd8_emulation),
not per tensor as the PT2E graph says. Convs fed by a constant pad are left float where XNNPACK
fails on them (PAD_WORKAROUND), each recorded under its owning module.

May import: errors and toolchain facts; torch, torchao and ExecuTorch only inside functions.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from etproof.export.state import InitialState
from etproof.errors import NothingToQuantize, QuantizationError
from etproof.export.toolchain import version


class Quantized(NamedTuple):
    """What quantize returns (see there)."""

    ep: Any            # the quantized program, re-exported (torch.export.ExportedProgram)
    record: dict       # the manifest's quantization record
    out_quant: list    # output_quantization of the converted graph
    emulation: Any     # the recipe's eager emulation (a GraphModule)
    float_graph: Any   # the calibrated prepare_pt2e graph, before convert (a GraphModule)

# Scheme (etproof.contract.recipes.QUANT_OF) -> what it does, written as the manifest's quantization.scheme.
QUANT_SCHEMES = {
    "xnnpack-int8-dynamic-per-channel": (
        "int8 symmetric weights per output channel; activations quantized to int8 dynamically "
        "at run time (per tensor in the PT2E graph; XNNPACK's qd8 kernels take the range per row "
        "of a linear's input and per batch element of a convolution's)"
    ),
    "xnnpack-int8-static-per-channel": (
        "int8 symmetric weights per output channel; activations int8 per tensor with static "
        "scales calibrated on the golden inputs"
    ),
    "openvino-int8-static-per-channel": (
        "int8 symmetric weights per output channel; activations int8 symmetric per tensor with "
        "static scales calibrated on the golden inputs (OpenVINO's quantizer, NNCF's INT8_SYM "
        "preset, which places its quantizers where OpenVINO's int8 kernels take them)"
    ),
    "openvino-int8-weight-only": (
        "int8 symmetric weights per output channel, activations float (OpenVINO's quantizer, "
        "NNCF's weight compression INT8WO_SYM: every weight of a linear, convolution or "
        "embedding decompressed at run time, the rest in the CPU plugin's precision)"
    ),
    "coreml-int8-static-per-channel": (
        "int8 symmetric weights per output channel; activations quint8 per tensor with static "
        "scales calibrated on the golden inputs (Core ML's quantizer: coremltools' "
        "LinearQuantizerConfig, symmetric, as ExecuTorch's coreml_pt2e_int8_static recipe)"
    ),
    "coreml-int8-weight-only": (
        "int8 symmetric weights per output channel, activations float (Core ML's quantizer: "
        "coremltools' LinearQuantizerConfig with float activations, as ExecuTorch's "
        "coreml_pt2e_int8_weight_only recipe)"
    ),
    "vulkan-int8-weight-only": (
        "int8 symmetric weights per output channel of every linear, activations float (Vulkan's "
        "quantizer, weight-only: it annotates linears only; Vulkan computes them as "
        "aten._weight_int8pack_mm)"
    ),
    "torchao-8da4w": (
        "8da4w: int4 symmetric weights in groups of {group} along the input features, "
        "activations quantized to int8 dynamically per token (asymmetric), every nn.Linear whose "
        "input features the group divides (torchao's quantize_ with "
        "Int8DynamicActivationIntxWeightConfig, as ExecuTorch's LLM flow quantizes)"
    ),
    "torchao-int8-weight-only": (
        "int8 symmetric weights per output channel, activations float, every nn.Linear "
        "(torchao's quantize_ with IntxWeightOnlyConfig(int8, PerAxis(0)), as ExecuTorch's LLM "
        "flow quantizes; XNNPACK has no weight-only linear, so the linears run on portable "
        "kernels: dequantize, then a float32 matmul)"
    ),
}

# The torchao schemes: quantize_ on the eager model (quantize_module), not PT2E.
TORCHAO_SCHEMES = ("torchao-8da4w", "torchao-int8-weight-only")
# 8da4w's weight group (ExecuTorch's export_llama takes --group_size; XNNPACK's 4-bit kernels take
# a multiple of 32: its partitioner refuses 16, "Delegation to XNNPACK requires group_size to be a
# multiple of 32", measured with ExecuTorch 1.5.1). 32 is the smallest, so the most linears of a
# small model qualify (a linear's input features must be a multiple of it).
GROUP_SIZE_8DA4W = 32

# What each scheme's emulation reproduces: the manifest's references[RECIPE].emulates
# (docs/manifest.md). "xnnpack-qd8": the converted graph with every dynamically quantized
# activation quantized the way XNNPACK's qd8 kernels quantize it (qd8_emulation); measured to
# match the lowered XNNPACK program to float32 rounding (2e-7 to 3e-7 of the output range on a
# 3-D Linear stack and a batch-3 conv stack, executorch 1.5.1), where the per-tensor graph is
# 0.4% to 1% of the range away. "pt2e": the converted graph as it is. "pt2e-weight-only": the
# converted graph of a weight-only scheme, whose activations are float: the program dequantizes
# the same int8 weights with the same scales and computes in float, as the graph does (derived
# for Core ML's and Vulkan's, whose runtimes do not run here; measured for OpenVINO's weight
# compression, data/bounds.json).
EMULATES = {
    "xnnpack-int8-dynamic-per-channel": "xnnpack-qd8",
    "xnnpack-int8-static-per-channel": "pt2e",
    "openvino-int8-static-per-channel": "pt2e",
    "openvino-int8-weight-only": "pt2e-weight-only",
    "coreml-int8-static-per-channel": "pt2e",
    "coreml-int8-weight-only": "pt2e-weight-only",
    "vulkan-int8-weight-only": "pt2e-weight-only",
    "torchao-8da4w": "xnnpack-qb4w",
    "torchao-int8-weight-only": "torchao",
}

# Schemes that leave convs fed by constant_pad_nd in float (the XNNPACK run-time failure below).
# Only the dynamic scheme needs it: a statically quantized conv after constant_pad_nd runs
# (executorch 1.5.1, checked by running the lowered program; a test keeps checking).
PAD_WORKAROUND = {
    "xnnpack-int8-dynamic-per-channel": True,
    "xnnpack-int8-static-per-channel": False,
    "openvino-int8-static-per-channel": False,
    "openvino-int8-weight-only": False,
    "coreml-int8-static-per-channel": False,
    "coreml-int8-weight-only": False,
    "vulkan-int8-weight-only": False,
    "torchao-8da4w": False,
    "torchao-int8-weight-only": False,
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


def quantize(ep, scheme: str, example_inputs: tuple, cases: list, dynamic_shapes=None):
    """Quantizes the exported program ``ep`` with ``scheme`` (a QUANT_SCHEMES key), calibrating
    on ``cases`` (objects with ``.inputs``, the golden input tensors); the quantized program is
    exported again with ``dynamic_shapes`` (torch.export's, as ``ep`` was).

    Returns a Quantized: the re-exported quantized program, the manifest's ``quantization`` record
    {"scheme", "quantizer", "skipped"}, output_quantization of the converted graph, the converted
    GraphModule itself (the recipe's eager emulation, etproof.export.references), and the calibrated
    prepared graph (the float model with batch norms folded: the tapped twin's float values,
    etproof.export.taps_quantized). Raises
    NothingToQuantize (a QuantizationError recorded as export-refused) when the converted graph
    has no quantize/dequantize op.
    """
    import copy

    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    assert scheme in QUANT_SCHEMES and scheme not in TORCHAO_SCHEMES, scheme
    quantizer, convert_options = _quantizer(scheme)

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
    if scheme == "openvino-int8-static-per-channel":
        skipped += _openvino_layer_norms_float(ep, quantizer)

    graph = ep.module()
    # the model's own buffers, taken before prepare_pt2e adds its observers (whose buffers hold
    # what calibration observes, and must keep it)
    state = InitialState(graph)
    prepared = prepare_pt2e(graph, quantizer)
    with torch.no_grad():
        # calibration on the golden inputs (static scales; dynamic needs none), each from the
        # initial state (a sequence's later steps from the state the step before left), which the
        # prepared graph keeps for convert (etproof.export.state)
        for c in cases:
            if not c.carries:
                state.restore()
            prepared(*c.inputs)
        state.restore()
    float_graph = copy.deepcopy(prepared)  # convert_pt2e rewrites the prepared graph in place
    with torch.no_grad():
        # no_grad: NNCF's weight decompressors made under autograd hold non-leaf tensors, which
        # the lowering's deep copy of the program refuses ("Only Tensors created explicitly by
        # the user (graph leaves) support the deepcopy protocol")
        converted = convert_pt2e(prepared, **convert_options)
    n_q = sum(1 for n in converted.graph.nodes if _is_quantization(n))
    if n_q == 0:
        raise NothingToQuantize(
            "recipe claims int8 but quantized nothing: the converted graph has no "
            "quantize/dequantize op or weight decompressor",
            "the model has no operator this quantizer handles (or all were skipped); use the "
            "fp32 recipe")
    out_quant = output_quantization(converted)
    ep_q = torch.export.export(converted, example_inputs, dynamic_shapes=dynamic_shapes)
    record = {"scheme": QUANT_SCHEMES[scheme], "quantizer": type(quantizer).__name__,
              "skipped": skipped}
    emulation = qd8_emulation(converted) if EMULATES[scheme] == "xnnpack-qd8" else converted
    return Quantized(ep_q, record, out_quant, emulation, float_graph)


# quantization.skipped[].reason of each LayerNorm OpenVINO's quantizer is told to leave float.
LAYER_NORM_SKIP_REASON = (
    "LayerNorm: OpenVINO's quantizer (nncf {nncf}, INT8_SYM) puts a per-channel observer on its "
    "1-D weight and bias, whose calibration fails (torchao's observer: \"IndexError: Dimension out "
    "of range (expected to be in range of [-1, 0], but got 1)\"); left float"
)


def _openvino_layer_norms_float(ep, quantizer) -> list[dict]:
    """Tells OpenVINO's quantizer to leave every aten.layer_norm of ``ep`` float (its ignored
    scope, by type) and returns their quantization.skipped entries, one per owning module."""
    import torch

    norms = [n for n in ep.graph.nodes
             if n.op == "call_function" and n.target == torch.ops.aten.layer_norm.default]
    if not norms:
        return []
    quantizer.set_ignored_scope(types=["layer_norm"])
    reason = LAYER_NORM_SKIP_REASON.format(nncf=version("nncf"))
    skipped: list[dict] = []
    for n in norms:
        entry = {"module": _module_path(n) or f"<root>:{n.name}", "reason": reason}
        if entry not in skipped:
            skipped.append(entry)
    return skipped


def _quantizer(scheme: str):
    """(the backend's own PT2E quantizer configured for ``scheme``, convert_pt2e's keyword
    arguments). Raises whatever importing the backend's quantizer raises (its package missing is
    refused before export by the table's export_needs)."""
    import torch

    if scheme.startswith("xnnpack-"):
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )

        dynamic = scheme == "xnnpack-int8-dynamic-per-channel"
        return XNNPACKQuantizer().set_global(get_symmetric_quantization_config(
            is_per_channel=True, is_dynamic=dynamic)), {}
    if scheme.startswith("openvino-"):
        import os

        os.environ.setdefault("NNCF_CI", "1")  # NNCF's telemetry opt-out (data/backends.json)
        from executorch.backends.openvino.quantizer import OpenVINOQuantizer, QuantizationMode

        # fold_quantize=False: with the int8 weights folded into constants, OpenVINO's lowering
        # refuses the graph ("Arguments do not have the same element type (arg0 element type:
        # f32, arg1 element type: i8)" on addmm and convolution; executorch 1.5.1, nncf 3.4.0),
        # and ExecuTorch's own OpenVINO tester converts so.
        mode = (QuantizationMode.INT8WO_SYM if scheme == "openvino-int8-weight-only"
                else QuantizationMode.INT8_SYM)
        return OpenVINOQuantizer(mode=mode), {"fold_quantize": False}
    if scheme.startswith("coreml-"):
        from coremltools.optimize.torch.quantization import (
            LinearQuantizerConfig,
            ModuleLinearQuantizerConfig,
        )
        from executorch.backends.apple.coreml.quantizer import CoreMLQuantizer

        activation = torch.quint8 if scheme == "coreml-int8-static-per-channel" else torch.float32
        return CoreMLQuantizer(LinearQuantizerConfig(global_config=ModuleLinearQuantizerConfig(
            quantization_scheme="symmetric", activation_dtype=activation,
            weight_dtype=torch.qint8, weight_per_channel=True))), {}
    if scheme == "vulkan-int8-weight-only":
        from executorch.backends.vulkan.quantizer.vulkan_quantizer import (
            VulkanQuantizer,
            get_symmetric_quantization_config as vulkan_config,
        )

        return VulkanQuantizer().set_global(vulkan_config(is_dynamic=False, weight_bits=8)), {}
    raise AssertionError(f"no PT2E quantizer for scheme {scheme!r}")


def quantize_module(module, scheme: str, example_inputs: tuple, dynamic_shapes=None):
    """Quantizes a deep copy of the eager ``module`` with torchao's ``quantize_`` (``scheme``, a
    TORCHAO_SCHEMES key: every nn.Linear, for 8da4w those whose input features GROUP_SIZE_8DA4W
    divides; the others are recorded in ``skipped``), unwraps its tensor subclasses (without
    that, ExecuTorch 1.5.1's XNNPACK lowering of the int8 weights computes with the raw int8
    values, scales dropped: measured, outputs 5e8 of the range off) and exports it with
    ``dynamic_shapes``. ``module`` is not modified.

    Returns a Quantized: the exported quantized program; the ``quantization`` record
    {"scheme", "quantizer" (the torchao config), "skipped", "group_size" (8da4w)}; no output
    quantization (the outputs are float); the recipe's eager emulation (run by
    etproof.export.references): the quantized module itself, for 8da4w with its int4 group scales
    rounded to bfloat16 as XNNPACK computes (_xnnpack_qb4w_scales); no float graph (the tapped
    twin does not take these recipes). Raises NothingToQuantize when no linear qualifies.
    """
    import copy

    import torch
    from torchao.quantization import quantize_
    from torchao.quantization.granularity import PerAxis, PerGroup
    from torchao.quantization.quant_api import (
        Int8DynamicActivationIntxWeightConfig,
        IntxWeightOnlyConfig,
    )
    from torchao.utils import unwrap_tensor_subclass

    assert scheme in TORCHAO_SCHEMES, scheme
    q = copy.deepcopy(module)
    linears = [(fqn, m) for fqn, m in q.named_modules() if isinstance(m, torch.nn.Linear)]
    group = GROUP_SIZE_8DA4W if scheme == "torchao-8da4w" else None
    if group:
        config = Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4,
                                                       weight_granularity=PerGroup(group))
        name = f"Int8DynamicActivationIntxWeightConfig(int4, PerGroup({group}))"
    else:
        config = IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0))
        name = "IntxWeightOnlyConfig(int8, PerAxis(0))"
    skipped = [{"module": _user_fqn(fqn), "reason": f"input features {m.in_features} not a "
                f"multiple of the group size {group}"}
               for fqn, m in linears if group and m.in_features % group]
    chosen = {fqn for fqn, m in linears if not (group and m.in_features % group)}
    if not chosen:
        raise NothingToQuantize(
            f"recipe {scheme.removeprefix('torchao-')} quantizes nn.Linear weights, and the model "
            f"has {'no nn.Linear' if not linears else 'none whose input features are a multiple of ' + str(group)}",
            "use a recipe that quantizes the model's operators (int8-dynamic-per-channel, "
            "int8-static-per-channel), or the fp32 recipe")
    with torch.no_grad():
        quantize_(q, config, filter_fn=lambda m, fqn: fqn in chosen)
    emulation = unwrap_tensor_subclass(_xnnpack_qb4w_scales(copy.deepcopy(q)) if group
                                       else copy.deepcopy(q)).eval()
    q = unwrap_tensor_subclass(q).eval()
    with torch.no_grad():
        ep_q = torch.export.export(q, example_inputs, dynamic_shapes=dynamic_shapes)
    if scheme == "torchao-int8-weight-only":
        # the int8 weight-only linears export as torchao::dequantize_affine, which no ExecuTorch
        # runtime has a kernel for; decomposed, they are int8 -> float casts and multiplies
        ep_q = ep_q.run_decompositions()
    scheme_text = QUANT_SCHEMES[scheme].replace("{group}", str(group))
    record = {"scheme": scheme_text, "quantizer": name, "skipped": skipped}
    if group:
        record["group_size"] = group
    return Quantized(ep_q, record, [], emulation, None)


def _xnnpack_qb4w_scales(module):
    """``module`` (torchao-quantized, 8da4w) with every int4 weight's group scales rounded to
    bfloat16, as XNNPACK's blockwise 4-bit kernels store them (qb4w: bf16 scales). Measured with
    ExecuTorch 1.5.1 on one Linear(64, 64), group 32: the XNNPACK program is 2.4e-3 of the output
    range from the torchao model as it is and 2.7e-7 (float32 rounding) from this one."""
    import torch

    with torch.no_grad():
        for m in module.modules():
            scale = getattr(getattr(m, "weight", None), "scale", None)
            if isinstance(m, torch.nn.Linear) and isinstance(scale, torch.Tensor):
                scale.copy_(scale.to(torch.bfloat16).to(scale.dtype))
    return module


def _user_fqn(fqn: str) -> str:
    """A module's name as the user wrote it (the method module holds the model as ``model``)."""
    return fqn.removeprefix("model.") or "<root>"


def _qd8_fake_quant(x, dims):
    """x quantized to int8 and back with one asymmetric range per slice (the reduction ``dims``):
    XNNPACK's qd8 conversion (xnn_f32_qd8_convert: range widened to include 0, scale = range /
    255, zero point rounded and clamped to [-128, 127], values rounded half to even)."""
    import torch

    qmin, qmax = -128, 127
    lo = torch.clamp(x.amin(dim=dims, keepdim=True), max=0)
    hi = torch.clamp(x.amax(dim=dims, keepdim=True), min=0)
    scale = torch.clamp((hi - lo) / (qmax - qmin), min=2.0 ** -12)  # the PT2E graph's eps
    zero = torch.clamp(qmin - torch.round(lo / scale), qmin, qmax)
    return (torch.clamp(torch.round(x / scale) + zero, qmin, qmax) - zero) * scale


def _qd8_rows(x):
    """A linear's input: one range per row (every leading dimension; the last is the features)."""
    return _qd8_fake_quant(x, (-1,))


def _qd8_batch(x):
    """A convolution's input: one range per batch element (every dimension but the first)."""
    return _qd8_fake_quant(x, tuple(range(1, x.dim())))


def _qd8_pixels(x):
    """A pointwise convolution's input: one range per pixel (the channel dimension, 1)."""
    return _qd8_fake_quant(x, (1,))


def _shape(gm, node):
    """A graph value's shape: its recorded meta, a constant's own, or through a (de)quantize."""
    val = node.meta.get("val") if hasattr(node, "meta") else None
    if val is not None and hasattr(val, "shape"):
        return tuple(val.shape)
    if getattr(node, "op", None) == "get_attr":
        obj = gm
        for part in str(node.target).split("."):
            obj = getattr(obj, part)
        return tuple(obj.shape)
    if getattr(node, "op", None) == "call_function" and "quantize" in str(node.target):
        return _shape(gm, node.args[0])
    return None


def _conv_is_pointwise(gm, node) -> bool:
    """An aten conv node with a 1x1 kernel, stride 1, no padding and one group: XNNPACK runs it
    as a GEMM over the pixels, so its dynamically quantized input gets one range per pixel
    (measured: a batch-2 1x1 conv matches per-pixel quantization to 2e-7 of the range and is
    0.8% away from per-batch; 1x1 with stride 2, padding 1 or 2 groups, and 2x2 and 3x3 kernels,
    match per batch element instead)."""
    name = str(node.target)
    args = list(node.args)
    if "convolution" in name:  # (input, weight, bias, stride, padding, dilation, transposed,
        if len(args) < 9 or args[6]:  # output_padding, groups)
            return False
        stride, padding, groups = args[3], args[4], args[8]
    else:  # conv1d/conv2d: (input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)
        stride = args[3] if len(args) > 3 else 1
        padding = args[4] if len(args) > 4 else 0
        groups = args[6] if len(args) > 6 else 1
    shape = _shape(gm, args[1])
    if shape is None:
        return False

    def every(v, want):
        return all(int(i) == want for i in (v if isinstance(v, (list, tuple)) else [v]))

    return (all(int(k) == 1 for k in shape[2:]) and every(stride, 1) and every(padding, 0)
            and groups == 1)


def _qd8_kind(gm, user) -> str:
    """How XNNPACK quantizes the dynamically quantized input of ``user``: "rows" (a linear),
    "pixels" (a pointwise convolution), "batch" (any other convolution), or "other"."""
    name = str(user.target)
    if "linear" in name:
        return "rows"
    if "conv" in name:
        return "pixels" if _conv_is_pointwise(gm, user) else "batch"
    return "other"


def qd8_emulation(converted):
    """A copy of the converted dynamic-quantization graph whose activations are quantized as
    XNNPACK's qd8 kernels quantize them: each choose_qparams.tensor -> quantize_per_tensor.tensor
    -> dequantize_per_tensor.tensor chain whose users all take it the same way (_qd8_kind) is
    replaced by that quantization — per row for linears, per pixel for pointwise convolutions, per
    batch element for other convolutions; any other chain is left per tensor. The PT2E graph
    quantizes per tensor, which is not what the lowered program computes (QUANT_SCHEMES,
    EMULATES)."""
    import copy

    import torch

    qd = torch.ops.quantized_decomposed
    gm = copy.deepcopy(converted)
    for node in list(gm.graph.nodes):
        if not (node.op == "call_function" and node.target == qd.dequantize_per_tensor.tensor):
            continue
        q = node.args[0]
        if not (getattr(q, "op", None) == "call_function"
                and q.target == qd.quantize_per_tensor.tensor):
            continue
        kinds = {_qd8_kind(gm, u) for u in node.users}
        fake = {"rows": _qd8_rows, "pixels": _qd8_pixels, "batch": _qd8_batch}.get(
            kinds.pop()) if len(kinds) == 1 else None
        if fake is None:
            continue
        with gm.graph.inserting_after(node):
            replacement = gm.graph.call_function(fake, (q.args[0],))
        node.replace_all_uses_with(replacement)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


# Ops that move or reshape a tensor without changing its values: an output reached through them
# from a dequantize keeps that dequantize's scale.
_PASSTHROUGH = ("view", "reshape", "clone", "flatten", "squeeze", "unsqueeze", "permute",
                "contiguous", "dropout", "_to_copy", "transpose", "expand", "alias", "detach")


def output_quantization(gm) -> list:
    """Per graph output, in order: {"scale", "zero_point", "dtype"} of the last per-tensor
    dequantize feeding it (through value-preserving ops only), or None when there is none
    (dynamic int8, whose outputs are float, or a per-channel/float output)."""
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outs = out_node.args[0]
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    result = []
    for n in outs:
        while (getattr(n, "op", None) == "call_function" and n.args
               and getattr(n.target, "_opname", str(n.target)) in _PASSTHROUGH):
            n = n.args[0]
        result.append(dequantize_record(gm, n))
    return result


def dequantize_record(gm, n) -> dict | None:
    """{"scale", "zero_point", "dtype"} of ``n`` when it is a per-tensor int8/uint8 dequantize
    whose scale and zero point are constants (numbers, or one-element tensors ``gm`` holds), else
    None."""
    import torch

    if not (getattr(n, "op", None) == "call_function" and "dequantize_per_tensor" in str(n.target)
            and len(n.args) >= 6):
        return None
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
        return {"scale": float(scale), "zero_point": int(zp), "dtype": dname}
    return None


def _is_quantization(node) -> bool:
    """A quantize/dequantize call of a converted PT2E graph (is_quant_op), or one of NNCF's weight
    decompressors (OpenVINO's weight compression inserts submodules named
    ``*weights_decompressor*`` that turn the int8 weights back into float, and no q/dq op)."""
    return ((node.op == "call_function" and is_quant_op(node.target))
            or (node.op == "call_module" and "weights_decompressor" in str(node.target)))


def is_quant_op(target) -> bool:
    """A quantize, dequantize or choose_qparams operator (PT2E's quantized_decomposed, torchao's
    affine ones)."""
    name = str(target)
    return ("quantize_per" in name or "dequantize_per" in name or "choose_qparams" in name
            or "quantize_affine" in name or "dequantize_affine" in name)


def _round_to(x, dtype):
    """``x`` rounded to ``dtype`` and back, where it is a float32 tensor; anything else as is."""
    import torch

    if isinstance(x, torch.Tensor) and x.dtype == torch.float32:
        return x.to(dtype).to(torch.float32)
    return x


def rounded_emulation(converted, dtype):
    """A copy of the converted PT2E graph ``converted`` in which every value an operator other
    than a quantize/dequantize computes in float32 is rounded to ``dtype`` (torch.bfloat16 or
    torch.float16) and back: the recipe's emulation as a backend computes it that keeps its float
    parts (dequantized products, biases, activations, pooling) in that precision — OpenVINO's CPU
    plugin on a CPU with bfloat16 units (etproof.export.lower.effective_precision). It is not the
    backend's arithmetic (its fused kernels round fewer times, in another order); it is another
    honest computation of the same recipe in the same precision, so how far it is from the
    float32 emulation is how far a faithful program may be (docs/design.md sec. 5: the runtime
    half widens the bound by that distance, as it widens a float column's by its precision's
    emulation's). Submodules count as operators (NNCF's weight decompressors: the decompressed
    weights rounded, as a backend that decompresses into that precision holds them). ``converted``
    is not modified; the copy shares its modules and tensors."""
    import copy

    import torch

    # a new graph over the same modules and tensors (NNCF's weight decompressors hold tensors
    # that cannot be deep-copied; nothing here writes to them)
    gm = torch.fx.GraphModule(converted, copy.deepcopy(converted.graph))
    graph = gm.graph
    for n in list(graph.nodes):
        if (n.op not in ("call_function", "call_module") or is_quant_op(n.target)
                or n.target is _round_to or "getitem" in str(n.target)):
            continue
        with graph.inserting_after(n):
            r = graph.call_function(_round_to, (n, dtype))
        n.replace_all_uses_with(r, delete_user_cb=lambda u, r=r: u is not r)
    graph.lint()
    gm.recompile()
    return gm
