"""The backend table (data/backends.json): every per-backend fact, loaded and validated.

The table is the one home of every per-backend fact (docs/backends.md); the exporter
(etproof.recipes, etproof.lower), the probe (etproof.probe), the CLI and the C++ side read it.
This module answers what the table says; whether a backend lowers here is etproof.probe's
question, which sits above the exporter.

May import: etproof.errors, etproof.schema (the table's structure is schema/backends.schema.json,
the file the runtime half validates the embedded table against) and the standard library only.
Never the exporter, torch or ExecuTorch (a test imports it in a fresh interpreter and checks), so
reading the table costs no import.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
from pathlib import Path

from etproof import schema
from etproof.errors import EtproofError

REPO = schema.REPO  # the checkout's root (schema.py: DATA_ROOT, for an installed package)
DATA_DIR = schema.DATA_ROOT / "data"
TABLE_PATH = Path(os.environ.get("ETPROOF_BACKENDS_TABLE", DATA_DIR / "backends.json"))


# Core ML compute units by the table's names (recipes[].compute_unit) -> coremltools.ComputeUnit.
COREML_COMPUTE_UNITS = {"all": "ALL", "cpu_only": "CPU_ONLY", "cpu_and_gpu": "CPU_AND_GPU",
                        "cpu_and_ne": "CPU_AND_NE"}
COREML_PRECISIONS = {"float32": "FLOAT32", "float16": "FLOAT16"}
OPENVINO_DEVICE = "CPU"  # the OpenVINO compile spec "device"


class BackendTableError(EtproofError):
    """data/backends.json is missing or does not follow docs/backends.md."""

    kind = "backend-table-invalid"


# --- the table -----------------------------------------------------------------------------------

def validate_table(doc) -> dict[str, dict]:
    """Checks a parsed table; returns {key: entry} in table order. Raises BackendTableError naming
    every problem against schema/backends.schema.json at once, else the first of the checks a
    schema cannot state (a key listed twice, ...)."""
    problems = schema.validate(doc, "backends")
    if problems:
        raise BackendTableError(f"the backend table: {schema.problems_text(problems)}",
                                "fix data/backends.json (schema/backends.schema.json, "
                                "docs/backends.md)")
    out: dict[str, dict] = {}
    for b in doc["backends"]:
        where = f"backend {b['key']!r}"
        if b["key"] in out:
            raise BackendTableError(f"{where} is listed twice", "one entry per key")
        if b["kind"] == "delegate" and b["partitioner"] is None and b["upstream"]["status"] == "active":
            raise BackendTableError(f"{where}: an active delegate needs a partitioner",
                                    "see docs/backends.md")
        for r in b["recipes"]:
            _check_recipe(b["key"], r)
        out[b["key"]] = b
    namespaces = [lib["namespace"] for lib in doc["kernel_libraries"]]
    twice = sorted({n for n in namespaces if namespaces.count(n) > 1})
    if twice:
        raise BackendTableError(f"kernel_libraries: namespace {twice[0]!r} is listed twice",
                                "one entry per operator namespace")
    return out


def _check_recipe(key: str, r: dict) -> None:
    """What the schema cannot state of one recipe entry: its precisions include its precision;
    Core ML's precision and compute unit are ones Core ML knows."""
    where = f"backend {key!r}"
    if r["precision"] not in r.get("precisions", [r["precision"]]):
        raise BackendTableError(f"{where}: recipe {r['recipe']!r}: precisions must "
                                "include precision", "see docs/backends.md")
    if key == "coreml" and (r["precision"] not in COREML_PRECISIONS
                            or r.get("compute_unit", "all") not in COREML_COMPUTE_UNITS):
        raise BackendTableError(f"{where}: recipe {r['recipe']!r} has a precision or "
                                "compute_unit Core ML does not know",
                                f"precision: {sorted(COREML_PRECISIONS)}; compute_unit: "
                                f"{sorted(COREML_COMPUTE_UNITS)}")


@functools.lru_cache(maxsize=4)
def _load(path: str) -> tuple[dict, str, list]:
    try:
        raw = Path(path).read_bytes()
        doc = json.loads(raw)
    except OSError as e:
        raise BackendTableError(f"cannot read the backend table {path}: {e.strerror or e}",
                                "run from a checkout of etproof (data/backends.json)") from e
    except ValueError as e:
        raise BackendTableError(f"the backend table {path} is not JSON: {e}",
                                "fix data/backends.json") from e
    return validate_table(doc), hashlib.sha256(raw).hexdigest(), doc["kernel_libraries"]


def load_table(path=None) -> dict[str, dict]:
    """{key: entry}, validated (BackendTableError on a bad table)."""
    return _load(str(path or TABLE_PATH))[0]


def table_hash(path=None) -> str:
    """SHA-256 (hex) of the table file's bytes: a cache key part wherever its facts matter."""
    return _load(str(path or TABLE_PATH))[1]


def kernel_libraries(path=None) -> dict[str, str]:
    """{operator namespace: the kernel library that registers it, as ExecuTorch names it}
    (the table's kernel_libraries, docs/backends.md)."""
    return {lib["namespace"]: lib["library"] for lib in _load(str(path or TABLE_PATH))[2]}


def keys() -> list[str]:
    """Every backend key of the table, in table order."""
    return list(load_table())


def recipes(include_planned: bool = False) -> dict[tuple[str, str], dict]:
    """{(backend, recipe): recipe entry} for the recipes etproof exports now (or also planned)."""
    return {(k, r["recipe"]): r for k, b in load_table().items() for r in b["recipes"]
            if include_planned or not r.get("planned")}


def missing_prerequisite(entry: dict) -> str | None:
    """The first export prerequisite of a table entry that is absent here, checked WITHOUT
    importing the backend's package (an SDK variable whose absence would make the import reach
    for the network; a Python module), or None when all are present."""
    for s in entry["export_needs"]["sdk"]:
        if s["check_before_import"] and s["env"] and not os.environ.get(s["env"]):
            return (f"{s['env']} is not set: {s['name']} not found (not imported: "
                    f"importing the package without it would try to download the SDK)")
    for mod in entry["export_needs"]["modules"]:
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"Python module {mod!r} is not installed"
    return None


def external_weights_backends() -> list[str]:
    """The backends whose constant weights ExecuTorch can write to a named-data file NAME.ptd
    beside the .pte (the table's external_weights), in table order."""
    return [k for k, b in load_table().items() if b.get("external_weights", False)]


def needs_text(entry: dict) -> str:
    """What the export half needs, in terms a user can act on."""
    n = entry["export_needs"]
    parts = []
    if n["pip"]:
        parts.append("pip install " + " ".join(n["pip"]))
    if n["extras"]:
        parts.append("or pip install 'executorch[" + ",".join(n["extras"]) + "]'")
    for s in n["sdk"]:
        parts.append(s["name"] + (f" (set {s['env']})" if s["env"] else ""))
    if n["os"]:
        parts.append("OS: " + " or ".join(n["os"]))
    return "; ".join(parts) or "nothing beyond etproof's requirements.txt"
