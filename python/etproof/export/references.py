"""References captured at export, beside the float32 goldens (docs/manifest.md, "references").

For every golden case and output a bundle may carry, besides the float32 eager output (the
golden):

    float64        the truth: a deep copy of the eager model converted with ``.double()``, its
                   floating inputs cast to float64, run eagerly. Floating outputs are saved as
                   float64; integer and bool outputs keep their dtype.
    RECIPE         the recipe's own emulation, for a PT2E-quantized recipe
                   (``int8-dynamic-per-channel``, ``int8-static-per-channel``): the converted
                   (quantize/dequantize) graph etproof.export.quantize made, before lowering, run
                   eagerly on the same inputs; outputs in the program's output dtype.
    float16        precision emulations: a deep copy of the model and its floating inputs cast
    bfloat16       to that dtype, run eagerly; floating outputs cast to float32 for the file
                   (exact: every float16/bfloat16 value is a float32 value).

``reference_names`` is the one rule of which references a bundle is meant to carry;
``capture_references`` computes them. A reference that cannot be computed (an operator without a
float64 or bfloat16 kernel, a model that fixes a dtype inside forward, anything) is recorded as
``{"captured": false, "reason": ...}`` in the manifest and never fails the export.

May import: errors (first_line), the manifest (shape_fits), the backends' quirks
(etproof.export.quirks: references a backend adds); torch only inside functions.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from etproof.export.state import run_fresh
from etproof.errors import first_line
from etproof.export.quantize import rounded_emulation
from etproof.export.quirks import quirks_for
from etproof.manifest import shape_fits

FLOAT64 = "float64"
HALF_PRECISIONS = ("float16", "bfloat16")

# How each kind of reference was computed: the manifest's references[NAME].description.
DESCRIPTIONS = {
    FLOAT64: ("float64 truth: a deep copy of the eager model converted with .double(), floating "
              "inputs cast to float64, run eagerly in PyTorch {torch}; floating outputs float64, "
              "integer and bool outputs in their own dtype"),
    "float16": ("float16 emulation: a deep copy of the eager model and its floating inputs cast "
                "to float16, run eagerly in PyTorch {torch} on CPU; floating outputs cast "
                "(exactly) to float32"),
    "bfloat16": ("bfloat16 emulation: a deep copy of the eager model and its floating inputs cast "
                 "to bfloat16, run eagerly in PyTorch {torch} on CPU; floating outputs cast "
                 "(exactly) to float32"),
    "recipe": ("the recipe's own emulation: the converted PT2E (quantize/dequantize) graph "
               "({scheme}), before lowering, run eagerly in PyTorch {torch} on the same inputs; "
               "outputs in the program's output dtype"),
    "torchao": ("the recipe's own emulation: the eager model quantized by torchao's quantize_ "
                "({scheme}), run eagerly in PyTorch {torch} on the same inputs (torchao's "
                "quantized linears as torchao computes them); outputs in the program's output "
                "dtype"),
    "xnnpack-qb4w": ("; its int4 weights' group scales rounded to bfloat16, as XNNPACK's "
                     "blockwise 4-bit kernels store them"),
    "pt2e-weight-only": ("; weight-only: its int8 weights dequantized and every operation in float, "
                         "as the program computes them"),
    "rounded": ("the recipe's own emulation in {precision}: the converted PT2E graph ({scheme}) "
                "with every value its operators other than quantize/dequantize compute rounded "
                "to {precision} (etproof.export.quantize.rounded_emulation), run eagerly in "
                "PyTorch {torch} on the same inputs; outputs in the program's output dtype. How "
                "far it is from the recipe's emulation widens the bound of a program that "
                "computes the recipe's float parts in {precision}"),
    "xnnpack-qd8": ("; its dynamically quantized activations quantized as XNNPACK's qd8 kernels "
                    "do (a range per row of a linear's input, per batch element of a "
                    "convolution's) instead of per tensor"),
}


def reference_names(backend: str, recipe: str, precision: str, quantized: bool) -> list[str]:
    """The references a bundle of (backend, recipe) whose delegate computes in ``precision`` is
    meant to carry, in order. The one place this rule lives:

    - ``float64`` (the truth), always;
    - the recipe's name, for a PT2E-quantized recipe (``quantized``: the recipe has a
      quantization scheme, etproof.contract.recipes.QUANT_OF): its eager quantize/dequantize emulation;
    - ``float16`` / ``bfloat16`` when ``precision`` (the manifest's) is that precision: a
      reduced-precision delegate (Core ML fp16, OpenVINO on a CPU with bf16 units) is judged
      against the model computed in that precision;
    - ``RECIPE-PRECISION`` (``int8-static-per-channel-bfloat16``) for a PT2E-quantized recipe
      whose delegate computes in that reduced precision (OpenVINO's int8 on a CPU with bf16
      units): the recipe's emulation with its float parts rounded to that precision
      (rounded_name, etproof.export.quantize.rounded_emulation);
    - then what the backend's quirks add (etproof.export.quirks, ``extra_references``):
      ``bfloat16`` for every OpenVINO bundle of recipe ``fp32``, whatever the precision
      recorded at export: OpenVINO's CPU plugin computes fp32 programs in bfloat16 on CPUs with
      AVX512_BF16 or AMX (etproof.export.lower.effective_precision), which the runtime half detects on the
      machine it runs on, which need not be the machine that exported.
    """
    names = [FLOAT64]
    if quantized:
        names.append(recipe)
    if precision in HALF_PRECISIONS:
        names.append(precision)
        if quantized:
            names.append(f"{recipe}-{precision}")
    names += [n for n in quirks_for(backend).extra_references(recipe, names) if n not in names]
    return names


# The cap on a float32 golden's gap to float64 truth (the runtime half's kExplainableRoundoffs in
# cpp/include/etproof/gate/references.h, held equal by a test): 2^14 unit roundoffs of float32
# (u = 2^-24) on the range of the output's truth, 9.8e-4 of it. A golden further from its truth
# was not computed from the same model state (a model that mutates a buffer while the goldens are
# taken), or one of them is wrong; rounding does not explain it.
EXPLAINABLE_ROUNDOFFS = 16384
FLOAT32_UNIT_ROUNDOFF = 2.0 ** -24


def rounded_name(name: str, names) -> tuple[str, str] | None:
    """(recipe, precision) where ``name`` is the rounded emulation ``RECIPE-PRECISION`` of a
    recipe reference among ``names`` (reference_names), else None."""
    for p in HALF_PRECISIONS:
        base = name[: -len(p) - 1]
        if name.endswith("-" + p) and base in names and base not in (FLOAT64, *HALF_PRECISIONS):
            return base, p
    return None


def inconsistent_cases(cases, golden_outs, refs: "References", output_names) -> list[str]:
    """The golden cases whose float32 golden is further from the float64 truth than float32
    rounding explains (EXPLAINABLE_ROUNDOFFS unit roundoffs of the truth's range, or a non-finite
    value where the other is finite), one line each naming the case, the output, the gap and the
    range. Cases without a captured float64 reference, and integer or bool outputs, are not
    checked. ``golden_outs``: per case, the float32 eager outputs in ``output_names`` order."""
    import torch

    found = []
    for c, outs in zip(cases, golden_outs):
        truth_of = refs.per_case.get(c.id, {}).get(FLOAT64)
        if not truth_of:
            continue
        for name, g in zip(output_names, outs):
            t = truth_of.get(name)
            if t is None or not g.is_floating_point() or not g.numel():
                continue
            g64, t64 = g.detach().to(torch.float64), t.detach().to(torch.float64)
            both = torch.isfinite(g64) & torch.isfinite(t64)
            same_nonfinite = (g64 == t64) | (torch.isnan(g64) & torch.isnan(t64))
            if not bool((both | same_nonfinite).all()):
                found.append(f"case {c.id!r}, output {name!r}: non-finite values in one of the "
                             "float32 golden and the float64 truth where the other is finite (an "
                             "overflow or 0/0 in float32 that float64 does not have, or state)")
                continue
            if not bool(both.any()):
                continue
            gap = float((g64[both] - t64[both]).abs().max())
            span = float(t64[both].abs().max())
            cap = EXPLAINABLE_ROUNDOFFS * FLOAT32_UNIT_ROUNDOFF * span
            if gap > cap:
                found.append(f"case {c.id!r}, output {name!r}: the float32 golden is {gap:.3g} "
                             f"off the float64 truth on an output within ±{span:.4g} "
                             f"({gap / span if span else float('inf'):.3g} of the range; float32 "
                             f"rounding explains at most {cap:.3g})")
    return found


# Whether an int8 program computes what its recipe's emulation computes, measured where the export
# half runs the lowered program on every golden case (etproof.export.lower.verify_runs): the manifest's
# references[RECIPE].program_at_export. The runtime half judges an int8 column against the
# emulation with a bound of a few steps only where it matched (references.h, kMatchSteps; the two
# constants are held equal by a test). Matched, per output of every case: within MATCH_STEPS of the
# output's quantization scale where the manifest records one (int8 static: the program and the
# emulation requantize the same integers, and a value a rounding away from a tie lands one step
# over), else within the float32 rounding cap above on the emulation's range (int8 dynamic: the
# outputs are float, the integer products exact, the float epilogues reordered).
MATCH_STEPS = 1.0
# One step is judged up to the float32 rounding of the dequantized values it is measured on: an
# output spans at most 256 steps, each value is rounded to float32 (u = 2^-24), so two of them
# differ from their exact difference by at most 2 x 2^-24 x 256 = 2^-15 steps; the check admits
# 2^-10 (a one-step difference measured as 1.0000018 steps is one step).
STEP_ROUNDING = 2.0 ** -10


def program_vs_emulation(program_outs, refs: "References", recipe: str, case_ids, output_names,
                         out_specs, machine: str) -> dict | None:
    """The manifest's references[RECIPE].program_at_export: the lowered program's outputs on each
    golden case (``program_outs``, one list per case id in ``case_ids``, in ``output_names``
    order) against the recipe's emulation in ``refs``. None when the emulation was not captured
    or the program did not run here. Float outputs only; integer and bool outputs are not
    compared (the gate judges them exactly against the golden).

    {"cases": N, "outputs": N (float outputs compared, over all cases),
     "max_steps"?: float | null   (outputs with a recorded scale: max|a - e| / scale),
     "max_range_error"?: float | null   (the other outputs: max|a - e| / max|e|),
     "matched": bool, "machine": str}
    A key is absent when no output is of its kind; null: a non-finite value where the other has a
    finite one (never matched).
    """
    import torch

    if program_outs is None:
        return None
    scales = {n: (s.get("quantization") or {}).get("scale") for n, s in zip(output_names, out_specs)}
    max_steps = max_range = 0.0
    any_steps = any_range = False
    compared = 0
    matched = True
    for cid, outs in zip(case_ids, program_outs):
        emu = refs.per_case.get(cid, {}).get(recipe)
        if not emu:
            return None
        for name, a in zip(output_names, outs):
            e = emu.get(name)
            if e is None or not e.is_floating_point() or not a.is_floating_point():
                continue
            a64, e64 = a.detach().to(torch.float64), e.detach().to(torch.float64)
            if a64.shape != e64.shape:
                return None
            compared += 1
            both = torch.isfinite(a64) & torch.isfinite(e64)
            same = (a64 == e64) | (torch.isnan(a64) & torch.isnan(e64))
            gap = float((a64[both] - e64[both]).abs().max()) if bool(both.any()) else 0.0
            if not bool((both | same).all()):
                gap = float("inf")
            scale = scales.get(name)
            if scale:
                any_steps = True
                steps = gap / scale
                max_steps = max(max_steps, steps)
                matched &= steps <= MATCH_STEPS + STEP_ROUNDING
            else:
                any_range = True
                span = float(e64[both].abs().max()) if bool(both.any()) else 0.0
                rel = gap / span if span else (0.0 if gap == 0 else float("inf"))
                max_range = max(max_range, rel)
                matched &= rel <= EXPLAINABLE_ROUNDOFFS * FLOAT32_UNIT_ROUNDOFF
    if not compared:
        return None
    record = {"cases": len(case_ids), "outputs": compared}
    if any_steps:
        record["max_steps"] = _finite_or_none(max_steps)
    if any_range:
        record["max_range_error"] = _finite_or_none(max_range)
    record.update(matched=matched, machine=machine)
    return record


def _finite_or_none(x: float) -> float | None:
    """JSON has no inf: an infinite gap (non-finite values where the other is finite) is null."""
    return x if x != float("inf") else None


def this_machine() -> str:
    """The export machine in one line, for program_at_export: "x86_64 AMD EPYC (Linux)" — the
    architecture and CPU model, as /proc/cpuinfo (or platform) names them."""
    import platform

    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "cpu model", "hardware")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    model = model or platform.processor() or "unknown CPU"
    return f"{platform.machine()} {model} ({platform.system()})"


@dataclass
class References:
    """What capture_references computed.

    per_case: case id -> reference name -> output name -> tensor (only references captured);
    records: reference name -> the manifest's top-level entry ({"captured": true, "description"}
    or {"captured": false, "reason"}), for every name asked for.
    """

    per_case: dict = field(default_factory=dict)
    records: dict = field(default_factory=dict)


def capture_references(model, cases, output_names, out_specs, names, emulation=None,
                       scheme: str | None = None, emulates: str | None = None,
                       log=None) -> References:
    """Computes the references ``names`` (reference_names) on every case.

    model: the eager source model (not modified: every precision runs on a deep copy); cases:
    objects with ``.id`` and ``.inputs``; out_specs: the manifest's output specs (each output's
    dtype and shape is checked); emulation: the converted PT2E GraphModule of a quantized recipe
    (needed for a name other than float64/float16/bfloat16; None records that reference as not
    captured); scheme: the quantization scheme's description, for the record; emulates: what that
    emulation reproduces (etproof.export.quantize.EMULATES: "pt2e", "xnnpack-qd8" or "torchao":
    then ``emulation`` is the torchao-quantized eager module), recorded as the
    recipe reference's ``emulates``. Never raises for a reference it cannot compute: the record
    says why.
    """
    import torch

    say = log or (lambda _m: None)
    out = References(per_case={c.id: {} for c in cases})
    for name in names:
        try:
            if name == FLOAT64:
                outs = _run_cast(model, cases, torch.float64, output_names, out_specs, name)
                desc = DESCRIPTIONS[FLOAT64]
            elif name in HALF_PRECISIONS:
                dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}[name]
                outs = _run_cast(model, cases, dtype, output_names, out_specs, name)
                desc = DESCRIPTIONS[name]
            elif rounded := rounded_name(name, names):
                outs = _run_rounded(emulation, emulates, rounded[1], cases, output_names,
                                    out_specs, name)
                desc = (DESCRIPTIONS["rounded"].replace("{scheme}", scheme or rounded[0])
                        .replace("{precision}", rounded[1]))
            else:
                if emulation is None:
                    raise _NotCaptured(f"no converted PT2E graph for recipe {name!r} (the recipe "
                                       "quantized nothing here)")
                outs = _run_emulation(emulation, cases, output_names, out_specs, name)
                if emulates in ("torchao", "xnnpack-qb4w"):
                    desc = DESCRIPTIONS["torchao"].replace("{scheme}", scheme or name)
                    desc += DESCRIPTIONS.get(emulates, "") if emulates != "torchao" else ""
                else:
                    desc = DESCRIPTIONS["recipe"].replace("{scheme}", scheme or name)
                    desc += DESCRIPTIONS.get(emulates or "", "")
        except _NotCaptured as e:
            out.records[name] = {"captured": False, "reason": str(e)}
            say(f"reference {name}: not captured: {e}")
            continue
        except Exception as e:  # noqa: BLE001 - any failure is recorded, never fatal
            reason = f"{type(e).__name__}: {first_line(e)}"
            out.records[name] = {"captured": False, "reason": reason}
            say(f"reference {name}: not captured: {reason}")
            continue
        out.records[name] = {"captured": True,
                             "description": desc.replace("{torch}", torch.__version__)}
        if name not in (FLOAT64, *HALF_PRECISIONS) and emulates and not rounded_name(name, names):
            out.records[name]["emulates"] = emulates
        for c, tensors in zip(cases, outs):
            out.per_case[c.id][name] = dict(zip(output_names, tensors))
    return out


class _NotCaptured(Exception):
    """A reference that cannot be computed, with the reason the manifest records."""


def _flat(out, n_outputs: int, name: str) -> list:
    import torch

    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(flat) != n_outputs or not all(isinstance(t, torch.Tensor) for t in flat):
        raise _NotCaptured(f"the {name} model returned {len(flat)} value(s), the float32 model "
                           f"{n_outputs} tensor(s)")
    return [t.detach().cpu().contiguous() for t in flat]


def _check(tensors, output_names, out_specs, name, case_id, want_float) -> list:
    """Checks shape and dtype class against the output specs; floating outputs must come back
    in ``want_float`` (None: any floating dtype). Returns the tensors."""
    for t, o_name, spec in zip(tensors, output_names, out_specs):
        if not shape_fits(t.shape, spec["shape"]):
            raise _NotCaptured(f"case {case_id!r}: output {o_name!r} is {list(t.shape)} in "
                               f"{name}, {spec['shape']} in float32")
        spec_float = spec["dtype"].startswith("float")
        if spec_float != t.dtype.is_floating_point:
            raise _NotCaptured(f"case {case_id!r}: output {o_name!r} is {t.dtype} in {name}, "
                               f"{spec['dtype']} in float32")
        if spec_float and want_float is not None and t.dtype != want_float:
            raise _NotCaptured(f"case {case_id!r}: output {o_name!r} came back {t.dtype} from "
                               f"the {name} model (the model fixes a dtype inside forward)")
        if not spec_float and str(t.dtype) != f"torch.{spec['dtype']}":
            raise _NotCaptured(f"case {case_id!r}: output {o_name!r} is {t.dtype} in {name}, "
                               f"{spec['dtype']} in float32")
    return tensors


def _run_cast(model, cases, dtype, output_names, out_specs, name) -> list:
    """The model and its floating inputs cast to ``dtype`` (a deep copy), on every case.
    float64: floating outputs stay float64 (and must come back float64); float16/bfloat16: any
    floating output is cast to float32 (exact)."""
    import torch

    m = copy.deepcopy(model).to(dtype).eval()
    results = []
    with torch.no_grad():
        def cast(inputs):
            return tuple(t.to(dtype) if t.is_floating_point() else t for t in inputs)

        calls = [cast(c.inputs) for c in cases]
        for c, out in zip(cases, run_fresh(m, calls, [c.entry for c in cases], cast)):
            outs = _flat(out, len(output_names), name)
            _check(outs, output_names, out_specs, name, c.id,
                   torch.float64 if dtype == torch.float64 else None)
            if dtype != torch.float64:
                outs = [t.to(torch.float32) if t.is_floating_point() else t for t in outs]
            results.append(outs)
    return results


def _run_emulation(gm, cases, output_names, out_specs, name) -> list:
    """The converted PT2E graph ``gm`` on every case's own inputs; outputs in the program's
    output dtype (the float32 golden's)."""
    import torch

    results = []
    with torch.no_grad():
        for c, out in zip(cases, run_fresh(gm, [c.inputs for c in cases],
                                           [c.entry for c in cases])):
            outs = _flat(out, len(output_names), name)
            _check(outs, output_names, out_specs, name, c.id, None)
            outs = [t.to(getattr(torch, spec["dtype"])) for t, spec in zip(outs, out_specs)]
            results.append(outs)
    return results


def _run_rounded(emulation, emulates, precision, cases, output_names, out_specs, name) -> list:
    """The PT2E emulation with its float parts rounded to ``precision`` (rounded_emulation) on
    every case; _NotCaptured where the recipe has no converted PT2E graph to round."""
    import torch

    if emulation is None or emulates not in ("pt2e", "pt2e-weight-only"):
        raise _NotCaptured(f"{name}: only a converted PT2E graph (emulates \"pt2e\" or "
                           f"\"pt2e-weight-only\") is rounded to {precision}; this recipe's "
                           f"emulation is {emulates or 'absent'}")
    dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}[precision]
    return _run_emulation(rounded_emulation(emulation, dtype), cases, output_names, out_specs,
                          name)
