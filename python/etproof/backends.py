"""The backend table (data/backends.json) and the export half's probe.

The table is the one home of every per-backend fact (docs/backends.md); export.py, the CLI and
the C++ side read it. ``probe_export(key)`` answers whether this machine can lower for a backend
by doing it: a one-operation model is lowered with the backend's partitioner and the lowered
program must carry at least one delegate call. Each probe runs in its own process with a time
limit, never reaches the network (sockets are refused in the child, and prerequisites whose
absence makes an import download something are checked before importing), and answers
``{"backend", "status": "available"|"refused"|"removed-upstream", "reason", "needs"}``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from etproof.errors import EtproofError

REPO = Path(__file__).resolve().parents[2]
TABLE_PATH = Path(os.environ.get("ETPROOF_BACKENDS_TABLE", REPO / "data" / "backends.json"))
DEFAULT_CACHE_DIR = REPO / "build" / ".etproof-cache"
CACHE_FILE = "export-probe.json"
DEFAULT_TIMEOUT_S = 120.0
MAX_JOBS = 2

KINDS = ("portable", "delegate", "operators")
STATUSES = ("available", "refused", "removed-upstream")
PROBE_MODELS = ("add", "linear", "add-int8", "cumsum")  # cumsum: a test model XNNPACK lacks


class BackendTableError(EtproofError):
    """data/backends.json is missing or does not follow docs/backends.md."""

    kind = "backend-table-invalid"


# --- the table -----------------------------------------------------------------------------------

_REQUIRED = {
    "key": str, "name": str, "kind": str, "runtime_ids": list, "partitioner": (dict, type(None)),
    "recipes": list, "export_needs": dict, "runtime_needs": dict, "upstream": dict,
    "notes": list, "probe_model": (str, type(None)), "probe_env": dict,
}
_EXPORT_NEEDS = {"pip": list, "extras": list, "modules": list, "sdk": list, "os": list}
_RUNTIME_NEEDS = {"wheel_component": (str, type(None)), "build_flag": (str, type(None)),
                  "os": list, "hardware": (str, type(None)), "env": list}


def _check_fields(obj, spec: dict, where: str) -> None:
    if not isinstance(obj, dict):
        raise BackendTableError(f"{where} is not an object", "see docs/backends.md")
    for name, typ in spec.items():
        if name not in obj:
            raise BackendTableError(f"{where}: missing field {name!r}", "see docs/backends.md")
        if not isinstance(obj[name], typ):
            raise BackendTableError(f"{where}.{name} has the wrong type "
                                    f"({type(obj[name]).__name__})", "see docs/backends.md")


def validate_table(doc) -> dict[str, dict]:
    """Checks a parsed table; returns {key: entry} in table order. Raises BackendTableError."""
    if not isinstance(doc, dict) or not isinstance(doc.get("backends"), list):
        raise BackendTableError("the table has no 'backends' list", "see docs/backends.md")
    out: dict[str, dict] = {}
    for i, b in enumerate(doc["backends"]):
        _check_fields(b, _REQUIRED, f"backends[{i}]")
        where = f"backend {b['key']!r}"
        if b["key"] in out:
            raise BackendTableError(f"{where} is listed twice", "one entry per key")
        if b["kind"] not in KINDS:
            raise BackendTableError(f"{where}: kind {b['kind']!r} is not one of {KINDS}",
                                    "see docs/backends.md")
        _check_fields(b["export_needs"], _EXPORT_NEEDS, f"{where}.export_needs")
        _check_fields(b["runtime_needs"], _RUNTIME_NEEDS, f"{where}.runtime_needs")
        for s in b["export_needs"]["sdk"]:
            _check_fields(s, {"name": str, "env": (str, type(None)),
                              "check_before_import": bool}, f"{where}.export_needs.sdk")
        p = b["partitioner"]
        if p is not None:
            _check_fields(p, {"module": str, "class": str}, f"{where}.partitioner")
        if b["kind"] == "delegate" and p is None and b["upstream"].get("status") == "active":
            raise BackendTableError(f"{where}: an active delegate needs a partitioner",
                                    "see docs/backends.md")
        for r in b["recipes"]:
            _check_fields(r, {"recipe": str, "precision": str}, f"{where}.recipes[]")
            if r["precision"] not in r.get("precisions", [r["precision"]]):
                raise BackendTableError(f"{where}: recipe {r['recipe']!r}: precisions must "
                                        "include precision", "see docs/backends.md")
            if b["key"] == "coreml" and (
                    r["precision"] not in COREML_PRECISIONS
                    or r.get("compute_unit", "all") not in COREML_COMPUTE_UNITS):
                raise BackendTableError(f"{where}: recipe {r['recipe']!r} has a precision or "
                                        "compute_unit Core ML does not know",
                                        f"precision: {sorted(COREML_PRECISIONS)}; compute_unit: "
                                        f"{sorted(COREML_COMPUTE_UNITS)}")
        if b["upstream"].get("status") not in ("active", "removed"):
            raise BackendTableError(f"{where}: upstream.status must be active or removed",
                                    "see docs/backends.md")
        if b["probe_model"] is not None and b["probe_model"] not in PROBE_MODELS:
            raise BackendTableError(f"{where}: unknown probe_model {b['probe_model']!r}",
                                    f"one of {PROBE_MODELS}")
        out[b["key"]] = b
    return out


@functools.lru_cache(maxsize=4)
def _load(path: str) -> tuple[dict, str]:
    try:
        raw = Path(path).read_bytes()
        doc = json.loads(raw)
    except OSError as e:
        raise BackendTableError(f"cannot read the backend table {path}: {e.strerror or e}",
                                "run from a checkout of etproof (data/backends.json)") from e
    except ValueError as e:
        raise BackendTableError(f"the backend table {path} is not JSON: {e}",
                                "fix data/backends.json") from e
    return validate_table(doc), hashlib.sha256(raw).hexdigest()


def load_table(path=None) -> dict[str, dict]:
    """{key: entry}, validated (BackendTableError on a bad table)."""
    return _load(str(path or TABLE_PATH))[0]


def table_hash(path=None) -> str:
    return _load(str(path or TABLE_PATH))[1]


def keys() -> list[str]:
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


# --- the probe (parent side) ---------------------------------------------------------------------

def _result(key, status, reason, entry, **extra) -> dict:
    r = {"backend": key, "status": status, "reason": reason,
         "needs": entry["export_needs"] if entry else {}}
    r.update(extra)
    return r


def _without_child(key: str, entry: dict) -> dict | None:
    """Answers that need no probing: removed upstream, or not a delegate at all."""
    if entry["upstream"]["status"] == "removed":
        u = entry["upstream"]
        return _result(key, "removed-upstream",
                       f"removed upstream in ExecuTorch {u.get('since', '?')}"
                       + (f" ({u['note']})" if u.get("note") else ""), entry)
    if entry["kind"] == "operators":
        return _result(key, "refused", "not a delegate: " + entry["notes"][0].split(": ", 1)[-1]
                       if entry["notes"] else "not a delegate", entry)
    return None


def probe_export(key: str, timeout_s: float = DEFAULT_TIMEOUT_S, *, _test_model: str | None = None,
                 _test_fault: str | None = None) -> dict:
    """Probes one backend's export half in a child process; never raises for a backend's failure.

    _test_model / _test_fault are test hooks: lower a different probe model, or make the child
    hang ("hang") or die ("crash").
    """
    table = load_table()
    if key not in table:
        raise EtproofError(f"unknown backend {key!r}", f"backends: {', '.join(table)}")
    entry = table[key]
    pre = _without_child(key, entry)
    if pre is not None:
        return pre
    cmd = [sys.executable, "-m", "etproof.backends", "--child", key]
    if _test_model:
        cmd += ["--model", _test_model]
    if _test_fault:
        cmd += ["--fault", _test_fault]
    env = dict(os.environ, PYTHONWARNINGS="ignore", **entry["probe_env"])
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1])]
                                        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        return _result(key, "refused", f"probe timed out after {timeout_s:g} s (the backend's "
                       "lowering hung or is far slower than a one-operation model should be)",
                       entry, seconds=round(time.monotonic() - t0, 1))
    seconds = round(time.monotonic() - t0, 1)
    for line in reversed(out.splitlines()):
        if line.startswith("ETPROOF-PROBE "):
            r = json.loads(line[len("ETPROOF-PROBE "):])
            r["seconds"] = seconds
            return r
    last = next((ln.strip() for ln in reversed(err.splitlines()) if ln.strip()), "")
    how = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
           else f"exit status {proc.returncode}")
    return _result(key, "refused", f"probe process died ({how}) before answering: {last[:300]}",
                   entry, seconds=seconds)


def _kill_group(proc) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def cache_key() -> str:
    """Toolchain versions (and every export prerequisite's), the table and this file."""
    from etproof.export import _version, toolchain_versions

    parts = {k: v for k, v in toolchain_versions().items()
             if k in ("python", "torch", "executorch", "torchao")}
    for b in load_table().values():
        for dist in b["export_needs"]["pip"] + b["export_needs"]["modules"]:
            name = dist.split(" ")[0]
            try:
                parts[f"pip:{name}"] = _version(name)
            except Exception:  # noqa: BLE001 - absent is a version too
                parts[f"pip:{name}"] = None
    parts["platform"] = platform.platform()
    parts["table"] = table_hash()
    parts["probe"] = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    env = {s["env"]: os.environ.get(s["env"]) for b in load_table().values()
           for s in b["export_needs"]["sdk"] if s["env"]}
    parts["env"] = env
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def probe_all(only=None, timeout_s: float = DEFAULT_TIMEOUT_S, jobs: int = MAX_JOBS,
              refresh: bool = False, cache_dir=None, log=None, *,
              _test_faults: dict | None = None) -> list[dict]:
    """Probes every backend (or ``only``), at most ``jobs`` at a time, in table order.

    Answers are cached in CACHE_DIR/export-probe.json keyed by cache_key(); refresh re-probes.
    _test_faults: {key: "hang"|"crash"} (test hook; nothing is read from or written to the cache).
    """
    table = load_table()
    want = list(only) if only else list(table)
    for k in want:
        if k not in table:
            raise EtproofError(f"unknown backend {k!r}", f"backends: {', '.join(table)}")
    cdir = Path(cache_dir) if cache_dir else DEFAULT_CACHE_DIR
    path = cdir / CACHE_FILE
    ckey = cache_key()
    cached: dict = {}
    try:
        doc = json.loads(path.read_text())
        if doc.get("key") == ckey:
            cached = doc.get("results", {})
    except (OSError, ValueError, AttributeError):
        cached = {}
    if _test_faults:
        cached, refresh = {}, True
    todo = [k for k in want if refresh or k not in cached]
    say = log or (lambda _m: None)
    faults = _test_faults or {}
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, MAX_JOBS))) as pool:
        answers = pool.map(lambda k: probe_export(k, timeout_s, _test_fault=faults.get(k)), todo)
        for k, r in zip(todo, answers):
            say(f"{k}: {r['status']}")
            cached[k] = r
    if _test_faults:
        return [cached[k] for k in want]
    try:
        cdir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"key": ckey, "results": cached}, sort_keys=True, indent=2))
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written is only slower
    return [cached[k] for k in want]


# --- the probe (child side) ----------------------------------------------------------------------

def _block_network() -> None:
    """Any socket connection other than AF_UNIX raises: a probe never reaches the network."""
    import socket

    real = socket.socket.connect

    def connect(self, address):
        if self.family != getattr(socket, "AF_UNIX", None):
            raise ConnectionRefusedError(f"network access refused by the etproof probe "
                                         f"({address!r})")
        return real(self, address)

    socket.socket.connect = connect
    socket.create_connection = lambda address, *a, **k: (_ for _ in ()).throw(
        ConnectionRefusedError(f"network access refused by the etproof probe ({address!r})"))


def _first_line(e: BaseException) -> str:
    from etproof.export import _first_line as fl

    return f"{type(e).__name__}: {fl(e)}"


def _probe_model(name: str):
    import torch

    class Add(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    class CumSum(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(x, dim=1)

    if name in ("add", "add-int8"):
        return Add().eval(), (torch.randn(1, 8), torch.randn(1, 8))
    if name == "linear":
        torch.manual_seed(0)
        return torch.nn.Linear(8, 4).eval(), (torch.randn(1, 8),)
    if name == "cumsum":
        return CumSum().eval(), (torch.randn(1, 8),)
    raise ValueError(name)


# Core ML compute units by the table's names (recipes[].compute_unit) -> coremltools.ComputeUnit.
COREML_COMPUTE_UNITS = {"all": "ALL", "cpu_only": "CPU_ONLY", "cpu_and_gpu": "CPU_AND_GPU",
                        "cpu_and_ne": "CPU_AND_NE"}
COREML_PRECISIONS = {"float32": "FLOAT32", "float16": "FLOAT16"}
OPENVINO_DEVICE = "CPU"  # the OpenVINO compile spec "device"


def make_partitioner(key: str, recipe: dict | None = None):
    """The backend's partitioner, configured for one of its table recipes (or the probe's minimum).

    The one place etproof configures a partitioner: the probe (recipe None) and export.py use it.
    Core ML: compile specs from CoreMLBackend.generate_compile_specs with the recipe's
    compute_unit, precision and minimum_deployment_target. Importing the Vulkan partitioner sets
    the root logger to INFO; the level is put back.
    """
    import importlib
    import logging

    p = load_table()[key]["partitioner"]
    if p is None:
        return None
    root_level = logging.getLogger().level
    try:
        cls = getattr(importlib.import_module(p["module"]), p["class"])
    finally:
        logging.getLogger().setLevel(root_level)
    if key == "coreml" and recipe is not None:
        import coremltools as ct
        from executorch.backends.apple.coreml.compiler import CoreMLBackend

        kwargs = {"compute_precision": getattr(ct.precision,
                                               COREML_PRECISIONS[recipe["precision"]])}
        if recipe.get("compute_unit"):
            kwargs["compute_unit"] = getattr(ct.ComputeUnit,
                                             COREML_COMPUTE_UNITS[recipe["compute_unit"]])
        if recipe.get("minimum_deployment_target"):
            kwargs["minimum_deployment_target"] = getattr(ct.target,
                                                          recipe["minimum_deployment_target"])
        return cls(compile_specs=CoreMLBackend.generate_compile_specs(**kwargs))
    return _partitioner(key, cls)


def _partitioner(key: str, cls):
    """An instance of the backend's partitioner with the smallest configuration it accepts."""
    if key == "openvino":
        from executorch.exir.backend.compile_spec_schema import CompileSpec

        return cls([CompileSpec("device", OPENVINO_DEVICE.encode())])
    if key == "arm-tosa":
        from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

        return cls(TosaCompileSpec("TOSA-1.0+FP"))
    if key == "arm-ethos-u":
        from executorch.backends.arm.ethosu import EthosUCompileSpec

        return cls(EthosUCompileSpec("ethos-u55-128"))
    if key == "arm-vgf":
        from executorch.backends.arm.vgf import VgfCompileSpec

        return cls(VgfCompileSpec())
    if key in ("metal", "cuda"):
        return cls([])
    return cls()


def child_probe(key: str, model_name: str | None = None) -> dict:
    """The probe itself (run in the child process)."""
    import importlib
    import importlib.util

    entry = load_table()[key]
    needs = needs_text(entry)

    def refuse(what: str) -> dict:
        return _result(key, "refused", f"{what} (needs: {needs})", entry)

    # 1. prerequisites whose absence makes an import reach for the network (or fail): no import.
    missing = missing_prerequisite(entry)
    if missing is not None:
        return refuse(missing)
    # 2. the partitioner
    part = None
    if entry["partitioner"] is not None:
        p = entry["partitioner"]
        try:
            cls = getattr(importlib.import_module(p["module"]), p["class"])
        except BaseException as e:  # noqa: BLE001 - any import failure is a refusal
            return refuse(f"cannot import {p['module']}.{p['class']}: {_first_line(e)}")
        try:
            part = _partitioner(key, cls)
        except BaseException as e:  # noqa: BLE001
            return refuse(f"cannot construct {p['class']}: {_first_line(e)}")
    # 3. lower a one-operation model, serialize, read the delegate calls from the program
    import torch
    from executorch.exir import to_edge_transform_and_lower

    from etproof.export import delegates_in_program

    name = model_name or entry["probe_model"]
    if name == "add-int8":
        return refuse("its probe needs an int8-quantized model, which etproof's probe does not "
                      "build yet")
    model, inputs = _probe_model(name)
    try:
        ep = torch.export.export(model, inputs)
        edge = to_edge_transform_and_lower(ep, partitioner=[part] if part else [])
        gm = edge.exported_program().graph_module
        calls = [n for n in gm.graph.nodes if n.op == "call_function"
                 and "executorch_call_delegate" in str(n.target)]
        program = edge.to_executorch().buffer
        delegates = delegates_in_program(program)
    except BaseException as e:  # noqa: BLE001 - lowering failed: a refusal with the first line
        return refuse(f"lowering a one-operation model ({name}) failed: {_first_line(e)}")
    if entry["kind"] == "portable":
        if delegates:
            return _result(key, "refused", f"the portable program carries delegates {delegates}",
                           entry)
        return _result(key, "available", f"lowered a one-operation model ({name}) with no "
                       "partitioner; no delegate call, as expected", entry, delegates=[])
    if not calls or not delegates:
        return _result(key, "refused", f"the partitioner tagged nothing: lowering a one-operation "
                       f"model ({name}) left no delegate call in the program", entry,
                       delegates=delegates)
    if entry["runtime_ids"] and not set(delegates) & set(entry["runtime_ids"]):
        return _result(key, "refused", f"lowered to delegate(s) {delegates}, expected one of "
                       f"{entry['runtime_ids']}", entry, delegates=delegates)
    return _result(key, "available", f"lowered a one-operation model ({name}): "
                   f"{len(calls)} delegate call(s) to {', '.join(delegates)}", entry,
                   delegates=delegates)


def _child_main(argv) -> int:
    import argparse
    import logging
    import warnings

    ap = argparse.ArgumentParser()
    ap.add_argument("--child", required=True)
    ap.add_argument("--model")
    ap.add_argument("--fault", choices=("hang", "crash"))
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    _block_network()
    if a.fault == "hang":
        time.sleep(3600)
    if a.fault == "crash":
        os.abort()
    r = child_probe(a.child, a.model)
    r["backend_modules"] = sorted({m.split(".")[2] for m in sys.modules
                                   if m.startswith("executorch.backends.") and m.count(".") >= 2})
    sys.stdout.flush()
    print("ETPROOF-PROBE " + json.dumps(r, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
