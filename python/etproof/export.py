"""Export one PyTorch model to one bundle: program, manifest, goldens — atomically.

Built on ExecuTorch's own export API (torch.export -> PT2E quantization where the recipe asks ->
to_edge_transform_and_lower -> to_executorch). Nothing here re-implements lowering.

Bundle layout (docs/manifest.md)::

    OUT/NAME/NAME.pte
    OUT/NAME/NAME.ptd                 only where the backend writes named data
    OUT/NAME/NAME.etproof.json
    OUT/NAME/NAME.goldens/CASE.in.INPUT.npy, CASE.out.OUTPUT.npy

Everything is written into ``OUT/.NAME.tmp-XXXX`` and renamed into place at the very end; an
existing bundle of the same name is kept until the new one is complete. Any failure removes the
temporary directory and raises a typed error naming the stage.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import importlib.metadata as _md
import logging
import os
import platform
import re
import shutil
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from etproof import __version__
from etproof.errors import (
    EtproofError,
    ExportError,
    InvalidArgument,
    ManifestError,
    QuantizationError,
)
from etproof.manifest import (
    check_labels,
    check_weights,
    check_preprocessing,
    DTYPES,
    LAYOUTS,
    MANIFEST_SUFFIX,
    NAME_RE,
    SCHEMA_VERSION,
    canonical_dumps,
    validate,
)

# --- what this export half supports --------------------------------------------------------------

# How etproof computes each (backend, recipe) it exports: the quantization scheme (None: float).
# Which pairs exist, their precision and the partitioner are facts of the backend table
# (data/backends.json, etproof.backends); a pair in the table without an entry here, or the
# reverse, is an error at import.
_QUANT_OF = {
    ("portable", "fp32"): None,
    ("xnnpack", "fp32"): None,
    ("xnnpack", "int8-dynamic-per-channel"): "xnnpack-int8-dynamic-per-channel",
    ("xnnpack", "int8-static-per-channel"): "xnnpack-int8-static-per-channel",
    ("coreml", "fp32"): None,
    ("coreml", "fp16"): None,
    ("vulkan", "fp32"): None,
    ("webgpu", "fp32"): None,
    ("openvino", "fp32"): None,
}

# Test hook: "BACKEND/RECIPE[,...]" in this variable makes those pairs fail at stage "lower" (after
# quantization, before anything is written), so tests can show one failing column never stops
# the others. Never set it outside tests.
TEST_FAIL_ENV = "ETPROOF_TEST_FAIL_LOWER"


def _recipes_from_table() -> dict[tuple[str, str], dict[str, Any]]:
    from etproof import backends

    table = backends.load_table()
    pairs = backends.recipes()
    if set(pairs) != set(_QUANT_OF):
        raise backends.BackendTableError(
            f"data/backends.json exports {sorted(pairs)}, export.py implements "
            f"{sorted(_QUANT_OF)}", "mark unimplemented recipes \"planned\": true in the table")
    return {(b, r): {"precision": e["precision"], "partitioner": table[b]["partitioner"],
                     "compute_unit": e.get("compute_unit"), "entry": e,
                     "quant": _QUANT_OF[(b, r)]} for (b, r), e in sorted(pairs.items())}


RECIPES: dict[tuple[str, str], dict[str, Any]] = _recipes_from_table()


def _executorch_backends() -> tuple[str, ...]:
    from etproof import backends

    return tuple(k for k in backends.keys() if k not in {b for b, _ in RECIPES})


# Backends ExecuTorch has (the table's keys) that this export half does not export yet. Asking for
# one is a real column, refused and recorded in export-report.json; any other name is a typo (a
# usage error, recorded nowhere).
EXECUTORCH_BACKENDS = _executorch_backends()

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

PAD_SKIP_REASON = (
    "conv fed by constant_pad_nd: XNNPACK (executorch {et}) fails at run time "
    "(Propagating input shapes failed with xnn_status_invalid_parameter)"
)

_TORCH_DTYPE_NAMES = {
    "torch.float32": "float32", "torch.float16": "float16", "torch.float64": "float64",
    "torch.int8": "int8", "torch.uint8": "uint8", "torch.int16": "int16",
    "torch.int32": "int32", "torch.int64": "int64", "torch.bool": "bool",
}

_STAGE_REMEDY = {
    "goldens": "the model must run eagerly on every golden input and return the named outputs",
    "export": "make the model traceable by torch.export (no data-dependent Python control flow, "
              "no unsupported ops); see the torch.export error above",
    "quantize": "quantization failed for this model; try the fp32 recipe or another quantized "
                "recipe",
    "lower": "the backend could not lower or run this model; try another backend, or the fp32 "
             "recipe",
    "serialize": "ExecuTorch could not serialize the program or the bundle could not be written; "
                 "check disk space and permissions of the output directory",
}


def supported_pairs() -> list[tuple[str, str]]:
    return sorted(RECIPES)


def supported_backends() -> list[str]:
    return sorted({b for b, _ in RECIPES})


def supported_recipes() -> list[str]:
    return sorted({r for _, r in RECIPES})


def supported_pairs_text() -> str:
    return ", ".join(f"{b}/{r}" for b, r in supported_pairs())


# --- public entry point --------------------------------------------------------------------------

@dataclass
class GoldenCase:
    id: str
    data: str
    origin: str
    inputs: tuple


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
    verify: bool = True,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Exports ``model`` for (backend, recipe) into the bundle ``OUT/NAME`` and returns its path.

    golden_inputs: ``(case_id, data, origin, tensors)`` with data "real"|"synthetic", or
    ``(case_id, tensors)`` with ``golden_meta[case_id] = {"data": ..., "origin": ...}``.
    layouts: ``{input_or_output_name: "nchw"|"nhwc"}`` for rank-4 tensors whose layout is known;
    absent means unknown and is not written. labels: ``{"output", "source", "names"}``.
    weights: ``{"kind": "pretrained"|"seeded", "source": str}``, where known (docs/manifest.md).
    verify: run the written program once in ExecuTorch's Python runtime (first golden) when the
    runtime has the program's delegates; a program that fails to run is an export failure
    (stage "lower").
    """
    import torch

    say = log or (lambda _m: None)
    args, in_specs = check_export_arguments(
        model, example_inputs, name, backend, recipe, input_names, output_names, golden_inputs,
        preprocessing, labels, model_name, golden_meta, layouts, compute_unit, weights)
    facts = RECIPES[(backend, recipe)]
    if facts["compute_unit"] is not None:
        if compute_unit not in (None, facts["compute_unit"]):
            raise _bad(f"{backend}/{recipe} computes on compute unit {facts['compute_unit']!r} "
                       f"(data/backends.json), not {compute_unit!r}",
                       "omit compute_unit: the recipe sets it")
        compute_unit = facts["compute_unit"]
    check_export_needs(backend)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidArgument(f"cannot create output directory {out}: {e.strerror or e}",
                              "pass a writable --out directory", stage="export") from e
    final = out / name
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=out))
    try:
        model.eval()
        # 1. goldens: float32 eager outputs of the source model, before anything else.
        with _stage("goldens"):
            say(f"{name}: eager goldens ({len(args.cases)} cases)")
            with torch.no_grad():
                example_outs = _run_eager(model, args.example_inputs, len(output_names))
                golden_outs = [_run_eager(model, c.inputs, len(output_names)) for c in args.cases]
            out_specs = _tensor_specs(output_names, example_outs, layouts or {}, "output")
            for c, outs in zip(args.cases, golden_outs):
                for o_name, o, spec in zip(output_names, outs, out_specs):
                    if list(o.shape) != spec["shape"] or _dtype_name(o.dtype) != spec["dtype"]:
                        raise ExportError(
                            f"golden case {c.id!r}: output {o_name!r} is {_dtype_name(o.dtype)} "
                            f"{list(o.shape)}, the example input gives {spec['dtype']} "
                            f"{spec['shape']}",
                            "golden inputs must have the example inputs' shapes and dtypes",
                            stage="goldens")
        if labels is not None:
            try:
                check_labels(labels, out_specs)
            except ManifestError as e:
                raise _bad(e.cause.replace("manifest field", "field"),
                           "see docs/manifest.md, 'labels'") from e

        # 2. torch.export
        with _stage("export"):
            say(f"{name}: torch.export")
            ep = torch.export.export(model, args.example_inputs)

        # 3. PT2E quantization
        quant_record = None
        if facts["quant"]:
            with _stage("quantize"):
                say(f"{name}: quantizing ({recipe})")
                ep, quant_record, out_quant = _quantize(ep, facts["quant"], args.example_inputs,
                                                        args.cases)
                # Each output's quantization scale where the converted graph has one (int8
                # static); the gate can then state its atol in quantization steps.
                if len(out_quant) == len(out_specs):
                    for spec, q in zip(out_specs, out_quant):
                        if q is not None:
                            spec["quantization"] = q

        # 4. lower
        with _stage("lower"):
            say(f"{name}: lowering for {backend}")
            edge, backend_config, rejections = _lower(ep, backend, recipe, facts)
            delegation = _delegation(edge, rejections)
            precision = effective_precision(backend, recipe)

        # 5. serialize: program (+ named data), read back what was written
        pte = tmp / f"{name}.pte"
        with _stage("serialize"):
            et = edge.to_executorch(backend_config) if backend_config else edge.to_executorch()
            with open(pte, "wb") as f:
                et.write_to_file(f)
                f.flush()
                os.fsync(f.fileno())
            data_files = _write_data_files(et, tmp, name)
            program_bytes = pte.read_bytes()
            delegates = _delegates_in_program(program_bytes)

        if verify:
            with _stage("lower"):
                _verify_runs(program_bytes, data_files, tmp, args.cases[0].inputs, delegates,
                             len(output_names), say, name)

        # 6. goldens on disk
        gdir = tmp / f"{name}.goldens"
        goldens = []
        with _stage("goldens"):
            gdir.mkdir()
            for c, outs in zip(args.cases, golden_outs):
                entry = {"id": c.id, "data": c.data, "origin": c.origin, "inputs": {},
                         "outputs": {}}
                for i_name, t in zip(input_names, c.inputs):
                    fn = f"{c.id}.in.{i_name}.npy"
                    _save_npy(gdir / fn, t)
                    entry["inputs"][i_name] = fn
                for o_name, t in zip(output_names, outs):
                    fn = f"{c.id}.out.{o_name}.npy"
                    _save_npy(gdir / fn, t)
                    entry["outputs"][o_name] = fn
                goldens.append(entry)

        # 7. manifest
        with _stage("serialize"):
            doc: dict[str, Any] = {
                "schema_version": SCHEMA_VERSION,
                "name": name,
                "model": args.model_name,
                "engine": {"name": "executorch", "version": _version("executorch")},
                "artifact": _file_ref(pte),
                "backend": backend,
                "delegates": delegates,
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
                doc["data_files"] = [_file_ref(tmp / f) for f in data_files]
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
            validate(doc)
            (tmp / f"{name}{MANIFEST_SUFFIX}").write_bytes(canonical_dumps(doc).encode("utf-8"))

        # 8. into place, in one rename (the old bundle goes only once the new one is there)
        with _stage("serialize"):
            _fsync_dir(tmp)
            _replace_dir(tmp, final)
        say(f"{name}: wrote {final}")
        return final
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# --- argument checks -----------------------------------------------------------------------------

@dataclass
class _Args:
    example_inputs: tuple
    cases: list
    model_name: str
    preprocessing: dict | None


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
                           weights=None):
    """Every check export_model makes before it writes anything; raises InvalidArgument.

    Returns the normalized arguments and the input tensor specs.
    """
    args = _check_arguments(model, example_inputs, name, backend, recipe, input_names,
                            output_names, golden_inputs, preprocessing, labels, model_name,
                            golden_meta, layouts, compute_unit)
    if weights is not None:
        try:
            check_weights(weights)
        except ManifestError as e:
            raise _bad(e.cause.replace("manifest field", "field"),
                       "see docs/manifest.md, 'weights'") from e
    in_specs = _tensor_specs(input_names, args.example_inputs, layouts or {}, "input")
    if args.preprocessing is not None:
        try:
            check_preprocessing(args.preprocessing, in_specs)
        except ManifestError as e:
            raise _bad(e.cause.replace("manifest field", "field"),
                       "see docs/manifest.md, 'preprocessing'") from e
    return args, in_specs


GOLDEN_DATA_MEANING = ("'real' for real-domain inputs (photos, sentences, recordings), "
                       "'synthetic' for generated ones (torch.randn, constants)")


def _check_arguments(model, example_inputs, name, backend, recipe, input_names,
                     output_names, golden_inputs, preprocessing, labels, model_name,
                     golden_meta, layouts, compute_unit) -> _Args:
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
    if not example_inputs or not all(isinstance(t, torch.Tensor) for t in example_inputs):
        raise _bad("example_inputs must be a non-empty tuple of tensors",
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
        _dtype_name(t.dtype, n)

    # golden cases
    cases = []
    for g in list(golden_inputs or []):
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
        for t, e, n in zip(tensors, example_inputs, input_names):
            if not isinstance(t, torch.Tensor) or t.shape != e.shape or t.dtype != e.dtype:
                raise _bad(f"golden case {cid!r}: input {n!r} must be a {e.dtype} tensor of shape "
                           f"{list(e.shape)}", "golden inputs must match the example inputs")
        cases.append(GoldenCase(cid, data, origin, tensors))
    if not cases:
        raise _bad("no golden inputs", "pass at least one golden case (real data where the model "
                   "has a domain)")
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        raise _bad(f"golden case ids repeat: {ids}", "give each golden case its own id")

    for n, lay in (layouts or {}).items():
        if n not in all_names:
            raise _bad(f"layout given for unknown tensor {n!r}", f"tensors: {all_names}")
        if lay not in LAYOUTS:
            raise _bad(f"layout of {n!r} must be one of {LAYOUTS}, got {lay!r}",
                       "layouts are 'nchw' or 'nhwc'")
        if n in input_names and example_inputs[input_names.index(n)].dim() != 4:
            raise _bad(f"layout given for {n!r}, which is not rank 4",
                       "layouts apply to rank-4 tensors only")

    if model_name is None:
        model_name = type(model).__name__
    if not isinstance(model_name, str) or not model_name:
        raise _bad(f"invalid model name {model_name!r}", "pass the source model's name")

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
    if labels is not None:
        if not isinstance(labels, dict) or set(labels) != {"output", "source", "names"}:
            raise _bad("labels must be {'output', 'source', 'names'}",
                       "see docs/manifest.md, 'labels'")
        if labels["output"] not in output_names:
            raise _bad(f"labels name unknown output {labels['output']!r}",
                       f"outputs: {output_names}")
    if compute_unit is not None and (not isinstance(compute_unit, str) or not compute_unit):
        raise _bad("compute_unit must be a non-empty string", "omit it where the backend has none")
    return _Args(example_inputs, cases, model_name, pre)


# --- stages --------------------------------------------------------------------------------------

@contextlib.contextmanager
def _stage(stage: str):
    """Re-raises anything that is not already an EtproofError as ExportError(stage)."""
    try:
        yield
    except EtproofError:
        raise
    except Exception as e:  # noqa: BLE001 - every failure becomes a typed, staged error
        first = _first_line(e)
        raise ExportError(f"{stage} failed: {type(e).__name__}: {first}",
                          _STAGE_REMEDY[stage], stage=stage) from e


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:500]
    return "".join(traceback.format_exception_only(type(e), e)).strip()[:500] or type(e).__name__


def _run_eager(model, inputs: tuple, n_outputs: int) -> list:
    import torch

    out = model(*inputs)
    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(flat) != n_outputs or not all(isinstance(t, torch.Tensor) for t in flat):
        raise ExportError(f"the model returned {len(flat)} value(s), {n_outputs} output name(s) "
                          "were given", "name every output (tensors only), in order",
                          stage="goldens")
    return [t.detach().cpu().contiguous() for t in flat]


def _dtype_name(dtype, tensor_name: str | None = None) -> str:
    name = _TORCH_DTYPE_NAMES.get(str(dtype))
    if name is None:
        raise _bad(f"tensor {tensor_name!r} has dtype {dtype}, which the manifest cannot carry",
                   f"use one of {', '.join(DTYPES)}")
    return name


def _tensor_specs(names, tensors, layouts: dict, kind: str) -> list:
    specs = []
    for n, t in zip(names, tensors):
        spec = {"name": n, "dtype": _dtype_name(t.dtype, n), "shape": [int(d) for d in t.shape]}
        if n in layouts:
            if t.dim() != 4:
                raise _bad(f"layout given for {kind} {n!r}, which is not rank 4",
                           "layouts apply to rank-4 tensors only")
            spec["layout"] = layouts[n]
        specs.append(spec)
    return specs


def _save_npy(path: Path, t) -> None:
    arr = np.ascontiguousarray(t.detach().cpu().numpy())
    with open(path, "wb") as f:
        np.save(f, arr, allow_pickle=False)


# --- quantization --------------------------------------------------------------------------------

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


def _quantize(ep, scheme: str, example_inputs: tuple, cases: list):
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
    reason = PAD_SKIP_REASON.format(et=_version("executorch"))
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
    return ep_q, record, out_quant


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


# --- lowering and program facts -------------------------------------------------------------------

_OV_TYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def effective_precision(backend: str, recipe: str) -> str:
    """The precision the delegate will compute in for (backend, recipe) when lowered here.

    The table's precision, except OpenVINO: its CPU plugin compiles with the device's default
    INFERENCE_PRECISION_HINT (bf16 on CPUs with native bf16, e.g. AVX512_BF16 or AMX) and
    ExecuTorch's OpenVINO compile specs cannot override it (their values reach openvino_compile
    as strings; its "config" must be a dict). So the manifest records what the plugin reports.
    """
    facts = RECIPES[(backend, recipe)]
    if backend != "openvino":
        return facts["precision"]
    import openvino as ov

    from etproof.backends import OPENVINO_DEVICE

    hint = ov.Core().get_property(OPENVINO_DEVICE, "INFERENCE_PRECISION_HINT").get_type_name()
    return _OV_TYPES.get(hint, hint)


def check_export_needs(backend: str) -> None:
    """Refuses (InvalidArgument, stage "export": an export-refused column) a backend whose Python
    modules are missing, or whose SDK variable is unset where importing without it would reach for
    the network, before anything is imported: the same checks as the probe, from the table."""
    from etproof import backends

    entry = backends.load_table()[backend]
    missing = backends.missing_prerequisite(entry)
    if missing is not None:
        raise InvalidArgument(f"{backend}: {missing}", f"needs: {backends.needs_text(entry)}",
                              stage="export")


def _lower(ep, backend: str, recipe: str, facts: dict):
    """Lowers with the table's partitioner, configured for the recipe (backends.make_partitioner).

    Returns (edge program, ExecutorchBackendConfig or None, _Rejections).
    """
    from executorch.exir import to_edge_transform_and_lower

    from etproof.backends import make_partitioner

    forced = os.environ.get(TEST_FAIL_ENV, "")
    if f"{backend}/{recipe}" in [p.strip() for p in forced.split(",")]:
        raise RuntimeError(f"forced failure of {backend}/{recipe} ({TEST_FAIL_ENV}, a test hook)")
    rejections = _Rejections()
    if facts["partitioner"] is None:
        return to_edge_transform_and_lower(ep, partitioner=[]), None, rejections
    part = make_partitioner(backend, facts["entry"])
    kwargs: dict[str, Any] = {}
    config = None
    if backend == "xnnpack":
        from executorch.backends.xnnpack.utils.configs import (
            get_xnnpack_edge_compile_config,
            get_xnnpack_executorch_backend_config,
        )

        kwargs["compile_config"] = get_xnnpack_edge_compile_config()
        config = get_xnnpack_executorch_backend_config()
    with rejections:
        edge = to_edge_transform_and_lower(ep, partitioner=[part], **kwargs)
    return edge, config, rejections


class _Rejections(logging.Handler):
    """What the partitioner said about the nodes it did not take, read from its own log records.

    - ``WhyNoPartition`` (executorch.exir.backend.utils; XNNPACK's and Arm's config checks): a
      DEBUG record carrying the node and the reason -> by node name.
    - Core ML: "Skipping op for CoreML delegation because REASON: TARGET" (INFO) -> by target.
    - Vulkan: "[Vulkan Partitioner] Due to [REASON], skipping ... = TARGET(...)" (INFO, root
      logger) -> by target.
    Partitioners that report nothing (OpenVINO prints to stdout) leave reasons unknown.

    While active it is the root logger's only handler, the root logger passes INFO and
    ``executorch.backends`` logs at DEBUG; records of WARNING and above still reach the handlers
    it replaced.
    """

    _COREML = re.compile(r"^Skipping op for CoreML delegation because (.+): ([^\s:]+)$")
    _VULKAN = re.compile(r"^\[Vulkan Partitioner\] Due to \[(.+?)\], skipping .*? = "
                         r"([A-Za-z0-9_.]+)\(")

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.by_node: dict[str, list[str]] = {}
        self.by_target: dict[str, list[str]] = {}
        self._saved: list = []

    def __enter__(self):
        root = logging.getLogger()
        self._saved = list(root.handlers)
        self._eb = logging.getLogger("executorch.backends")
        self._eb_level = self._eb.level
        self._root_level = root.level
        root.handlers = [self]
        root.setLevel(min(root.level, logging.INFO))  # Vulkan reports on the root logger at INFO
        self._eb.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc):
        root = logging.getLogger()
        root.handlers = self._saved
        root.setLevel(self._root_level)
        self._eb.setLevel(self._eb_level)
        return False

    @staticmethod
    def _add(d: dict, key: str, reason: str) -> None:
        reason = reason.strip().rstrip(".")
        if key and reason and reason not in d.setdefault(key, []):
            d[key].append(reason)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from executorch.exir.backend.utils import WhyNoPartition

            msg = record.msg
            if isinstance(msg, WhyNoPartition):
                if msg.node is not None:
                    self._add(self.by_node, msg.node.name, msg.reason)
            else:
                text = record.getMessage()
                m = self._COREML.match(text) or self._VULKAN.match(text)
                if m and not m.group(2) in ("placeholder", "output"):
                    self._add(self.by_target, m.group(2).lower(), m.group(1))
        except Exception:  # noqa: BLE001 - a reason we cannot read stays unknown
            pass
        if record.levelno >= logging.WARNING:
            targets = self._saved or ([logging.lastResort] if logging.lastResort else [])
            for h in targets:
                if record.levelno >= h.level:
                    h.handle(record)

    def reasons(self, node) -> list[str]:
        target = getattr(node.target, "__name__", "") or ""
        out = list(self.by_node.get(node.name, []))
        for r in self.by_target.get(target.lower(), []):
            if r not in out:
                out.append(r)
        return out


def _delegation(edge, rejections: _Rejections | None = None) -> dict:
    from executorch.devtools.backend_debug import get_delegation_info

    gm = edge.exported_program().graph_module
    info = get_delegation_info(gm)
    by_op = [{"op": op, "delegated": int(b.delegated), "non_delegated": int(b.non_delegated)}
             for op, b in info.delegation_by_operator.items()]
    by_op.sort(key=lambda e: e["op"])
    if rejections is not None:
        # get_delegation_info names an op by its node's name less a trailing _N; the nodes left
        # in the top-level graph are the non-delegated ones.
        reasons: dict[str, list[str]] = {}
        for n in gm.graph.nodes:
            if n.op != "call_function":
                continue
            op = re.sub(r"_[\d]+$", "", n.name)
            for r in rejections.reasons(n):
                if r not in reasons.setdefault(op, []):
                    reasons[op].append(r)
        for e in by_op:
            if e["non_delegated"] and reasons.get(e["op"]):
                e["reasons"] = sorted(reasons[e["op"]])
    return {"delegated_nodes": int(info.num_delegated_nodes),
            "non_delegated_nodes": int(info.num_non_delegated_nodes),
            "by_operator": by_op}


def delegates_in_program(program_bytes: bytes) -> list[str]:
    """Sorted distinct delegate ids of every execution plan of a serialized .pte."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    pte = deserialize_pte_binary(program_bytes)
    program = getattr(pte, "program", pte)
    return sorted({d.id for plan in program.execution_plan for d in plan.delegates})


_delegates_in_program = delegates_in_program


def _write_data_files(et, tmp: Path, name: str) -> list[str]:
    data = getattr(et, "_tensor_data", None)
    if not data:
        return []
    if len(data) != 1:
        raise ExportError(f"the backend wrote {len(data)} named-data files; a bundle holds one "
                          "(NAME.ptd)", "export with a backend configuration that writes at most "
                          "one .ptd", stage="serialize")
    (cord,) = data.values()
    fn = f"{name}.ptd"
    with open(tmp / fn, "wb") as f:
        cord.write_to_file(f)
    return [fn]


def _verify_runs(program_bytes, data_files, tmp, inputs, delegates, n_outputs, say, name):
    """Runs the program once in ExecuTorch's Python runtime, where it has every delegate."""
    from executorch.runtime import Runtime

    rt = Runtime.get()
    registry = rt.backend_registry
    missing = [d for d in delegates if not registry.is_available(d)]
    if missing:
        have = ", ".join(sorted(registry.registered_backend_names)) or "none"
        say(f"{name}: not run in Python: ExecuTorch's Python runtime has no available "
            f"{', '.join(missing)} (registered: {have})")
        return False
    try:
        if data_files:
            program = rt.load_program(tmp / f"{name}.pte", data_path=tmp / data_files[0])
        else:
            program = rt.load_program(program_bytes)
        method = program.load_method("forward")
        outs = method.execute(list(inputs))
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"the lowered program does not run in ExecuTorch {_version('executorch')}"
                          f" (Python runtime): {_first_line(e)}",
                          _STAGE_REMEDY["lower"], stage="lower") from e
    if len(outs) != n_outputs:
        raise ExportError(f"the lowered program returned {len(outs)} outputs, the model "
                          f"{n_outputs}", _STAGE_REMEDY["lower"], stage="lower")
    say(f"{name}: ran once in ExecuTorch's Python runtime")
    return True


# --- files ---------------------------------------------------------------------------------------

def _file_ref(path: Path) -> dict:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return {"file": path.name, "bytes": size, "sha256": h.hexdigest()}


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _replace_dir(new: Path, final: Path) -> None:
    """Renames ``new`` to ``final``; an existing ``final`` is removed only after the rename.

    On Linux an existing bundle is swapped in one step (renameat2 RENAME_EXCHANGE), so a reader
    never finds the name missing; elsewhere the old bundle is moved aside first.
    """
    if not final.exists() and not final.is_symlink():
        os.rename(new, final)
        return
    if final.is_dir() and not final.is_symlink() and _exchange(new, final):
        shutil.rmtree(new, ignore_errors=True)  # ``new`` now holds the old bundle
        return
    old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
    os.rmdir(old)
    os.rename(final, old)
    try:
        os.rename(new, final)
    except BaseException:
        os.rename(old, final)
        raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink()


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swaps two paths (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


# --- versions ------------------------------------------------------------------------------------

def _version(dist: str) -> str:
    try:
        return _md.version(dist)
    except _md.PackageNotFoundError:
        mod = __import__(dist)
        return str(getattr(mod, "__version__", "unknown"))


def toolchain_versions() -> dict:
    return {
        "python": platform.python_version(),
        "torch": _version("torch"),
        "executorch": _version("executorch"),
        "torchao": _version("torchao"),
        "numpy": np.__version__,
        "etproof": __version__,
    }
