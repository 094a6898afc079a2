"""The tapped twin of a PT2E-quantized recipe (docs/manifest.md "The tapped twin").

A quantized bundle's program is the *converted* PT2E graph (etproof.export.quantize) re-exported and
lowered, so its twin taps that program, not the float one, at the values the quantized program
computes, and compares each with what the float model computes there:

- **Eligible nodes** (``quantized_eligible``): the compute nodes of the quantized program by the
  float rule (etproof.export.taps.eligible_nodes), less the quantization ops themselves (quantize,
  dequantize, choose_qparams). A node whose only user is a ``quantize_per_tensor`` is tapped at
  the ``dequantize_per_tensor`` that follows it: the value the delegate holds in int8, which is
  what the next layer reads. Tapping the node itself would add a float consumer to a value the
  partitioner's quantized pattern (dq -> op -> q) needs to itself, and take the op out of the
  delegate (measured with executorch 1.5.1: a tapped static-int8 linear ran outside XNNPACK; the
  dequantize after it left delegation identical). Dynamic int8 quantizes activations at the
  consuming op, so its nodes are tapped as they are (delegation identical, measured). For the
  static scheme only nodes followed by a quantize are eligible: any other (a conv whose relu is
  fused into it, for one) is a value the quantized program never materialises.
- **Goldens** of the taps: the float model at the same node names, run with torch.fx's
  Interpreter over the calibrated *prepared* graph (prepare_pt2e: the float model with its batch
  norms folded into the convs and observers that pass values through), whose compute nodes have
  the names the converted program keeps (checked: a node missing is an error, not a guess).
  Folding batch norm changes float32 rounding only (measured: 2.4e-7 absolute on a folded
  conv-bn-relu of unit range). The model outputs keep the bundle's own eager goldens.
- **References** of the taps: float64 truth (the prepared graph cast with ``.double()``), and the
  recipe's own emulation (the converted graph, or its qd8 form: etproof.export.quantize.EMULATES) read by
  the same rule — the node, or the dequantize after it. The model outputs keep the bundle's own.
- Each tap that is a dequantize records its ``quantization`` (scale, zero point, dtype), as a
  static int8 output does, so its bound can be stated in quantization steps.

May import: etproof.export.taps, etproof.export.quantize, errors; torch and ExecuTorch only inside functions.
"""

from __future__ import annotations

import copy
import dataclasses

from etproof.errors import InvalidArgument, first_line
from etproof.export.quantize import dequantize_record, is_quant_op
from etproof.export.references import FLOAT64
from etproof.export.taps import (
    DEFAULT_CAP,
    TapPlan,
    TwinReferences,
    node_numel,
    eligible_nodes,
    fit_budget,
    output_feeds,
    range_within,
    tap_program,
)

# What a quantized twin's references say they are (the manifest's references[NAME].description;
# {shipped}: the bundle's own record's description, which covers the model outputs).
TAPS_DESCRIPTION = ("{shipped}. The taps: the same computation read at each tapped node with "
                    "torch.fx's Interpreter ({what})")
_WHAT = {
    FLOAT64: "the calibrated prepare_pt2e graph, batch norms folded, cast with .double()",
    "recipe": "the node, or the dequantize_per_tensor that follows it where the tap is one",
}


def _is_quantize(node, name: str) -> bool:
    return getattr(node, "op", None) == "call_function" and name in str(node.target) \
        and "per_tensor" in str(node.target)


def dequantize_after(node):
    """The ``dequantize_per_tensor`` reading ``node``'s value back from int8 when ``node``'s only
    user is a ``quantize_per_tensor`` (the static scheme's output quantization), else None."""
    users = list(node.users)
    if len(users) != 1 or not _is_quantize(users[0], "quantize_per_tensor") \
            or "dequantize" in str(users[0].target):
        return None
    return next((u for u in users[0].users if _is_quantize(u, "dequantize_per_tensor")), None)


def quantized_eligible(ep, static: bool) -> list[tuple]:
    """(compute node, node tapped) pairs of the quantized exported program ``ep``, in graph order
    (the module docstring's rule); ``static``: only nodes followed by a quantize."""
    out = []
    for n in eligible_nodes(ep):
        if is_quant_op(n.target):
            continue
        dq = dequantize_after(n)
        if static and dq is None:
            continue
        out.append((n, dq if dq is not None else n))
    return out


def _module_of(node) -> tuple[str | None, str | None]:
    """(module path, bare class) of ``node`` from its nn_module_stack, as ExecuTorch's tap pass
    records them (executorch.devtools.intermediate_output_tap)."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None, None
    last = list(stack.values())[-1]
    if not isinstance(last, tuple):
        return str(last), None
    cls = last[1] if len(last) >= 2 else None
    name = getattr(cls, "__name__", None) or (str(cls).rsplit(".", 1)[-1].rstrip("'>") if cls
                                              else None)
    return last[0], name


def plan_quantized_taps(ep, taps, static: bool, cases: int = 1, bytes_per_element: int = 16,
                        taps_range=None, output_names=None) -> TapPlan:
    """etproof.export.taps.plan_taps for a quantized program ``ep`` (the re-exported converted graph):
    the taps chosen among quantized_eligible(ep, static) the same way (DEFAULT_CAP, N evenly
    spaced, the byte budget, ``taps_range``). The plan's nodes, eligible_ops and specs name the
    compute nodes (their op, module and source line), while the program taps the node tapped (the
    dequantize after it, where there is one). Raises InvalidArgument (stage "export") when nothing
    is eligible or taps_range is outside the eligible nodes."""
    pairs = quantized_eligible(ep, static)
    if not pairs:
        raise InvalidArgument("the tapped twin has nothing to tap: the quantized program has no "
                              "compute node whose value it holds in float or int8"
                              + (" (static int8: no node followed by a quantize)" if static else ""),
                              "export without taps", stage="export")
    first, last = range_within(taps_range, len(pairs))
    window = pairs[first:last + 1]
    n = DEFAULT_CAP if taps is True else int(taps)
    picked, kept = fit_budget([node_numel(x) for x, _ in window], n, cases, bytes_per_element)
    chosen = [window[i] for i in picked]
    fresh, tap_at = _fresh_dequantizes(ep, [t.name if t is not x else None for x, t in chosen])
    tapped, specs = tap_program(fresh, [t or x.name for (x, _), t in zip(chosen, tap_at)])
    named = []
    for (x, _), spec in zip(chosen, specs):
        path, cls = _module_of(x)
        named.append(dataclasses.replace(spec, node_name=x.name, op_target=str(x.target),
                                         stack_trace=x.meta.get("stack_trace"),
                                         module_path=path, module_class=cls))
    feeds = output_feeds(ep, output_names) if output_names else None
    plan = TapPlan("every" if len(chosen) == len(window) else "spaced", len(pairs),
                   [(x.name, str(x.target)) for x, _ in chosen], tapped, named,
                   [(x.name, str(x.target)) for x, _ in pairs], kept, [first + i for i in picked],
                   None if feeds is None else [feeds.get(x.name, []) for x, _ in chosen],
                   None if taps_range is None else (first, last))
    plan.tapped_nodes = [t or x.name for (x, _), t in zip(chosen, tap_at)]
    plan.quantization = [dequantize_record(ep.graph_module, t) if t is not x else None
                         for x, t in chosen]
    for x, t in chosen:
        if t is not x:
            plan.added_ops[str(t.target)] = plan.added_ops.get(str(t.target), 0) + 1
    return plan


def _fresh_dequantizes(ep, dequantizes: list) -> tuple:
    """A deep copy of ``ep`` in which each dequantize named in ``dequantizes`` (None: no
    dequantize) has a fresh copy beside it, the same call on the same quantized value, for the tap
    to read; returns (the copy, per entry the copy's node name or None). Tapping the dequantize
    the next layer reads instead gives zeros: XNNPACK folds a dequantize into the quantized op
    that consumes it and never writes that value out (measured, executorch 1.5.1: the GELU and
    ReLU taps of a static-int8 MLP came back all zeros, the fresh copies equal to the PT2E
    emulation exactly), the way PT2E's convert gives every consumer a dequantize of its own."""
    fresh = copy.deepcopy(ep)
    graph = fresh.graph
    by_name = {n.name: n for n in graph.nodes}
    names = []
    for dq_name in dequantizes:
        if dq_name is None:
            names.append(None)
            continue
        dq = by_name[dq_name]
        with graph.inserting_after(dq):
            twin = graph.call_function(dq.target, dq.args, dq.kwargs)
        twin.meta = copy.copy(dq.meta)
        names.append(twin.name)
    fresh.graph_module.recompile()
    return fresh, names


def read_values(gm, cases, names: list[str], after_dequantize: list[bool], dtype=None) -> list:
    """Per case, the values of ``gm`` (a GraphModule: the prepared or converted graph) at the
    nodes ``names`` (or, where ``after_dequantize`` says so, at the dequantize_per_tensor after
    each: dequantize_after), run with torch.fx's Interpreter on the case's inputs (floating ones
    cast to ``dtype`` when given). RuntimeError naming the node when the graph has no such node
    (or no dequantize after it)."""
    import torch
    from torch.fx import Interpreter

    by_name = {n.name: n for n in gm.graph.nodes}
    wanted = []
    for name, after in zip(names, after_dequantize):
        node = by_name.get(name)
        if node is None:
            raise RuntimeError(f"node {name!r} of the quantized program is not in the "
                               f"{type(gm).__name__} it is read from")
        if after:
            node = dequantize_after(node)
            if node is None:
                raise RuntimeError(f"node {name!r} is not followed by a quantize/dequantize in "
                                   "the graph it is read from")
        wanted.append(node)
    keys = {n: i for i, n in enumerate(wanted)}

    class _Reader(Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if n in keys:
                got[keys[n]] = value.detach().clone()
            return value

    results = []
    for c in cases:
        got = [None] * len(wanted)
        inputs = tuple(t.to(dtype) if dtype is not None and t.is_floating_point() else t
                       for t in c.inputs)
        with torch.no_grad():
            _Reader(gm).run(*inputs)
        results.append(got)
    return results


def quantized_twin_values(plan: TapPlan, prepared, emulation, cases, model_goldens: list,
                          model_refs: dict, ref_names: list[str], recipe: str,
                          shipped_records: dict, output_names: list[str], out_specs: list,
                          log=None) -> tuple[list, TwinReferences]:
    """The twin's goldens (per case: the model outputs from ``model_goldens``, then the taps from
    the float ``prepared`` graph) and references (float64 from ``prepared`` cast to float64, the
    recipe's from ``emulation``; each tap's shape checked against ``out_specs``). model_refs:
    case id -> reference name -> output name -> tensor, the bundle's own; shipped_records: its
    manifest's references. A reference that cannot be read is recorded as not captured with the
    reason; the goldens raise RuntimeError."""
    import torch

    say = log or (lambda _m: None)
    names = [x for x, _ in plan.nodes]
    after = [q is not None for q in plan.quantization]
    n_model = len(output_names) - len(names)
    taps = read_values(prepared, cases, names, [False] * len(names))
    goldens = []
    for c, model_outs, tap_outs in zip(cases, model_goldens, taps):
        for t, spec in zip(tap_outs, out_specs[n_model:]):
            if list(t.shape) != list(spec["shape"]):
                raise RuntimeError(f"case {c.id!r}: tap of {spec['name']} is {list(t.shape)} in "
                                   f"the float graph, {spec['shape']} in the quantized program")
        goldens.append(list(model_outs) + [t.to(torch.float32) for t in tap_outs])
    refs = TwinReferences(per_case={c.id: {} for c in cases})
    for name in ref_names:
        shipped = shipped_records.get(name, {})
        if not shipped.get("captured"):
            refs.records[name] = {"captured": False, "reason": "not captured for the bundle "
                                  "itself: " + shipped.get("reason", "no record")}
            continue
        try:
            if name == FLOAT64:
                gm = copy.deepcopy(prepared).double()
                values = read_values(gm, cases, names, [False] * len(names), torch.float64)
                what = _WHAT[FLOAT64]
            elif name == recipe:
                values = read_values(emulation, cases, names, after)
                values = [[t.to(torch.float32) for t in v] for v in values]
                what = _WHAT["recipe"]
            else:
                raise RuntimeError(f"the quantized twin computes no {name!r} reference")
        except Exception as e:  # noqa: BLE001 - a reference never fails the export
            reason = f"{type(e).__name__}: {first_line(e)}"
            refs.records[name] = {"captured": False, "reason": reason}
            say(f"twin reference {name}: not captured: {reason}")
            continue
        refs.records[name] = dict(shipped, description=TAPS_DESCRIPTION.format(
            shipped=shipped.get("description", name).rstrip("."), what=what))
        for c, v in zip(cases, values):
            own = model_refs.get(c.id, {}).get(name, {})
            refs.per_case[c.id][name] = {**{o: own[o] for o in output_names[:n_model] if o in own},
                                         **dict(zip(output_names[n_model:], v))}
    return goldens, refs
