"""What export_model accepts: every check it makes before anything is exported or written.

``check_export_arguments`` raises InvalidArgument (stage "export": an export-refused column)
naming the cause and the remedy, and returns the arguments normalized (ExportArguments) with the
inputs' tensor specs. ``etproof.contract.userspec`` runs the same checks on a MODULE:FUNCTION dict, so the
two never disagree. Also the tensor specs of the manifest's ``inputs``/``outputs``.

May import: errors, the manifest's vocabulary (etproof.manifest) and the supported pairs
(etproof.contract.recipes); torch only inside functions.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from etproof.backends import external_weights_backends
from etproof.errors import InvalidArgument, ManifestError, command_name
from etproof.manifest import (
    DTYPES,
    LAYOUTS,
    NAME_RE,
    check_budget,
    check_labels,
    check_output_specs,
    check_preprocessing,
    check_weights,
    shape_fits,
)
from etproof.contract.recipes import RECIPES, supported_pairs_text

# str(torch dtype) -> the manifest's dtype name (etproof.manifest.DTYPES).
_TORCH_DTYPE_NAMES = {
    "torch.float32": "float32", "torch.float16": "float16", "torch.float64": "float64",
    "torch.int8": "int8", "torch.uint8": "uint8", "torch.int16": "int16",
    "torch.int32": "int32", "torch.int64": "int64", "torch.bool": "bool",
}


@dataclass
class GoldenCase:
    """One golden case: ``id`` (a name), ``data`` ("real"|"synthetic"), ``origin`` (where the
    inputs came from) and ``inputs`` (tensors in input order, the example inputs' shapes and
    dtypes).

    A step of a sequence case (docs/design.md §5, "State"): ``sequence`` is ``(CASE, k)``, the
    sequence's id and the step's index from 0, and ``id`` is ``CASE.stepK``; ``method`` is the
    method the step named, None where it named none. Step 0 starts from the model's initial
    state; every later step (``carries``) runs on the state the step before it left. A step
    whose step before ran through another method of the program has ``prefix``: every step
    before it, ``((METHOD, INPUTS), ...)`` in order, which a run of this method alone replays
    from the initial state first (etproof.export.state.run_fresh)."""

    id: str
    data: str
    origin: str
    inputs: tuple
    sequence: tuple | None = None
    method: str | None = None
    prefix: tuple = ()

    @property
    def carries(self) -> bool:
        """This call continues the state the call before it left (a step after the first)."""
        return self.sequence is not None and self.sequence[1] > 0

    @property
    def entry(self):
        """The state this call starts from, as etproof.export.state.run_fresh takes it: False,
        the initial state; True, the state the call before it left; ``prefix``, the initial
        state after those calls."""
        return self.prefix or self.carries


@dataclass
class ExportArguments:
    """export_model's arguments as check_export_arguments normalized them."""

    example_inputs: tuple
    cases: list
    model_name: str
    preprocessing: dict | None
    # torch.export's dynamic_shapes, positional (one None or {axis: Dim} per input); None: static
    dynamic_shapes: tuple | None = None
    # the manifest's inputs[i].dynamic_dims as declared, per input ([] where static)
    dynamic_dims: list | None = None


@dataclass
class ExportOptions:
    """export_model's optional arguments: everything but the model, its example and golden
    inputs, their names, the bundle's name, the output directory, backend and recipe. A model
    spec's optional keys (etproof.contract.userspec.OPTIONAL) are these fields' names.

    preprocessing: the manifest's ``preprocessing`` (what the inputs went through), where known.
    labels: ``{"output", "source", "names"}``: the class names of one output.
    model_name: the manifest's ``model`` (default: the bundle's name).
    golden_meta: ``{case_id: {"data": "real"|"synthetic", "origin": str}}`` for golden inputs
    given as ``(case_id, tensors)``.
    layouts: ``{input_or_output_name: "nchw"|"nhwc"}`` for rank-4 tensors whose layout is known;
    absent means unknown and is not written.
    compute_unit: the backend's compute unit where the table offers a choice (default: the
    table's).
    weights: ``{"kind": "pretrained"|"seeded", "source": str}``, where known (docs/manifest.md).
    slice_axis: ``{output name: int >= 0 | None}``, the axis the gate judges slices along (None:
    do not slice; absent: the gate's default). integer_atol: ``{integer or bool output name:
    number >= 0}`` (absent: exact). budget: ``{"min_sqnr_db"?, "min_cosine"?,
    "top1_agreement"?}``, the accuracy the recipe may cost. All three go into the manifest.
    dynamic_shapes: torch.export's, with a finite ``max`` on every Dim (check_dynamic_shapes);
    the manifest records each input's dynamic dimensions with the range torch.export kept, and
    golden cases may have any size inside it (at least the minimum, the maximum and one between).
    external_weights: True writes the program's constant weights into ``NAME.ptd`` beside the
    .pte (ExecuTorch's external constants, delegated XNNPACK weights included) and lists it in
    the manifest's data_files; portable and xnnpack only (check_external_weights).
    methods: a program with several methods (``encode``, ``decode``): ``{METHOD: {"example_inputs",
    "input_names", "output_names", "golden_inputs", "golden_meta"?, "dynamic_shapes"?}}``, each
    entry what the four (and golden_meta, dynamic_shapes) are for a one-method program, for
    ``model.METHOD``; those arguments of export_model are then None. Every method is exported,
    lowered together into one program, and the manifest is schema_version 2 (docs/manifest.md),
    goldens written as ``METHOD.CASE.*.npy``. layouts, slice_axis and integer_atol name tensors
    of any method; external_weights moves every method's weights into the one NAME.ptd; labels
    and preprocessing are refused with methods.
    verify: run the written program once per method in ExecuTorch's Python runtime (first golden)
    when the runtime has the program's delegates; a program that fails to run is an export
    failure (stage "lower").
    taps: True (every eligible node, up to etproof.export.taps.DEFAULT_CAP) or N (N evenly spaced)
    also writes the tapped twin ``OUT/NAME/NAME.taps/`` (etproof.export.taps; docs/manifest.md
    "The tapped twin"), staged and renamed with the bundle; the shipped bundle is byte for byte
    what it is without taps. Float and PT2E-quantized recipes of a one-method model with static
    shapes only (InvalidArgument otherwise, before anything runs). None/False: no twin.
    taps_range: ``(FIRST, LAST)``, the twin's taps chosen among the program's eligible nodes
    FIRST..LAST only (0-based, inclusive; what ``etproof attribute --bisect`` asks for).
    taps_from: the MODEL this was exported from, recorded as ``taps.exported_from``.
    greedy_output: a language model's logits output (float, rank >= 2: positions, vocabulary):
    the runtime half reports, per sequence case, how many tokens a greedy decode of the program
    (and of the recipe's emulation) takes as the float32 model does before the first difference;
    the budget's ``min_greedy_tokens`` judges the recipe's. Needs a sequence case.
    """

    preprocessing: dict | None = None
    labels: dict | None = None
    model_name: str | None = None
    golden_meta: dict | None = None
    layouts: dict | None = None
    compute_unit: str | None = None
    weights: dict | None = None
    slice_axis: dict | None = None
    integer_atol: dict | None = None
    budget: dict | None = None
    dynamic_shapes: Any = None
    external_weights: bool = False
    methods: dict | None = None
    verify: bool = True
    taps: bool | int | None = None
    taps_range: tuple[int, int] | None = None
    taps_from: str | None = None
    # the output whose argmax over its last axis, at its last position (axis -2), is the next
    # token a greedy decode takes: the manifest's greedy.output (docs/manifest.md)
    greedy_output: str | None = None


def options_from(options: ExportOptions | None, keywords: dict) -> ExportOptions:
    """export_model's options: ``options`` (copied: export_model resolves some of them), with the
    keyword arguments of the same names set over it. An unknown keyword is TypeError, as for any
    function."""
    names = {f.name for f in fields(ExportOptions)}
    unknown = sorted(set(keywords) - names)
    if unknown:
        raise TypeError(f"export_model() got unexpected keyword argument(s) {unknown}")
    return replace(options or ExportOptions(), **keywords)


def _bad(cause: str, remedy: str) -> InvalidArgument:
    return InvalidArgument(cause, remedy, stage="export")


def _check_name(kind: str, value: Any) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value) or value in (".", ".."):
        raise _bad(f"invalid {kind} {value!r}",
                   f"a {kind} is made of letters, digits, '.', '_' and '-' ([A-Za-z0-9._-]+), "
                   "and is not '.' or '..'")
    return value


def check_export_arguments(model, example_inputs, name, backend, recipe, input_names,
                           output_names, golden_inputs, preprocessing=None, labels=None,
                           model_name=None, golden_meta=None, layouts=None, compute_unit=None,
                           weights=None, slice_axis=None, integer_atol=None, budget=None,
                           dynamic_shapes=None, external_weights=False, method=None):
    """Every check export_model makes before it writes anything; raises InvalidArgument.

    Returns the normalized arguments and the input tensor specs. slice_axis and integer_atol are
    checked here by output name and value; against each output's rank and dtype once the eager
    outputs give them (apply_output_options). dynamic_shapes: see check_dynamic_shapes;
    external_weights: see check_external_weights. method: the method of a program with several
    (None: the one-method program); its golden cases may then be empty, and a sequence step
    naming another method is kept unchecked (``c.method``, the tensors as given) for that
    method's checks (etproof.contract.program.check_methods).
    """
    check_external_weights(external_weights, backend)
    args = _check_arguments(model, example_inputs, name, backend, recipe, input_names,
                            output_names, golden_inputs, preprocessing, labels, model_name,
                            golden_meta, layouts, compute_unit, dynamic_shapes, method)
    if weights is not None:
        _as_argument(check_weights, "weights", weights)
    _check_output_options(slice_axis, integer_atol, list(output_names))
    if budget is not None:
        _as_argument(check_budget, "budget", budget)
    in_specs = tensor_specs(input_names, args.example_inputs, layouts or {}, "input")
    for spec, dims in zip(in_specs, args.dynamic_dims or []):
        set_dynamic_dims(spec, dims)
    if args.preprocessing is not None:
        _as_argument(check_preprocessing, "preprocessing", args.preprocessing, in_specs)
    return args, in_specs


def check_external_weights(external_weights, backend: str) -> None:
    """external_weights must be a bool; True only for a backend whose table entry has
    external_weights (data/backends.json: ExecuTorch writes a NAME.ptd for the portable backend's
    and XNNPACK's constants; other delegates keep their weights inside their own blobs). Raises
    InvalidArgument naming the value or the backend and the remedy."""
    if not isinstance(external_weights, bool):
        raise _bad(f"external_weights must be True or False, got {external_weights!r}",
                   "set external_weights to True to store the program's constant weights in "
                   "NAME.ptd beside the .pte, or False (the default) to keep them in the .pte")
    able = external_weights_backends()
    if external_weights and backend not in able:
        raise _bad(f"external_weights: backend {backend!r} keeps its weights inside its own "
                   "delegate blob; ExecuTorch writes a NAME.ptd only for "
                   f"{', '.join(able)}",
                   "drop external_weights for this backend, or export with "
                   f"{' or '.join(able)}")


def check_output_labels(labels: dict, out_specs: list) -> None:
    """The manifest's labels check (etproof.manifest.check_labels) against the outputs' specs,
    once the eager outputs give their shapes; raises InvalidArgument."""
    _as_argument(check_labels, "labels", labels, out_specs)


def _check_output_options(slice_axis, integer_atol, output_names: list) -> None:
    for key, opt in (("slice_axis", slice_axis), ("integer_atol", integer_atol)):
        if opt is None:
            continue
        if not isinstance(opt, dict):
            raise _bad(f"{key} must be a dict {{output name: value}}, got {type(opt).__name__}",
                       f"see docs/manifest.md, 'outputs[i].{key}'")
        for n, x in opt.items():
            if n not in output_names:
                raise _bad(f"{key} given for unknown output {n!r}", f"outputs: {output_names}")
            if key == "slice_axis" and x is not None and (
                    isinstance(x, bool) or not isinstance(x, int) or x < 0):
                raise _bad(f"slice_axis of {n!r} must be an int >= 0 or None (do not slice), "
                           f"got {x!r}", "see docs/manifest.md, 'outputs[i].slice_axis'")
            if key == "integer_atol" and (isinstance(x, bool) or not isinstance(x, (int, float))
                                          or not x >= 0 or x == float("inf")):
                raise _bad(f"integer_atol of {n!r} must be a finite number >= 0, got {x!r}",
                           "see docs/manifest.md, 'outputs[i].integer_atol'")


def apply_output_options(out_specs: list, slice_axis: dict | None,
                         integer_atol: dict | None) -> None:
    """Writes the user's slice_axis and integer_atol into the output specs (the manifest's
    outputs[i]) and checks them against each output's rank and dtype; InvalidArgument."""
    for spec in out_specs:
        if slice_axis and spec["name"] in slice_axis:
            spec["slice_axis"] = slice_axis[spec["name"]]
        if integer_atol and spec["name"] in integer_atol:
            spec["integer_atol"] = integer_atol[spec["name"]]
    _as_argument(check_output_specs, "outputs", out_specs)


def resolve_compute_unit(backend: str, recipe: str, compute_unit: str | None) -> str | None:
    """The compute unit the manifest records: the recipe's own (data/backends.json) where it has
    one, which ``compute_unit`` may only repeat (else InvalidArgument); else ``compute_unit``."""
    fixed = RECIPES[(backend, recipe)]["compute_unit"]
    if fixed is None:
        return compute_unit
    if compute_unit not in (None, fixed):
        raise _bad(f"{backend}/{recipe} computes on compute unit {fixed!r} (data/backends.json), "
                   f"not {compute_unit!r}", "omit compute_unit: the recipe sets it")
    return fixed


def _as_argument(check, section: str, *args) -> None:
    """Runs a manifest check; its ManifestError becomes InvalidArgument naming the field."""
    try:
        check(*args)
    except ManifestError as e:
        raise _bad(e.cause.replace("manifest field", "field"),
                   f"see docs/manifest.md, '{section}'") from e


GOLDEN_DATA_MEANING = ("'real' for real-domain inputs (photos, sentences, recordings), "
                       "'synthetic' for generated ones (torch.randn, constants)")


def _check_arguments(model, example_inputs, name, backend, recipe, input_names,
                     output_names, golden_inputs, preprocessing, labels, model_name,
                     golden_meta, layouts, compute_unit, dynamic_shapes=None,
                     method=None) -> ExportArguments:
    import torch

    _check_name("bundle name", name)
    if (backend, recipe) not in RECIPES:
        known_backend = any(b == backend for b, _ in RECIPES)
        what = (f"recipe {recipe!r} for backend {backend!r}" if known_backend
                else f"backend {backend!r}")
        raise _bad(f"unsupported {what}",
                   f"supported (backend/recipe) pairs: {supported_pairs_text()}")
    if not isinstance(model, torch.nn.Module):
        raise _bad(f"model must be a torch.nn.Module, got {type(model).__name__}",
                   "pass the PyTorch module to export")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    input_names = list(input_names)
    output_names = list(output_names)
    if not all(isinstance(t, torch.Tensor) for t in example_inputs):
        raise _bad("example_inputs must be a tuple of tensors (empty for a model without inputs)",
                   "pass the model's positional inputs as tensors")
    if len(input_names) != len(example_inputs):
        raise _bad(f"{len(input_names)} input names for {len(example_inputs)} example inputs",
                   "name every positional input once, in order")
    for kind, names in (("input name", input_names), ("output name", output_names)):
        for n in names:
            _check_name(kind, n)
    if not output_names:
        raise _bad("no output names", "name every output of the model, in order")
    all_names = input_names + output_names
    if len(set(all_names)) != len(all_names):
        raise _bad(f"tensor names repeat: {all_names}", "give each input and output its own name")
    for t, n in zip(example_inputs, input_names):
        dtype_name(t.dtype, n)
    torch_dynamic, dynamic_dims = check_dynamic_shapes(dynamic_shapes, example_inputs,
                                                       input_names)

    cases = _check_golden_cases(golden_inputs, golden_meta, example_inputs, input_names,
                                dynamic_dims, method)
    _check_layouts(layouts, example_inputs, input_names, all_names)

    if model_name is None:
        model_name = type(model).__name__
    if not isinstance(model_name, str) or not model_name:
        raise _bad(f"invalid model name {model_name!r}", "pass the source model's name")

    pre = _normalized_preprocessing(preprocessing)
    if labels is not None:
        if not isinstance(labels, dict) or set(labels) != {"output", "source", "names"}:
            raise _bad("labels must be {'output', 'source', 'names'}",
                       "see docs/manifest.md, 'labels'")
        if labels["output"] not in output_names:
            raise _bad(f"labels name unknown output {labels['output']!r}",
                       f"outputs: {output_names}")
    if compute_unit is not None and (not isinstance(compute_unit, str) or not compute_unit):
        raise _bad("compute_unit must be a non-empty string", "omit it where the backend has none")
    return ExportArguments(example_inputs, cases, model_name, pre,
                           torch_dynamic, dynamic_dims if torch_dynamic else None)


def _check_golden_cases(golden_inputs, golden_meta, example_inputs: tuple, input_names: list,
                        dynamic_dims: list, method=None) -> list:
    """The golden cases as GoldenCase, each checked against the example inputs (dtype, shape,
    a dynamic dimension's range), at least one (none allowed for a ``method`` of several, whose
    cases may all come from other methods' sequences), ids distinct, every dynamic dimension
    covered; a step naming another method than ``method`` is left for that method to check.
    Raises InvalidArgument."""
    cases = [c for g in list(golden_inputs or [])
             for c in _golden_cases(g, golden_meta, example_inputs, input_names, dynamic_dims,
                                    method)]
    if not cases and method is None:
        raise _bad("no golden inputs", "pass at least one golden case (real data where the model "
                   "has a domain)")
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        raise _bad(f"golden case ids repeat: {ids}", "give each golden case its own id")
    own = [c for c in cases if not is_foreign_step(c, method)]
    if own:
        _check_dynamic_coverage(own, input_names, dynamic_dims)
    return cases


def is_foreign_step(case: GoldenCase, method) -> bool:
    """A sequence step listed under ``method`` (of a program with several) that names another
    method: its inputs are that method's, checked there."""
    return method is not None and case.method is not None and case.method != method


STEPS_REMEDY = ("give a sequence case as (case_id, data, origin, {\"steps\": [INPUTS, ...]}), "
                "each step the method's inputs or (METHOD, INPUTS), at least one step")


def _golden_cases(g, golden_meta, example_inputs: tuple, input_names: list,
                  dynamic_dims: list, own_method=None) -> list:
    """One golden case as GoldenCase (_golden_case), or a sequence case — its tensors
    ``{"steps": [INPUTS or (METHOD, INPUTS), ...]}`` — as one GoldenCase per step, ids
    ``CASE.stepK``, in order; raises InvalidArgument naming the case and the step."""
    tensors = g.inputs if isinstance(g, GoldenCase) else g[-1] if isinstance(g, (tuple, list)) and g else None
    if not isinstance(tensors, dict):
        return [_golden_case(g, golden_meta, example_inputs, input_names, dynamic_dims)]
    head = _golden_case(tuple(g[:-1]) + ((),) if not isinstance(g, GoldenCase) else
                        GoldenCase(g.id, g.data, g.origin, ()), golden_meta, (), [], [])
    steps = tensors.get("steps")
    if set(tensors) != {"steps"} or not isinstance(steps, (list, tuple)) or not steps:
        raise _bad(f"golden case {head.id!r}: a sequence case's inputs must be {{\"steps\": "
                   f"[...]}} with at least one step, got keys {sorted(map(str, tensors))}",
                   STEPS_REMEDY)
    cases = []
    for k, step in enumerate(steps):
        method = None
        if isinstance(step, (tuple, list)) and len(step) == 2 and isinstance(step[0], str):
            method, step = step
        sid = f"{head.id}.step{k}"
        c = GoldenCase(sid, head.data, head.origin, step, (head.id, k), method)
        if not is_foreign_step(c, own_method):
            c = step_case(c, example_inputs, input_names, dynamic_dims)
        cases.append(c)
    return cases


def step_case(c: GoldenCase, example_inputs: tuple, input_names: list,
              dynamic_dims: list) -> GoldenCase:
    """A sequence step ``c`` (its tensors as given) checked against the inputs of the method
    it runs through; raises InvalidArgument naming the step."""
    checked = _golden_case((c.id, c.data, c.origin, c.inputs), None, example_inputs,
                           input_names, dynamic_dims)
    return replace(c, inputs=checked.inputs)


def _golden_case(g, golden_meta, example_inputs: tuple, input_names: list,
                 dynamic_dims: list) -> GoldenCase:
    """One golden case: a GoldenCase, ``(case_id, data, origin, tensors)`` or ``(case_id,
    tensors)`` with golden_meta[case_id]; raises InvalidArgument."""
    import torch

    if isinstance(g, GoldenCase):
        cid, data, origin, tensors = g.id, g.data, g.origin, g.inputs
    elif len(g) == 4:
        cid, data, origin, tensors = g
    elif len(g) == 2:
        cid, tensors = g
        meta = (golden_meta or {}).get(cid)
        if not meta:
            raise _bad(f"golden case {cid!r} has no data/origin",
                       "pass (case_id, data, origin, tensors) or golden_meta[case_id]")
        data, origin = meta.get("data"), meta.get("origin")
    else:
        raise _bad("golden inputs must be (case_id, data, origin, tensors)",
                   "pass one tuple per golden case")
    _check_name("golden case id", cid)
    if data not in ("real", "synthetic"):
        raise _bad(f"golden case {cid!r}: data must be 'real' or 'synthetic', got {data!r}",
                   f"data says what the inputs are: {GOLDEN_DATA_MEANING}")
    if not isinstance(origin, str) or not origin:
        raise _bad(f"golden case {cid!r}: origin must be a non-empty string",
                   "say where the inputs came from (file, package, seed)")
    if isinstance(tensors, torch.Tensor):
        tensors = (tensors,)
    tensors = tuple(tensors)
    if len(tensors) != len(example_inputs):
        raise _bad(f"golden case {cid!r} has {len(tensors)} inputs, the model takes "
                   f"{len(example_inputs)}", "give every golden case all inputs")
    for t, e, n, dims in zip(tensors, example_inputs, input_names, dynamic_dims):
        want = _spec_shape(e, dims)
        if (not isinstance(t, torch.Tensor) or t.dtype != e.dtype
                or not shape_fits(t.shape, want)):
            raise _bad(f"golden case {cid!r}: input {n!r} must be a {e.dtype} tensor of shape "
                       f"{want}" + (" (-1: a dynamic dimension)" if dims else ""),
                       "golden inputs must match the example inputs")
        for d in dims:
            if not d["min"] <= t.shape[d["axis"]] <= d["max"]:
                raise _bad(f"golden case {cid!r}: input {n!r} has size {t.shape[d['axis']]} in "
                           f"dimension {d['axis']} ({d['name']!r}), outside its range "
                           f"{d['min']}..{d['max']}", "give golden inputs inside the range "
                           "the dynamic dimension declares")
    return GoldenCase(cid, data, origin, tensors)


def _check_layouts(layouts, example_inputs: tuple, input_names: list, all_names: list) -> None:
    """Each layout names a known tensor, is one of LAYOUTS, and an input's is of rank 4."""
    for n, lay in (layouts or {}).items():
        if n not in all_names:
            raise _bad(f"layout given for unknown tensor {n!r}", f"tensors: {all_names}")
        if lay not in LAYOUTS:
            raise _bad(f"layout of {n!r} must be one of {LAYOUTS}, got {lay!r}",
                       "layouts are 'nchw' or 'nhwc'")
        if n in input_names and example_inputs[input_names.index(n)].dim() != 4:
            raise _bad(f"layout given for {n!r}, which is not rank 4",
                       "layouts apply to rank-4 tensors only")


def _normalized_preprocessing(preprocessing) -> dict | None:
    """A copy of the preprocessing dict with its numbers as the manifest writes them."""
    pre = None
    if preprocessing is not None:
        if not isinstance(preprocessing, dict):
            raise _bad("preprocessing must be a dict", "see docs/manifest.md, 'preprocessing'")
        pre = dict(preprocessing)
        for k in ("mean", "std"):
            if k in pre and isinstance(pre[k], (list, tuple)):
                pre[k] = [float(x) for x in pre[k]]
        for k in ("crop", "value_range"):
            if k in pre and isinstance(pre[k], tuple):
                pre[k] = list(pre[k])
    return pre


def check_dynamic_shapes(dynamic_shapes, example_inputs: tuple, input_names: list):
    """Normalizes the model spec's ``dynamic_shapes``: torch.export's own form, either positional
    (a tuple with one ``None`` or ``{axis: torch.export.Dim(NAME, min=LO, max=HI)}`` per input)
    or keyed by input name (``{input name: {axis: Dim}}``). Every Dim needs a finite ``max``
    (ExecuTorch plans memory for the largest size). The example input's size must lie inside the
    range; one Dim may be shared between inputs (the same symbol: the sizes must agree).

    Returns (the positional tuple torch.export takes, or None when nothing is dynamic; per input
    the manifest's ``dynamic_dims`` as declared: ``[{"axis", "name", "min", "max"}]``, sorted by
    axis). Raises InvalidArgument naming the input, the axis and the remedy.
    """
    import torch

    n = len(example_inputs)
    if dynamic_shapes is None:
        return None, [[] for _ in range(n)]
    if isinstance(dynamic_shapes, dict):
        unknown = [k for k in dynamic_shapes if k not in input_names]
        if unknown:
            raise _bad(f"dynamic_shapes names unknown inputs {unknown}",
                       f"key it by input name (inputs: {input_names}) or give a tuple, one "
                       "entry per input")
        per_input = [dynamic_shapes.get(nm) for nm in input_names]
    elif isinstance(dynamic_shapes, (tuple, list)) and len(dynamic_shapes) == n:
        per_input = list(dynamic_shapes)
    else:
        raise _bad(f"dynamic_shapes must be a dict {{input name: {{axis: Dim}}}} or a tuple of "
                   f"{n} entries (None or {{axis: Dim}}), got {type(dynamic_shapes).__name__}"
                   + (f" of {len(dynamic_shapes)}" if isinstance(dynamic_shapes, (tuple, list))
                      else ""),
                   f"see `{command_name()} export --help`, 'dynamic_shapes'")
    dims_out: list[list[dict]] = []
    size_of: dict[str, int] = {}
    for t, nm, entry in zip(example_inputs, input_names, per_input):
        dims: list[dict] = []
        if entry is not None:
            if not isinstance(entry, dict):
                raise _bad(f"dynamic_shapes of {nm!r} must be a dict {{axis: Dim}} or None, got "
                           f"{type(entry).__name__}", "torch.export.Dim('NAME', min=LO, max=HI)")
            for axis, dim in sorted(entry.items(), key=lambda kv: str(kv[0])):
                if isinstance(axis, bool) or not isinstance(axis, int) or not 0 <= axis < t.dim():
                    raise _bad(f"dynamic_shapes of {nm!r}: axis {axis!r} is not a dimension of "
                               f"its rank-{t.dim()} example input", "give axes 0..rank-1")
                if dim is None:
                    continue
                if not isinstance(dim, torch.export.Dim):
                    raise _bad(f"dynamic_shapes of {nm!r}, axis {axis}: {dim!r} is not a "
                               "torch.export.Dim", "use torch.export.Dim('NAME', min=LO, max=HI)")
                lo, hi = dim.min, dim.max
                if not isinstance(hi, int) or hi > 2**31 - 1:
                    raise _bad(f"dynamic_shapes of {nm!r}, axis {axis}: Dim {dim.__name__!r} has "
                               "no finite max", f"give Dim({dim.__name__!r}, min=LO, max=HI): "
                               "ExecuTorch plans memory for the largest size")
                size = int(t.shape[axis])
                if not lo <= size <= hi:
                    raise _bad(f"dynamic_shapes of {nm!r}, axis {axis}: the example input's size "
                               f"{size} is outside Dim {dim.__name__!r}'s range {lo}..{hi}",
                               "give an example input inside the range (not its minimum when "
                               "that is 0 or 1: torch.export specializes those)")
                if size_of.setdefault(dim.__name__, size) != size:
                    raise _bad(f"dynamic_shapes: Dim {dim.__name__!r} has size "
                               f"{size_of[dim.__name__]} and {size} in the example inputs",
                               "inputs that share a Dim must have the same size in it")
                dims.append({"axis": axis, "name": dim.__name__, "min": int(lo), "max": int(hi)})
        dims_out.append(sorted(dims, key=lambda d: d["axis"]))
    if not any(dims_out):
        return None, dims_out
    torch_form = tuple({d["axis"]: entry[d["axis"]] for d in dims} if dims else None
                       for dims, entry in zip(dims_out, per_input))
    return torch_form, dims_out


def _spec_shape(t, dims: list) -> list:
    """The manifest shape of tensor ``t`` with its dynamic axes (``dims``) as -1."""
    shape = [int(d) for d in t.shape]
    for d in dims:
        shape[d["axis"]] = -1
    return shape


def set_dynamic_dims(spec: dict, dims: list) -> None:
    """Marks ``dims`` (``[{"axis", "name", "min", "max"}]``) on a manifest tensor spec: -1 in its
    shape and its ``dynamic_dims``; nothing when ``dims`` is empty."""
    if dims:
        for d in dims:
            spec["shape"][d["axis"]] = -1
        spec["dynamic_dims"] = [dict(d) for d in dims]


def _check_dynamic_coverage(cases: list, input_names: list, dynamic_dims: list) -> None:
    """Each dynamic dimension's golden sizes must include its minimum, its maximum and one size
    between (where the range has one): a dynamic program judged at one size is judged nowhere
    else (docs/design.md §5). Raises InvalidArgument naming the dimension and the sizes."""
    seen: dict[str, tuple[dict, set]] = {}
    for i, dims in enumerate(dynamic_dims):
        for d in dims:
            entry = seen.setdefault(d["name"], (d, set()))
            for c in cases:
                entry[1].add(int(c.inputs[i].shape[d["axis"]]))
    for name, (d, sizes) in seen.items():
        lo, hi = d["min"], d["max"]
        missing = [what for what, ok in (
            (f"the minimum {lo}", lo in sizes), (f"the maximum {hi}", hi in sizes),
            ("a size between", hi - lo < 2 or any(lo < s < hi for s in sizes))) if not ok]
        if missing:
            raise _bad(f"dynamic dimension {name!r} (range {lo}..{hi}): the golden cases have "
                       f"sizes {sorted(sizes)}, not {', '.join(missing)}",
                       "give golden cases at the minimum, the maximum and one size between, or "
                       "narrow the Dim's range to the sizes the model is used at")


def dtype_name(dtype, tensor_name: str | None = None) -> str:
    """The manifest's name of a torch dtype (float32, int64, ...); InvalidArgument naming
    ``tensor_name`` for a dtype the manifest cannot carry (etproof.manifest.DTYPES)."""
    name = _TORCH_DTYPE_NAMES.get(str(dtype))
    if name is None:
        raise _bad(f"tensor {tensor_name!r} has dtype {dtype}, which the manifest cannot carry",
                   f"use one of {', '.join(DTYPES)}")
    return name


def tensor_specs(names, tensors, layouts: dict, kind: str) -> list:
    """The manifest's tensor specs [{"name", "dtype", "shape"[, "layout"]}] of ``tensors`` (in
    ``names`` order); ``layouts`` {name: "nchw"|"nhwc"} applies to rank-4 tensors only
    (InvalidArgument naming the ``kind``, "input" or "output", otherwise)."""
    specs = []
    for n, t in zip(names, tensors):
        spec = {"name": n, "dtype": dtype_name(t.dtype, n), "shape": [int(d) for d in t.shape]}
        if n in layouts:
            if t.dim() != 4:
                raise _bad(f"layout given for {kind} {n!r}, which is not rank 4",
                           "layouts apply to rank-4 tensors only")
            spec["layout"] = layouts[n]
        specs.append(spec)
    return specs
