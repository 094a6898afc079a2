"""Building the tapped twin inside an export (docs/manifest.md "The tapped twin").

etproof.export.pipeline calls ``prepare_twin`` once the shipped program is exported (and quantized) and
its references captured, before lowering it, and ``write_twin`` once the shipped bundle is
staged: the twin is lowered for the same backend and recipe, its taps stripped after lowering,
and written as the bundle ``NAME.taps`` into the shipped bundle's staging directory, so it is
renamed into place with it. What is tapped and what each tap is compared with: etproof.export.taps
(float recipes) and etproof.export.taps_quantized (PT2E-quantized recipes).

May import: etproof.export.taps, etproof.export.taps_quantized, etproof.export.bundle, etproof.export.delegation,
etproof.export.lower, etproof.manifest, etproof.export.references, etproof.export.toolchain, errors; ExecuTorch only inside functions.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from etproof.export.bundle import file_ref, write_goldens, write_program, write_references
from etproof.export.delegation import delegation_record
from etproof.errors import in_stage
from etproof.export.lower import lower, verify_runs
from etproof.manifest import MANIFEST_SUFFIX, write_manifest
from etproof.export.quantize import EMULATES
from etproof.export.references import program_vs_emulation, this_machine
from etproof.export.taps import (
    delegate_calls,
    plan_taps,
    run_tapped,
    tap_names,
    tap_output_specs,
    tapped_in_delegate,
    taps_record,
    twin_name,
    twin_references,
)
from etproof.export.taps_quantized import plan_quantized_taps, quantized_twin_values
from etproof.export.toolchain import program_calls


@dataclass
class TwinWork:
    """The tapped twin as export_model builds it."""

    plan: Any = None             # etproof.export.taps.TapPlan
    cases: list = field(default_factory=list)          # the golden cases it keeps (plan.cases)
    tap_names: list = field(default_factory=list)
    output_names: list = field(default_factory=list)   # the model's, then the taps'
    out_specs: list = field(default_factory=list)
    golden_outs: list = field(default_factory=list)    # per case, every output (float32)
    refs: Any = None             # etproof.export.taps.TwinReferences
    calls_shipped: int = 0
    exported_from: str | None = None  # the MODEL given to etproof export (taps.exported_from)


def prepare_twin(m, taps, taps_range, taps_from, ref_names: list[str], recipe: str,
                 scheme: str | None, ref_records: dict, name: str, say) -> TwinWork:
    """Plans the taps of method ``m`` (etproof.contract.program.Method, exported; quantized where
    ``scheme`` is a PT2E scheme, with its float_graph and emulation) and computes the twin's
    goldens and references (``ref_names``; ``ref_records``: the shipped manifest's references).
    Raises InvalidArgument (stage "export") as plan_taps does."""
    twin = TwinWork(exported_from=taps_from)
    # bytes an element of a tap takes per case: the float32 golden, float64 truth (8) and each
    # emulation (written as float32)
    per_element = 4 + sum(8 if r == "float64" else 4 for r in ref_names)
    with in_stage("export"):
        say(f"{name}: tapping ({'every eligible node' if taps is True else taps})")
        if scheme:
            twin.plan = plan_quantized_taps(m.ep, taps, EMULATES[scheme] == "pt2e",
                                            len(m.args.cases), per_element, taps_range,
                                            m.output_names)
        else:
            twin.plan = plan_taps(m.ep, taps, len(m.args.cases), per_element,
                                  taps_range=taps_range, output_names=m.output_names)
        twin.cases = m.args.cases[:twin.plan.cases]
        say(f"{name}: {len(twin.plan.nodes)} of {twin.plan.eligible} eligible nodes tapped"
            + (f", {len(twin.cases)} of {len(m.args.cases)} golden cases (the twin's files "
               "within etproof.export.taps.TWIN_BYTES_BUDGET)"
               if len(twin.cases) < len(m.args.cases) else ""))
    with in_stage("goldens"):
        n_out = len(m.output_names) + len(twin.plan.nodes)
        twin.tap_names = tap_names(len(twin.plan.nodes))
        twin.output_names = m.output_names + twin.tap_names
        tapped_module = twin.plan.ep.module()
        example = run_tapped(tapped_module, m.args.example_inputs, n_out)
        twin.out_specs = copy.deepcopy(m.out_specs) + tap_output_specs(
            twin.tap_names, example[len(m.output_names):])
        for spec, q in zip(twin.out_specs[len(m.output_names):], twin.plan.quantization):
            if q is not None:
                spec["quantization"] = q
        say(f"{name}: twin references ({', '.join(ref_names)})")
        log = lambda msg: say(f"{name}: {msg}")  # noqa: E731
        if scheme:
            twin.golden_outs, twin.refs = quantized_twin_values(
                twin.plan, m.float_graph, m.emulation, twin.cases,
                m.golden_outs[:len(twin.cases)], m.refs.per_case, ref_names, recipe,
                ref_records, twin.output_names, twin.out_specs, log=log)
        else:
            twin.golden_outs = [run_tapped(tapped_module, c.inputs, n_out) for c in twin.cases]
            twin.refs = twin_references(m.module, m.args.example_inputs, twin.plan, twin.cases,
                                        ref_names, twin.output_names, twin.out_specs, log=log)
        del tapped_module
    return twin


def tag_constants(ep, tag: str) -> None:
    """Tags every constant input of the exported program ``ep`` (parameters, buffers, lifted
    constants) for the named data ``tag``, in place: what etproof.export.lower.tag_external_weights
    leaves on them through ExecuTorch's delegate_external_constants_pass_unlifted and a strict
    re-export (meta["custom"]["delegate_constant_tag"], which XNNPACK reads when it serializes a
    constant), set directly, since re-exporting the tapped program would rename the nodes its
    taps follow."""
    sig = ep.graph_signature
    constants = (set(sig.inputs_to_parameters) | set(sig.inputs_to_buffers)
                 | set(sig.inputs_to_lifted_tensor_constants))
    for node in ep.graph.nodes:
        if node.op == "placeholder" and node.name in constants:
            node.meta.setdefault("custom", {})["delegate_constant_tag"] = tag


def write_twin(twin: TwinWork, shipped_doc: dict, tmp: Path, name: str, backend: str,
               recipe: str, facts: dict, m, verify: bool, say) -> None:
    """Lowers the tapped program (taps stripped after lowering), writes it, its goldens,
    references and manifest into ``tmp/NAME.taps/`` as the bundle ``NAME.taps``. The manifest is
    the shipped one's with the twin's name, artifact, delegates, operators, delegation, outputs,
    goldens, references and data_files, plus ``taps``. A shipped bundle with its weights in
    NAME.ptd gets a twin with its own NAME.taps.ptd (the same weights: the twin is a complete
    bundle)."""
    from executorch.devtools.intermediate_output_tap import strip_taps_

    tname = twin_name(name)
    tdir = tmp / tname
    n_model = len(m.output_names)
    n_taps = len(twin.tap_names)
    external = bool(shipped_doc.get("data_files"))
    with in_stage("lower", recipe):
        say(f"{tname}: lowering for {backend}")
        if external:
            tag_constants(twin.plan.ep, tname)
        edge, backend_config, rejections = lower(twin.plan.ep, backend, recipe, facts,
                                                 tname if external else None)
        inside = tapped_in_delegate(edge, n_model, n_taps)
        strip_taps_(edge)
        delegation = delegation_record(edge, rejections)
        calls_twin = delegate_calls(edge)
    with in_stage("serialize"):
        tdir.mkdir()
        et = edge.to_executorch(backend_config) if backend_config else edge.to_executorch()
        pte, data_files = write_program(et, tdir, tname)
        program_bytes = pte.read_bytes()
        delegates, operators = program_calls(program_bytes)
    if verify:
        with in_stage("lower", recipe):
            data_path = tdir / data_files[0] if data_files else None
            # an int8 twin, like its shipped program, runs on every golden case it keeps and is
            # measured against its recipe's emulation, taps included: attribute judges its taps
            # against the emulation only where the twin matched it (references.program_vs_emulation)
            measure = bool(facts["quant"]) and twin.refs.records.get(recipe, {}).get("captured")
            runs = verify_runs(pte if data_path else program_bytes, data_path,
                               twin.cases[0].inputs, delegates, n_model + n_taps, say, tname,
                               operators=operators,
                               more_inputs=[c.inputs for c in twin.cases[1:]] if measure else (),
                               input_names=m.input_names)
            record = (program_vs_emulation(runs, twin.refs, recipe, [c.id for c in twin.cases],
                                           twin.output_names, twin.out_specs, this_machine())
                      if measure else None)
            if record is not None:
                twin.refs.records[recipe] = dict(twin.refs.records[recipe],
                                                 program_at_export=record)
    with in_stage("goldens"):
        gdir = tdir / f"{tname}.goldens"
        gdir.mkdir()
        goldens = write_goldens(gdir, twin.cases, twin.golden_outs, m.input_names,
                                twin.output_names)
        per_case = {cid: {r: t for r, t in refs.items()
                          if twin.refs.records.get(r, {}).get("captured")}
                    for cid, refs in twin.refs.per_case.items()}
        ref_files = write_references(gdir, per_case)
        for g in goldens:
            if ref_files.get(g["id"]):
                g["references"] = ref_files[g["id"]]
    with in_stage("serialize"):
        doc = copy.deepcopy(shipped_doc)
        doc.update(name=tname, artifact=file_ref(pte), delegates=delegates, operators=operators,
                   delegation=delegation, outputs=twin.out_specs, goldens=goldens,
                   references=twin.refs.records)
        doc.pop("data_files", None)
        if data_files:
            doc["data_files"] = [file_ref(tdir / f) for f in data_files]
        doc["taps"] = taps_record(name, shipped_doc["artifact"]["sha256"], twin.plan,
                                  twin.tap_names, inside, twin.calls_shipped, calls_twin,
                                  shipped_doc["delegation"], delegation, twin.exported_from)
        write_manifest(doc, tdir / f"{tname}{MANIFEST_SUFFIX}")
    say(f"{tname}: {n_taps} taps, {sum(inside)} inside a delegate")
