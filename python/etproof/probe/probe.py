"""The export probe: does a backend lower here? Answered by doing it, in a child process.

``probe_export(key)`` lowers a one-operation model with the backend's partitioner (configured by
etproof.export.lower, as an export would) and requires at least one delegate call in the serialized
program. Each probe runs in its own process (``python -m etproof.probe --child KEY``) with a time
limit, never reaches the network (sockets are refused in the child, and prerequisites whose
absence makes an import download something are checked before importing), and answers
``{"backend", "status", "reason", "needs"}`` (status: etproof.status.PROBE_STATUSES).
``probe_all`` probes several, caches the answers and is what ``python -m etproof probe`` prints.

Sits above the exporter: may import the table (etproof.backends), the lowering stage
(etproof.export.lower), toolchain facts and errors; nothing imports this module but the CLI.
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

from etproof.export import lower
from etproof.backends import REPO, load_table, missing_prerequisite, needs_text, table_hash
from etproof.errors import EtproofError, error_line
from etproof.export.toolchain import delegates_in_program
from etproof.schema import INSTALLED
from etproof.status import AVAILABLE, REFUSED, REMOVED_UPSTREAM

# The probe's cache: build/ of the checkout, or for the installed wheel the user's cache directory
# ($XDG_CACHE_HOME/etproof, else ~/.cache/etproof): never inside site-packages.
DEFAULT_CACHE_DIR = (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "etproof"
                     if INSTALLED else REPO / "build" / ".etproof-cache")
CACHE_FILE = "export-probe.json"
DEFAULT_TIMEOUT_S = 120.0
MAX_JOBS = 2


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
        return _result(key, REMOVED_UPSTREAM,
                       f"removed upstream in ExecuTorch {u.get('since', '?')}"
                       + (f" ({u['note']})" if u.get("note") else ""), entry)
    if entry["kind"] == "operators":
        return _result(key, REFUSED, "not a delegate: " + entry["notes"][0].split(": ", 1)[-1]
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
    pre = _without_child(key, table[key])
    if pre is not None:
        return pre
    return _probe_children([key], timeout_s, 1, {key: _test_fault} if _test_fault else {},
                           _test_model)[key]


def _probe_children(keys: list[str], timeout_s: float, jobs: int, faults: dict,
                    model: str | None = None) -> dict[str, dict]:
    """{key: answer} for backends that need a child, at most ``jobs`` at a time.

    Where fork is safe (Linux), one probe server (``python -m etproof.probe --server``) imports
    torch and ExecuTorch's exporter once (~4 s of each child's 5-9 s before) and forks one child
    per backend: the child is still its own process, with the backend's probe_env, the network
    refused and the time limit, and what it imports (the partitioner, the backend's package)
    never reaches another backend's child. Elsewhere (macOS, where forking a process that loaded
    system frameworks is unsafe) each backend gets a fresh interpreter (``--child KEY``).
    """
    if not keys:
        return {}
    table = load_table()
    if not _use_server():
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, MAX_JOBS))) as pool:
            answers = pool.map(lambda k: _probe_one_process(k, table[k], timeout_s, faults.get(k),
                                                            model), keys)
            return dict(zip(keys, answers))
    requests = [{"key": k, "model": model, "fault": faults.get(k), "timeout_s": timeout_s,
                 "env": table[k]["probe_env"]} for k in keys]
    cmd = [sys.executable, "-m", "etproof.probe", "--server", "--jobs", str(max(1, jobs))]
    # The server's own allowance: importing torch and ExecuTorch (seconds), then every child's
    # time limit in turn, as if none ran beside another.
    deadline = SERVER_START_S + timeout_s * len(keys)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_probe_env({}),
                            start_new_session=True)
    try:
        out, err = proc.communicate("".join(json.dumps(r) + "\n" for r in requests),
                                    timeout=deadline)
        why = _how(proc.returncode)
    except subprocess.TimeoutExpired:
        _stop_server(proc)
        out, err = proc.communicate()
        why = f"no answer within {deadline:g} s"
    answers = {}
    for line in out.splitlines():
        if line.startswith("ETPROOF-PROBE "):
            a = json.loads(line[len("ETPROOF-PROBE "):])
            answers[a["backend"]] = a
    last = _last_line(err)
    for k in keys:
        if k not in answers:
            answers[k] = _result(k, REFUSED, f"the probe server died ({why}) before this "
                                 f"backend's answer: {last[:300]}", table[k])
    return answers


# Seconds the probe server may take to import torch and ExecuTorch's exporter before the first
# child (~4 s on 2 cores, 2026-12-02; generous for a loaded CI machine).
SERVER_START_S = 120.0


def _use_server() -> bool:
    """The fork server on Linux unless ETPROOF_PROBE_FORK=0 (then one interpreter per backend)."""
    return sys.platform.startswith("linux") and os.environ.get("ETPROOF_PROBE_FORK", "1") != "0"


def _probe_env(extra: dict) -> dict:
    env = dict(os.environ, PYTHONWARNINGS="ignore", **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2])]
                                        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def _stop_server(proc) -> None:
    """SIGTERM (the server kills its children's process groups), then SIGKILL to its group."""
    import signal

    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=5)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        pass
    _kill_group(proc)


def _timed_out(key: str, entry: dict, timeout_s: float, seconds: float) -> dict:
    return _result(key, REFUSED, f"probe timed out after {timeout_s:g} s (the backend's "
                   "lowering hung or is far slower than a one-operation model should be)",
                   entry, seconds=seconds)


def _died(key: str, entry: dict, how: str, last: str, seconds: float) -> dict:
    return _result(key, REFUSED, f"probe process died ({how}) before answering: {last[:300]}",
                   entry, seconds=seconds)


def _probe_one_process(key: str, entry: dict, timeout_s: float, fault: str | None,
                       model: str | None) -> dict:
    """One backend in a fresh interpreter (``python -m etproof.probe --child KEY``)."""
    cmd = [sys.executable, "-m", "etproof.probe", "--child", key]
    if model:
        cmd += ["--model", model]
    if fault:
        cmd += ["--fault", fault]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_probe_env(entry["probe_env"]), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        return _timed_out(key, entry, timeout_s, round(time.monotonic() - t0, 1))
    seconds = round(time.monotonic() - t0, 1)
    for line in reversed(out.splitlines()):
        if line.startswith("ETPROOF-PROBE "):
            r = json.loads(line[len("ETPROOF-PROBE "):])
            r["seconds"] = seconds
            return r
    return _died(key, entry, _how(proc.returncode), _last_line(err), seconds)


def _how(returncode: int) -> str:
    return (f"killed by signal {-returncode}" if returncode < 0
            else f"exit status {returncode}")


def _last_line(text: str) -> str:
    return next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")


def _kill_group(proc) -> None:
    if not _killpg(proc.pid):
        proc.kill()


def _norm(name: str) -> str:
    """A distribution name as its *.dist-info folder spells it (PEP 503 normalised, '_')."""
    return "".join("_" if c in "-_." else c for c in name.lower())


def _installed() -> dict[str, str]:
    """{normalised name: version} of every distribution on sys.path, read from the names of its
    ``NAME-VERSION.dist-info`` / ``.egg-info`` folders (the wheel spec's naming): one listdir per
    sys.path entry, ~1 ms, where importlib.metadata took ~20 ms for the table's ~30 lookups. The
    first on sys.path wins, as for an import."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            for suffix in (".dist-info", ".egg-info"):
                if n.endswith(suffix):
                    name, _, ver = n[: -len(suffix)].partition("-")
                    found.setdefault(_norm(name), ver.split("-")[0])
    return found


def _module_present(name: str) -> bool:
    """Whether module ``name`` (dotted) is a package folder, a .py file or an extension module on
    sys.path, found without importing it or its parents."""
    *pkg, last = name.split(".")
    for entry in sys.path:
        d = os.path.join(entry or ".", *pkg)
        if os.path.isdir(os.path.join(d, last)) or os.path.isfile(os.path.join(d, last + ".py")):
            return True
        try:
            if any(f.startswith(last + ".") and f.endswith((".so", ".pyd")) for f in os.listdir(d)):
                return True
        except OSError:
            pass
    return False


def cache_key() -> str:
    """Python's version and the versions of torch, executorch, torchao and every export
    prerequisite (_installed; a module by its presence), the platform, the table, this file and
    the partitioner configuration (etproof.export.lower), and the SDK variables the table names."""
    installed = _installed()
    parts: dict = {"python": platform.python_version()}
    for dist in ("torch", "executorch", "torchao"):
        parts[dist] = installed.get(dist)
    table = load_table()
    for b in table.values():
        for dist in b["export_needs"]["pip"]:
            name = dist.split(" ")[0]
            parts[f"pip:{name}"] = installed.get(_norm(name))
        for mod in b["export_needs"]["modules"]:
            parts[f"module:{mod}"] = _module_present(mod)
    u = os.uname()  # not platform.platform(), which runs `uname -p` in a subprocess
    parts["platform"] = [u.sysname, u.release, u.machine]
    parts["table"] = table_hash()
    parts["probe"] = hashlib.sha256(Path(__file__).read_bytes()
                                    + Path(lower.__file__).read_bytes()).hexdigest()
    parts["env"] = {s["env"]: os.environ.get(s["env"]) for b in table.values()
                    for s in b["export_needs"]["sdk"] if s["env"]}
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
    direct = {k: _without_child(k, table[k]) for k in todo}
    answers = _probe_children([k for k in todo if direct[k] is None], timeout_s,
                              max(1, min(jobs, MAX_JOBS)), faults)
    for k in todo:
        r = direct[k] or answers[k]
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
        return _result(key, REFUSED, f"{what} (needs: {needs})", entry)

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
            return _result(key, REFUSED, f"the portable program carries delegates {delegates}",
                           entry)
        return _result(key, AVAILABLE, f"lowered a one-operation model ({name}) with no "
                       "partitioner; no delegate call, as expected", entry, delegates=[])
    if not calls or not delegates:
        return _result(key, REFUSED, f"the partitioner tagged nothing: lowering a one-operation "
                       f"model ({name}) left no delegate call in the program", entry,
                       delegates=delegates)
    if entry["runtime_ids"] and not set(delegates) & set(entry["runtime_ids"]):
        return _result(key, REFUSED, f"lowered to delegate(s) {delegates}, expected one of "
                       f"{entry['runtime_ids']}", entry, delegates=delegates)
    return _result(key, AVAILABLE, f"lowered a one-operation model ({name}): "
                   f"{len(calls)} delegate call(s) to {', '.join(delegates)}", entry,
                   delegates=delegates)


def _quiet_child() -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)


def _answer(key: str, model: str | None, fault: str | None) -> dict:
    """A child's whole work: the test faults, the probe, and which backend packages it imported."""
    _block_network()
    if fault == "hang":
        time.sleep(3600)
    if fault == "crash":
        os.abort()
    r = child_probe(key, model)
    r["backend_modules"] = sorted({m.split(".")[2] for m in sys.modules
                                   if m.startswith("executorch.backends.") and m.count(".") >= 2})
    return r


def _child_main(a) -> int:
    _quiet_child()
    r = _answer(a.child, a.model, a.fault)
    sys.stdout.flush()
    print("ETPROOF-PROBE " + json.dumps(r, sort_keys=True), flush=True)
    return 0


def _server_main(jobs: int) -> int:
    """The probe server: imports torch and ExecuTorch's exporter (never a backend's package: a
    test checks that a child that refuses without importing one lists no backend module), reads
    every request from stdin (JSON lines {"key", "model", "fault", "timeout_s", "env"}), forks a
    child per request, at most ``jobs`` at a time, and prints each answer as one
    ``ETPROOF-PROBE {json}`` line. A child past its time limit is killed with its process group;
    a child that dies is answered with the signal or exit status and its last stderr line."""
    import shutil
    import signal
    import tempfile

    _quiet_child()
    import torch  # noqa: F401 - the import every child shares
    from executorch.exir import to_edge_transform_and_lower  # noqa: F401

    pending = [json.loads(line) for line in sys.stdin if line.strip()]
    # pid -> (request, the child's answer file, when it started: time.monotonic())
    running: dict[int, tuple[dict, Path, float]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="etproof-probe-"))

    def stop(_sig, _frame):
        for pid in running:
            _killpg(pid)
        os._exit(1)

    signal.signal(signal.SIGTERM, stop)
    table = load_table()
    while pending or running:
        while pending and len(running) < jobs:
            req = pending.pop(0)
            out = scratch / f"{req['key']}.json"
            running[_fork_child(req, out, scratch / f"{req['key']}.log")] = (
                req, out, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for p, (req, _out, t0) in list(running.items()):
                if now - t0 > req["timeout_s"]:
                    _killpg(p)
                    os.waitpid(p, 0)
                    del running[p]
                    _print_answer(_timed_out(req["key"], table[req["key"]], req["timeout_s"], 0),
                                  t0)
            time.sleep(0.02)
            continue
        if pid not in running:
            continue
        req, out, t0 = running.pop(pid)
        _killpg(pid)  # whatever the child left running in its group
        _print_answer(_child_answer(req, out, status, scratch / f"{req['key']}.log",
                                    table[req["key"]]), t0)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _fork_child(req: dict, out: Path, log: Path) -> int:
    """Forks the child that answers ``req`` into ``out`` (JSON, renamed into place), its stdout
    and stderr into ``log``, in a process group of its own; returns its pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 70
        try:
            os.setpgid(0, 0)  # its own group: a timeout kills what it started, too
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.environ.update(req["env"])
            r = _answer(req["key"], req["model"], req["fault"])
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps(r, sort_keys=True))
            os.replace(tmp, out)
            code = 0
        except BaseException:  # noqa: BLE001 - said on its stderr, answered by the server
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def _child_answer(req: dict, out: Path, status: int, log: Path, entry: dict) -> dict:
    """The answer of a child that exited with wait ``status``: what it wrote into ``out``, else
    that it died (the signal or exit status and the last line of ``log``)."""
    try:
        return json.loads(out.read_text())
    except (OSError, ValueError):
        rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        try:
            last = _last_line(log.read_text(errors="replace"))
        except OSError:
            last = ""
        return _died(req["key"], entry, _how(rc), last, 0)


def _print_answer(r: dict, t0: float) -> None:
    """One ``ETPROOF-PROBE {json}`` line on stdout, with the seconds since ``t0``."""
    r["seconds"] = round(time.monotonic() - t0, 1)
    print("ETPROOF-PROBE " + json.dumps(r, sort_keys=True), flush=True)


def _killpg(pid: int) -> bool:
    """SIGKILL to process group ``pid``; False when there is none (or it is not ours)."""
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def main(argv) -> int:
    """The probe child's and server's command line (``python -m etproof.probe``, etproof.probe.__main__)."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--server", action="store_true")
    ap.add_argument("--jobs", type=int, default=MAX_JOBS)
    ap.add_argument("--model")
    ap.add_argument("--fault", choices=("hang", "crash"))
    a = ap.parse_args(argv)
    if a.server:
        return _server_main(max(1, a.jobs))
    if not a.child:
        ap.error("--child KEY or --server")
    return _child_main(a)

