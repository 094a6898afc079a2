"""Export one PyTorch model to one bundle: program, manifest, goldens — atomically.

Built on ExecuTorch's own export API (torch.export -> PT2E quantization where the recipe asks ->
to_edge_transform_and_lower -> to_executorch). Nothing here re-implements lowering.

Bundle layout (docs/manifest.md)::

    OUT/NAME/NAME.pte
    OUT/NAME/NAME.ptd                 only where the backend writes named data
    OUT/NAME/NAME.etproof.json
    OUT/NAME/NAME.goldens/CASE.in.INPUT.npy, CASE.out.OUTPUT.npy, CASE.ref.REFERENCE.OUTPUT.npy
    OUT/NAME/NAME.taps/               the tapped twin (a bundle), only where ``taps`` asks for it

Everything is written into ``OUT/.NAME.tmp-XXXX`` and renamed into place at the very end; an
existing bundle of the same name is kept until the new one is complete. Any failure removes the
temporary directory and raises a typed error naming the stage.

This module runs the stages in order (export_model; one function per stage below it); each
stage lives in its own module:

    etproof.contract.arguments  what export_model accepts (checked before anything runs)
    etproof.contract.recipes    the supported (backend, recipe) pairs, from the backend table
    etproof.export.quantize     PT2E quantization for the int8 recipes
    etproof.export.references   the float64 truth and the recipe's and precision's emulations
    etproof.export.lower        the table's partitioner, lowering, the Python-runtime check
    etproof.export.bundle       the bundle's files and the atomic rename
    etproof.export.twin         the tapped twin (etproof.export.taps, taps_quantized)
    etproof.export.toolchain    versions and the delegates a program calls
    etproof.export.shapes       the dynamic dimensions' ranges and the output specs

May import all of those, etproof.manifest and etproof.errors; torch only inside functions. The
names below (``__all__``) are the export half's public API; callers inside etproof import each
from its own module.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from etproof.contract.arguments import (
    GOLDEN_DATA_MEANING,
    ExportOptions,
    GoldenCase,
    apply_output_options,
    check_export_arguments,
    check_output_labels,
    options_from,
    resolve_compute_unit,
)
from etproof.export.bundle import (
    file_ref,
    install,
    staging_dir,
    write_goldens,
    write_program,
    write_references,
)
from etproof.export.delegation import delegation_record
from etproof.errors import (
    ExportError,
    GoldenInvalid,
    ReferencesDisagree,
    InvalidArgument,
    NothingToQuantize,
    in_stage,
)
from etproof.export.lower import (
    TEST_FAIL_ENV,
    check_export_needs,
    effective_precision,
    lower,
    tag_external_weights,
    verify_runs,
)
from etproof.manifest import (
    MANIFEST_SUFFIX,
    SCHEMA_VERSION,
    SCHEMA_VERSION_METHODS,
    write_manifest,
)
from etproof.export.quantize import (
    EMULATES,
    PAD_SKIP_REASON,
    PAD_WORKAROUND,
    QUANT_SCHEMES,
    TORCHAO_SCHEMES,
    find_padded_convs,
    output_quantization,
    quantize,
    quantize_module,
)
from etproof.contract.recipes import (
    EXECUTORCH_BACKENDS,
    RECIPES,
    supported_backends,
    supported_pairs,
    supported_pairs_text,
    supported_recipes,
)
from etproof.contract.program import check_methods, check_methods_spec, only_named
from etproof.export.references import (
    capture_references,
    inconsistent_cases,
    program_vs_emulation,
    reference_names,
    this_machine,
)
from etproof.export.shapes import output_specs, program_input_ranges
from etproof.export.state import (
    initialize_buffers_pass,
    mutated_buffers,
    run_fresh,
    shared_state_planning,
)
from etproof.export.taps import check_taps, delegate_calls
from etproof.export.targets import target_record
from etproof.export.toolchain import delegates_in_program, program_calls, toolchain_versions, version
from etproof.export.twin import prepare_twin, write_twin

__all__ = [
    "EXECUTORCH_BACKENDS", "ExportOptions", "GOLDEN_DATA_MEANING", "GoldenCase", "PAD_SKIP_REASON",
    "PAD_WORKAROUND", "QUANT_SCHEMES", "RECIPES", "TEST_FAIL_ENV", "check_export_arguments",
    "check_export_needs", "check_methods_spec", "delegates_in_program", "effective_precision", "export_model",
    "find_padded_convs", "output_quantization", "supported_backends", "supported_pairs",
    "supported_pairs_text", "supported_recipes", "toolchain_versions",
]


@dataclass
class _Run:
    """One export as its stages fill it in: what export_model was asked (``opts``) and what each
    stage leaves for the next. ``tmp`` is the staging directory (etproof.export.bundle)."""

    name: str
    backend: str
    recipe: str
    opts: ExportOptions
    meths: list                       # etproof.contract.program.Method, one per method
    facts: dict                       # RECIPES[(backend, recipe)]
    say: Callable[[str], None]
    tmp: Path | None = None
    quant_record: dict | None = None  # the manifest's ``quantization`` (PT2E recipes)
    precision: str | None = None      # what the delegate computes in (effective_precision)
    ref_names: list = field(default_factory=list)
    ref_records: dict = field(default_factory=dict)  # the manifest's ``references``
    twin: Any = None                  # etproof.export.twin.Twin, where ``taps`` asks for one
    edge: Any = None                  # the lowered edge program
    backend_config: Any = None
    delegation: dict | None = None
    pte: Path | None = None
    data_files: list = field(default_factory=list)  # NAME.ptd, relative to tmp
    program_bytes: bytes = b""
    delegates: list = field(default_factory=list)
    operators: list = field(default_factory=list)
    mutable_buffers: list = field(default_factory=list)  # the manifest's state.mutable_buffers

    @property
    def several(self) -> bool:
        """Schema 2: the program has another method than a lone forward (docs/manifest.md)."""
        return [m.name for m in self.meths] != ["forward"]

    def who(self, m) -> str:
        """The name log lines and errors give method ``m``: NAME, or NAME.METHOD with several."""
        return f"{self.name}.{m.name}" if self.several else self.name


def export_model(model, example_inputs: Sequence | None = None, name: str | None = None,
                 out_dir=None, backend: str | None = None, recipe: str | None = None,
                 input_names: Sequence[str] | None = None,
                 output_names: Sequence[str] | None = None, golden_inputs: Iterable | None = None,
                 *, options: ExportOptions | None = None,
                 log: Callable[[str], None] | None = None, **optional) -> Path:
    """Exports ``model`` for (backend, recipe) into the bundle ``OUT/NAME`` and returns its path.

    golden_inputs: ``(case_id, data, origin, tensors)`` with data "real"|"synthetic", or
    ``(case_id, tensors)`` with ``golden_meta[case_id] = {"data": ..., "origin": ...}``.
    example_inputs, input_names, output_names and golden_inputs are required unless the
    ``methods`` option is given (then they are None); name, out_dir, backend and recipe always.
    The rest (labels, layouts, taps, verify, ...) are ExportOptions' fields, given as ``options``
    or as keyword arguments of the same names (a model spec's keys: etproof.contract.userspec).
    log: called with one progress line per step.

    The stages, in order: goldens (float32 eager outputs), torch.export, PT2E quantization,
    references (etproof.export.references: the float64 truth, the recipe's and precision's
    emulations), the tapped twin's program, lowering, serialization, one run of the program
    (``verify``), goldens and references on disk, the manifest, the twin, and the rename into
    place (docs/manifest.md's layout). Raises InvalidArgument (stage "export") for arguments it
    refuses and a backend whose prerequisites are missing, before anything runs; ExportError (or
    QuantizationError) naming the stage that failed.
    """
    opts = options_from(options, optional)
    needed = [k for k, v in (("name", name), ("out_dir", out_dir), ("backend", backend),
                             ("recipe", recipe)) if v is None]
    if needed:
        raise InvalidArgument(f"export_model needs {', '.join(needed)}",
                              "pass the bundle name, the output directory, the backend and the "
                              "recipe", stage="export")
    meths = check_methods(model, example_inputs, name, backend, recipe, input_names,
                          output_names, golden_inputs, opts)
    run = _Run(name, backend, recipe, opts, meths, RECIPES[(backend, recipe)],
               log or (lambda _m: None))
    check_taps(opts.taps, several=run.several, dynamic_shapes=opts.dynamic_shapes,
               taps_range=opts.taps_range,
               sequences=any(c.sequence for m in meths for c in m.args.cases),
               torchao=run.facts["quant"] in TORCHAO_SCHEMES)
    opts.taps = opts.taps if opts.taps not in (None, False) else None
    opts.compute_unit = resolve_compute_unit(backend, recipe, opts.compute_unit)
    check_export_needs(backend)
    out = _output_dir(out_dir)
    final = out / name
    with staging_dir(out, name) as run.tmp:
        model.eval()
        for m in meths:
            _trace(run, m)
        if run.facts["quant"]:
            with in_stage("quantize"):
                run.quant_record = _quantize_methods(meths, run.facts["quant"], run.several,
                                                     name, run.say)
        _capture_references(run)
        if opts.taps is not None:
            # before lowering: the shipped program's ExportedProgram is only read, the twin taps
            # a deep copy of it
            run.twin = prepare_twin(meths[0], opts.taps, opts.taps_range, opts.taps_from,
                                    run.ref_names, recipe, run.facts["quant"], run.ref_records,
                                    name, run.say)
        for m in meths:
            m.emulation = m.float_graph = None  # the PT2E graphs are not needed past here
        _lower(run)
        _serialize(run)
        if opts.verify:
            _verify(run)
        _write_goldens(run)
        with in_stage("serialize"):
            doc = _manifest(run)
            write_manifest(doc, run.tmp / f"{name}{MANIFEST_SUFFIX}")
        if run.twin is not None:  # inside the bundle (NAME/NAME.taps/), renamed with it
            write_twin(run.twin, doc, run.tmp, name, backend, recipe, run.facts, meths[0],
                       opts.verify, run.say)
        # into place, in one rename (the old bundle goes only once the new one is there)
        with in_stage("serialize"):
            install(run.tmp, final)
    run.say(f"{name}: wrote {final}")
    return final


def _output_dir(out_dir) -> Path:
    """``out_dir`` as a Path, created where missing; InvalidArgument where it cannot be."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidArgument(f"cannot create output directory {out}: {e.strerror or e}",
                              "pass a writable --out directory", stage="export") from e
    return out


def _trace(run: _Run, m) -> None:
    """Stages 1-2 for method ``m``: its float32 eager goldens (checked to certify something),
    torch.export (the dynamic dimensions' ranges as torch.export kept them) and its output
    specs with the caller's output options applied."""
    import torch

    with in_stage("goldens"):
        run.say(f"{run.who(m)}: eager goldens ({len(m.args.cases)} cases)")
        example_outs, m.golden_outs = _eager_goldens(m.module, m.args, m.output_names)
        check_goldens_certify(m.args.cases, m.golden_outs, m.input_names, m.output_names,
                              m.name if run.several else None)
    with in_stage("export"):
        run.say(f"{run.who(m)}: torch.export")
        m.ep = torch.export.export(m.module, m.args.example_inputs,
                                   dynamic_shapes=m.args.dynamic_shapes)
        if m.args.dynamic_shapes is not None:
            program_input_ranges(m.ep, m.in_specs, m.args)
    with in_stage("goldens"):
        m.out_specs = output_specs(m.ep, example_outs, m.golden_outs, m.args, m.output_names,
                                   run.opts.layouts, m.in_specs)
    if run.opts.labels is not None:
        check_output_labels(run.opts.labels, m.out_specs)
    apply_output_options(m.out_specs, only_named(run.opts.slice_axis, m.output_names),
                         only_named(run.opts.integer_atol, m.output_names))
    greedy = next((o for o in m.out_specs if o["name"] == run.opts.greedy_output), None)
    if greedy is not None and (not greedy["dtype"].startswith("float") or len(greedy["shape"]) < 2):
        raise InvalidArgument(f"greedy_output {greedy['name']!r} is {greedy['dtype']} of rank "
                              f"{len(greedy['shape'])}: a greedy decode takes its token from "
                              "floating logits of rank >= 2 (positions, vocabulary)",
                              "name the logits output", stage="export")


def _capture_references(run: _Run) -> None:
    """Stage 4: the float64 truth and the emulations of the recipe and precision on the golden
    inputs (etproof.export.references); one that cannot be computed is recorded, never fatal.
    A case whose golden and truth disagree is ReferencesDisagree."""
    quant = run.facts["quant"]
    with in_stage("lower", run.recipe):
        run.precision = effective_precision(run.backend, run.recipe)
    with in_stage("goldens"):
        run.ref_names = reference_names(run.backend, run.recipe, run.precision, bool(quant))
        for m in run.meths:
            who = run.who(m)
            run.say(f"{who}: references ({', '.join(run.ref_names)})")
            m.refs = capture_references(
                m.module, m.args.cases, m.output_names, m.out_specs, run.ref_names,
                emulation=m.emulation,
                scheme=run.quant_record["scheme"] if run.quant_record else None,
                emulates=EMULATES.get(quant) if quant else None,
                log=lambda msg, who=who: run.say(f"{who}: {msg}"))
        run.ref_records = (_merge_reference_records(run.meths) if run.several
                           else run.meths[0].refs.records)
        for m in run.meths:
            _check_references_agree(m, run.several)


def _lower(run: _Run) -> None:
    """Stage 5: the methods lowered together into one edge program for the backend, with what
    was delegated (external weights tagged first, so a delegate writes them as named data)."""
    name, opts = run.name, run.opts
    with in_stage("lower", run.recipe):
        if opts.external_weights:
            # every method's weights into the one NAME.ptd (ExecuTorch's named data keys them by
            # tensor, so a weight two methods share is stored once)
            run.say(f"{name}: tagging the weights for {name}.ptd")
            for m in run.meths:
                m.ep = tag_external_weights(m.ep, name, m.args.example_inputs,
                                            m.args.dynamic_shapes)
        ep = {m.name: m.ep for m in run.meths} if run.several else run.meths[0].ep
        run.say(f"{name}: lowering for {run.backend}")
        run.edge, run.backend_config, rejections = lower(
            ep, run.backend, run.recipe, run.facts, name if opts.external_weights else None)
        run.delegation = delegation_record(run.edge, rejections)
        run.mutable_buffers = mutated_buffers(run.edge)
        if run.mutable_buffers:
            run.say(f"{name}: state: the program writes {', '.join(run.mutable_buffers)}; "
                    "every golden case starts from the initial state")
        if run.twin is not None:
            run.twin.calls_shipped = delegate_calls(run.edge)


def _serialize(run: _Run) -> None:
    """Stage 6: the program (and its named data) written into the staging directory, and the
    delegates and operators read back from the bytes written."""
    import torch

    with in_stage("serialize"):
        config = run.backend_config
        init = initialize_buffers_pass(run.edge)
        if init is not None:  # the program starts from the model's initial state
            from executorch.exir import ExecutorchBackendConfig

            config = config or ExecutorchBackendConfig()
            config.passes = [*config.passes, init]
            if run.several:
                config.memory_planning_pass = shared_state_planning(config.memory_planning_pass)
        # without autograd: the initializing pass re-runs the buffer's in-place update, which
        # autograd refuses where the update's input requires grad (a Linear's output)
        with torch.no_grad():
            et = run.edge.to_executorch(config) if config else run.edge.to_executorch()
        run.pte, run.data_files = write_program(et, run.tmp, run.name)
        if run.opts.external_weights and not run.data_files:
            raise ExportError(f"external_weights is set but ExecuTorch moved no weights out of "
                              f"the program: the model has no constant weights that "
                              f"{run.backend} stores as named data",
                              "drop external_weights for this model", stage="serialize")
        run.program_bytes = run.pte.read_bytes()
        run.delegates, run.operators = program_calls(run.program_bytes)


def _verify(run: _Run) -> None:
    """The written program run once per method in ExecuTorch's Python runtime (stage "lower");
    a PT2E-quantized program on every golden case, measured against its recipe's emulation
    (the replay's basis: etproof.export.references.program_vs_emulation)."""
    recipe = run.recipe
    with in_stage("lower", recipe):
        data_path = run.tmp / run.data_files[0] if run.data_files else None
        measure = (bool(run.facts["quant"])
                   and run.ref_records.get(recipe, {}).get("captured"))
        at_export = []
        for m in run.meths:
            runs = verify_runs(run.pte if data_path else run.program_bytes, data_path,
                               m.args.cases[0].inputs, run.delegates, len(m.output_names),
                               run.say, run.who(m), operators=run.operators, method=m.name,
                               more_inputs=[c.inputs for c in m.args.cases[1:]]
                               if measure else (), fresh=bool(run.mutable_buffers),
                               entries=[c.entry for c in m.args.cases],
                               input_names=m.input_names)
            if measure:
                at_export.append(program_vs_emulation(
                    runs, m.refs, recipe, [c.id for c in m.args.cases], m.output_names,
                    m.out_specs, this_machine()))
        record = _merge_program_at_export(at_export) if measure else None
        if record is not None:
            run.ref_records[recipe] = dict(run.ref_records[recipe], program_at_export=record)


def _write_goldens(run: _Run) -> None:
    """Stage 7: goldens and captured references on disk, NAME.goldens/[METHOD.]CASE.*.npy."""
    with in_stage("goldens"):
        gdir = run.tmp / f"{run.name}.goldens"
        gdir.mkdir()
        for m in run.meths:
            prefix = f"{m.name}." if run.several else ""
            m.goldens = write_goldens(gdir, m.args.cases, m.golden_outs, m.input_names,
                                      m.output_names, prefix=prefix)
            per_case = {cid: {r: t for r, t in refs.items()
                              if run.ref_records.get(r, {}).get("captured")}
                        for cid, refs in m.refs.per_case.items()}
            ref_files = write_references(gdir, per_case, prefix=prefix)
            for g in m.goldens:
                if ref_files.get(g["id"]):
                    g["references"] = ref_files[g["id"]]


def _manifest(run: _Run) -> dict:
    """Stage 8: the manifest's document (docs/manifest.md), from what the stages recorded."""
    meths, opts = run.meths, run.opts
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION_METHODS if run.several else SCHEMA_VERSION,
        "name": run.name,
        "model": meths[0].args.model_name,
        "engine": {"name": "executorch", "version": version("executorch")},
        "artifact": file_ref(run.pte),
        "backend": run.backend,
        "delegates": run.delegates,
        "operators": run.operators,
        "delegation": run.delegation,
        "recipe": run.recipe,
        "precision": run.precision,
        "toolchain": toolchain_versions(),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if run.several:
        doc["methods"] = [{"name": m.name, "inputs": m.in_specs, "outputs": m.out_specs,
                           "goldens": m.goldens} for m in meths]
    else:
        doc.update(inputs=meths[0].in_specs, outputs=meths[0].out_specs,
                   goldens=meths[0].goldens)
    if run.data_files:
        doc["data_files"] = [file_ref(run.tmp / f) for f in run.data_files]
    if run.mutable_buffers:
        doc["state"] = {"mutable_buffers": run.mutable_buffers, "per_case": "fresh"}
        if run.several:
            doc["state"]["shared_across_methods"] = True
    if opts.compute_unit is not None:
        doc["compute_unit"] = opts.compute_unit
    try:  # what a target-bound delegate's artifact was compiled for (etproof.export.targets)
        target = target_record(run.backend, run.program_bytes)
    except ValueError as e:
        raise ExportError(str(e), "re-export the bundle on one machine", stage="serialize") from e
    if target is not None:
        doc["target"] = target
    if run.quant_record is not None:
        doc["quantization"] = run.quant_record
    if opts.preprocessing is not None:
        doc["preprocessing"] = meths[0].args.preprocessing
    if opts.labels is not None:
        doc["labels"] = {"output": opts.labels["output"], "source": opts.labels["source"],
                         "names": list(opts.labels["names"])}
    if opts.weights is not None:
        doc["weights"] = dict(opts.weights)
    doc["references"] = run.ref_records
    if opts.budget is not None:
        doc["budget"] = dict(opts.budget)
    if opts.greedy_output is not None:
        doc["greedy"] = {"output": opts.greedy_output}
    return doc


def _quantize_methods(meths: list, scheme: str, several: bool, name: str, say) -> dict:
    """PT2E quantization of each method (etproof.export.quantize.quantize), or torchao's
    quantize_ of its eager module (quantize_module, TORCHAO_SCHEMES); returns the manifest's one
    ``quantization`` record. With several methods, a method the quantizer finds nothing to
    quantize in stays float (listed in ``skipped`` as ``<method NAME>``); all of them: the
    NothingToQuantize refusal."""
    record = None
    skipped = []
    nothing = None
    for m in meths:
        who = f"{name}.{m.name}" if several else name
        say(f"{who}: quantizing")
        try:
            if scheme in TORCHAO_SCHEMES:  # quantize_ on the eager model, then torch.export
                ep, rec, out_quant, m.emulation, m.float_graph = quantize_module(
                    m.module, scheme, m.args.example_inputs, m.args.dynamic_shapes)
            else:
                ep, rec, out_quant, m.emulation, m.float_graph = quantize(
                    m.ep, scheme, m.args.example_inputs, m.args.cases, m.args.dynamic_shapes)
        except NothingToQuantize as e:
            if not several:
                raise
            nothing = e
            skipped.append({"module": f"<method {m.name}>", "reason": "nothing to quantize: "
                            "the quantizer annotates none of its operators"})
            continue
        m.ep = ep
        # Each output's quantization scale where the converted graph has one (int8 static); the
        # gate can then state its atol in quantization steps.
        if len(out_quant) == len(m.out_specs):
            for spec, q in zip(m.out_specs, out_quant):
                if q is not None:
                    spec["quantization"] = q
        if record is None:
            record = dict(rec, skipped=[])
        prefix = f"{m.name}: " if several else ""
        skipped += [dict(s, module=prefix + s["module"]) for s in rec["skipped"]]
    if record is None:
        raise nothing
    record["skipped"] = skipped
    return record


def _merge_program_at_export(records: list) -> dict | None:
    """One program_at_export over several methods (etproof.export.references.program_vs_emulation):
    matched only where every method was measured and matched; the worst of each figure."""
    if not records or any(r is None for r in records):
        return None
    out = {"cases": sum(r["cases"] for r in records), "outputs": sum(r["outputs"] for r in records)}
    for key in ("max_steps", "max_range_error"):
        vals = [r[key] for r in records if key in r]
        if vals:
            out[key] = None if any(v is None for v in vals) else max(vals)
    out.update(matched=all(r["matched"] for r in records), machine=records[0]["machine"])
    return out


def _merge_reference_records(meths: list) -> dict:
    """The manifest's program-wide ``references`` of several methods: a reference is captured
    only where every method captured it; otherwise the first method's reason, naming it."""
    merged: dict = {}
    for name in meths[0].refs.records:
        failed = [(m.name, m.refs.records[name]) for m in meths
                  if not m.refs.records.get(name, {}).get("captured")]
        if failed:
            mname, rec = failed[0]
            merged[name] = {"captured": False,
                            "reason": f"method {mname!r}: {rec.get('reason', 'not captured')}"}
        else:
            merged[name] = meths[0].refs.records[name]
    return merged


def check_goldens_certify(cases, golden_outs, input_names, output_names,
                          method: str | None = None) -> None:
    """Refuses a golden case that would certify nothing: one whose floating inputs (it has at
    least one) are all entirely non-finite, or one with a non-empty floating output holding no
    finite value. NaN matches NaN in the gate and cosine and SQNR skip non-finite values, so a
    program emitting only NaN would agree with such a golden. A case with some
    non-finite values among finite ones is kept: the gate compares those positions exactly.
    Raises GoldenInvalid naming the case and tensor."""
    import torch

    where = f"method {method!r}, " if method else ""
    for c, outs in zip(cases, golden_outs):
        floats = [(n, t) for n, t in zip(input_names, c.inputs) if t.is_floating_point()]
        if floats and all(t.numel() and not torch.isfinite(t).any() for _, t in floats):
            raise GoldenInvalid(
                f"{where}golden case {c.id!r}: every floating input "
                f"({', '.join(n for n, _ in floats)}) is entirely NaN or infinite, so it "
                "certifies nothing", "give golden inputs with finite values")
        for n, o in zip(output_names, outs):
            if o.is_floating_point() and o.numel() and not torch.isfinite(o).any():
                raise GoldenInvalid(
                    f"{where}golden case {c.id!r}: output {n!r} of the eager model has no finite "
                    f"value ({o.numel()} elements, all NaN or infinite), so any program emitting "
                    "NaN would agree with it", "fix the model or the golden input so the output "
                    "has finite values (a NaN here usually means an overflow or 0/0 in the "
                    "model on this input)")


def _check_references_agree(m, several: bool) -> None:
    """Refuses a method whose golden cases' float32 goldens and float64 truth disagree beyond
    what float32 rounding explains (etproof.export.references.inconsistent_cases): the runtime half
    would find such a case inconclusive, and a bundle must not ship references that cannot judge
    it. Raises ReferencesDisagree naming every such case."""
    found = inconsistent_cases(m.args.cases, m.golden_outs, m.refs, m.output_names)
    if found:
        where = f"method {m.name!r}: " if several else ""
        raise ReferencesDisagree(
            f"{where}the golden and its float64 truth disagree on {len(found)} output(s): "
            + "; ".join(found),
            "where the gap is finite, the goldens were taken from other model states than the "
            "truth: a model that keeps state outside its registered buffers (a Python attribute, "
            "a global, a parameter it writes) gives each call another history; register that "
            "state as a buffer (every golden case then starts from the buffers' initial state) "
            "or make forward free of side effects for the export. "
            "Where one side is NaN or inf, float32 overflows (or divides 0 by 0) where float64 "
            "does not: pick golden inputs whose computation stays within float32's range")


def _eager_goldens(model, args, output_names) -> tuple[list, list]:
    """The source model's float32 eager outputs on the example inputs and on every golden case,
    each call from the model's initial state (etproof.export.state; a sequence's later steps
    from the state the step before left), which it keeps."""
    import torch

    with torch.no_grad():
        outs = run_fresh(model, [args.example_inputs] + [c.inputs for c in args.cases],
                         [False] + [c.entry for c in args.cases])
    example_outs, *golden_outs = [_eager_outputs(o, len(output_names)) for o in outs]
    return example_outs, golden_outs


def _eager_outputs(out, n_outputs: int) -> list:
    """One eager call's result as its list of output tensors; ExportError where it is not."""
    import torch

    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(flat) != n_outputs or not all(isinstance(t, torch.Tensor) for t in flat):
        raise ExportError(f"the model returned {len(flat)} value(s), {n_outputs} output name(s) "
                          "were given", "name every output (tensors only), in order",
                          stage="goldens")
    return [t.detach().cpu().contiguous() for t in flat]
