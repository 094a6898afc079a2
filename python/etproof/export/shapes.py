"""The exported program's shapes: the ranges torch.export kept for the declared dynamic
dimensions, and the manifest's output specs with their dynamic dimensions.

An output dimension that is exactly a dynamic input dimension (the same torch.export symbol: a
batch or sequence axis carried through) is recorded in the output's ``dynamic_dims`` under that
input's Dim name, so the runtime half can check that a program returned it at the size the input
had (docs/manifest.md). Any other symbolic size (``2*s0``, a data-dependent one) is -1 with no
entry: only the program's rank and static sizes are then checked.

May import etproof.contract.arguments, etproof.manifest and etproof.errors; torch only inside
functions.
"""

from __future__ import annotations

from etproof.contract.arguments import dtype_name, tensor_specs
from etproof.errors import ExportError
from etproof.manifest import shape_fits


def user_nodes(ep, kind: str) -> list:
    """The exported program's user input placeholders, or its user outputs, in order."""
    nodes = list(ep.graph.nodes)
    if kind == "input":
        by_name = {n.name: n for n in nodes if n.op == "placeholder"}
        return [by_name[n] for n in ep.graph_signature.user_inputs]
    out = next(n for n in nodes if n.op == "output")
    flat = out.args[0] if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
    return list(flat)[-len(ep.graph_signature.user_outputs):]


def program_input_ranges(ep, in_specs: list, args) -> None:
    """Replaces each declared dynamic dimension's range by the one torch.export kept (it may
    narrow a Dim's range; ep.range_constraints) and checks the golden cases still fit it.
    ExportError (stage "export") when torch.export made a declared dimension static or narrowed
    it below a golden case's size."""
    import torch

    for i, (spec, node) in enumerate(zip(in_specs, user_nodes(ep, "input"))):
        for d in spec.get("dynamic_dims", []):
            size = node.meta["val"].shape[d["axis"]]
            if not isinstance(size, torch.SymInt):
                raise ExportError(
                    f"torch.export made dimension {d['axis']} ({d['name']!r}) of input "
                    f"{spec['name']!r} static (size {int(size)}): the model fixes that size",
                    "remove the Dim from dynamic_shapes, or change the model so the size can "
                    "vary", stage="export")
            vr = ep.range_constraints.get(size.node.expr)
            if vr is None:
                continue
            lo, hi = int(vr.lower), int(vr.upper)
            if (lo, hi) != (d["min"], d["max"]):
                outside = sorted({int(c.inputs[i].shape[d["axis"]]) for c in args.cases
                                  if not lo <= int(c.inputs[i].shape[d["axis"]]) <= hi})
                if outside:
                    raise ExportError(
                        f"torch.export narrowed dimension {d['axis']} ({d['name']!r}) of input "
                        f"{spec['name']!r} to {lo}..{hi}; golden sizes {outside} fall outside",
                        f"declare Dim({d['name']!r}, min={lo}, max={hi}) and golden cases "
                        "inside it", stage="export")
                d["min"], d["max"] = lo, hi


def _input_symbols(ep, in_specs: list) -> dict:
    """{str(symbol): dynamic dim} for each declared dynamic input dimension still symbolic in
    ``ep`` (after program_input_ranges)."""
    import torch

    symbols = {}
    for spec, node in zip(in_specs, user_nodes(ep, "input")):
        for d in spec.get("dynamic_dims", []):
            size = node.meta["val"].shape[d["axis"]]
            if isinstance(size, torch.SymInt):
                symbols.setdefault(str(size.node.expr), d)
    return symbols


def output_specs(ep, example_outs, golden_outs, args, output_names, layouts,
                 in_specs: list) -> list:
    """The manifest's outputs: the eager example outputs' dtypes and shapes, -1 wherever the
    exported program's output size is symbolic (it follows a dynamic input); where that size is
    one input's dynamic dimension itself, the output's ``dynamic_dims`` names it (axis, the
    input's Dim name and range). A golden output that does not fit is ExportError (stage
    "goldens")."""
    import torch

    specs = tensor_specs(output_names, example_outs, layouts or {}, "output")
    if args.dynamic_shapes is not None:
        symbols = _input_symbols(ep, in_specs)
        for spec, node in zip(specs, user_nodes(ep, "output")):
            val = node.meta.get("val") if hasattr(node, "meta") else None
            dims = []
            for axis, size in enumerate(getattr(val, "shape", ())):
                if isinstance(size, torch.SymInt) and axis < len(spec["shape"]):
                    spec["shape"][axis] = -1
                    d = symbols.get(str(size.node.expr))
                    if d is not None:
                        dims.append({"axis": axis, "name": d["name"], "min": d["min"],
                                     "max": d["max"]})
            if dims:
                spec["dynamic_dims"] = dims
    for c, outs in zip(args.cases, golden_outs):
        for o_name, o, spec in zip(output_names, outs, specs):
            if not shape_fits(o.shape, spec["shape"]) or dtype_name(o.dtype) != spec["dtype"]:
                raise ExportError(
                    f"golden case {c.id!r}: output {o_name!r} is {dtype_name(o.dtype)} "
                    f"{list(o.shape)}, the example input gives {spec['dtype']} {spec['shape']}",
                    "golden inputs must have the example inputs' shapes and dtypes (or sizes "
                    "inside a dynamic dimension's range)", stage="goldens")
    return specs
