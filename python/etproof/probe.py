"""The export probe: does a backend lower here? Answered by doing it, in a child process.

``probe_export(key)`` lowers a one-operation model with the backend's partitioner (configured by
etproof.lower, as an export would) and requires at least one delegate call in the serialized
program. Each probe runs in its own process (``python -m etproof.probe --child KEY``) with a time
limit, never reaches the network (sockets are refused in the child, and prerequisites whose
absence makes an import download something are checked before importing), and answers
``{"backend", "status": "available"|"refused"|"removed-upstream", "reason", "needs"}``.
``probe_all`` probes several, caches the answers and is what ``python -m etproof probe`` prints.

Sits above the exporter: may import the table (etproof.backends), the lowering stage
(etproof.lower), toolchain facts and errors; nothing imports this module but the CLI.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from etproof import lower
from etproof.backends import REPO, load_table, missing_prerequisite, needs_text, table_hash
from etproof.errors import EtproofError, error_line
from etproof.toolchain import delegates_in_program, toolchain_versions, version

DEFAULT_CACHE_DIR = REPO / "build" / ".etproof-cache"
CACHE_FILE = "export-probe.json"
DEFAULT_TIMEOUT_S = 120.0
MAX_JOBS = 2

# What probe_export answers in "status" (docs/backends.md).
STATUSES = ("available", "refused", "removed-upstream")


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
    cmd = [sys.executable, "-m", "etproof.probe", "--child", key]
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
    """Toolchain versions (and every export prerequisite's), the table, this file and the
    partitioner configuration (etproof.lower)."""
    parts = {k: v for k, v in toolchain_versions().items()
             if k in ("python", "torch", "executorch", "torchao")}
    for b in load_table().values():
        for dist in b["export_needs"]["pip"] + b["export_needs"]["modules"]:
            name = dist.split(" ")[0]
            try:
                parts[f"pip:{name}"] = version(name)
            except Exception:  # noqa: BLE001 - absent is a version too
                parts[f"pip:{name}"] = None
    parts["platform"] = platform.platform()
    parts["table"] = table_hash()
    parts["probe"] = hashlib.sha256(Path(__file__).read_bytes()
                                    + Path(lower.__file__).read_bytes()).hexdigest()
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


def child_probe(key: str, model_name: str | None = None) -> dict:
    """The probe itself (run in the child process)."""
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
            cls = lower.partitioner_class(key)
        except BaseException as e:  # noqa: BLE001 - any import failure is a refusal
            return refuse(f"cannot import {p['module']}.{p['class']}: {error_line(e)}")
        try:
            part = lower.minimum_partitioner(key, cls)
        except BaseException as e:  # noqa: BLE001
            return refuse(f"cannot construct {p['class']}: {error_line(e)}")
    # 3. lower a one-operation model, serialize, read the delegate calls from the program
    import torch
    from executorch.exir import to_edge_transform_and_lower

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
        return refuse(f"lowering a one-operation model ({name}) failed: {error_line(e)}")
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
