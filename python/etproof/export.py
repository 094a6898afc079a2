"""Export one PyTorch model to one bundle: program, manifest, goldens — atomically.

Built on ExecuTorch's own export API (torch.export -> PT2E quantization where the recipe asks ->
to_edge_transform_and_lower -> to_executorch). Nothing here re-implements lowering.

Bundle layout (docs/manifest.md)::

    OUT/NAME/NAME.pte
    OUT/NAME/NAME.ptd                 only where the backend writes named data
    OUT/NAME/NAME.etproof.json
    OUT/NAME/NAME.goldens/CASE.in.INPUT.npy, CASE.out.OUTPUT.npy, CASE.ref.REFERENCE.OUTPUT.npy

Everything is written into ``OUT/.NAME.tmp-XXXX`` and renamed into place at the very end; an
existing bundle of the same name is kept until the new one is complete. Any failure removes the
temporary directory and raises a typed error naming the stage.

This module runs the stages in order; each lives in its own module:

    etproof.arguments   what export_model accepts (checked before anything runs)
    etproof.quantize    PT2E quantization for the int8 recipes
    etproof.references  the float64 truth and the recipe's and precision's eager emulations
    etproof.lower       the table's partitioner, lowering, the Python-runtime check
    etproof.bundle      the bundle's files and the atomic rename
    etproof.toolchain   versions and the delegates a program calls
    etproof.recipes     the supported (backend, recipe) pairs, from the backend table

May import all of those, etproof.manifest and etproof.errors; torch only inside functions. The
names below (``__all__``) are the export half's public API; callers inside etproof import each
from its own module.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from etproof.arguments import (
    GOLDEN_DATA_MEANING,
    GoldenCase,
    apply_output_options,
    check_export_arguments,
    check_output_labels,
    dtype_name,
    resolve_compute_unit,
    tensor_specs,
)
from etproof.bundle import (
    file_ref,
    install,
    staging_dir,
    write_goldens,
    write_program,
    write_references,
)
from etproof.delegation import delegation_record
from etproof.errors import ExportError, InvalidArgument, in_stage
from etproof.lower import (
    TEST_FAIL_ENV,
    check_export_needs,
    effective_precision,
    lower,
    tag_external_weights,
    verify_runs,
)
from etproof.manifest import MANIFEST_SUFFIX, SCHEMA_VERSION, shape_fits, write_manifest
from etproof.quantize import (
    EMULATES,
    PAD_SKIP_REASON,
    PAD_WORKAROUND,
    QUANT_SCHEMES,
    find_padded_convs,
    output_quantization,
    quantize,
)
from etproof.recipes import (
    EXECUTORCH_BACKENDS,
    RECIPES,
    supported_backends,
    supported_pairs,
    supported_pairs_text,
    supported_recipes,
)
from etproof.references import capture_references, reference_names
from etproof.toolchain import delegates_in_program, program_calls, toolchain_versions, version

__all__ = [
    "EXECUTORCH_BACKENDS", "GOLDEN_DATA_MEANING", "GoldenCase", "PAD_SKIP_REASON",
    "PAD_WORKAROUND", "QUANT_SCHEMES", "RECIPES", "TEST_FAIL_ENV", "check_export_arguments",
    "check_export_needs", "delegates_in_program", "effective_precision", "export_model",
    "find_padded_convs", "output_quantization", "supported_backends", "supported_pairs",
    "supported_pairs_text", "supported_recipes", "toolchain_versions",
]


def export_model(
    model,
    example_inputs: Sequence,
    name: str,
    out_dir,
    backend: str,
    recipe: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    golden_inputs: Iterable,
    preprocessing: dict | None = None,
    labels: dict | None = None,
    model_name: str | None = None,
    golden_meta: dict | None = None,
    layouts: dict | None = None,
    compute_unit: str | None = None,
    weights: dict | None = None,
    slice_axis: dict | None = None,
    integer_atol: dict | None = None,
    budget: dict | None = None,
    dynamic_shapes=None,
    external_weights: bool = False,
    verify: bool = True,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Exports ``model`` for (backend, recipe) into the bundle ``OUT/NAME`` and returns its path.

    golden_inputs: ``(case_id, data, origin, tensors)`` with data "real"|"synthetic", or
    ``(case_id, tensors)`` with ``golden_meta[case_id] = {"data": ..., "origin": ...}``.
    layouts: ``{input_or_output_name: "nchw"|"nhwc"}`` for rank-4 tensors whose layout is known;
    absent means unknown and is not written. labels: ``{"output", "source", "names"}``.
    weights: ``{"kind": "pretrained"|"seeded", "source": str}``, where known (docs/manifest.md).
    slice_axis: ``{output name: int >= 0 | None}``, the axis the gate judges slices along (None:
    do not slice; absent: the gate's default); integer_atol: ``{integer or bool output name:
    number >= 0}`` (absent: exact); budget: ``{"min_sqnr_db"?, "min_cosine"?,
    "top1_agreement"?}``, the accuracy the recipe may cost. All three go into the manifest.
    dynamic_shapes: torch.export's, with a finite ``max`` on every Dim (check_dynamic_shapes);
    the manifest records each input's dynamic dimensions with the range torch.export kept, and
    golden cases may have any size inside it (at least the minimum, the maximum and one between).
    Besides the goldens, each case's references (etproof.references.reference_names: the float64
    truth, the recipe's emulation, float16/bfloat16 emulations) are written as
    ``CASE.ref.NAME.OUTPUT.npy``; one that cannot be computed is recorded, never fatal.
    external_weights: True writes the program's constant weights into ``NAME.ptd`` beside the
    .pte (ExecuTorch's external constants, delegated XNNPACK weights included) and lists it in
    the manifest's data_files; portable and xnnpack only (arguments.check_external_weights).
    verify: run the written program once in ExecuTorch's Python runtime (first golden) when the
    runtime has the program's delegates; a program that fails to run is an export failure
    (stage "lower").

    Raises InvalidArgument (stage "export") for arguments it refuses and a backend whose
    prerequisites are missing, before anything runs; ExportError (or QuantizationError) naming
    the stage that failed.
    """
    import torch

    say = log or (lambda _m: None)
    args, in_specs = check_export_arguments(
        model, example_inputs, name, backend, recipe, input_names, output_names, golden_inputs,
        preprocessing, labels, model_name, golden_meta, layouts, compute_unit, weights,
        slice_axis, integer_atol, budget, dynamic_shapes, external_weights)
    facts = RECIPES[(backend, recipe)]
    compute_unit = resolve_compute_unit(backend, recipe, compute_unit)
    check_export_needs(backend)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidArgument(f"cannot create output directory {out}: {e.strerror or e}",
                              "pass a writable --out directory", stage="export") from e
    final = out / name
    with staging_dir(out, name) as tmp:
        model.eval()
        # 1. goldens: float32 eager outputs of the source model, before anything else.
        with in_stage("goldens"):
            say(f"{name}: eager goldens ({len(args.cases)} cases)")
            example_outs, golden_outs = _eager_goldens(model, args, output_names)

        # 2. torch.export; the dynamic dimensions' ranges as torch.export kept them
        with in_stage("export"):
            say(f"{name}: torch.export")
            ep = torch.export.export(model, args.example_inputs,
                                     dynamic_shapes=args.dynamic_shapes)
            if args.dynamic_shapes is not None:
                _program_input_ranges(ep, in_specs, args)
        with in_stage("goldens"):
            out_specs = _output_specs(ep, example_outs, golden_outs, args, output_names, layouts)
        if labels is not None:
            check_output_labels(labels, out_specs)
        apply_output_options(out_specs, slice_axis, integer_atol)

        # 3. PT2E quantization
        quant_record = None
        emulation = None
        if facts["quant"]:
            with in_stage("quantize"):
                say(f"{name}: quantizing ({recipe})")
                ep, quant_record, out_quant, emulation = quantize(
                    ep, facts["quant"], args.example_inputs, args.cases, args.dynamic_shapes)
                # Each output's quantization scale where the converted graph has one (int8
                # static); the gate can then state its atol in quantization steps.
                if len(out_quant) == len(out_specs):
                    for spec, q in zip(out_specs, out_quant):
                        if q is not None:
                            spec["quantization"] = q

        # 4. references: the float64 truth and the emulations of the recipe and precision, on
        # the golden inputs (etproof.references); one that cannot be computed is recorded.
        with in_stage("lower", recipe):
            precision = effective_precision(backend, recipe)
        with in_stage("goldens"):
            ref_names = reference_names(backend, recipe, precision, bool(facts["quant"]))
            say(f"{name}: references ({', '.join(ref_names)})")
            refs = capture_references(
                model, args.cases, output_names, out_specs, ref_names, emulation=emulation,
                scheme=quant_record["scheme"] if quant_record else None,
                emulates=EMULATES.get(facts["quant"]) if facts["quant"] else None,
                log=lambda m: say(f"{name}: {m}"))
            emulation = None  # the converted graph is not needed past here

        # 5. lower (external weights: tagged first, so a delegate writes them as named data)
        with in_stage("lower", recipe):
            if external_weights:
                say(f"{name}: tagging the weights for {name}.ptd")
                ep = tag_external_weights(ep, name, args.example_inputs, args.dynamic_shapes)
            say(f"{name}: lowering for {backend}")
            edge, backend_config, rejections = lower(ep, backend, recipe, facts,
                                                     name if external_weights else None)
            delegation = delegation_record(edge, rejections)

        # 6. serialize: program (+ named data), read back what was written
        with in_stage("serialize"):
            et = edge.to_executorch(backend_config) if backend_config else edge.to_executorch()
            pte, data_files = write_program(et, tmp, name)
            if external_weights and not data_files:
                raise ExportError(f"external_weights is set but ExecuTorch moved no weights out "
                                  f"of the program: the model has no constant weights that "
                                  f"{backend} stores as named data",
                                  "drop external_weights for this model", stage="serialize")
            program_bytes = pte.read_bytes()
            delegates, operators = program_calls(program_bytes)

        if verify:
            with in_stage("lower", recipe):
                data_path = tmp / data_files[0] if data_files else None
                verify_runs(pte if data_path else program_bytes, data_path, args.cases[0].inputs,
                            delegates, len(output_names), say, name, operators=operators)

        # 7. goldens and references on disk
        with in_stage("goldens"):
            goldens = write_goldens(tmp / f"{name}.goldens", args.cases, golden_outs,
                                    input_names, output_names)
            ref_files = write_references(tmp / f"{name}.goldens", refs.per_case)
            for g in goldens:
                if ref_files.get(g["id"]):
                    g["references"] = ref_files[g["id"]]

        # 8. manifest
        with in_stage("serialize"):
            doc: dict[str, Any] = {
                "schema_version": SCHEMA_VERSION,
                "name": name,
                "model": args.model_name,
                "engine": {"name": "executorch", "version": version("executorch")},
                "artifact": file_ref(pte),
                "backend": backend,
                "delegates": delegates,
                "operators": operators,
                "delegation": delegation,
                "recipe": recipe,
                "precision": precision,
                "inputs": in_specs,
                "outputs": out_specs,
                "goldens": goldens,
                "toolchain": toolchain_versions(),
                "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            if data_files:
                doc["data_files"] = [file_ref(tmp / f) for f in data_files]
            if compute_unit is not None:
                doc["compute_unit"] = compute_unit
            if quant_record is not None:
                doc["quantization"] = quant_record
            if preprocessing is not None:
                doc["preprocessing"] = args.preprocessing
            if labels is not None:
                doc["labels"] = {"output": labels["output"], "source": labels["source"],
                                 "names": list(labels["names"])}
            if weights is not None:
                doc["weights"] = dict(weights)
            doc["references"] = refs.records
            if budget is not None:
                doc["budget"] = dict(budget)
            write_manifest(doc, tmp / f"{name}{MANIFEST_SUFFIX}")

        # 9. into place, in one rename (the old bundle goes only once the new one is there)
        with in_stage("serialize"):
            install(tmp, final)
    say(f"{name}: wrote {final}")
    return final


def _eager_goldens(model, args, output_names) -> tuple[list, list]:
    """The source model's float32 eager outputs on the example inputs and on every golden case."""
    import torch

    with torch.no_grad():
        example_outs = _run_eager(model, args.example_inputs, len(output_names))
        golden_outs = [_run_eager(model, c.inputs, len(output_names)) for c in args.cases]
    return example_outs, golden_outs


def _user_nodes(ep, kind: str) -> list:
    """The exported program's user input placeholders, or its user outputs, in order."""
    nodes = list(ep.graph.nodes)
    if kind == "input":
        by_name = {n.name: n for n in nodes if n.op == "placeholder"}
        return [by_name[n] for n in ep.graph_signature.user_inputs]
    out = next(n for n in nodes if n.op == "output")
    flat = out.args[0] if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
    return list(flat)[-len(ep.graph_signature.user_outputs):]


def _program_input_ranges(ep, in_specs: list, args) -> None:
    """Replaces each declared dynamic dimension's range by the one torch.export kept (it may
    narrow a Dim's range; ep.range_constraints) and checks the golden cases still fit it.
    ExportError (stage "export") when torch.export made a declared dimension static or narrowed
    it below a golden case's size."""
    import torch

    for i, (spec, node) in enumerate(zip(in_specs, _user_nodes(ep, "input"))):
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


def _output_specs(ep, example_outs, golden_outs, args, output_names, layouts) -> list:
    """The manifest's outputs: the eager example outputs' dtypes and shapes, -1 wherever the
    exported program's output size is symbolic (it follows a dynamic input). A golden output
    that does not fit is ExportError (stage "goldens")."""
    import torch

    specs = tensor_specs(output_names, example_outs, layouts or {}, "output")
    if args.dynamic_shapes is not None:
        for spec, node in zip(specs, _user_nodes(ep, "output")):
            val = node.meta.get("val") if hasattr(node, "meta") else None
            for axis, size in enumerate(getattr(val, "shape", ())):
                if isinstance(size, torch.SymInt) and axis < len(spec["shape"]):
                    spec["shape"][axis] = -1
    for c, outs in zip(args.cases, golden_outs):
        for o_name, o, spec in zip(output_names, outs, specs):
            if not shape_fits(o.shape, spec["shape"]) or dtype_name(o.dtype) != spec["dtype"]:
                raise ExportError(
                    f"golden case {c.id!r}: output {o_name!r} is {dtype_name(o.dtype)} "
                    f"{list(o.shape)}, the example input gives {spec['dtype']} {spec['shape']}",
                    "golden inputs must have the example inputs' shapes and dtypes (or sizes "
                    "inside a dynamic dimension's range)", stage="goldens")
    return specs


def _run_eager(model, inputs: tuple, n_outputs: int) -> list:
    import torch

    out = model(*inputs)
    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(flat) != n_outputs or not all(isinstance(t, torch.Tensor) for t in flat):
        raise ExportError(f"the model returned {len(flat)} value(s), {n_outputs} output name(s) "
                          "were given", "name every output (tensors only), in order",
                          stage="goldens")
    return [t.detach().cpu().contiguous() for t in flat]
