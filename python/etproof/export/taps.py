"""The tapped twin (docs/manifest.md "The tapped twin"): the same model, backend and
recipe exported once more with ExecuTorch's intermediate-output taps, so that values computed
inside a delegate become extra program outputs the runtime half can compare with their goldens.

The taps are ExecuTorch's own (executorch.devtools.intermediate_output_tap): a ``tap.Tensor``
placeholder after each chosen node of the torch.export program (FULL_TENSOR reducer: the whole
tensor), added before lowering so the partitioner sees them as outputs, and replaced by the
tapped value itself after lowering (``strip_taps_``). The twin is written by etproof.export.pipeline
inside the shipped bundle's staging directory (``NAME/NAME.taps/``), so it is renamed into place
with the bundle; this module decides what is tapped and computes everything the twin's manifest
says about its taps.

Eligible nodes (``eligible_nodes``): ``call_function`` nodes of the exported program whose
output is one floating-point tensor (float32, float16 or float64: the manifest's floating
dtypes) with a static shape, except ``getitem`` and the ops in NOT_TAPPED (views, reshapes,
permutations, copies: they move values without computing any, so their tap repeats the one
before). Default selection (``taps=True``): every eligible node up to DEFAULT_CAP, above it
DEFAULT_CAP evenly spaced; ``taps=N``: N evenly spaced (``spaced_indices``), the first and the
last eligible node always among them (every one when N >= the eligible count). Either way within
TWIN_BYTES_BUDGET: over it the twin keeps only the first golden case, then fewer taps.

May import: errors, the manifest's vocabulary, etproof.contract.arguments (dtype names), etproof.export.references
(the reference names and descriptions); torch and ExecuTorch only inside functions.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from etproof.contract.arguments import dtype_name
from etproof.errors import InvalidArgument, first_line
from etproof.export.references import FLOAT64, HALF_PRECISIONS

# Taps of the default selection (taps=True); above it, that many evenly spaced.
DEFAULT_CAP = 256
# What the twin's golden and reference files of its taps may hold in all, in bytes: every tap's
# value is written per case as the float32 golden, the float64 truth (8 bytes an element) and
# each float16/bfloat16 emulation (written as float32). EfficientNet-Lite0's 160 eligible taps on
# OpenVINO (float64 and bfloat16 references) came to 2.3 GB over its 6 cases; over this budget
# the twin keeps its first golden case only, and then as many evenly spaced taps as fit.
TWIN_BYTES_BUDGET = 256 * 2**20
# The twin's bundle name is NAME + TWIN_SUFFIX; its directory sits inside the shipped bundle.
TWIN_SUFFIX = ".taps"
# A tap's output name: TAP_PREFIX + its zero-padded position (tap.000).
TAP_PREFIX = "tap."
# Ops never tapped (by ATen name, without namespace and overload): they only view, reshape,
# permute or copy their input, so their value is the previous node's, rearranged.
NOT_TAPPED = frozenset({
    "alias", "as_strided", "clone", "contiguous", "detach", "expand", "expand_as", "flatten",
    "lift_fresh_copy", "numpy_T", "permute", "reshape", "select", "slice", "squeeze", "t",
    "transpose", "unflatten", "unsqueeze", "view", "view_as", "_unsafe_view",
})
# What a twin's float64/float16/bfloat16 reference is (the manifest's references[NAME].description).
REFERENCE_DESCRIPTIONS = {
    FLOAT64: ("float64 truth of the tapped program: a deep copy of the eager model converted with "
              ".double(), floating inputs cast to float64, exported with torch.export and tapped "
              "at the same nodes (executorch.devtools.intermediate_output_tap, FULL_TENSOR), run "
              "eagerly in PyTorch {torch}; every output (the model's and each tap) float64"),
    "float16": ("float16 emulation of the tapped program: a deep copy of the eager model and its "
                "floating inputs cast to float16, exported and tapped at the same nodes, run "
                "eagerly in PyTorch {torch} on CPU; outputs cast (exactly) to float32"),
    "bfloat16": ("bfloat16 emulation of the tapped program: a deep copy of the eager model and "
                 "its floating inputs cast to bfloat16, exported and tapped at the same nodes, "
                 "run eagerly in PyTorch {torch} on CPU; outputs cast (exactly) to float32"),
}
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+?)\s*$')


def twin_name(name: str) -> str:
    """The twin's bundle name (and directory, inside the bundle): ``NAME.taps``."""
    return name + TWIN_SUFFIX


def check_taps(taps, *, several: bool, dynamic_shapes, taps_range=None,
               sequences: bool = False, torchao: bool = False) -> None:
    """Refuses (InvalidArgument, stage "export") what the twin does not support, before anything
    runs: ``taps`` other than None/False/True or an int >= 1; several methods, dynamic shapes,
    a golden case that is a sequence of calls (the twin replays each case alone), a torchao
    recipe (``torchao``: 8da4w, int8-weight-only; quantize_ leaves no PT2E graph to tap);
    ``taps_range`` without taps, or other than two whole numbers FIRST <= LAST, FIRST >= 0 (that
    LAST is inside the program is checked by plan_taps)."""
    if taps_range is not None:
        ok = (isinstance(taps_range, (tuple, list)) and len(taps_range) == 2
              and all(isinstance(v, int) and not isinstance(v, bool) for v in taps_range)
              and 0 <= taps_range[0] <= taps_range[1])
        if not ok:
            raise InvalidArgument(f"taps_range must be (FIRST, LAST) with 0 <= FIRST <= LAST, "
                                  f"got {taps_range!r}", "pass two eligible-node indices, e.g. "
                                  "(40, 52)", stage="export")
        if taps is None or taps is False:
            raise InvalidArgument("taps_range without taps: it narrows the tapped twin, and none "
                                  "is asked for", "pass taps=True (or N) with it, or drop it",
                                  stage="export")
    if taps is None or taps is False:
        return
    if taps is not True and (isinstance(taps, bool) or not isinstance(taps, int) or taps < 1):
        raise InvalidArgument(f"taps must be True or a number of taps >= 1, got {taps!r}",
                              "pass taps=True (every eligible node, up to "
                              f"{DEFAULT_CAP}) or taps=N", stage="export")
    refused = []
    if several:
        refused.append("the program has several methods")
    if dynamic_shapes is not None:
        refused.append("dynamic_shapes is set (tapped values would have dynamic shapes)")
    if sequences:
        refused.append("a golden case is a sequence of calls (the twin replays each call alone)")
    if torchao:
        refused.append("the recipe quantizes with torchao's quantize_, which leaves no PT2E "
                       "graph to tap")
    if refused:
        raise InvalidArgument("the tapped twin is not supported here: " + "; ".join(refused),
                              "export without taps, or tap a one-method model with static shapes",
                              stage="export")


def _op_base(target) -> str:
    """``aten.view.default`` -> ``view``."""
    parts = str(target).split(".")
    return parts[1] if len(parts) >= 3 else parts[-1]


def eligible_nodes(ep, also=()) -> list:
    """The nodes of exported program ``ep`` a tap may follow, in graph (execution) order (the
    module docstring's rule). also: torch dtypes that count as floating besides float32, float16
    and float64 (bfloat16, for a program cast to it)."""
    import operator

    import torch

    floats = (torch.float32, torch.float16, torch.float64, *also)
    out = []
    for n in ep.graph.nodes:
        if n.op != "call_function" or n.target is operator.getitem:
            continue
        val = n.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.dtype not in floats:
            continue
        if any(not isinstance(d, int) for d in val.shape):
            continue
        if _op_base(n.target) in NOT_TAPPED:
            continue
        out.append(n)
    return out


def spaced_indices(count: int, n: int) -> list[int]:
    """``n`` evenly spaced indices into ``range(count)``, ascending and distinct, the last
    (count - 1) always included and the first too when n > 1; every index when n >= count."""
    if n >= count:
        return list(range(count))
    if n == 1:
        return [count - 1]
    return sorted({round(k * (count - 1) / (n - 1)) for k in range(n)})


@dataclass
class TapPlan:
    """What is tapped: the selection, the tapped program and ExecuTorch's TapSpecs.

    selection: "every" | "spaced"; eligible: the eligible count; nodes: [(node name, op)] of the
    chosen nodes in graph order; ep: a tapped deep copy of the float32 exported program (its
    outputs: the model's, then one per tap); specs: ExecuTorch's TapSpec per tap, in order.
    """

    selection: str
    eligible: int
    nodes: list
    ep: object
    specs: list = field(default_factory=list)
    eligible_ops: list = field(default_factory=list)  # [(name, op)] of every eligible node
    cases: int = 1  # the golden cases the twin keeps (the first ones; TWIN_BYTES_BUDGET)
    eligible_index: list = field(default_factory=list)  # per chosen node, its index in eligible_ops
    feeds: list | None = None  # per chosen node, the model outputs it reaches (None: unknown)
    taps_range: tuple | None = None  # (first, last) eligible indices the taps were chosen in
    # A quantized program's twin (etproof.export.taps_quantized): per chosen node, the node the program
    # taps (the dequantize after it, or itself) and that dequantize's quantization record (None
    # where the node itself is tapped). Empty for a float program.
    tapped_nodes: list = field(default_factory=list)
    quantization: list = field(default_factory=list)
    # Operators the twin's program adds for its taps (op target -> count): the fresh dequantizes
    # of a quantized twin; delegation_matches expects them delegated on top of the shipped counts.
    added_ops: dict = field(default_factory=dict)


def node_numel(node) -> int:
    """The element count of ``node``'s value (its static shape in meta["val"])."""
    n = 1
    for d in node.meta["val"].shape:
        n *= int(d)
    return n


def fit_budget(sizes: list[int], n: int, cases: int, bytes_per_element: int,
               budget: int = TWIN_BYTES_BUDGET) -> tuple[list[int], int]:
    """(indices into ``sizes``, cases kept): ``spaced_indices(len(sizes), n)`` and every case
    when their values (``sizes`` in elements, ``bytes_per_element`` over the golden and the
    references, per case) fit ``budget``; else the first case only, and the most evenly spaced
    taps whose values fit it (at least one: the last)."""
    def total(idx: list[int], k: int) -> int:
        return sum(sizes[i] for i in idx) * bytes_per_element * k

    idx = spaced_indices(len(sizes), n)
    if total(idx, cases) <= budget:
        return idx, cases
    if total(idx, 1) <= budget:
        return idx, 1
    lo, hi = 1, len(idx)  # the largest count whose spaced taps fit (1 always kept)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if total(spaced_indices(len(sizes), mid), 1) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return spaced_indices(len(sizes), lo), 1


def plan_taps(ep, taps, cases: int = 1, bytes_per_element: int = 12, taps_range=None,
              output_names=None) -> TapPlan:
    """Chooses the nodes of ``ep`` (a float32 torch.export program; not modified) to tap per
    ``taps`` (True or N), within TWIN_BYTES_BUDGET for ``cases`` golden cases of
    ``bytes_per_element`` each (fit_budget; TapPlan.cases says how many cases the twin keeps),
    and taps a deep copy of it. taps_range: ``(first, last)``, eligible indices (0-based,
    inclusive): the taps are chosen among those nodes only (``etproof attribute --bisect``
    narrows the earliest drift this way). output_names: the model's outputs, for each tap's
    ``feeds`` (output_feeds). Raises InvalidArgument (stage "export") when the program has no
    eligible node, or taps_range is not inside the eligible nodes."""
    elig = eligible_nodes(ep)
    if not elig:
        raise InvalidArgument("the tapped twin has nothing to tap: the exported program has no "
                              "node computing one floating-point tensor",
                              "export without taps", stage="export")
    first, last = range_within(taps_range, len(elig))
    window = elig[first:last + 1]
    n = DEFAULT_CAP if taps is True else int(taps)
    picked, kept_cases = fit_budget([node_numel(e) for e in window], n, cases, bytes_per_element)
    chosen = [window[i] for i in picked]
    selection = "every" if len(chosen) == len(window) else "spaced"
    nodes = [(c.name, str(c.target)) for c in chosen]
    tapped, specs = tap_program(ep, [name for name, _ in nodes])
    feeds = output_feeds(ep, output_names) if output_names else None
    return TapPlan(selection, len(elig), nodes, tapped, specs,
                   [(e.name, str(e.target)) for e in elig], kept_cases,
                   [first + i for i in picked],
                   None if feeds is None else [feeds.get(c.name, []) for c in chosen],
                   None if taps_range is None else (first, last))


def range_within(taps_range, eligible: int) -> tuple[int, int]:
    """(first, last): ``taps_range`` (None: every one of the ``eligible`` nodes), checked to lie
    inside them; InvalidArgument (stage "export") when not."""
    first, last = (0, eligible - 1) if taps_range is None else taps_range
    if not 0 <= first <= last < eligible:
        raise InvalidArgument(f"taps_range {first}:{last} is not inside the program's "
                              f"{eligible} eligible nodes (0:{eligible - 1})",
                              "pass FIRST:LAST with 0 <= FIRST <= LAST < the eligible count "
                              "(the twin's taps.eligible)", stage="export")
    return first, last


def output_feeds(ep, output_names: list[str]) -> dict[str, list[str]]:
    """For each node of ``ep``, the model outputs (``output_names``: the program's user outputs,
    in order) whose value it reaches through the graph: node name -> output names, in output
    order. A tap that feeds no output (a dead branch) maps to []."""
    user = [arg for arg, spec in zip(ep.graph.output_node().args[0],
                                     ep.graph_signature.output_specs)
            if spec.kind.name == "USER_OUTPUT"]
    if len(user) != len(output_names):
        raise RuntimeError(f"the exported program has {len(user)} user outputs, "
                           f"{len(output_names)} output names")
    reached: dict[str, list[str]] = {}
    for arg, out_name in zip(user, output_names):
        todo = [arg] if hasattr(arg, "all_input_nodes") else []
        seen = set()
        while todo:
            n = todo.pop()
            if n.name in seen:
                continue
            seen.add(n.name)
            reached.setdefault(n.name, []).append(out_name)
            todo.extend(n.all_input_nodes)
    return reached


def tap_program(ep, names: list[str]):
    """A deep copy of ``ep`` with a FULL_TENSOR tap after each node named in ``names``; returns
    (tapped program, TapSpecs in graph order)."""
    from executorch.devtools.intermediate_output_tap import FULL_TENSOR, tap_intermediate_outputs_

    wanted = set(names)
    tapped = copy.deepcopy(ep)
    tapped, specs = tap_intermediate_outputs_(
        tapped, [(lambda n: n.op == "call_function" and n.name in wanted, FULL_TENSOR)])
    if [s.node_name for s in specs] != list(names):
        raise RuntimeError(f"the tap pass tapped {[s.node_name for s in specs]}, "
                           f"asked {list(names)}")
    return tapped, specs


def run_tapped(tapped, inputs, n_outputs: int) -> list:
    """The tapped program (an ExportedProgram, or its ``.module()`` to run it several times
    without unlifting it each time) run eagerly on ``inputs``: its flat outputs (the model's, then
    the taps'), detached and contiguous. RuntimeError when it returns other than ``n_outputs``."""
    import torch
    import torch.utils._pytree as pytree

    module = tapped.module() if hasattr(tapped, "graph_signature") else tapped
    with torch.no_grad():
        flat, _ = pytree.tree_flatten(module(*inputs))
    if len(flat) != n_outputs or not all(isinstance(t, torch.Tensor) for t in flat):
        raise RuntimeError(f"the tapped program returned {len(flat)} values, expected "
                           f"{n_outputs} tensors")
    return [t.detach().cpu().contiguous() for t in flat]


def tap_names(count: int) -> list[str]:
    """The taps' output names: ``tap.000`` ... zero-padded to at least three digits (more when
    there are over 1000 taps), all the same width."""
    width = max(3, len(str(count - 1)))
    return [f"{TAP_PREFIX}{i:0{width}d}" for i in range(count)]


def tap_output_specs(names: list[str], tensors: list) -> list[dict]:
    """The manifest's ``outputs`` entries of the taps: {"name", "dtype", "shape"} of each tensor."""
    return [{"name": n, "dtype": dtype_name(t.dtype, n), "shape": list(t.shape)}
            for n, t in zip(names, tensors)]


@dataclass
class TwinReferences:
    """As etproof.export.references.References, for the twin: per_case: case id -> reference name ->
    output name -> tensor; records: reference name -> the manifest's entry."""

    per_case: dict = field(default_factory=dict)
    records: dict = field(default_factory=dict)


def twin_references(model, example_inputs, plan: TapPlan, cases, names, output_names,
                    out_specs, log=None) -> TwinReferences:
    """The twin's references ``names`` (float64, float16, bfloat16; any other name is recorded as
    not captured) on every case: the model cast to that dtype (a deep copy), exported with
    torch.export, tapped at the same nodes as the float32 twin, run eagerly. When that program's
    eligible nodes do not correspond one to one (same names and ops, in order) to the float32
    program's, or anything fails, the reference is recorded as not captured with the reason;
    never raises.

    output_names/out_specs: the twin's (model outputs, then taps); float64 outputs stay float64,
    float16/bfloat16 ones are cast to float32.
    """
    import torch

    say = log or (lambda _m: None)
    out = TwinReferences(per_case={c.id: {} for c in cases})
    dtypes = {FLOAT64: torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}
    for name in names:
        try:
            if name not in dtypes:
                raise _NotCaptured(f"the tapped twin computes no {name!r} reference (float64, "
                                   f"float16 and bfloat16 only)")
            results = _cast_and_tap(model, example_inputs, plan, cases, dtypes[name],
                                    output_names, out_specs)
        except _NotCaptured as e:
            out.records[name] = {"captured": False, "reason": str(e)}
            say(f"twin reference {name}: not captured: {e}")
            continue
        except Exception as e:  # noqa: BLE001 - a reference never fails the export
            reason = f"{type(e).__name__}: {first_line(e)}"
            out.records[name] = {"captured": False, "reason": reason}
            say(f"twin reference {name}: not captured: {reason}")
            continue
        out.records[name] = {"captured": True, "description": REFERENCE_DESCRIPTIONS[name]
                             .replace("{torch}", torch.__version__)}
        for c, tensors in zip(cases, results):
            out.per_case[c.id][name] = dict(zip(output_names, tensors))
    return out


class _NotCaptured(Exception):
    """A twin reference that cannot be computed, with the reason the manifest records."""


def _cast_and_tap(model, example_inputs, plan: TapPlan, cases, dtype, output_names,
                  out_specs) -> list:
    import torch

    def cast(inputs):
        return tuple(t.to(dtype) if t.is_floating_point() else t for t in inputs)

    m = copy.deepcopy(model).to(dtype).eval()
    ep = torch.export.export(m, cast(example_inputs))
    elig = [(n.name, str(n.target)) for n in eligible_nodes(ep, also=(dtype,))]
    if elig != plan.eligible_ops:
        diff = next((f"{a} vs {b}" for a, b in zip(plan.eligible_ops, elig) if a != b),
                    f"{len(plan.eligible_ops)} vs {len(elig)} eligible nodes")
        raise _NotCaptured(f"the {dtype} program's eligible nodes do not correspond one to one "
                           f"to the float32 program's (float32 vs {dtype}: {diff})")
    tapped, _ = tap_program(ep, [n for n, _ in plan.nodes])
    tapped = tapped.module()
    results = []
    for c in cases:
        outs = run_tapped(tapped, cast(c.inputs), len(output_names))
        for t, o_name, spec in zip(outs, output_names, out_specs):
            if list(t.shape) != list(spec["shape"]):
                raise _NotCaptured(f"case {c.id!r}: output {o_name!r} is {list(t.shape)} in "
                                   f"{dtype}, {spec['shape']} in float32")
            if spec["dtype"].startswith("float") and t.dtype != dtype:
                raise _NotCaptured(f"case {c.id!r}: output {o_name!r} came back {t.dtype} from "
                                   f"the {dtype} program (the model fixes a dtype inside forward)")
        if dtype != torch.float64:
            outs = [t.to(torch.float32) if t.is_floating_point() else t for t in outs]
        results.append(outs)
    return results


def _is_delegate_call(node) -> bool:
    return node.op == "call_function" and "executorch_call_delegate" in str(node.target)


def delegate_calls(edge) -> int:
    """How many lowered-module calls (``executorch_call_delegate`` nodes) the edge program
    ``edge`` makes, every method together."""
    methods = sorted(getattr(edge, "methods", None) or ["forward"])
    return sum(1 for m in methods for n in edge.exported_program(m).graph.nodes
               if _is_delegate_call(n))


def tapped_in_delegate(edge, n_model_outputs: int, n_taps: int) -> list[bool]:
    """For each tap of the lowered twin ``edge`` (before strip_taps_), whether the tapped value
    is produced inside a delegate: the tap placeholder reads a delegate call's output (a getitem
    of it, or the call itself)."""
    import operator

    graph = edge.exported_program().graph
    outs = list(graph.output_node().args[0])
    taps = outs[n_model_outputs:]
    if len(taps) != n_taps:
        raise RuntimeError(f"the lowered twin has {len(taps)} tap outputs, {n_taps} were added")
    flags = []
    for t in taps:
        src = t.args[0] if getattr(t, "args", None) else t
        if getattr(src, "op", None) == "call_function" and src.target is operator.getitem:
            src = src.args[0]
        flags.append(bool(getattr(src, "op", None)) and _is_delegate_call(src))
    return flags


def delegation_op_key(op: str) -> str:
    """The name ExecuTorch's get_delegation_info gives an operator (the manifest's
    ``delegation.by_operator[].op``): ``aten.linear.default`` -> ``aten_linear_default``."""
    return op.replace(".", "_")


# Left out of delegation_matches: not operators a backend computes (``getitem`` reads one output
# of a delegate call; the twin has one per value its delegates return, taps included).
NOT_COMPARED = frozenset({"getitem"})


def _counts(delegation: dict, less: dict | None = None) -> dict:
    less = {delegation_op_key(k): v for k, v in (less or {}).items()}
    counts = {e["op"]: (e["delegated"] - less.get(e["op"], 0), e["non_delegated"])
              for e in delegation["by_operator"] if e["op"] not in NOT_COMPARED}
    return {k: v for k, v in counts.items() if v != (0, 0)}


def delegation_matches(shipped: dict, twin: dict, op: str | None = None,
                       added: dict | None = None) -> bool:
    """Whether the twin's delegation (the manifest's ``delegation``) has the shipped program's
    delegated/non-delegated counts for every operator but NOT_COMPARED (``op`` given: for that
    one, by its delegation_op_key; absent from both counts as equal). added: operators the twin
    adds for its taps (TapPlan.added_ops), expected delegated on top of the shipped counts."""
    a, b = _counts(shipped), _counts(twin, added)
    if op is not None:
        key = delegation_op_key(op)
        return a.get(key, (0, 0)) == b.get(key, (0, 0))
    return a == b


def source_frame(stack_trace: str | None, cwd: Path | None = None) -> dict | None:
    """The innermost frame of the user's model code in a node's ``stack_trace``: the last frame
    whose file is not PyTorch's or ExecuTorch's own; ``{"file", "line", "code"}`` with ``file``
    relative to ``cwd`` (default: the current directory) when under it, as written otherwise;
    ``code`` that line stripped (read from the file where the trace has none). None when unknown.
    """
    if not stack_trace:
        return None
    import executorch
    import torch

    skip = [str(Path(p).resolve()) + os.sep for p in
            (os.path.dirname(torch.__file__), *getattr(executorch, "__path__", []))]
    lines = stack_trace.splitlines()
    found = None
    for i, text in enumerate(lines):
        m = _FRAME.match(text)
        if not m:
            continue
        path = m.group("file")
        try:
            resolved = str(Path(path).resolve())
        except OSError:
            resolved = path
        if path.startswith("<") or any(resolved.startswith(s) for s in skip):
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) \
            else ""
        found = (path, resolved, int(m.group("line")), code)
    if found is None:
        return None
    path, resolved, line, code = found
    if not code:
        import linecache

        code = linecache.getline(resolved, line).strip()
    base = Path(cwd or os.getcwd()).resolve()
    try:
        shown = Path(resolved).relative_to(base).as_posix()
    except ValueError:
        shown = path
    rec = {"file": shown, "line": line}
    if code:
        rec["code"] = code
    return rec


def taps_record(shipped_name: str, shipped_sha256: str, plan: TapPlan, names: list[str],
                delegated: list[bool], calls_shipped: int, calls_twin: int,
                shipped_delegation: dict, twin_delegation: dict,
                exported_from: str | None = None) -> dict:
    """The twin manifest's ``taps`` object (docs/manifest.md, "The tapped twin"). exported_from:
    the MODEL the export was given (``etproof export``'s MODEL: a built-in name, MODULE:FUNCTION
    or an absolute FILE.py:FUNCTION), for ``etproof attribute --bisect`` to export narrower
    twins; None when unknown (the Python API)."""
    points = []
    for i, (spec, out_name, inside) in enumerate(zip(plan.specs, names, delegated)):
        p = {"output": out_name, "index": i, "node": spec.node_name, "op": spec.op_target,
             "eligible_index": plan.eligible_index[i], "delegated": bool(inside),
             "delegation_matches": delegation_matches(shipped_delegation, twin_delegation,
                                                      spec.op_target, plan.added_ops)}
        if spec.module_path:
            p["module_path"] = spec.module_path
        if spec.module_class:
            p["module_class"] = spec.module_class
        src = source_frame(spec.stack_trace)
        if src is not None:
            p["source"] = src
        if plan.feeds is not None:
            p["feeds"] = list(plan.feeds[i])
        points.append(p)
    rec = {
        "of": {"name": shipped_name, "artifact_sha256": shipped_sha256},
        "selection": plan.selection,
        "eligible": plan.eligible,
        "delegate_calls": {"shipped": calls_shipped, "twin": calls_twin},
        "delegation_matches": delegation_matches(shipped_delegation, twin_delegation,
                                                 added=plan.added_ops),
        "points": points,
    }
    if plan.taps_range is not None:
        rec["range"] = list(plan.taps_range)
    if exported_from:
        rec["exported_from"] = exported_from
    return rec
