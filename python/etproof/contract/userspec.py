"""The MODULE:FUNCTION contract of ``etproof export``: documented, loaded and checked in one place.

FUNCTION takes no arguments and returns a dict (CONTRACT below). ``load`` imports it, calls it
once and checks the dict once, listing every problem in one error, before any column is exported.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

from etproof.contract.arguments import GOLDEN_DATA_MEANING, GoldenCase, check_export_arguments
from etproof.errors import EtproofError, InvalidArgument, command_name
from etproof.manifest import LAYOUTS, NAME_RE
from etproof.contract.program import check_methods_spec
from etproof.contract.recipes import supported_pairs

BUILTIN = {"efficientnet_lite0": "etproof.demo.efficientnet_lite0:spec",
           "tiny": "etproof.fixtures.tiny:spec"}

REQUIRED = ("model", "example_inputs", "input_names", "output_names", "golden_inputs")
OPTIONAL = ("name", "model_name", "layouts", "preprocessing", "labels", "golden_meta",
            "compute_unit", "weights", "slice_axis", "integer_atol", "budget", "dynamic_shapes",
            "external_weights", "methods", "greedy_output")
# With ``methods``, these keys live inside each method's entry (etproof.contract.program.METHOD_REQUIRED
# and METHOD_OPTIONAL), not at the top level.
PER_METHOD = ("example_inputs", "input_names", "output_names", "golden_inputs", "golden_meta",
              "dynamic_shapes")

# The example of the contract; README.md's MODULE:FUNCTION paragraph shows the same lines, and a
# test exports it.
EXAMPLE = '''\
# my_model.py -> build/etproof export my_model.py:make_model --backend xnnpack --recipe fp32 --out out
import torch

def make_model():
    torch.manual_seed(0)
    x = torch.randn(1, 4)
    return {"model": torch.nn.Linear(4, 2).eval(), "example_inputs": (x,),
            "input_names": ["x"], "output_names": ["y"],
            "golden_inputs": [("seed0", "synthetic", "torch.randn, seed 0", (x,))],
            "name": "linear"}  # optional: bundles linear-BACKEND-RECIPE (default make_model-...)
'''

CONTRACT = f"""\
MODEL is efficientnet_lite0, tiny, MODULE:FUNCTION or FILE.py:FUNCTION. FUNCTION takes no
arguments and returns a dict:

  model           a torch.nn.Module (put it in eval mode). One whose methods write registered
                  buffers (a running total, a KV cache) is fine: every golden case starts from
                  the buffers as they are when the export begins, in both halves, and the
                  manifest names them (state.mutable_buffers)
  example_inputs  a tuple of tensors: the positional inputs torch.export traces with; any
                  dtype the manifest carries (float32, int64 token ids, bool masks, ...), any
                  rank (0: a scalar-shaped tensor); () for a model that takes no inputs
  input_names     a list of str, one per example input, in order ([A-Za-z0-9._-]+)
  output_names    a list of str, one per model output, in order
  golden_inputs   a list of (case_id, data, origin, tensors), at least one:
                    case_id  a str naming the case ([A-Za-z0-9._-]+)
                    data     "real" for real-domain inputs such as photos or sentences,
                             "synthetic" for generated ones (torch.randn, constants)
                    origin   where they came from: a file, a package, "torch.randn, seed 0"
                    tensors  a tuple with the example inputs' shapes and dtypes (any
                             size inside a dynamic dimension's range); or, for a case
                             that is a sequence of calls on one program (a prompt, then
                             decode steps), {{"steps": [tensors, ...]}}: the steps run in
                             order, each on the state the step before left (a KV cache),
                             the first from the initial state; a step may be
                             (METHOD, tensors), METHOD the method it runs through (with
                             several methods any of them, sharing the program's state:
                             prefill, then decode). Each step is a golden case CASE.stepK,
                             judged and named CASE/stepK
optional:
  dynamic_shapes  torch.export's dynamic_shapes: {{input name: {{axis: Dim}}}} or a tuple with
                  one None or {{axis: Dim}} per input, each torch.export.Dim(NAME, min=LO,
                  max=HI) with a finite max (ExecuTorch plans memory for the largest size);
                  one Dim may be shared by several inputs. The golden cases must include the
                  minimum, the maximum and one size between of every Dim; the runtime half
                  refuses a size outside the range by name
  name            the bundle name stem: bundles are NAME-BACKEND-RECIPE; default: the
                  function's name (the export says so). model_name is the same key.
  layouts         {{tensor name: "nchw" | "nhwc"}} for rank-4 tensors whose layout is known
  preprocessing   how raw data becomes the input (docs/manifest.md, "preprocessing")
  labels          {{"output": NAME, "source": STR, "names": [class names]}}
  weights         {{"kind": "pretrained" | "seeded", "source": STR}}: where the weights came from
  slice_axis      {{output name: AXIS | None}}: the gate also judges each slice along AXIS (an
                  int >= 0 below the output's rank) and names the worst; None: never slice;
                  absent: the gate's default (the batch axis when it is > 1)
  integer_atol    {{integer or bool output name: N}}: how far (N >= 0) each element may differ;
                  absent: integer and bool outputs are compared exactly
  budget          {{"min_sqnr_db"?: DB, "min_cosine"?: C, "top1_agreement"?: F in [0, 1],
                  "min_greedy_tokens"?: N}}: what the recipe may cost, its emulation against
                  the float32 golden (min_greedy_tokens: the tokens of every sequence case a
                  greedy decode takes as the float32 model does, greedy_output needed); absent:
                  the cost is reported, not judged
  greedy_output   a language model's logits output (float, [..., positions, vocabulary]): per
                  sequence case, the tokens a greedy decode of the program (and of the recipe's
                  emulation) takes as the float32 model does before the first difference
  external_weights  True: the program's constant weights go into NAME.ptd beside NAME.pte
                  (ExecuTorch's external constants; the manifest's data_files lists it with
                  its size and SHA-256) instead of inside the .pte. portable and xnnpack
                  only: other backends refuse it. Default False
  methods         a program with several methods (encode, decode, ...): {{METHOD: {{
                  "example_inputs", "input_names", "output_names", "golden_inputs",
                  "golden_meta"?, "dynamic_shapes"?}}}}, each what those keys are above, for
                  model.METHOD (the top-level keys are then left out). Every method is
                  exported and lowered into one program; the manifest is schema_version 2 and
                  the runtime half replays every method (--method picks some). layouts,
                  slice_axis and integer_atol name tensors of any method;
                  external_weights puts every method's weights in the one NAME.ptd; labels
                  and preprocessing are refused with methods
  golden_meta, compute_unit: as export_model (etproof.export.pipeline) takes them

Example:

{EXAMPLE}"""

def help_remedy() -> str:
    """The remedy that points at the model-function contract (command_name: as the user called
    the export half)."""
    return f"see `{command_name()} export --help` for what FUNCTION must return"


@dataclass
class Loaded:
    target: str       # MODULE:FUNCTION as resolved
    stem: str         # bundle name stem: bundles are STEM-BACKEND-RECIPE
    stem_from_function: bool  # the stem defaulted to the function's name
    kwargs: dict      # export_model's keyword arguments (less name/out_dir/backend/recipe)


def load(ref: str, call_once=None) -> Loaded:
    """Imports and calls MODEL's function once and checks its dict; raises InvalidArgument.
    ``call_once(model, inputs)`` (a layer above supplies it: etproof.export.state.call_once)
    runs the model once on example_inputs, so the output count is checked with the rest."""
    target = BUILTIN.get(ref, ref)
    if ":" not in target:
        raise InvalidArgument(f"unknown model {ref!r}",
                              f"pass one of {', '.join(BUILTIN)}, MODULE:FUNCTION or "
                              "FILE.py:FUNCTION", stage="export")
    func_name = target.rsplit(":", 1)[1]
    func = _import(target)
    try:
        spec = func()
    except EtproofError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever the user's function raises
        raise InvalidArgument(f"{target}() failed: {type(e).__name__}: {e}",
                              f"FUNCTION must build and return the model dict; {help_remedy()}",
                              stage="export") from e
    found = problems(spec, call_once)
    if found:
        head = (f"{target}() returned {type(spec).__name__}, not a dict"
                if not isinstance(spec, dict) else
                f"{target}() returned a dict with {len(found)} problem"
                f"{'s' if len(found) > 1 else ''}")
        body = "" if not isinstance(spec, dict) else "".join(f"\n  - {p}" for p in found)
        raise InvalidArgument(head + body, help_remedy(), stage="export")
    kwargs = dict(spec)
    name = kwargs.pop("name", None)
    derived = not (name or kwargs.get("model_name")) and ref not in BUILTIN
    stem = name or kwargs.get("model_name") or (ref if ref in BUILTIN else func_name)
    kwargs["model_name"] = kwargs.get("model_name") or stem
    return Loaded(target, stem, derived, kwargs)


def _import(target: str):
    mod_name, func_name = target.rsplit(":", 1)
    try:
        if mod_name.endswith(".py"):
            from importlib import util as importlib_util

            file = Path(mod_name)
            if not file.is_file():
                raise ImportError(f"no such file {file}")
            # As `python FILE.py` would: the file's own directory is importable, so the model
            # file can import a module beside it, from whatever directory this runs in.
            here = str(file.resolve().parent)
            if here not in sys.path:
                sys.path.insert(0, here)
            mspec = importlib_util.spec_from_file_location(file.stem, file)
            module = importlib_util.module_from_spec(mspec)
            sys.modules[file.stem] = module
            mspec.loader.exec_module(module)
        else:
            if str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(mod_name)
        func = getattr(module, func_name)
    except Exception as e:  # noqa: BLE001 - whatever the user's module raises while loading
        raise InvalidArgument(f"cannot load {target}: {type(e).__name__}: {e}",
                              "MODULE must be importable (from the current directory or the "
                              "environment; a FILE.py's own directory is) and define FUNCTION",
                              stage="export") from e
    if not callable(func):
        raise InvalidArgument(f"{target} is a {type(func).__name__}, not a function",
                              f"FUNCTION takes no arguments and returns a dict; {help_remedy()}",
                              stage="export")
    return func


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def problems(spec, call_once=None) -> list[str]:
    """Every problem of FUNCTION's result, each one line; [] when export_model would accept it.
    With ``call_once(model, inputs)`` (load's) the model also runs once on example_inputs, and
    the values it returns are counted against output_names."""
    import torch

    if not isinstance(spec, dict):
        return [f"FUNCTION must return a dict, not {type(spec).__name__}"]
    if "methods" in spec:
        return _methods_problems(spec)
    p = [f"missing key {k!r}" for k in REQUIRED if k not in spec]
    p += [f"unknown key {k!r}{_did_you_mean(str(k), REQUIRED + OPTIONAL)}" for k in spec
          if k not in REQUIRED and k not in OPTIONAL]
    if "model" in spec and not isinstance(spec["model"], torch.nn.Module):
        p.append(f"model must be a torch.nn.Module, got {type(spec['model']).__name__}")
    tensor_problems, examples, ins, outs = _tensor_problems(spec)
    p += tensor_problems
    if "golden_inputs" in spec:
        p += _golden_problems(spec["golden_inputs"], spec.get("golden_meta"), examples, ins,
                              GOLDEN_DATA_MEANING, _is_name, "dynamic_shapes" in spec)
    p += _option_problems(spec, examples, ins, outs)
    if call_once is not None and isinstance(spec.get("model"), torch.nn.Module) \
            and examples is not None and outs is not None:
        p += _output_problems(call_once, spec["model"], examples, outs)
    if p:
        return p
    # Everything above is fine: run export_model's own checks as well, so the two never disagree.
    kwargs = {k: v for k, v in spec.items() if k != "name"}
    backend, recipe = supported_pairs()[0]
    if spec.get("external_weights") is True:
        # checked on a backend that writes NAME.ptd; the others refuse it column by column
        backend, recipe = "portable", "fp32"
    try:
        check_export_arguments(name="check", backend=backend, recipe=recipe, **kwargs)
    except InvalidArgument as e:
        return [f"{e.cause} ({e.remedy})" if e.remedy else e.cause]
    return []


def _is_name(v) -> bool:
    """A tensor, bundle or case name (etproof.manifest.NAME_RE), not "." or ".."."""
    return isinstance(v, str) and bool(NAME_RE.match(v)) and v not in (".", "..")


def _tensor_problems(spec: dict) -> tuple[list[str], tuple | None, list | None, list | None]:
    """Problems of example_inputs, input_names and output_names, with the three as far as they
    are usable (None where absent or malformed) for the checks that need them."""
    import torch

    p: list[str] = []
    examples = None
    if "example_inputs" in spec:
        ex = spec["example_inputs"]
        ex = (ex,) if isinstance(ex, torch.Tensor) else ex
        if isinstance(ex, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in ex):
            examples = tuple(ex)
        else:
            p.append("example_inputs must be a tuple of tensors (() for a model without "
                     f"inputs), got {type(spec['example_inputs']).__name__}")

    names: dict[str, list | None] = {}
    for key in ("input_names", "output_names"):
        if key not in spec:
            names[key] = None
            continue
        v = spec[key]
        if not isinstance(v, (list, tuple)) or (not v and key == "output_names"):
            p.append(f"{key} must be a {'non-empty ' if key == 'output_names' else ''}list of "
                     f"str, got {v!r}")
            names[key] = None
            continue
        bad = [n for n in v if not _is_name(n)]
        if bad:
            p.append(f"{key}: {bad} are not names (letters, digits, '.', '_', '-')")
        names[key] = list(v)
    ins, outs = names["input_names"], names["output_names"]
    if ins is not None and examples is not None and len(ins) != len(examples):
        p.append(f"{len(ins)} input_names for {len(examples)} example_inputs")
    if ins is not None and outs is not None and len(set(ins + outs)) != len(ins + outs):
        p.append(f"tensor names repeat: {ins + outs}")
    return p, examples, ins, outs


def _output_problems(call_once, model, examples, outs) -> list[str]:
    """The model's values on example_inputs counted against output_names (tensors only)."""
    import torch

    try:
        out = call_once(model, examples)
    except Exception as e:  # noqa: BLE001 - whatever the user's model raises
        return [f"the model raised on example_inputs: {type(e).__name__}: {str(e)[:200]}"]
    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    p = []
    if len(flat) != len(outs):
        p.append(f"output_names has {len(outs)} name(s) {outs} but the model returns "
                 f"{len(flat)} value(s) on example_inputs: name every output, in order")
    kinds = sorted({type(t).__name__ for t in flat if not isinstance(t, torch.Tensor)})
    if kinds:
        p.append(f"the model returns {', '.join(kinds)} among its outputs: return tensors only")
    return p


def _option_problems(spec: dict, examples, ins, outs) -> list[str]:
    """Problems of name/model_name, layouts, preprocessing, labels and weights."""
    p: list[str] = []
    name, model_name = spec.get("name"), spec.get("model_name")
    for key, v in (("name", name), ("model_name", model_name)):
        if key in spec and not _is_name(v):
            p.append(f"{key} must be a bundle name stem (letters, digits, '.', '_', '-'), "
                     f"got {v!r}")
    if name is not None and model_name is not None and name != model_name:
        p.append(f"name {name!r} and model_name {model_name!r} differ (they are the same key; "
                 "give one)")

    if "layouts" in spec:
        lay = spec["layouts"]
        if not isinstance(lay, dict):
            p.append(f"layouts must be a dict {{tensor name: 'nchw'|'nhwc'}}, got "
                     f"{type(lay).__name__}")
        else:
            known = (ins or []) + (outs or [])
            for n, v in lay.items():
                if known and n not in known:
                    p.append(f"layouts: unknown tensor {n!r}{_did_you_mean(str(n), known)}")
                if v not in LAYOUTS:
                    p.append(f"layouts: {n!r} must be 'nchw' or 'nhwc', got {v!r}")
                elif (ins and examples and n in ins and len(ins) == len(examples)
                      and examples[ins.index(n)].dim() != 4):
                    p.append(f"layouts: {n!r} is not rank 4")
    if "preprocessing" in spec and not isinstance(spec["preprocessing"], dict):
        p.append("preprocessing must be a dict (docs/manifest.md, 'preprocessing')")
    if "labels" in spec:
        lab = spec["labels"]
        if not isinstance(lab, dict) or set(lab) != {"output", "source", "names"}:
            p.append("labels must be a dict with exactly 'output', 'source', 'names'")
        elif outs is not None and lab["output"] not in outs:
            p.append(f"labels: output {lab['output']!r} is not one of output_names {outs}")

    if "weights" in spec:
        w = spec["weights"]
        if (not isinstance(w, dict) or set(w) != {"kind", "source"}
                or w.get("kind") not in ("pretrained", "seeded")
                or not isinstance(w.get("source"), str) or not w.get("source")):
            p.append("weights must be a dict {'kind': 'pretrained'|'seeded', 'source': str}")
    return p


def _methods_problems(spec: dict) -> list[str]:
    """Problems of a spec with ``methods``: its keys here, the rest by export_model's own checks
    (etproof.contract.program.check_methods_spec), so the two never disagree."""
    import torch

    p = [f"{k!r} goes inside each method's entry of methods, not at the top level"
         for k in PER_METHOD if k in spec]
    if "model" not in spec:
        p.append("missing key 'model'")
    elif not isinstance(spec["model"], torch.nn.Module):
        p.append(f"model must be a torch.nn.Module, got {type(spec['model']).__name__}")
    for k in spec:
        if k not in REQUIRED and k not in OPTIONAL:
            p.append(f"unknown key {k!r}{_did_you_mean(str(k), REQUIRED + OPTIONAL)}")
    if p:
        return p
    backend, recipe = supported_pairs()[0]
    try:
        check_methods_spec(spec, backend, recipe)
    except InvalidArgument as e:
        return [f"{e.cause} ({e.remedy})" if e.remedy else e.cause]
    return []


def _golden_problems(golden, meta, examples, ins, data_meaning, is_name,
                     dynamic: bool) -> list[str]:
    """Problems of golden_inputs; with ``dynamic`` shapes, sizes are left to
    check_export_arguments (each dimension against its Dim's range)."""
    import torch

    if not isinstance(golden, (list, tuple)) or not golden:
        return ["golden_inputs must be a non-empty list of (case_id, data, origin, tensors), got "
                f"{golden!r}"[:200]]
    p: list[str] = []
    ids = []
    for i, g in enumerate(golden):
        where = f"golden_inputs[{i}]"
        if isinstance(g, GoldenCase):
            cid, data, origin, tensors = g.id, g.data, g.origin, g.inputs
        elif isinstance(g, (list, tuple)) and len(g) == 4:
            cid, data, origin, tensors = g
        elif isinstance(g, (list, tuple)) and len(g) == 2 and isinstance(meta, dict):
            cid, tensors = g
            m = meta.get(cid) or {}
            data, origin = m.get("data"), m.get("origin")
        else:
            p.append(f"{where} must be a tuple (case_id, data, origin, tensors), got "
                     f"{type(g).__name__}"
                     + (f" of {len(g)}" if isinstance(g, (list, tuple)) else ""))
            continue
        if not is_name(cid):
            p.append(f"{where}: case_id must be a name (letters, digits, '.', '_', '-'), "
                     f"got {cid!r}")
        else:
            where = f"golden case {cid!r}"
            ids.append(cid)
        if data not in ("real", "synthetic"):
            p.append(f"{where}: data must be 'real' or 'synthetic' ({data_meaning}), "
                     f"got {data!r}")
        if not isinstance(origin, str) or not origin:
            p.append(f"{where}: origin must say where the inputs came from (a file, a package, "
                     f"'torch.randn, seed 0'), got {origin!r}")
        tensors = (tensors,) if isinstance(tensors, torch.Tensor) else tensors
        if not isinstance(tensors, (list, tuple)):
            p.append(f"{where}: tensors must be a tuple of tensors, got {type(tensors).__name__}")
        elif examples is not None:
            if len(tensors) != len(examples):
                p.append(f"{where}: {len(tensors)} tensors, the model takes {len(examples)}")
            else:
                for j, (t, e) in enumerate(zip(tensors, examples)):
                    n = ins[j] if ins and len(ins) == len(examples) else f"#{j}"
                    if (not isinstance(t, torch.Tensor) or t.dtype != e.dtype
                            or (t.shape != e.shape if not dynamic else t.dim() != e.dim())):
                        got = (f"{t.dtype} {list(t.shape)}" if isinstance(t, torch.Tensor)
                               else type(t).__name__)
                        p.append(f"{where}: input {n!r} must be {e.dtype} {list(e.shape)} like "
                                 f"the example input, got {got}")
    dup = sorted({c for c in ids if ids.count(c) > 1})
    if dup:
        p.append(f"golden case ids repeat: {dup}")
    return p
