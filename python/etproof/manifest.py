"""The bundle manifest, schema_version 1, and 2 for a program with several methods
(docs/manifest.md). This module is the only writer.

Absent means unknown. ``validate`` checks a document against schema/manifest.schema.json (the
file the runtime half validates against too, etproof.schema: types, required fields, values, and
no key the schema does not define), then what a schema cannot state (sorted and distinct lists,
names that refer to other fields, a date of the calendar); it lists every problem at once.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from pathlib import Path
from typing import Any

from etproof import schema
from etproof.errors import ManifestError

SCHEMA_VERSION = 1
# A program with several methods (docs/manifest.md, "Programs with several methods"): the
# top-level inputs, outputs and goldens move into ``methods``.
SCHEMA_VERSION_METHODS = 2
METHOD_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MANIFEST_SUFFIX = ".etproof.json"
NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
CREATED_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
DTYPES = ("float32", "float16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool")
LAYOUTS = ("nchw", "nhwc")
GOLDEN_DATA = ("real", "synthetic")
TOOLCHAIN_KEYS = ("python", "torch", "executorch", "torchao", "numpy", "etproof")

REQUIRED = (
    "schema_version", "name", "model", "engine", "artifact", "backend", "delegates", "recipe",
    "precision", "inputs", "outputs", "goldens", "toolchain", "created_utc",
)
OPTIONAL = (
    "data_files", "delegation", "compute_unit", "quantization", "preprocessing", "labels",
    "weights", "references", "budget", "operators", "taps", "target",
)
# Schema 2: ``methods`` instead of the top-level inputs/outputs/goldens; no labels/preprocessing.
PER_METHOD = ("inputs", "outputs", "goldens")
REQUIRED_2 = tuple(k for k in REQUIRED if k not in PER_METHOD) + ("methods",)
OPTIONAL_2 = tuple(k for k in OPTIONAL if k not in ("preprocessing", "labels", "taps"))
INTEGER_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "bool")
# budget's keys (all optional, at least one): the user's accuracy budget for what the recipe costs.
BUDGET_KEYS = ("min_sqnr_db", "min_cosine", "top1_agreement")
WEIGHT_KINDS = ("pretrained", "seeded")
# operators[i]: a name as ExecuTorch's kernel registry knows it, NAMESPACE::NAME[.OVERLOAD].
OPERATOR_RE = re.compile(r"^[^ \t\n\r\f\v:]+::[^ \t\n\r\f\v]+$")


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


class _V:
    """Collects every problem (``fail``); ``check`` runs a validation and raises them all."""

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

    def obj(self, v: Any, field: str, required: tuple, optional: tuple = ()) -> dict:
        if not isinstance(v, dict):
            self.fail(field, f"must be an object, got {_tname(v)}")
        for k in required:
            if k not in v:
                self.fail(f"{field}.{k}" if field else k, "is missing")
        for k in v:
            if k not in required and k not in optional:
                self.fail(f"{field}.{k}" if field else k, "is not defined by schema_version 1")
        return v

    def string(self, v: Any, field: str, *, choices=None, pattern=None, nonempty=True) -> str:
        if not isinstance(v, str):
            self.fail(field, f"must be a string, got {_tname(v)}")
        if nonempty and not v:
            self.fail(field, "must not be empty")
        if choices is not None and v not in choices:
            self.fail(field, f"must be one of {', '.join(choices)}; got {v!r}")
        if pattern is not None and not pattern.match(v):
            self.fail(field, f"has an invalid value {v!r}")
        return v

    def integer(self, v: Any, field: str, *, minimum=None) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(field, f"must be an integer, got {_tname(v)}")
        if minimum is not None and v < minimum:
            self.fail(field, f"must be >= {minimum}, got {v}")
        return v

    def number(self, v: Any, field: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            self.fail(field, f"must be a finite number, got {v!r}")
        return v

    def array(self, v: Any, field: str) -> list:
        if not isinstance(v, list):
            self.fail(field, f"must be an array, got {_tname(v)}")
        return v


def _tname(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number", type(None): "null"}.get(type(v), type(v).__name__)


def _file_ref(v: _V, ref: Any, field: str) -> None:
    v.obj(ref, field, ("file", "bytes", "sha256"))
    name = v.string(ref["file"], f"{field}.file", pattern=NAME_RE)
    if name in (".", ".."):
        v.fail(f"{field}.file", f"has an invalid value {name!r}")
    v.integer(ref["bytes"], f"{field}.bytes", minimum=0)
    v.string(ref["sha256"], f"{field}.sha256", pattern=SHA256_RE)


def _tensor_specs(v: _V, specs: Any, field: str) -> None:
    v.array(specs, field)
    if not specs and field == "outputs":  # a program may take no inputs; it returns something
        v.fail(field, "must name at least one tensor")
    seen = set()
    for i, s in enumerate(specs):
        f = f"{field}[{i}]"
        v.obj(s, f, ("name", "dtype", "shape"),
              ("layout", "quantization", "slice_axis", "integer_atol") if field == "outputs"
              else ("layout", "dynamic_dims"))
        name = v.string(s["name"], f"{f}.name", pattern=NAME_RE)
        if name in seen:
            v.fail(f"{f}.name", f"repeats {name!r}")
        seen.add(name)
        v.string(s["dtype"], f"{f}.dtype", choices=DTYPES)
        shape = v.array(s["shape"], f"{f}.shape")
        for j, d in enumerate(shape):
            v.integer(d, f"{f}.shape[{j}]", minimum=-1)  # -1 = dynamic dimension
        if "dynamic_dims" in s:
            _dynamic_dims(v, s["dynamic_dims"], shape, f"{f}.dynamic_dims")
        if "layout" in s:
            v.string(s["layout"], f"{f}.layout", choices=LAYOUTS)
            if len(shape) != 4:
                v.fail(f"{f}.layout", f"is only defined for rank-4 tensors (rank {len(shape)})")
        if "quantization" in s:
            _output_quantization(v, s["quantization"], f"{f}.quantization")
        if "slice_axis" in s and s["slice_axis"] is not None:  # null: do not slice
            axis = v.integer(s["slice_axis"], f"{f}.slice_axis", minimum=0)
            if axis >= len(shape):
                v.fail(f"{f}.slice_axis", f"is {axis}, the output has rank {len(shape)}")
        if "integer_atol" in s:
            atol = v.number(s["integer_atol"], f"{f}.integer_atol")
            if atol < 0:
                v.fail(f"{f}.integer_atol", f"must be >= 0, got {atol!r}")
            if s["dtype"] not in INTEGER_DTYPES:
                v.fail(f"{f}.integer_atol", f"is only defined for integer and bool outputs "
                       f"({s['name']!r} is {s['dtype']})")


def _dynamic_dims(v: _V, dims: Any, shape: list, field: str) -> None:
    """An input's dynamic dimensions (added within schema 1): one entry per -1 of its shape whose
    range torch.export recorded, ``{"axis", "name", "min", "max"}``, sorted by axis."""
    v.array(dims, field)
    if not dims:
        v.fail(field, "must list at least one dimension (omit it when none is dynamic)")
    last = -1
    for k, d in enumerate(dims):
        f = f"{field}[{k}]"
        v.obj(d, f, ("axis", "name", "min", "max"))
        axis = v.integer(d["axis"], f"{f}.axis", minimum=0)
        if axis >= len(shape) or shape[axis] != -1:
            v.fail(f"{f}.axis", f"is {axis}, which is not a -1 (dynamic) entry of shape {shape}")
        if axis <= last:
            v.fail(f"{f}.axis", "must be sorted and distinct")
        last = axis
        v.string(d["name"], f"{f}.name", pattern=NAME_RE)
        lo = v.integer(d["min"], f"{f}.min", minimum=0)
        hi = v.integer(d["max"], f"{f}.max", minimum=0)
        if hi < lo:
            v.fail(f"{f}.max", f"is {hi}, below min {lo}")


def shape_fits(shape, spec_shape) -> bool:
    """True when ``shape`` (concrete) has ``spec_shape``'s rank and equals it wherever the spec
    is not -1 (a dynamic dimension)."""
    shape, spec_shape = list(shape), list(spec_shape)
    return len(shape) == len(spec_shape) and all(
        s == -1 or int(d) == s for d, s in zip(shape, spec_shape))


def _output_quantization(v: _V, q: Any, field: str) -> None:
    """An output's quantization (added within schema 1): the scale and zero point of the last
    quantize/dequantize pair feeding it in the converted PT2E graph; absent when unknown."""
    v.obj(q, field, ("scale", "zero_point", "dtype"))
    scale = v.number(q["scale"], f"{field}.scale")
    if isinstance(scale, int) or scale <= 0:
        v.fail(f"{field}.scale", f"must be a positive float, got {scale!r}")
    v.integer(q["zero_point"], f"{field}.zero_point")
    v.string(q["dtype"], f"{field}.dtype", choices=("int8", "uint8"))


def validate(doc: Any, origin: str | None = None) -> dict:
    """Raises ManifestError naming every field that breaks docs/manifest.md (the schema file's
    problems, sorted by field; else those of the checks a schema cannot state); returns doc."""
    problems = schema.validate(doc, "manifest")
    if problems:
        raise _error(origin, [(p.field or "(document)", p.message) for p in problems])
    _V(origin).check(_validate, doc)
    return doc


def _validate(v: _V, doc: dict) -> None:
    v.obj(doc, "", ("schema_version",), REQUIRED + OPTIONAL + ("methods",))
    sv = v.integer(doc["schema_version"], "schema_version")
    if sv not in (SCHEMA_VERSION, SCHEMA_VERSION_METHODS):
        v.fail("schema_version", f"is {sv}; this reader understands {SCHEMA_VERSION} and "
               f"{SCHEMA_VERSION_METHODS}")
    if sv == SCHEMA_VERSION:
        v.obj(doc, "", REQUIRED, OPTIONAL)
    else:
        v.obj(doc, "", REQUIRED_2, OPTIONAL_2)
    name = v.string(doc["name"], "name", pattern=NAME_RE)
    if name in (".", ".."):
        v.fail("name", f"has an invalid value {name!r}")
    v.string(doc["model"], "model")
    v.obj(doc["engine"], "engine", ("name", "version"))
    v.string(doc["engine"]["name"], "engine.name", choices=("executorch",))
    v.string(doc["engine"]["version"], "engine.version")
    _file_ref(v, doc["artifact"], "artifact")
    if "data_files" in doc:
        for i, ref in enumerate(v.array(doc["data_files"], "data_files")):
            _file_ref(v, ref, f"data_files[{i}]")
    v.string(doc["backend"], "backend")
    delegates = v.array(doc["delegates"], "delegates")
    for i, d in enumerate(delegates):
        v.string(d, f"delegates[{i}]")
    if delegates != sorted(set(delegates)):
        v.fail("delegates", "must be sorted and distinct")
    if "operators" in doc:
        operators = v.array(doc["operators"], "operators")
        for i, op in enumerate(operators):
            if not OPERATOR_RE.match(v.string(op, f"operators[{i}]")):
                v.fail(f"operators[{i}]", f"is not an operator name NAMESPACE::NAME[.OVERLOAD] "
                       f"(e.g. aten::add.out), got {op!r}")
        if operators != sorted(set(operators)):
            v.fail("operators", "must be sorted and distinct")
    if "delegation" in doc:
        d = v.obj(doc["delegation"], "delegation",
                  ("delegated_nodes", "non_delegated_nodes", "by_operator"))
        v.integer(d["delegated_nodes"], "delegation.delegated_nodes", minimum=0)
        v.integer(d["non_delegated_nodes"], "delegation.non_delegated_nodes", minimum=0)
        ops = []
        for i, e in enumerate(v.array(d["by_operator"], "delegation.by_operator")):
            f = f"delegation.by_operator[{i}]"
            v.obj(e, f, ("op", "delegated", "non_delegated"), ("reasons",))
            ops.append(v.string(e["op"], f"{f}.op"))
            v.integer(e["delegated"], f"{f}.delegated", minimum=0)
            nd = v.integer(e["non_delegated"], f"{f}.non_delegated", minimum=0)
            if "reasons" in e:
                reasons = v.array(e["reasons"], f"{f}.reasons")
                if not reasons:
                    v.fail(f"{f}.reasons", "must not be empty (absent when unknown)")
                if nd == 0:
                    v.fail(f"{f}.reasons", "is only defined for an operator with non-delegated "
                           "nodes")
                for j, r in enumerate(reasons):
                    v.string(r, f"{f}.reasons[{j}]")
                if reasons != sorted(set(reasons)):
                    v.fail(f"{f}.reasons", "must be sorted and distinct")
        if ops != sorted(set(ops)):
            v.fail("delegation.by_operator", "must be sorted by op, one entry per op")
    v.string(doc["recipe"], "recipe")
    v.string(doc["precision"], "precision")
    if "compute_unit" in doc:
        v.string(doc["compute_unit"], "compute_unit")
    if "target" in doc:
        _target(v, doc["target"])
    if "quantization" in doc:
        q = v.obj(doc["quantization"], "quantization", ("scheme", "quantizer", "skipped"))
        v.string(q["scheme"], "quantization.scheme")
        v.string(q["quantizer"], "quantization.quantizer")
        for i, s in enumerate(v.array(q["skipped"], "quantization.skipped")):
            f = f"quantization.skipped[{i}]"
            v.obj(s, f, ("module", "reason"))
            v.string(s["module"], f"{f}.module")
            v.string(s["reason"], f"{f}.reason")
    if "weights" in doc:
        _weights(v, doc["weights"])
    captured = _references(v, doc.get("references"))
    if "budget" in doc:
        _budget(v, doc["budget"])
    if sv == SCHEMA_VERSION:
        _method(v, doc, "", captured)
        if "preprocessing" in doc:
            _preprocessing(v, doc["preprocessing"], doc["inputs"])
        if "labels" in doc:
            _labels(v, doc["labels"], [s["name"] for s in doc["outputs"]])
        if "taps" in doc:
            _taps(v, doc["taps"], doc["name"], [s["name"] for s in doc["outputs"]])
    else:
        names = set()
        methods = v.array(doc["methods"], "methods")
        if not methods:
            v.fail("methods", "must not be empty")
        for i, m in enumerate(methods):
            f = f"methods[{i}]"
            v.obj(m, f, ("name",) + PER_METHOD)
            mname = v.string(m["name"], f"{f}.name", pattern=METHOD_RE)
            if mname in names:
                v.fail(f"{f}.name", f"repeats {mname!r}")
            names.add(mname)
            _method(v, m, f"{f}.", captured)
    tc = v.obj(doc["toolchain"], "toolchain", TOOLCHAIN_KEYS)
    for k in TOOLCHAIN_KEYS:
        v.string(tc[k], f"toolchain.{k}")
    created = v.string(doc["created_utc"], "created_utc", pattern=CREATED_RE)
    try:  # a time of the calendar, as the runtime half checks it (leap seconds aside)
        _dt.datetime.strptime(created.replace(":60Z", ":59Z"), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        v.fail("created_utc", f"is not a date and time of the calendar: {created!r}")
    return doc


def _method(v: _V, m: dict, f: str, captured: set) -> None:
    """One method's inputs, outputs and goldens (schema 1: the top level, f ""; schema 2:
    methods[i], f "methods[i].")."""
    _tensor_specs(v, m["inputs"], f"{f}inputs")
    _tensor_specs(v, m["outputs"], f"{f}outputs")
    in_names = [s["name"] for s in m["inputs"]]
    out_names = [s["name"] for s in m["outputs"]]
    ids = set()
    for i, g in enumerate(v.array(m["goldens"], f"{f}goldens")):
        gf = f"{f}goldens[{i}]"
        v.obj(g, gf, ("id", "data", "origin", "inputs", "outputs"), ("references", "files"))
        gid = v.string(g["id"], f"{gf}.id", pattern=NAME_RE)
        if gid in ids:
            v.fail(f"{gf}.id", f"repeats {gid!r}")
        ids.add(gid)
        v.string(g["data"], f"{gf}.data", choices=GOLDEN_DATA)
        v.string(g["origin"], f"{gf}.origin")
        for part, names in (("inputs", in_names), ("outputs", out_names)):
            files = v.obj(g[part], f"{gf}.{part}", tuple(names))
            for k, fn in files.items():
                fn = v.string(fn, f"{gf}.{part}.{k}", pattern=NAME_RE)
                if not fn.endswith(".npy"):
                    v.fail(f"{gf}.{part}.{k}", f"must name a .npy file, got {fn!r}")
        _golden_references(v, g.get("references", {}), gf, captured, out_names)
        if "files" in g:
            _golden_files(v, g, gf)


def _golden_files(v: _V, g: dict, gf: str) -> None:
    """goldens[i].files (added within schema 1): a file_ref for each file the case's inputs and
    outputs name, exactly those, each once."""
    named = sorted(list(g["inputs"].values()) + list(g["outputs"].values()))
    listed = []
    for j, ref in enumerate(v.array(g["files"], f"{gf}.files")):
        _file_ref(v, ref, f"{gf}.files[{j}]")
        listed.append(ref["file"])
    if sorted(listed) != named:
        v.fail(f"{gf}.files", f"must list exactly the case's input and output files {named}, "
               f"got {sorted(listed)}")


# references[NAME].emulates (optional, a recipe's emulation): what arithmetic it reproduces.
# "pt2e": the converted PT2E graph as it is; "xnnpack-qd8": with dynamically quantized
# activations quantized as XNNPACK's qd8 kernels do (etproof.quantize.EMULATES).
EMULATES_VALUES = ("pt2e", "xnnpack-qd8")


def _references(v: _V, refs: Any) -> set:
    """The top-level references (added within schema 1): {NAME: {"captured": true,
    "description": str, "emulates"?: EMULATES_VALUES} | {"captured": false, "reason": str}};
    returns the captured names."""
    if refs is None:
        return set()
    if not isinstance(refs, dict):
        v.fail("references", f"must be an object, got {_tname(refs)}")
    captured = set()
    for name, r in refs.items():
        f = f"references.{name}"
        if not NAME_RE.match(name) or name in (".", ".."):
            v.fail(f, "is not a reference name ([A-Za-z0-9._-]+)")
        if not isinstance(r, dict) or not isinstance(r.get("captured"), bool):
            v.fail(f"{f}.captured", "must be true or false")
        if r["captured"]:
            v.obj(r, f, ("captured", "description"), ("emulates", "program_at_export"))
            v.string(r["description"], f"{f}.description")
            if "emulates" in r:
                if r["emulates"] not in EMULATES_VALUES:
                    v.fail(f"{f}.emulates", f"must be one of {', '.join(EMULATES_VALUES)}, got "
                           f"{r['emulates']!r}")
            if "program_at_export" in r:
                _program_at_export(v, r["program_at_export"], f"{f}.program_at_export")
            captured.add(name)
        else:
            v.obj(r, f, ("captured", "reason"))
            v.string(r["reason"], f"{f}.reason")
    return captured


def _target(v: _V, t: Any) -> None:
    """target (etproof.targets): {"kind": str ("openvino-cpu"), "requirements": str,
    "openvino"?: str, "isa"?: str}: what the delegate's artifact was compiled for. A kind this
    reader does not know is kept, as the runtime half keeps it (docs/manifest.md "target")."""
    v.obj(t, "target", ("kind", "requirements"), ("openvino", "isa"))
    v.string(t["kind"], "target.kind")
    v.string(t["requirements"], "target.requirements")
    for key in ("openvino", "isa"):
        if key in t:
            v.string(t[key], f"target.{key}")


def _program_at_export(v: _V, p: Any, f: str) -> None:
    """references[NAME].program_at_export (etproof.references.program_vs_emulation): {"cases":
    int >= 1, "outputs": int >= 1, "max_steps"?: number >= 0 | null, "max_range_error"?: number
    >= 0 | null, "matched": bool, "machine": str}."""
    v.obj(p, f, ("cases", "outputs", "matched", "machine"), ("max_steps", "max_range_error"))
    for key in ("cases", "outputs"):
        if not isinstance(p[key], int) or isinstance(p[key], bool) or p[key] < 1:
            v.fail(f"{f}.{key}", f"must be an integer >= 1, got {p[key]!r}")
    for key in ("max_steps", "max_range_error"):
        x = p.get(key)
        if x is not None and (not isinstance(x, (int, float)) or isinstance(x, bool) or x < 0):
            v.fail(f"{f}.{key}", f"must be a number >= 0 or null, got {x!r}")
    if not isinstance(p["matched"], bool):
        v.fail(f"{f}.matched", "must be true or false")
    v.string(p["machine"], f"{f}.machine")


def _golden_references(v: _V, refs: Any, field: str, captured: set, out_names: list) -> None:
    """goldens[i].references: {NAME: {OUTPUT: file_ref}}, one entry per captured reference and
    one file per output."""
    f = f"{field}.references"
    if not isinstance(refs, dict):
        v.fail(f, f"must be an object, got {_tname(refs)}")
    for name in refs:
        if name not in captured:
            v.fail(f"{f}.{name}", "names no reference the manifest's references record as "
                   "captured")
    for name in sorted(captured):
        if name not in refs:
            v.fail(f"{f}.{name}", "is missing (references records it as captured)")
            continue
        files = v.obj(refs[name], f"{f}.{name}", tuple(out_names))
        for o_name, ref in files.items():
            _file_ref(v, ref, f"{f}.{name}.{o_name}")
            if not ref["file"].endswith(".npy"):
                v.fail(f"{f}.{name}.{o_name}.file", f"must name a .npy file, got {ref['file']!r}")


# taps (the tapped twin's manifest only; docs/manifest.md "The tapped twin").
TAP_SELECTIONS = ("every", "spaced")
TAP_OUTPUT_RE = re.compile(r"^tap\.(\d{3,})$")
TWIN_SUFFIX = ".taps"


def _taps(v: _V, t: Any, name: str, out_names: list) -> None:
    """The twin's ``taps``: what it taps, of which shipped program, and where (docs/manifest.md).
    The points name the last outputs, in order, ``tap.NNN`` with NNN their index."""
    v.obj(t, "taps", ("of", "selection", "eligible", "delegate_calls", "delegation_matches",
                      "points"), ("range", "exported_from"))
    of = v.obj(t["of"], "taps.of", ("name", "artifact_sha256"))
    shipped = v.string(of["name"], "taps.of.name", pattern=NAME_RE)
    if name != shipped + TWIN_SUFFIX:
        v.fail("name", f"is {name!r}; the twin of {shipped!r} is named {shipped + TWIN_SUFFIX!r}")
    v.string(of["artifact_sha256"], "taps.of.artifact_sha256", pattern=SHA256_RE)
    selection = v.string(t["selection"], "taps.selection", choices=TAP_SELECTIONS)
    eligible = v.integer(t["eligible"], "taps.eligible", minimum=1)
    calls = v.obj(t["delegate_calls"], "taps.delegate_calls", ("shipped", "twin"))
    v.integer(calls["shipped"], "taps.delegate_calls.shipped", minimum=0)
    v.integer(calls["twin"], "taps.delegate_calls.twin", minimum=0)
    if not isinstance(t["delegation_matches"], bool):
        v.fail("taps.delegation_matches", "must be true or false")
    points = v.array(t["points"], "taps.points")
    if not points:
        v.fail("taps.points", "must not be empty")
    if len(points) > eligible:
        v.fail("taps.points", f"has {len(points)} points, more than the {eligible} eligible")
    first, last = 0, eligible - 1
    if "range" in t:
        rng = v.array(t["range"], "taps.range")
        if len(rng) != 2:
            v.fail("taps.range", f"must be [FIRST, LAST], got {len(rng)} entries")
        first = v.integer(rng[0], "taps.range[0]", minimum=0)
        last = v.integer(rng[1], "taps.range[1]", minimum=first)
        if last >= eligible:
            v.fail("taps.range[1]", f"is {last}, past the {eligible} eligible nodes")
    if "exported_from" in t:
        v.string(t["exported_from"], "taps.exported_from")
    if selection == "every" and len(points) != last - first + 1:
        v.fail("taps.points", f"has {len(points)} points; selection 'every' taps all "
               f"{last - first + 1} eligible nodes {first}..{last}")
    if len(points) >= len(out_names):
        v.fail("taps.points", f"has {len(points)} points; outputs has {len(out_names)} entries "
               "(the model's outputs come first)")
    tapped = out_names[len(out_names) - len(points):]
    model_outputs = out_names[:len(out_names) - len(points)]
    width = None
    for i, p in enumerate(points):
        f = f"taps.points[{i}]"
        v.obj(p, f, ("output", "index", "node", "op", "delegated", "delegation_matches"),
              ("module_path", "module_class", "source", "eligible_index", "feeds"))
        out = v.string(p["output"], f"{f}.output")
        m = TAP_OUTPUT_RE.match(out)
        if not m:
            v.fail(f"{f}.output", f"must be tap.NNN (three or more digits), got {out!r}")
        width = width or len(m.group(1))
        if len(m.group(1)) != width:
            v.fail(f"{f}.output", f"is {out!r}; every point's number has {width} digits")
        index = v.integer(p["index"], f"{f}.index", minimum=0)
        if index != i or int(m.group(1)) != i:
            v.fail(f"{f}.index", f"must be the point's position {i} (output tap.{i:0{width}d}), "
                   f"got index {index}, output {out!r}")
        if out != tapped[i]:
            v.fail(f"{f}.output", f"is {out!r}; outputs[{len(out_names) - len(points) + i}] is "
                   f"{tapped[i]!r} (the taps are the last outputs, in order)")
        v.string(p["node"], f"{f}.node")
        v.string(p["op"], f"{f}.op")
        for k in ("delegated", "delegation_matches"):
            if not isinstance(p[k], bool):
                v.fail(f"{f}.{k}", "must be true or false")
        for k in ("module_path", "module_class"):
            if k in p:
                v.string(p[k], f"{f}.{k}")
        if "eligible_index" in p:
            e = v.integer(p["eligible_index"], f"{f}.eligible_index", minimum=first)
            if e > last:
                v.fail(f"{f}.eligible_index", f"is {e}, past the eligible nodes tapped "
                       f"({first}..{last})")
            if i and e <= points[i - 1].get("eligible_index", -1):
                v.fail(f"{f}.eligible_index", f"is {e}, not after the point before it")
        if "feeds" in p:
            for j, o in enumerate(v.array(p["feeds"], f"{f}.feeds")):
                if v.string(o, f"{f}.feeds[{j}]") not in model_outputs:
                    v.fail(f"{f}.feeds[{j}]", f"is {o!r}, not one of the model's outputs "
                           f"({', '.join(model_outputs)})")
        if "source" in p:
            src = v.obj(p["source"], f"{f}.source", ("file", "line"), ("code",))
            v.string(src["file"], f"{f}.source.file")
            v.integer(src["line"], f"{f}.source.line", minimum=1)
            if "code" in src:
                v.string(src["code"], f"{f}.source.code")
    model_outs = out_names[:len(out_names) - len(points)]
    for j, o in enumerate(model_outs):
        if TAP_OUTPUT_RE.match(o):
            v.fail(f"outputs[{j}].name", f"is {o!r}, a tap's name, but taps.points names only "
                   f"the last {len(points)} outputs")


def _budget(v: _V, b: Any) -> None:
    v.obj(b, "budget", (), BUDGET_KEYS)
    if not b:
        v.fail("budget", f"must set at least one of {', '.join(BUDGET_KEYS)} (absent: no budget)")
    if "min_sqnr_db" in b:
        v.number(b["min_sqnr_db"], "budget.min_sqnr_db")
    for k, lo in (("min_cosine", -1), ("top1_agreement", 0)):
        if k in b:
            x = v.number(b[k], f"budget.{k}")
            if not lo <= x <= 1:
                v.fail(f"budget.{k}", f"must lie in [{lo}, 1], got {x!r}")


def check_budget(b: Any) -> None:
    """Validates a budget object (ManifestError on failure)."""
    _V(None).check(_budget, b)


def check_output_specs(specs: Any) -> None:
    """Validates output specs, slice_axis and integer_atol included (ManifestError)."""
    _V(None).check(_tensor_specs, specs, "outputs")


def check_preprocessing(p: Any, inputs: list) -> None:
    """Validates a preprocessing object against the input specs (ManifestError on failure)."""
    _V(None).check(_preprocessing, p, inputs)


def check_labels(lab: Any, outputs: list) -> None:
    """Validates a labels object against the output specs (ManifestError on failure)."""
    _V(None).check(_labels, lab, [s["name"] for s in outputs])


def check_weights(w: Any) -> None:
    """Validates a weights object (ManifestError on failure)."""
    _V(None).check(_weights, w)


def _weights(v: _V, w: Any) -> None:
    v.obj(w, "weights", ("kind", "source"))
    v.string(w["kind"], "weights.kind", choices=WEIGHT_KINDS)
    v.string(w["source"], "weights.source")


def _labels(v: _V, lab: Any, out_names: list) -> None:
    v.obj(lab, "labels", ("output", "source", "names"))
    v.string(lab["output"], "labels.output", choices=out_names)
    v.string(lab["source"], "labels.source")
    names = v.array(lab["names"], "labels.names")
    if not names:
        v.fail("labels.names", "must not be empty")
    for i, n in enumerate(names):
        v.string(n, f"labels.names[{i}]")


def _preprocessing(v: _V, p: Any, inputs: list) -> None:
    keys = ("kind", "input", "color", "resize_shorter", "interpolation", "crop", "mean", "std",
            "value_range")
    if not isinstance(p, dict):
        v.fail("preprocessing", f"must be an object, got {_tname(p)}")
    v.string(p.get("kind"), "preprocessing.kind", choices=("image",))
    v.obj(p, "preprocessing", keys)
    name = v.string(p["input"], "preprocessing.input", choices=[s["name"] for s in inputs])
    spec = next(s for s in inputs if s["name"] == name)
    if len(spec["shape"]) != 4 or "layout" not in spec:
        v.fail("preprocessing.input", f"must name a rank-4 input with a known layout ({name!r})")
    v.string(p["color"], "preprocessing.color", choices=("rgb",))
    v.integer(p["resize_shorter"], "preprocessing.resize_shorter", minimum=1)
    v.string(p["interpolation"], "preprocessing.interpolation", choices=("bilinear",))
    crop = v.array(p["crop"], "preprocessing.crop")
    if len(crop) != 2:
        v.fail("preprocessing.crop", "must be [h, w]")
    for i, c in enumerate(crop):
        v.integer(c, f"preprocessing.crop[{i}]", minimum=1)
    for key in ("mean", "std"):
        arr = v.array(p[key], f"preprocessing.{key}")
        if len(arr) != 3:
            v.fail(f"preprocessing.{key}", "must have 3 numbers")
        for i, x in enumerate(arr):
            if not isinstance(x, float):
                v.fail(f"preprocessing.{key}[{i}]", f"must be a float, got {x!r}")
            v.number(x, f"preprocessing.{key}[{i}]")
            if key == "std" and x == 0:
                v.fail(f"preprocessing.std[{i}]", "must not be 0")
    vr = v.array(p["value_range"], "preprocessing.value_range")
    if len(vr) != 2:
        v.fail("preprocessing.value_range", "must be [min, max]")
    for i, x in enumerate(vr):
        v.number(x, f"preprocessing.value_range[{i}]")
    if not vr[0] < vr[1]:
        v.fail("preprocessing.value_range", "must have min < max")
