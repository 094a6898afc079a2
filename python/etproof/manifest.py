"""The bundle manifest, schema_version 1, and 2 for a program with several methods
(docs/manifest.md). This module is the only writer.

Absent means unknown. ``validate`` checks a document against schema/manifest.schema.json (the
file the runtime half validates against too, etproof.schema: types, required fields, values, and
no key the schema does not define), then, on a document the schema accepted, only what a schema
cannot state (sorted and distinct lists, names that refer to other fields, counts and axes that
depend on another field, a date of the calendar); it lists every problem at once.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any

from etproof import schema
from etproof.errors import ManifestError

SCHEMA_VERSION = 1
# A program with several methods (docs/manifest.md, "Programs with several methods"): the
# top-level inputs, outputs and goldens move into ``methods``.
SCHEMA_VERSION_METHODS = 2
MANIFEST_SUFFIX = ".etproof.json"
NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
DTYPES = ("float32", "float16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool")
LAYOUTS = ("nchw", "nhwc")
INTEGER_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "bool")


def all_goldens(doc: dict) -> list:
    """Every golden case of a manifest: schema 1's ``goldens``, or every method's in order."""
    if "methods" in doc:
        return [g for m in doc["methods"] for g in m["goldens"]]
    return list(doc["goldens"])


def canonical_dumps(doc: dict) -> str:
    """Canonical JSON: UTF-8, sorted keys, two-space indent, one trailing newline, no NaN/inf."""
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_manifest(doc: dict, path: str | Path) -> None:
    """Validates and writes ``doc`` canonically (UTF-8) to ``path``."""
    validate(doc)
    Path(path).write_bytes(canonical_dumps(doc).encode("utf-8"))


def read_manifest(path: str | Path) -> dict:
    """Reads and validates a manifest; ``path`` may be the bundle directory or the .json file."""
    p = Path(path)
    if p.is_dir():
        p = p / f"{p.name}{MANIFEST_SUFFIX}"
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ManifestError(f"cannot read manifest {p}: {e.strerror or e}",
                            "pass a bundle directory or its NAME.etproof.json") from e
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, json.JSONDecodeError) as e:
        raise ManifestError(f"{p}: not valid JSON: {e}", "re-export the bundle") from e
    validate(doc, origin=str(p))
    return doc


def _reject_constant(name: str):
    raise ValueError(f"{name} is not allowed in a manifest")


# --- validation -------------------------------------------------------------------------------

REMEDY = ("re-export the bundle with etproof (docs/manifest.md and schema/manifest.schema.json "
          "are the contract)")


def _error(origin: str | None, problems: list[tuple[str, str]]) -> ManifestError:
    """One ManifestError naming every problem ``(field, what)``; ``field`` is the first's."""
    where = f"{origin}: " if origin else ""
    text = "; ".join(f"manifest field '{f}' {what}" for f, what in problems)
    e = ManifestError(f"{where}{text}", REMEDY, field=problems[0][0])
    e.fields = [f for f, _ in problems]
    return e


def _schema_problems(problems: list) -> list[tuple[str, str]]:
    return [(p.field or "(document)", p.message) for p in problems]


class _V:
    """Collects every problem (``fail``); ``check`` runs a semantic check and raises them all.
    The checks run on a value the schema accepted: they state only what it cannot."""

    def __init__(self, origin: str | None):
        self.origin = origin
        self.problems: list[tuple[str, str]] = []

    def fail(self, field: str, what: str):
        if (field, what) not in self.problems:
            self.problems.append((field, what))

    def check(self, fn, *args):
        """Runs ``fn(self, *args)`` and raises every problem it found. A check that meets a value
        an earlier problem left unusable stops there: the problems found so far are raised."""
        try:
            fn(self, *args)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, StopIteration):
            if not self.problems:
                raise
        if self.problems:
            raise _error(self.origin, self.problems)

    def keys(self, v: dict, field: str, names) -> None:
        """``v`` has exactly the keys ``names`` (a map keyed by another field's names)."""
        for k in names:
            if k not in v:
                self.fail(f"{field}.{k}", "is missing")
        for k in v:
            if k not in names:
                self.fail(f"{field}.{k}", "is not defined by schema_version 1")

    def sorted_distinct(self, values: list, field: str, what: str = "must be sorted and distinct"):
        if values != sorted(set(values)):
            self.fail(field, what)


def validate(doc: Any, origin: str | None = None) -> dict:
    """Raises ManifestError naming every field that breaks docs/manifest.md (the schema file's
    problems, sorted by field; else those of the checks a schema cannot state); returns doc."""
    problems = schema.validate(doc, "manifest")
    if problems:
        raise _error(origin, _schema_problems(problems))
    _V(origin).check(_validate, doc)
    return doc


def _check_part(definition: str, value: Any, field: str, fn=None, *args) -> None:
    """A part of a manifest (schema/manifest.schema.json's ``definition``, at ``field``), then
    its semantic check ``fn(v, value, *args)``: ManifestError naming every problem."""
    problems = schema.validate_part(value, "manifest", definition, "/" + field)
    if problems:
        raise _error(None, _schema_problems(problems))
    if fn is not None:
        _V(None).check(fn, value, *args)


def check_budget(b: Any) -> None:
    """Validates a budget object (ManifestError on failure)."""
    _check_part("budget", b, "budget")


def check_output_specs(specs: Any) -> None:
    """Validates output specs, slice_axis and integer_atol included (ManifestError)."""
    _check_part("outputs", specs, "outputs", _tensor_specs, "outputs")


def check_preprocessing(p: Any, inputs: list) -> None:
    """Validates a preprocessing object against the input specs (ManifestError on failure)."""
    _check_part("preprocessing", p, "preprocessing", _preprocessing, inputs)


def check_labels(lab: Any, outputs: list) -> None:
    """Validates a labels object against the output specs (ManifestError on failure)."""
    _check_part("labels", lab, "labels", _labels, [s["name"] for s in outputs])


def check_weights(w: Any) -> None:
    """Validates a weights object (ManifestError on failure)."""
    _check_part("weights", w, "weights")


def _validate(v: _V, doc: dict) -> None:
    v.sorted_distinct(doc["delegates"], "delegates")
    if "operators" in doc:
        v.sorted_distinct(doc["operators"], "operators")
    if "delegation" in doc:
        _delegation(v, doc["delegation"])
    captured = _references(v, doc.get("references", {}))
    if doc["schema_version"] == SCHEMA_VERSION:
        _method(v, doc, "", captured)
        out_names = [s["name"] for s in doc["outputs"]]
        if "preprocessing" in doc:
            _preprocessing(v, doc["preprocessing"], doc["inputs"])
        if "labels" in doc:
            _labels(v, doc["labels"], out_names)
        if "taps" in doc:
            _taps(v, doc["taps"], doc["name"], out_names)
    else:
        names = set()
        for i, m in enumerate(doc["methods"]):
            if m["name"] in names:
                v.fail(f"methods[{i}].name", f"repeats {m['name']!r}")
            names.add(m["name"])
            _method(v, m, f"methods[{i}].", captured)
    _sequences(v, doc)
    if "greedy" in doc:
        _greedy(v, doc)
    created = doc["created_utc"]
    try:  # a time of the calendar, as the runtime half checks it (leap seconds aside)
        _dt.datetime.strptime(created.replace(":60Z", ":59Z"), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        v.fail("created_utc", f"is not a date and time of the calendar: {created!r}")


def _delegation(v: _V, d: dict) -> None:
    """by_operator sorted by op; an operator's reasons sorted, only where nodes were left out."""
    for i, e in enumerate(d["by_operator"]):
        f = f"delegation.by_operator[{i}]"
        if "reasons" in e:
            if e["non_delegated"] == 0:
                v.fail(f"{f}.reasons", "is only defined for an operator with non-delegated "
                       "nodes")
            v.sorted_distinct(e["reasons"], f"{f}.reasons")
    v.sorted_distinct([e["op"] for e in d["by_operator"]], "delegation.by_operator",
                      "must be sorted by op, one entry per op")


def _tensor_specs(v: _V, specs: list, field: str) -> None:
    """Distinct names; layout, slice_axis and dynamic_dims against the shape; integer_atol for
    integer and bool outputs only."""
    seen = set()
    for i, s in enumerate(specs):
        f = f"{field}[{i}]"
        name, shape = s["name"], s["shape"]
        if name in seen:
            v.fail(f"{f}.name", f"repeats {name!r}")
        seen.add(name)
        if "dynamic_dims" in s:
            _dynamic_dims(v, s["dynamic_dims"], shape, f"{f}.dynamic_dims")
        if "layout" in s and len(shape) != 4:
            v.fail(f"{f}.layout", f"is only defined for rank-4 tensors (rank {len(shape)})")
        if "quantization" in s and isinstance(s["quantization"]["scale"], int):
            v.fail(f"{f}.quantization.scale", f"must be a positive float, got "
                   f"{s['quantization']['scale']!r}")
        if s.get("slice_axis") is not None and s["slice_axis"] >= len(shape):
            v.fail(f"{f}.slice_axis", f"is {s['slice_axis']}, the output has rank {len(shape)}")
        if "integer_atol" in s and s["dtype"] not in INTEGER_DTYPES:
            v.fail(f"{f}.integer_atol", f"is only defined for integer and bool outputs "
                   f"({name!r} is {s['dtype']})")


def _dynamic_dims(v: _V, dims: list, shape: list, field: str) -> None:
    """A tensor's dynamic dimensions (added within schema 1): each a -1 entry of its shape,
    sorted by axis, min <= max (an output's also name an input's: _method)."""
    last = -1
    for k, d in enumerate(dims):
        f = f"{field}[{k}]"
        axis, lo, hi = d["axis"], d["min"], d["max"]
        if axis >= len(shape) or shape[axis] != -1:
            v.fail(f"{f}.axis", f"is {axis}, which is not a -1 (dynamic) entry of shape {shape}")
        if axis <= last:
            v.fail(f"{f}.axis", "must be sorted and distinct")
        last = axis
        if hi < lo:
            v.fail(f"{f}.max", f"is {hi}, below min {lo}")


def shape_fits(shape, spec_shape) -> bool:
    """True when ``shape`` (concrete) has ``spec_shape``'s rank and equals it wherever the spec
    is not -1 (a dynamic dimension)."""
    shape, spec_shape = list(shape), list(spec_shape)
    return len(shape) == len(spec_shape) and all(
        s == -1 or int(d) == s for d, s in zip(shape, spec_shape))


def _method(v: _V, m: dict, f: str, captured: set) -> None:
    """One method's inputs, outputs and goldens (schema 1: the top level, f ""; schema 2:
    methods[i], f "methods[i].")."""
    _tensor_specs(v, m["inputs"], f"{f}inputs")
    _tensor_specs(v, m["outputs"], f"{f}outputs")
    dims = {d["name"] for s in m["inputs"] for d in s.get("dynamic_dims", [])}
    for i, s in enumerate(m["outputs"]):
        for k, d in enumerate(s.get("dynamic_dims", [])):
            if d["name"] not in dims:
                v.fail(f"{f}outputs[{i}].dynamic_dims[{k}].name", f"{d['name']!r} is no input's "
                       f"dynamic dimension (the inputs': {sorted(dims) or 'none'})")
    in_names = [s["name"] for s in m["inputs"]]
    out_names = [s["name"] for s in m["outputs"]]
    ids = set()
    for i, g in enumerate(m["goldens"]):
        gf = f"{f}goldens[{i}]"
        if g["id"] in ids:
            v.fail(f"{gf}.id", f"repeats {g['id']!r}")
        ids.add(g["id"])
        v.keys(g["inputs"], f"{gf}.inputs", in_names)
        v.keys(g["outputs"], f"{gf}.outputs", out_names)
        _golden_references(v, g.get("references", {}), gf, captured, out_names)
        if "files" in g:
            _golden_files(v, g, gf)


def _sequences(v: _V, doc: dict) -> None:
    """goldens[i].sequence: each sequence's steps are numbered 0..n-1, each once (over every
    method); in schema 2 a sequence's id is no method's name (a step is named CASE/stepK, a case
    of a method METHOD/CASE)."""
    methods = [m["name"] for m in doc.get("methods", [])]
    where = ([(f"methods[{i}].", m["goldens"]) for i, m in enumerate(doc["methods"])]
             if "methods" in doc else [("", doc["goldens"])])
    steps: dict[str, dict[int, str]] = {}
    for f, goldens in where:
        for j, g in enumerate(goldens):
            if "sequence" not in g:
                continue
            gf = f"{f}goldens[{j}].sequence"
            case, k = g["sequence"]["case"], g["sequence"]["step"]
            if k in steps.setdefault(case, {}):
                v.fail(f"{gf}.step", f"repeats step {k} of sequence {case!r} "
                                     f"(also {steps[case][k]})")
            steps[case].setdefault(k, gf)
            if case in methods:
                v.fail(f"{gf}.case", f"is the name of a method ({case!r})")
    for case, got in steps.items():
        missing = sorted(set(range(max(got) + 1)) - set(got))
        if missing:
            v.fail(got[max(got)], f"sequence {case!r} has step {max(got)} but not step "
                                  f"{missing[0]} (steps are numbered 0..n-1)")


def _greedy(v: _V, doc: dict) -> None:
    """greedy.output names a floating output of rank >= 2 (positions, vocabulary): schema 1's, or
    one of every schema-2 method's whose goldens include a sequence step."""
    name = doc["greedy"]["output"]
    methods = doc["methods"] if "methods" in doc else [doc]
    with_steps = [m for m in methods if any("sequence" in g for g in m["goldens"])] or methods
    for m in with_steps:
        spec = next((s for s in m["outputs"] if s["name"] == name), None)
        where = f" of method {m['name']!r}" if "name" in m and "methods" in doc else ""
        if spec is None:
            v.fail("greedy.output", f"names no output{where} ({name!r})")
        elif not spec["dtype"].startswith("float") or len(spec["shape"]) < 2:
            v.fail("greedy.output", f"{name!r}{where} is {spec['dtype']} of rank "
                                    f"{len(spec['shape'])}: logits are floating, of rank >= 2 "
                                    "(positions, vocabulary)")


def _golden_files(v: _V, g: dict, gf: str) -> None:
    """goldens[i].files (added within schema 1): a file_ref for each file the case's inputs and
    outputs name, exactly those, each once."""
    named = sorted(list(g["inputs"].values()) + list(g["outputs"].values()))
    listed = sorted(ref["file"] for ref in g["files"])
    if listed != named:
        v.fail(f"{gf}.files", f"must list exactly the case's input and output files {named}, "
               f"got {listed}")


def _references(v: _V, refs: dict) -> set:
    """The top-level references' names (the schema keys them by any name); returns the captured
    ones."""
    for name in refs:
        if not NAME_RE.match(name) or name in (".", ".."):
            v.fail(f"references.{name}", "is not a reference name ([A-Za-z0-9._-]+)")
    return {name for name, r in refs.items() if r["captured"]}


def _golden_references(v: _V, refs: dict, field: str, captured: set, out_names: list) -> None:
    """goldens[i].references: {NAME: {OUTPUT: file_ref}}, one entry per captured reference and
    one file per output."""
    f = f"{field}.references"
    for name in refs:
        if name not in captured:
            v.fail(f"{f}.{name}", "names no reference the manifest's references record as "
                   "captured")
    for name in sorted(captured):
        if name not in refs:
            v.fail(f"{f}.{name}", "is missing (references records it as captured)")
            continue
        v.keys(refs[name], f"{f}.{name}", out_names)


# taps (the tapped twin's manifest only; docs/manifest.md "The tapped twin").
TAP_OUTPUT_RE = re.compile(r"^tap\.(\d{3,})$")
TWIN_SUFFIX = ".taps"


def _taps(v: _V, t: dict, name: str, out_names: list) -> None:
    """The twin's ``taps``: what it taps, of which shipped program, and where (docs/manifest.md).
    The points name the last outputs, in order, ``tap.NNN`` with NNN their index."""
    shipped = t["of"]["name"]
    if name != shipped + TWIN_SUFFIX:
        v.fail("name", f"is {name!r}; the twin of {shipped!r} is named {shipped + TWIN_SUFFIX!r}")
    eligible, points = t["eligible"], t["points"]
    if len(points) > eligible:
        v.fail("taps.points", f"has {len(points)} points, more than the {eligible} eligible")
    first, last = t.get("range", (0, eligible - 1))
    if "range" in t:
        if last < first:
            v.fail("taps.range[1]", f"must be >= {first}, got {last}")
        if last >= eligible:
            v.fail("taps.range[1]", f"is {last}, past the {eligible} eligible nodes")
    if t["selection"] == "every" and len(points) != last - first + 1:
        v.fail("taps.points", f"has {len(points)} points; selection 'every' taps all "
               f"{last - first + 1} eligible nodes {first}..{last}")
    if len(points) >= len(out_names):
        v.fail("taps.points", f"has {len(points)} points; outputs has {len(out_names)} entries "
               "(the model's outputs come first)")
    model_outputs = out_names[:len(out_names) - len(points)]
    width = len(TAP_OUTPUT_RE.match(points[0]["output"]).group(1))
    for i, p in enumerate(points):
        _tap_point(v, p, i, points, width, (first, last), out_names, model_outputs)
    for j, o in enumerate(model_outputs):
        if TAP_OUTPUT_RE.match(o):
            v.fail(f"outputs[{j}].name", f"is {o!r}, a tap's name, but taps.points names only "
                   f"the last {len(points)} outputs")


def _tap_point(v: _V, p: dict, i: int, points: list, width: int, span: tuple, out_names: list,
               model_outputs: list) -> None:
    """taps.points[i]: its number, index and output in order; its eligible_index within the
    span tapped, after the point before; feeds among the model's outputs."""
    f = f"taps.points[{i}]"
    out, index = p["output"], p["index"]
    digits = TAP_OUTPUT_RE.match(out).group(1)
    if len(digits) != width:
        v.fail(f"{f}.output", f"is {out!r}; every point's number has {width} digits")
    if index != i or int(digits) != i:
        v.fail(f"{f}.index", f"must be the point's position {i} (output tap.{i:0{width}d}), "
               f"got index {index}, output {out!r}")
    tapped = out_names[len(out_names) - len(points):][i]
    if out != tapped:
        v.fail(f"{f}.output", f"is {out!r}; outputs[{len(out_names) - len(points) + i}] is "
               f"{tapped!r} (the taps are the last outputs, in order)")
    first, last = span
    if "eligible_index" in p:
        e = p["eligible_index"]
        if e < first:
            v.fail(f"{f}.eligible_index", f"must be >= {first}, got {e}")
        if e > last:
            v.fail(f"{f}.eligible_index", f"is {e}, past the eligible nodes tapped "
                   f"({first}..{last})")
        if i and e <= points[i - 1].get("eligible_index", -1):
            v.fail(f"{f}.eligible_index", f"is {e}, not after the point before it")
    for j, o in enumerate(p.get("feeds", [])):
        if o not in model_outputs:
            v.fail(f"{f}.feeds[{j}]", f"is {o!r}, not one of the model's outputs "
                   f"({', '.join(model_outputs)})")


def _labels(v: _V, lab: dict, out_names: list) -> None:
    if lab["output"] not in out_names:
        v.fail("labels.output", f"must be one of {', '.join(out_names)}; got {lab['output']!r}")


def _preprocessing(v: _V, p: dict, inputs: list) -> None:
    """The input it feeds: one of the inputs, rank 4 with a known layout; mean and std floats;
    value_range's min below its max."""
    name = p["input"]
    spec = next((s for s in inputs if s["name"] == name), None)
    if spec is None:
        v.fail("preprocessing.input", f"must be one of {', '.join(s['name'] for s in inputs)}; "
               f"got {name!r}")
        return
    if len(spec["shape"]) != 4 or "layout" not in spec:
        v.fail("preprocessing.input", f"must name a rank-4 input with a known layout ({name!r})")
    for key in ("mean", "std"):
        for i, x in enumerate(p[key]):
            if not isinstance(x, float):
                v.fail(f"preprocessing.{key}[{i}]", f"must be a float, got {x!r}")
    if not p["value_range"][0] < p["value_range"][1]:
        v.fail("preprocessing.value_range", "must have min < max")
