"""The program's methods as the export fills them in (etproof.export.pipeline): the ``methods``
entry of a model spec checked (schema 2: docs/manifest.md), one Method per method of the program —
a lone ``forward`` for a one-method program — and the module torch.export traces for a method
other than forward.

May import: etproof.contract.arguments and .recipes, errors; torch only inside functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from typing import Any

from etproof.contract.arguments import (
    ExportOptions,
    check_export_arguments,
    is_foreign_step,
    step_case,
)
from etproof.contract.recipes import RECIPES
from etproof.errors import InvalidArgument

# An ExecuTorch method name (a Python attribute of the model): docs/manifest.md, schema 2.
METHOD_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The keys of one entry of ``methods`` (export_model): what differs between methods.
METHOD_REQUIRED = ("example_inputs", "input_names", "output_names", "golden_inputs")
METHOD_OPTIONAL = ("golden_meta", "dynamic_shapes")


@dataclass
class Method:
    """One method of the program as the stages fill it in (export_model)."""

    name: str                 # the ExecuTorch method name ("forward" for a one-method program)
    module: Any               # what torch.export traces: the model, or MethodModule
    input_names: list
    output_names: list
    args: Any = None          # ExportArguments
    in_specs: list = field(default_factory=list)
    out_specs: list = field(default_factory=list)
    golden_outs: list = field(default_factory=list)
    ep: Any = None
    quant_record: dict | None = None
    emulation: Any = None     # the recipe's eager emulation (etproof.export.quantize.Quantized)
    float_graph: Any = None   # the calibrated prepared graph (etproof.export.quantize.Quantized)
    refs: Any = None          # etproof.export.references.References
    goldens: list = field(default_factory=list)  # the manifest's goldens entries


def method_module(model, method: str):
    """A module whose forward is ``model.METHOD`` (torch.export traces forward only).

    Where METHOD is a function of the model's class: a view of ``model`` — a shallow copy whose
    class is a subclass with ``forward = METHOD`` — sharing its parameters, buffers and
    submodules (the same dicts), so the weights and the state are the model's own, the names
    are the model's (no prefix), and the traced nodes' stack traces are the user's own lines
    (through a wrapper's ``forward``, torch.export records the wrapper's line instead: an
    error then pointed at etproof's code). Otherwise (a method set on the instance, a
    builtin) a wrapper holding ``model`` as the submodule ``model``, with the method's own
    signature."""
    import copy
    import inspect
    import types

    import torch

    fn = inspect.getattr_static(type(model), method, None)
    if inspect.isfunction(fn):
        # the same code, named forward: torch.export keeps a node's stack trace at the frame of
        # the forward being traced (measured, torch 2.13), so the user's file and line survive;
        # error_detail names the function from the source (errors._def_name)
        forward = types.FunctionType(fn.__code__.replace(co_name="forward"), fn.__globals__,
                                     "forward", fn.__defaults__, fn.__closure__)
        forward.__kwdefaults__ = fn.__kwdefaults__
        view = copy.copy(model)
        view.__class__ = type(f"{type(model).__name__}_{method}", (type(model),),
                              {"forward": forward, "__module__": type(model).__module__,
                               "etproof_method": method})
        return view.eval()

    class MethodModule(torch.nn.Module):
        etproof_method = method
        etproof_wrapper = True  # etproof.export.state.program_method reaches the model so

        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return getattr(self.model, method)(*args)

    params = list(inspect.signature(getattr(model, method)).parameters.values())
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    MethodModule.forward.__signature__ = inspect.Signature([self_param] + params)
    return MethodModule().eval()


def check_methods_spec(spec: dict, backend: str, recipe: str) -> None:
    """The checks export_model makes on a model spec with ``methods`` (etproof.contract.userspec),
    for (backend, recipe), before anything runs; raises InvalidArgument."""
    opts = ExportOptions(**{f.name: spec[f.name] for f in fields(ExportOptions) if f.name in spec})
    check_methods(spec.get("model"), spec.get("example_inputs"), "check", backend, recipe,
                  spec.get("input_names"), spec.get("output_names"), spec.get("golden_inputs"),
                  opts)


def check_methods(model, example_inputs, name, backend, recipe, input_names, output_names,
                  golden_inputs, opts: ExportOptions) -> list:
    """check_export_arguments for every method; returns the Method list (one, "forward", for a
    program without ``opts.methods``). Raises InvalidArgument."""
    common = dict(name=name, backend=backend, recipe=recipe, model_name=opts.model_name,
                  compute_unit=opts.compute_unit, weights=opts.weights, budget=opts.budget,
                  external_weights=opts.external_weights)
    if opts.methods is None:
        missing = [k for k, v in (("example_inputs", example_inputs), ("input_names", input_names),
                                  ("output_names", output_names),
                                  ("golden_inputs", golden_inputs)) if v is None]
        if missing:
            raise InvalidArgument(f"{', '.join(missing)} not given",
                                  "give the model's example_inputs, input_names, output_names and "
                                  "golden_inputs (or methods, for a program with several methods)",
                                  stage="export")
        args, in_specs = check_export_arguments(
            model, example_inputs, input_names=input_names, output_names=output_names,
            golden_inputs=golden_inputs, preprocessing=opts.preprocessing, labels=opts.labels,
            golden_meta=opts.golden_meta, layouts=opts.layouts, slice_axis=opts.slice_axis,
            integer_atol=opts.integer_atol, dynamic_shapes=opts.dynamic_shapes, **common)
        meths = [Method("forward", model, list(input_names), list(output_names), args, in_specs)]
        _check_step_methods(meths)
        _check_greedy(meths, opts)
        return meths
    given = [k for k, v in (("example_inputs", example_inputs), ("input_names", input_names),
                            ("output_names", output_names), ("golden_inputs", golden_inputs),
                            ("golden_meta", opts.golden_meta),
                            ("dynamic_shapes", opts.dynamic_shapes)) if v is not None]
    if given:
        raise InvalidArgument(f"{', '.join(map(repr, given))} {'goes' if len(given) == 1 else 'go'}"
                              " inside each method's entry of methods, not at the top level",
                              _METHODS_REMEDY, stage="export")
    for key, v in (("labels", opts.labels), ("preprocessing", opts.preprocessing)):
        if v is not None:
            raise InvalidArgument(f"{key} is not supported with several methods (it names one "
                                  "input or output of one method)", f"drop {key}", stage="export")
    import torch

    if not isinstance(model, torch.nn.Module):
        raise InvalidArgument(f"model must be a torch.nn.Module, got {type(model).__name__}",
                              "pass the PyTorch module to export", stage="export")
    if not isinstance(opts.methods, dict) or not opts.methods:
        raise InvalidArgument(f"methods must be a non-empty dict {{METHOD: {{...}}}}, got "
                              f"{type(opts.methods).__name__}", _METHODS_REMEDY, stage="export")
    meths = [_method(model, mname, entry, opts, common) for mname, entry in opts.methods.items()]
    _check_named_tensors(meths, opts)
    _check_step_methods(meths)
    _gather_steps(meths, RECIPES[(backend, recipe)]["quant"], recipe)
    _check_greedy(meths, opts)
    return meths


def _check_greedy(meths: list, opts: ExportOptions) -> None:
    """greedy_output names an output of every method a sequence case's steps run through, and
    there is a sequence case; the budget's min_greedy_tokens needs greedy_output, and every
    sequence case has that many steps (a greedy decode of N steps takes N tokens). Raises
    InvalidArgument."""
    budget_min = (opts.budget or {}).get("min_greedy_tokens")
    if opts.greedy_output is None:
        if budget_min is not None:
            raise InvalidArgument("budget min_greedy_tokens without greedy_output: no output "
                                  "is named as the logits a greedy decode takes its tokens from",
                                  "set greedy_output to the logits output", stage="export")
        return
    sequences: dict[str, int] = {}
    for m in meths:
        for c in m.args.cases:
            if c.sequence is None:
                continue
            sequences[c.sequence[0]] = sequences.get(c.sequence[0], 0) + 1
            if opts.greedy_output not in m.output_names:
                raise InvalidArgument(f"greedy_output {opts.greedy_output!r} is not an output of "
                                      f"method {m.name!r} (its outputs: {m.output_names})",
                                      "name the logits output", stage="export")
    if not sequences:
        raise InvalidArgument("greedy_output is set but no golden case is a sequence of calls: "
                              "a greedy decode is a prompt and its decode steps",
                              "give a sequence case ({\"steps\": [...]}) or drop greedy_output",
                              stage="export")
    short = sorted(c for c, n in sequences.items() if budget_min is not None and n < budget_min)
    if short:
        raise InvalidArgument(f"budget min_greedy_tokens {budget_min}: sequence case(s) "
                              f"{', '.join(short)} take fewer tokens (one per step)",
                              "give every sequence case at least that many steps, or lower "
                              "min_greedy_tokens", stage="export")


def _check_step_methods(meths: list) -> None:
    """A sequence case's step may name its method: in a one-method program, that method; in a
    program with several, any of them (_gather_steps moves it there). A sequence's id must not
    be a method's name (the reports name a step CASE/stepK, a case of another method
    METHOD/CASE). Raises InvalidArgument naming the case and the step."""
    names = {m.name for m in meths}
    for m in meths:
        for c in m.args.cases:
            if c.sequence is None:
                continue
            case, k = c.sequence
            if c.method is not None and c.method not in names:
                raise InvalidArgument(
                    f"golden case {case!r} step {k} names method {c.method!r}, which the "
                    f"program does not have (its methods: {sorted(names)})",
                    f"name one of the program's methods, or give the step as {m.name!r}'s "
                    "inputs alone", stage="export")
            if len(meths) > 1 and case in names:
                raise InvalidArgument(
                    f"sequence case {case!r} has the name of a method: its steps' names "
                    f"({case}/step{k}) would read as that method's cases", "rename the case",
                    stage="export")


def _gather_steps(meths: list, quant, recipe: str) -> None:
    """Moves each sequence step that names another method into that method's cases (after its
    own, in step order), its inputs checked against that method's; gives a step whose step
    before ran through another method its ``prefix`` (GoldenCase.prefix). Every method must end
    with a golden case. A graph-quantized recipe (PT2E: its calibration and emulation are one
    graph per method, which cannot carry state between methods) refuses a sequence that crosses
    methods. Raises InvalidArgument."""
    by_name = {m.name: m for m in meths}
    for m in meths:
        foreign = [c for c in m.args.cases if is_foreign_step(c, m.name)]
        if not foreign:
            continue
        m.args.cases = [c for c in m.args.cases if not is_foreign_step(c, m.name)]
        for c in foreign:
            b = by_name[c.method]
            try:
                moved = step_case(c, b.args.example_inputs, b.input_names,
                                  b.args.dynamic_dims or [[] for _ in b.input_names])
            except InvalidArgument as e:
                raise InvalidArgument(f"method {b.name!r}: {e.cause}", e.remedy,
                                      stage="export") from e
            if any(x.id == moved.id for x in b.args.cases):
                raise InvalidArgument(f"method {b.name!r}: golden case id {moved.id!r} repeats "
                                      "(a step of another method's sequence has that id)",
                                      "give each golden case its own id", stage="export")
            b.args.cases.append(moved)
    steps = {}  # sequence -> {k: (method, case)}
    for m in meths:
        for c in m.args.cases:
            if c.sequence is not None:
                steps.setdefault(c.sequence[0], {})[c.sequence[1]] = (m, c)
    for case, by_k in steps.items():
        crosses = len({m.name for m, _ in by_k.values()}) > 1
        if crosses and quant is not None and not quant.startswith("torchao-"):
            raise InvalidArgument(
                f"sequence case {case!r} runs through methods "
                f"{sorted({m.name for m, _ in by_k.values()})}, and recipe {recipe!r} quantizes "
                "each method's graph on its own (PT2E): its calibration and emulation cannot "
                "carry the state from one method to the next", "export this sequence with the "
                "fp32, 8da4w or int8-weight-only recipe, or keep its steps in one method",
                stage="export")
        for k in sorted(by_k)[1:]:
            m, c = by_k[k]
            if by_k[k - 1][0] is not m:
                prefix = tuple((by_k[j][0].name, by_k[j][1].inputs) for j in range(k))
                m.args.cases[m.args.cases.index(c)] = replace(c, method=m.name, prefix=prefix)
    empty = [m.name for m in meths if not m.args.cases]
    if empty:
        raise InvalidArgument(f"method(s) {', '.join(map(repr, empty))} have no golden case",
                              "give each method golden_inputs, or a sequence step that runs "
                              "through it", stage="export")


_METHODS_REMEDY = ("give each method's example_inputs, input_names, output_names and "
                   "golden_inputs (and golden_meta, dynamic_shapes) inside methods[METHOD]")


def _method(model, mname, entry, opts: ExportOptions, common: dict) -> Method:
    """The Method of ``methods[mname]``: its entry's keys and the method checked, then
    check_export_arguments on its module; raises InvalidArgument naming the method."""
    if not isinstance(mname, str) or not METHOD_NAME_RE.match(mname):
        raise InvalidArgument(f"method name {mname!r} is not an identifier",
                              "name each method as the model's attribute ([A-Za-z_][A-Za-z0-9_]*)",
                              stage="export")
    if not callable(getattr(model, mname, None)):
        raise InvalidArgument(f"the model has no method {mname!r}",
                              f"methods' keys are methods of {type(model).__name__}",
                              stage="export")
    if not isinstance(entry, dict):
        raise InvalidArgument(f"methods[{mname!r}] must be a dict, got "
                              f"{type(entry).__name__}", _METHODS_REMEDY, stage="export")
    missing = [k for k in METHOD_REQUIRED if k not in entry]
    unknown = [k for k in entry if k not in METHOD_REQUIRED + METHOD_OPTIONAL]
    if missing or unknown:
        raise InvalidArgument(
            f"methods[{mname!r}]: " + "; ".join(
                ([f"missing {', '.join(missing)}"] if missing else [])
                + ([f"unknown key(s) {', '.join(map(repr, unknown))}"] if unknown else [])),
            f"its keys: {', '.join(METHOD_REQUIRED)} and optionally "
            f"{', '.join(METHOD_OPTIONAL)}", stage="export")
    ins, outs = list(entry["input_names"]), list(entry["output_names"])
    module = model if mname == "forward" else method_module(model, mname)
    try:
        args, in_specs = check_export_arguments(
            module, entry["example_inputs"], input_names=ins, output_names=outs,
            golden_inputs=entry["golden_inputs"], golden_meta=entry.get("golden_meta"),
            dynamic_shapes=entry.get("dynamic_shapes"),
            layouts=only_named(opts.layouts, ins + outs),
            slice_axis=only_named(opts.slice_axis, outs),
            integer_atol=only_named(opts.integer_atol, outs), method=mname, **common)
    except InvalidArgument as e:
        raise InvalidArgument(f"method {mname!r}: {e.cause}", e.remedy, stage="export") from e
    if opts.model_name is None:
        args.model_name = type(model).__name__
    return Method(mname, module, ins, outs, args, in_specs)


def _check_named_tensors(meths: list, opts: ExportOptions) -> None:
    """layouts, slice_axis and integer_atol name only tensors some method has."""
    every = {n for m in meths for n in m.input_names + m.output_names}
    outs_all = {n for m in meths for n in m.output_names}
    for what, by_name, known in (("layouts", opts.layouts, every),
                                 ("slice_axis", opts.slice_axis, outs_all),
                                 ("integer_atol", opts.integer_atol, outs_all)):
        for k in (by_name or {}):
            if k not in known:
                raise InvalidArgument(f"{what} names {k!r}, which no method has",
                                      f"the methods' tensors: {sorted(known)}", stage="export")


def only_named(by_name: dict | None, names: list) -> dict | None:
    """The entries of ``by_name`` (slice_axis, integer_atol) naming one of ``names``."""
    if by_name is None:
        return None
    return {k: v for k, v in by_name.items() if k in names}
