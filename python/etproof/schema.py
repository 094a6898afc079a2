"""The JSON Schema files in schema/ (one per document both halves read), and validating a document
against one of them with every problem listed (docs/manifest.md, "The schema files").

The same files are embedded in the runtime half (cpp/src/core/schema.cpp, valijson) and both halves
word a problem the same way (``problem_message`` here, ``schema.cpp`` there), so a document gets
the same answer in each: the same problems at the same JSON pointers, sorted by pointer.
tests/schema/corpus holds the documents both test suites check this against.

May import: etproof.errors and jsonschema only (etproof.backends reads the table through it, and a
test keeps the table's import light).
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

# Where the project's data files are (schema/, data/): the checkout this package sits in
# (python/etproof -> its root), or, for the installed wheel, etproof/sdk/share/etproof inside the
# package (pyproject.toml and CMakeLists.txt install them there). REPO is the checkout's root, which
# an installed package does not have (its build/ is then absent: callers check).
REPO = Path(__file__).resolve().parents[2]
_INSTALLED_DATA = Path(__file__).resolve().parent / "sdk" / "share" / "etproof"
DATA_ROOT = _INSTALLED_DATA if (_INSTALLED_DATA / "schema").is_dir() else REPO
INSTALLED = DATA_ROOT is _INSTALLED_DATA
SCHEMA_DIR = Path(os.environ.get("ETPROOF_SCHEMA_DIR", DATA_ROOT / "schema"))

# Document name -> its schema file in schema/ (cpp/include/etproof/core/schema.h: Document).
DOCUMENTS = {
    "manifest": "manifest.schema.json",
    "export-report": "export-report.schema.json",
    "xfail": "xfail.schema.json",
    "backends": "backends.schema.json",
    "ledger-record": "ledger-record.schema.json",
    "bounds": "bounds.schema.json",
}


@dataclass(frozen=True, order=True)
class SchemaProblem:
    """One problem: ``pointer`` (RFC 6901, "" for the document itself) and ``message``."""

    pointer: str
    message: str

    @property
    def field(self) -> str:
        """The pointer as the readers' messages name a field: ``inputs[0].dtype``."""
        return field_path(self.pointer)


def field_path(pointer: str) -> str:
    """``/inputs/0/dtype`` -> ``inputs[0].dtype`` (an all-digit token is an array index)."""
    out = ""
    for tok in pointer.split("/")[1:]:
        tok = tok.replace("~1", "/").replace("~0", "~")
        out += f"[{tok}]" if tok.isdigit() else (f".{tok}" if out else tok)
    return out


def pointer_of(path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def schema_path(document: str) -> Path:
    return SCHEMA_DIR / DOCUMENTS[document]


@functools.lru_cache(maxsize=None)
def _validator(document: str) -> jsonschema.Draft7Validator:
    schema = json.loads(schema_path(document).read_text(encoding="utf-8"))
    # An integer is an integer in the text (1, never 1.0), as the runtime half reads it
    # (valijson's strong types): the same answer in both halves.
    types = jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool))
    cls = jsonschema.validators.extend(jsonschema.Draft7Validator, type_checker=types)
    return cls(schema)


def _render(v: Any) -> str:
    """A value in a message, as the runtime half renders it: a string in single quotes, anything
    else as compact JSON."""
    if isinstance(v, str):
        return f"'{v}'"
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


_TYPE_NAMES = {"integer": "an integer", "number": "a number", "string": "a string",
               "object": "an object", "array": "an array", "boolean": "a boolean", "null": "null"}


def _found(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a float"
    return {str: "a string", list: "an array", dict: "an object",
            type(None): "null"}.get(type(v), type(v).__name__)


def _problems(error: jsonschema.ValidationError, document: str) -> list[SchemaProblem]:
    at = pointer_of(error.absolute_path)
    kw, value, inst, sch = error.validator, error.validator_value, error.instance, error.schema
    if kw == "required":
        return [SchemaProblem(at + pointer_of([k]), "missing")
                for k in value if isinstance(inst, dict) and k not in inst]
    if kw == "additionalProperties":
        props = sch.get("properties", {})
        patterns = sch.get("patternProperties", {})
        out = []
        for k in inst:
            if k in props or any(re.search(p, k) for p in patterns):
                continue
            if patterns:
                msg = f"{_render(k)} is not a valid name ({', '.join(patterns)})"
            else:
                msg = f"is not a field of schema/{DOCUMENTS[document]}"
            out.append(SchemaProblem(at + pointer_of([k]), msg))
        return out
    return [SchemaProblem(at, problem_message(kw, value, inst, sch))]


def _type_message(value: Any, inst: Any) -> str:
    want = value if isinstance(value, list) else [value]
    return f"expected {' or '.join(_TYPE_NAMES.get(t, t) for t in want)}, found {_found(inst)}"


def _not_message(value: Any, inst: Any) -> str:
    why = value.get("description") if isinstance(value, dict) else None
    return "is not allowed here" + (f" ({why})" if why else "")


# Each keyword's failure in words, from the keyword's value in the schema and the instance that
# failed it; cpp/src/core/schema.cpp words them the same way.
_MESSAGES = {
    "type": _type_message,
    "enum": lambda v, i: f"unknown value {_render(i)} (known: {', '.join(_render(x) for x in v)})",
    "const": lambda v, i: f"must be {_render(v)}, found {_render(i)}",
    "pattern": lambda v, i: f"{_render(i)} does not match {v}",
    "minimum": lambda v, i: f"{_render(i)} is below the minimum {_render(v)}",
    "maximum": lambda v, i: f"{_render(i)} is above the maximum {_render(v)}",
    "exclusiveMinimum": lambda v, i: f"{_render(i)} must be greater than {_render(v)}",
    "exclusiveMaximum": lambda v, i: f"{_render(i)} must be less than {_render(v)}",
    "minItems": lambda v, i: ("empty (at least one item)" if v == 1
                              else f"has {len(i)} items, expected at least {v}"),
    "maxItems": lambda v, i: f"has {len(i)} items, expected at most {v}",
    "minLength": lambda v, i: "empty string" if v == 1 else f"is shorter than {v} characters",
    "minProperties": lambda v, i: f"has {len(i)} fields, expected at least {v}",
    "not": _not_message,
}


def problem_message(kw: str, value: Any, inst: Any, sch: dict) -> str:
    """One failed keyword in words (cpp/src/core/schema.cpp words it the same way)."""
    message = _MESSAGES.get(kw)
    return message(value, inst) if message else f"fails '{kw}'"


def validate(doc: Any, document: str) -> list[SchemaProblem]:
    """Every problem of ``doc`` against schema/DOCUMENTS[document], sorted by pointer; [] when it
    follows the schema."""
    out = set()
    for e in _validator(document).iter_errors(doc):
        out.update(_problems(e, document))
    return sorted(out)


@functools.lru_cache(maxsize=None)
def _part_validator(document: str, definition: str) -> jsonschema.Draft7Validator:
    whole = _validator(document)
    part = {"allOf": [{"$ref": f"#/definitions/{definition}"}],
            "definitions": whole.schema["definitions"]}
    return type(whole)(part)


def validate_part(value: Any, document: str, definition: str, at: str = "") -> list[SchemaProblem]:
    """Every problem of ``value`` against ``definition`` of schema/DOCUMENTS[document] (a part of
    a document, before the whole is built), each pointer under ``at``; sorted."""
    out = set()
    for e in _part_validator(document, definition).iter_errors(value):
        out.update(SchemaProblem(at + p.pointer, p.message) for p in _problems(e, document))
    return sorted(out)


def problems_text(problems: list[SchemaProblem]) -> str:
    """``PATH: message; PATH: message`` (the runtime half's form)."""
    return "; ".join(f"{p.field or '(document)'}: {p.message}" for p in problems)
