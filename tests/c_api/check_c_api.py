#!/usr/bin/env python3
"""CTest driver for etproof's C ABI (cpp/c_api/etproof_c.h, libetproof_c.so; CMakeLists.txt,
tests c_api.exports_only_etproof and c_api.ctypes). Python 3 stdlib + NumPy.

  check_c_api.py exports --lib LIB --header HEADER
      `nm -D --defined-only LIB` lists exactly the functions HEADER declares (every one exported,
      nothing else: no C++ symbol of etproof, ExecuTorch or the C++ library).

  check_c_api.py ctypes --lib LIB --cli ETPROOF --tiny BUNDLE --demo BUNDLE --photos DIR
                 [--not-linked BUNDLE] [--sequence BUNDLE] [--scratch DIR] [--skip REASON]
      Loads LIB with ctypes and checks, through the C ABI alone:
        - the versions: etproof_abi_version() == the header's, etproof_version() == the CLI's;
        - both XNNPACK bundles (--tiny: tiny-xnnpack-fp32, --demo: efficientnet_lite0-xnnpack-fp32)
          open, hold XnnpackBackend in their loaded program, and list their methods, inputs and
          outputs (name, dtype, shape, bytes) exactly as their manifest does;
        - every golden case's inputs (the manifest's .npy files) run through etproof_run, with
          caller-owned NumPy buffers: outputs of the manifest's dtype and shape, finite, equal to
          `ETPROOF run BUNDLE --input …` bit for bit (the same program through the same runtime),
          and within the bundle's float32 tolerance of the golden;
        - etproof_gate on each bundle: passed, every case agreed, the JSON report parses and names
          the bundle;
        - the top-1 class of the EfficientNet logits of each demo photo's golden case equals what
          `ETPROOF classify PHOTO` reports (index and label), read back via etproof_label;
        - typed errors, never a crash, each with kind, message and remedy: a missing path, NULL
          path, a bundle whose delegate is not linked (--not-linked: the Core ML bundle), a
          tampered .pte (a copy in --scratch), wrong input size, wrong dtype, unknown dtype value,
          wrong shape, wrong input count, short output buffer (and the size it needs reported),
          wrong output dtype, unknown method, unknown property, index past the end, NULL handles
          and NULL out-pointers in every function that takes one;
        - the last error is per thread; a handle shared by 4 threads running at once gives each
          the same outputs (runs serialized by the handle's lock);
        - etproof_gate on a bundle whose golden cases are sequences of calls (--sequence:
          state/tinyllama-xnnpack-fp32): passed, and its JSON report names every step CASE/stepK
          in the manifest's step order, each agreed, twice on one handle (each sequence from the
          initial state).
Exit 0 when all hold, 1 when not, 77 (CTest SKIP_RETURN_CODE), with the reason, when a bundle,
the photos or nm is missing, or --skip is given (a sanitizer build).
"""
import argparse
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np

SKIP = 77
MAX_RANK = 16
DTYPES = ["float32", "float16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"]
NUMPY = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "int8": np.int8,
         "uint8": np.uint8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
         "bool": np.bool_}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)
    return cond


def skip(why):
    print(f"skipped: {why}")
    sys.exit(SKIP)


# ---- exports ---------------------------------------------------------------------------------

def declared_functions(header):
    text = open(header, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return set(re.findall(r"ETPROOF_C_API[^;(]*?\b(etproof_\w+)\s*\(", text))


def exports(args):
    nm = shutil.which("nm")
    if not nm:
        skip("no nm (binutils) on this machine")
    out = subprocess.run([nm, "-D", "--defined-only", args.lib], capture_output=True, text=True,
                         check=True).stdout
    symbols = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            symbols[parts[-1]] = parts[-2]
    declared = declared_functions(args.header)
    print(f"{args.lib}: {len(symbols)} dynamic symbol(s) defined; {args.header} declares "
          f"{len(declared)} function(s)")
    for name in sorted(symbols):
        print(f"  {symbols[name]} {name}")
    check(len(declared) >= 20, f"only {len(declared)} functions parsed from the header")
    extra = sorted(set(symbols) - declared)
    missing = sorted(declared - set(symbols))
    check(not extra, f"exported but not declared in etproof_c.h: {extra[:20]}")
    check(not missing, f"declared in etproof_c.h but not exported: {missing}")
    check(all(t == "T" for t in symbols.values()),
          f"every export is a function (T): {sorted(set(symbols.values()))}")
    return 0 if not failures else 1


# ---- ctypes bindings -------------------------------------------------------------------------

class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("nbytes", ctypes.c_size_t)]


class Input(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("rank", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p),
                ("nbytes", ctypes.c_size_t)]


class Output(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("data", ctypes.c_void_p), ("capacity", ctypes.c_size_t),
                ("nbytes", ctypes.c_size_t), ("rank", ctypes.c_size_t),
                ("shape", ctypes.c_int64 * MAX_RANK)]


class GateResult(ctypes.Structure):
    _fields_ = [("passed", ctypes.c_int32), ("cases", ctypes.c_size_t),
                ("agreed", ctypes.c_size_t), ("drifted", ctypes.c_size_t),
                ("other", ctypes.c_size_t), ("report_text", ctypes.c_char_p),
                ("report_json", ctypes.c_char_p)]


def bind(path):
    lib = ctypes.CDLL(path)
    P, S, I, SZ = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t
    sigs = {
        "etproof_version": (S, []), "etproof_abi_version": (I, []),
        "etproof_last_error_kind": (S, []), "etproof_last_error_message": (S, []),
        "etproof_last_error_remedy": (S, []), "etproof_last_error_executorch_code": (ctypes.c_uint32, []),
        "etproof_clear_error": (None, []),
        "etproof_dtype_name": (S, [ctypes.c_int32]), "etproof_dtype_size": (SZ, [ctypes.c_int32]),
        "etproof_open": (P, [S]), "etproof_close": (None, [P]),
        "etproof_model_property": (S, [P, S]),
        "etproof_method_count": (I, [P, ctypes.POINTER(SZ)]), "etproof_method_name": (S, [P, SZ]),
        "etproof_input_count": (I, [P, S, ctypes.POINTER(SZ)]),
        "etproof_output_count": (I, [P, S, ctypes.POINTER(SZ)]),
        "etproof_input_info": (I, [P, S, SZ, ctypes.POINTER(TensorInfo)]),
        "etproof_output_info": (I, [P, S, SZ, ctypes.POINTER(TensorInfo)]),
        "etproof_label_count": (I, [P, ctypes.POINTER(SZ)]), "etproof_label": (S, [P, SZ]),
        "etproof_run": (I, [P, S, ctypes.POINTER(Input), SZ, ctypes.POINTER(Output), SZ]),
        "etproof_gate": (I, [P, ctypes.POINTER(GateResult)]),
    }
    for name, (res, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = argtypes
    return lib


def last_error(lib):
    return (lib.etproof_last_error_kind().decode(), lib.etproof_last_error_message().decode(),
            lib.etproof_last_error_remedy().decode())


def expect_error(lib, failed, kind, what):
    """The call failed with `kind`, a message and a remedy; then clears the error."""
    k, message, remedy = last_error(lib)
    ok = check(failed, f"{what}: succeeded, expected error [{kind}]")
    ok &= check(k == kind, f"{what}: error [{k}] {message}, expected [{kind}]")
    ok &= check(bool(message) and bool(remedy), f"{what}: empty message or remedy ({message!r}, {remedy!r})")
    print(f"  {what:<44} -> [{k}] {message[:110]}")
    lib.etproof_clear_error()
    return ok


class Model:
    """A handle and what the C ABI says of it."""

    def __init__(self, lib, path):
        self.lib = lib
        self.h = lib.etproof_open(path.encode())
        if not self.h:
            raise RuntimeError(f"open {path}: [%s] %s; remedy: %s" % last_error(lib))

    def close(self):
        self.lib.etproof_close(self.h)
        self.h = None

    def prop(self, key):
        v = self.lib.etproof_model_property(self.h, key.encode())
        return None if v is None else v.decode()

    def methods(self):
        n = ctypes.c_size_t()
        assert self.lib.etproof_method_count(self.h, ctypes.byref(n)) == 0
        return [self.lib.etproof_method_name(self.h, i).decode() for i in range(n.value)]

    def tensors(self, method, outputs):
        count = self.lib.etproof_output_count if outputs else self.lib.etproof_input_count
        info = self.lib.etproof_output_info if outputs else self.lib.etproof_input_info
        n = ctypes.c_size_t()
        m = method.encode() if method else None
        assert count(self.h, m, ctypes.byref(n)) == 0, last_error(self.lib)
        out = []
        for i in range(n.value):
            t = TensorInfo()
            assert info(self.h, m, i, ctypes.byref(t)) == 0, last_error(self.lib)
            out.append({"name": t.name.decode(), "dtype": DTYPES[t.dtype],
                        "shape": [t.shape[k] for k in range(t.rank)], "nbytes": t.nbytes})
        return out

    def run(self, method, arrays, out_specs, capacities=None, out_dtypes=None):
        """Runs `method` on NumPy arrays (kept alive here); returns (rc, outputs, Output structs)."""
        arrays = [np.ascontiguousarray(a) for a in arrays]
        shapes = [(ctypes.c_int64 * max(1, a.ndim))(*a.shape) for a in arrays]
        ins = (Input * max(1, len(arrays)))()
        for i, a in enumerate(arrays):
            ins[i].dtype = DTYPES.index(a.dtype.name if a.dtype != np.bool_ else "bool")
            ins[i].rank = a.ndim
            ins[i].shape = ctypes.cast(shapes[i], ctypes.POINTER(ctypes.c_int64))
            ins[i].data = a.ctypes.data
            ins[i].nbytes = a.nbytes
        bufs = []
        outs = (Output * max(1, len(out_specs)))()
        for i, spec in enumerate(out_specs):
            dtype = (out_dtypes or {}).get(i, spec["dtype"])
            cap = spec["nbytes"] if capacities is None or i not in capacities else capacities[i]
            buf = np.zeros(max(1, cap // max(1, np.dtype(NUMPY[dtype]).itemsize)), dtype=NUMPY[dtype])
            bufs.append(buf)
            outs[i].dtype = DTYPES.index(dtype)
            outs[i].data = buf.ctypes.data
            outs[i].capacity = cap
        rc = self.lib.etproof_run(self.h, method.encode() if method else None, ins, len(arrays),
                                  outs, len(out_specs))
        results = []
        if rc == 0:
            for i, spec in enumerate(out_specs):
                shape = [outs[i].shape[k] for k in range(outs[i].rank)]
                n = outs[i].nbytes // bufs[i].itemsize
                results.append(bufs[i][:n].reshape(shape).copy())
        return rc, results, outs

    def gate(self):
        r = GateResult()
        rc = self.lib.etproof_gate(self.h, ctypes.byref(r))
        return rc, r


def manifest_of(bundle):
    name = os.path.basename(os.path.normpath(bundle))
    with open(os.path.join(bundle, f"{name}.etproof.json"), encoding="utf-8") as f:
        return name, json.load(f)


def method_specs(manifest):
    if "methods" in manifest:
        return {m["name"]: m for m in manifest["methods"]}
    return {"forward": manifest}


def golden_cases(manifest):
    if "methods" in manifest:
        return [(m["name"], g) for m in manifest["methods"] for g in m["goldens"]]
    return [("forward", g) for g in manifest["goldens"]]


# ---- the checks ------------------------------------------------------------------------------

def check_bundle(lib, cli, bundle, scratch):
    """Describe, run every golden, compare with `etproof run` and the golden, gate."""
    name, manifest = manifest_of(bundle)
    print(f"== {name}")
    m = Model(lib, bundle)
    try:
        delegates = m.prop("delegates")
        print(f"  delegates in the program: {delegates}")
        check("XnnpackBackend" in delegates.split(","), f"{name}: no XnnpackBackend in {delegates!r}")
        for key, field in (("name", "name"), ("backend", "backend"), ("recipe", "recipe"),
                           ("precision", "precision"), ("model", "model")):
            check(m.prop(key) == manifest[field], f"{name}: property {key} {m.prop(key)!r} != {manifest[field]!r}")
        check(m.prop("sha256") == manifest["artifact"]["sha256"], f"{name}: sha256 property")
        specs = method_specs(manifest)
        check(m.methods() == list(specs), f"{name}: methods {m.methods()} != {list(specs)}")
        described = {}
        for meth, spec in specs.items():
            ins, outs = m.tensors(meth, False), m.tensors(meth, True)
            described[meth] = (ins, outs)
            for got, want in list(zip(ins, spec["inputs"])) + list(zip(outs, spec["outputs"])):
                check(got["name"] == want["name"] and got["dtype"] == want["dtype"]
                      and got["shape"] == want["shape"], f"{name}: {got} != manifest {want}")
                if -1 not in want["shape"]:
                    nbytes = int(np.prod(want["shape"], dtype=np.int64)) * np.dtype(NUMPY[want["dtype"]]).itemsize
                    check(got["nbytes"] == nbytes, f"{name}: {got['name']} nbytes {got['nbytes']} != {nbytes}")
            check(len(ins) == len(spec["inputs"]) and len(outs) == len(spec["outputs"]),
                  f"{name}: {meth} lists {len(ins)} inputs / {len(outs)} outputs")
            for t in ins:
                print(f"  {meth} input  {t['name']} {t['dtype']} {t['shape']} ({t['nbytes']} bytes)")
            for t in outs:
                print(f"  {meth} output {t['name']} {t['dtype']} {t['shape']} ({t['nbytes']} bytes)")
        if manifest.get("labels"):
            n = ctypes.c_size_t()
            check(lib.etproof_label_count(m.h, ctypes.byref(n)) == 0
                  and n.value == len(manifest["labels"]["names"]), f"{name}: label count")
            check(m.prop("labels_output") == manifest["labels"]["output"], f"{name}: labels_output")

        goldens_dir = os.path.join(bundle, f"{name}.goldens")
        per_case = {}
        for meth, case in golden_cases(manifest):
            ins, outs = described[meth]
            arrays = [np.load(os.path.join(goldens_dir, case["inputs"][t["name"]])) for t in ins]
            rc, results, _ = m.run(meth, arrays, outs)
            if not check(rc == 0, f"{name}/{case['id']}: run: [%s] %s" % last_error(lib)[:2]):
                continue
            per_case[case["id"]] = results
            # `etproof run` on the same inputs: the same program through the same runtime.
            cli_out = os.path.join(scratch, f"run-{name}-{case['id']}")
            shutil.rmtree(cli_out, ignore_errors=True)
            cmd = [cli, "run", bundle, "--out", cli_out] + [
                a for t in ins for a in ("--input", f"{t['name']}={os.path.join(goldens_dir, case['inputs'][t['name']])}")]
            if len(specs) > 1:
                cmd += ["--method", meth]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            check(proc.returncode == 0, f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr}")
            worst = 0.0
            for t, got in zip(outs, results):
                check(got.dtype == NUMPY[t["dtype"]] and list(got.shape) == t["shape"],
                      f"{name}/{case['id']}: output {t['name']} {got.dtype} {list(got.shape)}")
                if got.dtype.kind == "f":
                    check(np.isfinite(got).all(), f"{name}/{case['id']}: {t['name']} not finite")
                fname = f"{meth}.{t['name']}.npy" if len(specs) > 1 else f"{t['name']}.npy"
                if proc.returncode == 0:
                    ref = np.load(os.path.join(cli_out, fname))
                    check(ref.dtype == got.dtype and np.array_equal(ref, got),
                          f"{name}/{case['id']}: {t['name']} differs from `etproof run` "
                          f"(max |diff| {np.max(np.abs(ref.astype(np.float64) - got)):.3g})")
                golden = np.load(os.path.join(goldens_dir, case["outputs"][t["name"]]))
                d = np.abs(golden.astype(np.float64) - got.astype(np.float64))
                worst = max(worst, float(d.max()))
                # float32 tolerance: the gate's own judgement is etproof_gate's; this only
                # guards against a wrong buffer (a shifted or garbage output).
                scale = float(np.max(np.abs(golden))) or 1.0
                check(float(d.max()) <= 1e-3 * scale + 1e-5,
                      f"{name}/{case['id']}: {t['name']} max |output - golden| {d.max():.3g} (scale {scale:.3g})")
            print(f"  golden {case['id']:<10} ran: equal to `etproof run`, max |output - golden| {worst:.3g}")

        rc, r = m.gate()
        check(rc == 0, f"{name}: gate: [%s] %s" % last_error(lib)[:2])
        if rc == 0:
            print(f"  gate: passed {r.passed}, {r.cases} case(s): {r.agreed} agreed, {r.drifted} "
                  f"drifted, {r.other} other")
            check(r.passed == 1 and r.cases == len(golden_cases(manifest)) and r.agreed == r.cases,
                  f"{name}: the gate did not pass:\n{r.report_text.decode()}")
            report = json.loads(r.report_json.decode())
            check(report.get("bundle") == name and report.get("passed") is True,
                  f"{name}: JSON report: bundle {report.get('bundle')!r}, passed {report.get('passed')!r}")
            check(name in r.report_text.decode(), f"{name}: the text report does not name the bundle")
        return m, per_case
    except Exception:
        m.close()
        raise


def check_top1(lib, cli, model, per_case, demo, photos):
    """The demo photos' golden cases: top-1 through the C ABI == `etproof classify PHOTO`."""
    print("== top-1 against `etproof classify`")
    compared = 0
    bundles_dir = os.path.dirname(os.path.normpath(demo))
    for case_id, outputs in sorted(per_case.items()):
        photo = next((os.path.join(photos, f"{case_id}.{ext}") for ext in ("png", "jpg", "jpeg")
                      if os.path.isfile(os.path.join(photos, f"{case_id}.{ext}"))), None)
        if photo is None:
            continue
        top = int(np.argmax(outputs[0].reshape(-1)))
        label = lib.etproof_label(model.h, top).decode()
        proc = subprocess.run([cli, "classify", photo, "--bundles", bundles_dir, "--backend",
                               model.prop("backend"), "--recipe", model.prop("recipe"), "--top", "1"],
                              capture_output=True, text=True)
        if not check(proc.returncode == 0, f"classify {photo}: exit {proc.returncode}: {proc.stderr}"):
            continue
        ranked = [re.match(r"^\s*[0-9.]+\s+(.*)\s+\((\d+)\)\s*$", l) for l in proc.stdout.splitlines()]
        ranked = [r for r in ranked if r]
        if not check(ranked, f"classify {photo}: no ranked line in {proc.stdout!r}"):
            continue
        cli_label, cli_index = ranked[0].group(1).strip(), int(ranked[0].group(2))
        same = cli_index == top and cli_label == label
        print(f"  {case_id:<10} C ABI {top} ({label}), classify {cli_index} ({cli_label}): "
              f"{'same' if same else 'DIFFERENT'}")
        check(same, f"{case_id}: top-1 {top} ({label}) through the C ABI, {cli_index} ({cli_label}) by classify")
        compared += 1
    check(compared >= 1, "no demo golden case had a photo to classify")
    return compared


def check_errors(lib, tiny_model, tiny, not_linked, scratch):
    print("== typed errors")
    m = tiny_model
    ins, outs = m.tensors(None, False), m.tensors(None, True)
    x = np.zeros(ins[0]["shape"], dtype=NUMPY[ins[0]["dtype"]])

    check(lib.etproof_last_error_kind() == b"", "an error left over before the error checks")
    expect_error(lib, lib.etproof_open(b"/nonexistent/etproof-c-api") is None, "io",
                 "open(missing path)")
    expect_error(lib, lib.etproof_open(None) is None, "invalid-argument", "open(NULL)")
    if not_linked and os.path.isdir(not_linked):
        expect_error(lib, lib.etproof_open(not_linked.encode()) is None, "backend-not-linked",
                     f"open({os.path.basename(not_linked)})")
    # A tampered program: a copy of the tiny bundle with one byte of its .pte flipped.
    tampered = os.path.join(scratch, "tampered")
    shutil.rmtree(tampered, ignore_errors=True)
    shutil.copytree(tiny, tampered)
    name = os.path.basename(os.path.normpath(tiny))
    pte = os.path.join(tampered, f"{name}.pte")
    data = bytearray(open(pte, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(pte, "wb").write(bytes(data))
    expect_error(lib, lib.etproof_open(tampered.encode()) is None, "artifact-mismatch",
                 "open(tampered .pte)")

    rc, _, _ = m.run(None, [x[..., :-1]], outs)  # one element short along the last axis
    expect_error(lib, rc != 0, "shape-mismatch", "run(wrong shape)")
    rc, _, _ = m.run(None, [x.astype(np.float64)], outs)
    expect_error(lib, rc != 0, "dtype-mismatch", "run(float64 input)")
    rc, _, _ = m.run(None, [x.astype(np.int32)], outs)
    expect_error(lib, rc != 0, "dtype-mismatch", "run(int32 input, same size)")
    # A buffer whose size disagrees with its own shape and dtype.
    shape = (ctypes.c_int64 * len(x.shape))(*x.shape)
    one = (Input * 1)()
    one[0].dtype, one[0].rank, one[0].shape = 0, x.ndim, ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    one[0].data, one[0].nbytes = x.ctypes.data, x.nbytes - 4
    buf = np.zeros(outs[0]["nbytes"] // 4, dtype=np.float32)
    o = (Output * 1)()
    o[0].dtype, o[0].data, o[0].capacity = 0, buf.ctypes.data, buf.nbytes
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, o, 1) != 0, "invalid-argument",
                 "run(input nbytes 4 short)")
    one[0].nbytes = x.nbytes
    one[0].dtype = 99
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, o, 1) != 0, "dtype-unsupported",
                 "run(dtype 99)")
    one[0].dtype = 0
    one[0].data = None
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, o, 1) != 0, "invalid-argument",
                 "run(input data NULL)")
    one[0].data = x.ctypes.data
    one[0].shape = None
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, o, 1) != 0, "invalid-argument",
                 "run(input shape NULL)")
    one[0].shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    neg = (ctypes.c_int64 * len(x.shape))(*([-1] + list(x.shape[1:])))
    one[0].shape = ctypes.cast(neg, ctypes.POINTER(ctypes.c_int64))
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, o, 1) != 0, "invalid-argument",
                 "run(negative dimension)")
    one[0].shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    expect_error(lib, lib.etproof_run(m.h, None, one, 2, o, 1) != 0, "invalid-argument",
                 "run(2 inputs for 1)")
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, o, 0) != 0, "invalid-argument",
                 "run(0 output buffers)")
    expect_error(lib, lib.etproof_run(m.h, None, None, 1, o, 1) != 0, "invalid-argument",
                 "run(inputs NULL)")
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, None, 1) != 0, "invalid-argument",
                 "run(outputs NULL)")
    expect_error(lib, lib.etproof_run(m.h, b"no_such_method", one, 1, o, 1) != 0,
                 "invalid-argument", "run(unknown method)")
    expect_error(lib, lib.etproof_run(None, None, one, 1, o, 1) != 0, "invalid-argument",
                 "run(NULL model)")
    # A short output buffer: refused before running, nothing written, the size needed reported.
    sentinel = np.full(buf.shape, 7.0, dtype=np.float32)
    o[0].data, o[0].capacity, o[0].nbytes = sentinel.ctypes.data, sentinel.nbytes - 4, 0
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, o, 1) != 0, "invalid-argument",
                 "run(output buffer 4 bytes short)")
    check(o[0].nbytes == outs[0]["nbytes"], f"short output: nbytes {o[0].nbytes}, needed {outs[0]['nbytes']}")
    check(np.all(sentinel == 7.0), "short output: the buffer was written")
    o[0].data, o[0].capacity = buf.ctypes.data, buf.nbytes
    o[0].dtype = DTYPES.index("int32")
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, o, 1) != 0, "dtype-mismatch",
                 "run(int32 output buffer)")
    o[0].dtype = 0
    o[0].data = None
    expect_error(lib, lib.etproof_run(m.h, None, one, 1, o, 1) != 0, "invalid-argument",
                 "run(output data NULL)")
    o[0].data = buf.ctypes.data
    check(lib.etproof_run(m.h, None, one, 1, o, 1) == 0,
          "run after the errors: [%s] %s" % last_error(lib)[:2])

    n = ctypes.c_size_t()
    info = TensorInfo()
    g = GateResult()
    expect_error(lib, lib.etproof_gate(None, ctypes.byref(g)) != 0, "invalid-argument", "gate(NULL model)")
    expect_error(lib, lib.etproof_gate(m.h, None) != 0, "invalid-argument", "gate(NULL result)")
    expect_error(lib, lib.etproof_model_property(m.h, b"colour") is None, "invalid-argument",
                 "property(unknown key)")
    expect_error(lib, lib.etproof_model_property(None, b"name") is None, "invalid-argument",
                 "property(NULL model)")
    expect_error(lib, lib.etproof_model_property(m.h, None) is None, "invalid-argument",
                 "property(NULL key)")
    expect_error(lib, lib.etproof_method_count(None, ctypes.byref(n)) != 0, "invalid-argument",
                 "method_count(NULL model)")
    expect_error(lib, lib.etproof_method_count(m.h, None) != 0, "invalid-argument",
                 "method_count(NULL count)")
    expect_error(lib, lib.etproof_method_name(m.h, 3) is None, "invalid-argument", "method_name(3)")
    expect_error(lib, lib.etproof_method_name(None, 0) is None, "invalid-argument",
                 "method_name(NULL model)")
    for fn in ("etproof_input_count", "etproof_output_count"):
        expect_error(lib, getattr(lib, fn)(None, None, ctypes.byref(n)) != 0, "invalid-argument",
                     f"{fn[8:]}(NULL model)")
        expect_error(lib, getattr(lib, fn)(m.h, None, None) != 0, "invalid-argument",
                     f"{fn[8:]}(NULL count)")
        expect_error(lib, getattr(lib, fn)(m.h, b"nope", ctypes.byref(n)) != 0, "invalid-argument",
                     f"{fn[8:]}(unknown method)")
    for fn in ("etproof_input_info", "etproof_output_info"):
        expect_error(lib, getattr(lib, fn)(m.h, None, 9, ctypes.byref(info)) != 0,
                     "invalid-argument", f"{fn[8:]}(index 9)")
        expect_error(lib, getattr(lib, fn)(None, None, 0, ctypes.byref(info)) != 0,
                     "invalid-argument", f"{fn[8:]}(NULL model)")
        expect_error(lib, getattr(lib, fn)(m.h, None, 0, None) != 0, "invalid-argument",
                     f"{fn[8:]}(NULL info)")
    expect_error(lib, lib.etproof_label_count(None, ctypes.byref(n)) != 0, "invalid-argument",
                 "label_count(NULL model)")
    expect_error(lib, lib.etproof_label(m.h, 0) is None, "invalid-argument",
                 "label(0) of a bundle without labels")
    expect_error(lib, lib.etproof_dtype_name(42) is None, "dtype-unsupported", "dtype_name(42)")
    expect_error(lib, lib.etproof_dtype_size(-1) == 0, "dtype-unsupported", "dtype_size(-1)")
    lib.etproof_close(None)  # a no-op
    check(lib.etproof_last_error_kind() == b"", "close(NULL) set an error")

    # The last error is per thread: a failure on another thread is not seen here.
    lib.etproof_open(b"/nonexistent/main-thread")
    seen = {}

    def other():
        lib.etproof_open(None)
        seen["kind"] = lib.etproof_last_error_kind().decode()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    kind, message, _ = last_error(lib)
    check(seen.get("kind") == "invalid-argument", f"the other thread's error: {seen}")
    check(kind == "io" and "main-thread" in message,
          f"this thread's error after another thread failed: [{kind}] {message}")
    print(f"  last error per thread: here [{kind}], on the other thread [{seen.get('kind')}]")
    lib.etproof_clear_error()
    check(last_error(lib) == ("", "", ""), "etproof_clear_error left an error")


def check_threads(lib, model):
    """One handle, 4 threads running at once: every run succeeds with the same outputs."""
    print("== one handle, 4 threads")
    ins, outs = model.tensors(None, False), model.tensors(None, True)
    rng = np.random.default_rng(15)
    x = rng.standard_normal(ins[0]["shape"]).astype(np.float32)
    rc, expected, _ = model.run(None, [x], outs)
    check(rc == 0, "threads: the first run failed")
    results, errors = [], []

    def worker():
        for _ in range(20):
            rc, got, _ = model.run(None, [x], outs)
            if rc != 0:
                errors.append(last_error(lib))
            else:
                results.append(all(np.array_equal(a, b) for a, b in zip(got, expected)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, f"threads: {len(errors)} run(s) failed: {errors[:2]}")
    check(len(results) == 80 and all(results), f"threads: {results.count(False)} run(s) differed")
    print(f"  {len(results)} runs on one handle from 4 threads: "
          f"{'all equal' if all(results) else 'DIFFERENT'}")


def check_sequence(lib, bundle):
    """etproof_gate on a bundle of sequence cases: every step agreed and named CASE/stepK, in
    step order, on two gates through one handle."""
    _, manifest = manifest_of(bundle)
    steps = {}
    for _, g in golden_cases(manifest):
        steps.setdefault(g["sequence"]["case"], []).append(g["sequence"]["step"])
    want = [f"{case}/step{k}" for case, ks in steps.items() for k in sorted(ks)]
    model = Model(lib, bundle)
    try:
        for attempt in (1, 2):
            rc, r = model.gate()
            check(rc == 0 and r.passed == 1, f"gate #{attempt} on {bundle}: rc {rc}, passed {r.passed}")
            doc = json.loads(r.report_json.decode())
            got = [c["case"] for c in doc["cases"]]
            check(got == want, f"gate #{attempt}: cases {got}, expected {want}")
            check(all(c["status"] == "agreed" for c in doc["cases"]), f"gate #{attempt}: not all agreed")
    finally:
        model.close()


def ctypes_main(args):
    if args.skip:
        skip(args.skip)
    for what, path in (("test bundle", args.tiny), ("demo bundle", args.demo), ("photos", args.photos)):
        if not os.path.isdir(path):
            skip(f"no {what} at {path} (./setup.sh exports the demo; python -m etproof "
                 f"test-bundles --out build/test-bundles the test bundles)")
    if not os.path.isfile(args.lib):
        print(f"error: no library at {args.lib}", file=sys.stderr)
        return 1
    lib = bind(args.lib)
    print(f"{args.lib}: etproof {lib.etproof_version().decode()}, C ABI {lib.etproof_abi_version()}")
    header_abi = int(re.search(r"#define ETPROOF_C_ABI_VERSION (\d+)",
                               open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", "..", "cpp", "c_api", "etproof_c.h")).read()).group(1))
    check(lib.etproof_abi_version() == header_abi, f"ABI {lib.etproof_abi_version()} != header {header_abi}")
    cli_version = subprocess.run([args.cli, "--version"], capture_output=True, text=True).stdout
    check(lib.etproof_version().decode() in cli_version,
          f"etproof_version() {lib.etproof_version()!r} not in `etproof --version`: {cli_version!r}")
    check([lib.etproof_dtype_name(i).decode() for i in range(len(DTYPES))] == DTYPES, "dtype names")
    check([lib.etproof_dtype_size(i) for i in range(len(DTYPES))] == [4, 2, 8, 1, 1, 2, 4, 8, 1],
          "dtype sizes")

    os.makedirs(args.scratch, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="c-api-", dir=args.scratch)
    try:
        tiny, _ = check_bundle(lib, args.cli, args.tiny, scratch)
        demo, per_case = check_bundle(lib, args.cli, args.demo, scratch)
        check_top1(lib, args.cli, demo, per_case, args.demo, args.photos)
        check_errors(lib, tiny, args.tiny, args.not_linked, scratch)
        check_threads(lib, tiny)
        if args.sequence:
            check_sequence(lib, args.sequence)
        tiny.close()
        demo.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("c_api ctypes: all checks held")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    e = sub.add_parser("exports")
    e.add_argument("--lib", required=True)
    e.add_argument("--header", required=True)
    c = sub.add_parser("ctypes")
    c.add_argument("--lib", required=True)
    c.add_argument("--cli", required=True)
    c.add_argument("--tiny", required=True)
    c.add_argument("--demo", required=True)
    c.add_argument("--photos", required=True)
    c.add_argument("--not-linked", default="")
    c.add_argument("--sequence", default="")
    c.add_argument("--scratch", default=tempfile.gettempdir())
    c.add_argument("--skip", default="")
    args = ap.parse_args()
    return exports(args) if args.mode == "exports" else ctypes_main(args)


if __name__ == "__main__":
    sys.exit(main())
