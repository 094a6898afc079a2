#!/usr/bin/env python3
"""CTest driver for the generated C++ API (CMakeLists.txt, tests gen.* and app.*). Python 3 stdlib.

Each mode builds a CMake project against the installed package (PREFIX, consumer.install's) as a
user would, with the given generator and compiler:

  check_gen.py compile-checks ...   `etproof gen` (the installed bin/etproof) on the tiny and encdec
                                    bundles, then configures tests/gen/compile_checks: its
                                    try_compile cases must compile (ok_*) or not (fail_*)
  check_gen.py api ...              builds tests/gen/api (etproof_add_model on three bundles) and
                                    runs its GoogleTest
  check_gen.py app ...              builds examples/app on the demo's XNNPACK bundle; on every demo
                                    photo its output must equal `etproof classify`'s byte for byte,
                                    and a copy of its directory alone (the venv's libraries not on
                                    any path) must give the same

Exit 0 when it behaved as expected, 1 when not, 77 (CTest SKIP_RETURN_CODE) when a bundle it
needs has not been exported (./test.sh exports them).
"""
import argparse
import os
import shutil
import subprocess
import sys

SKIP = 77
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    print(p.stdout, flush=True)
    return p


def need(*paths):
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        print("SKIP: not exported: " + ", ".join(missing) + " (run ./test.sh, which exports them)")
        sys.exit(SKIP)


def configure(a, source, build, defs):
    cmd = [a.cmake, "-S", source, "-B", build, "-G", a.generator,
           f"-DCMAKE_MAKE_PROGRAM={a.make}", f"-DCMAKE_PREFIX_PATH={a.prefix}",
           f"-DCMAKE_CXX_COMPILER={a.cxx}", f"-DCMAKE_BUILD_TYPE={a.build_type}"]
    return run(cmd + [f"-D{k}={v}" for k, v in defs.items()])


def build(a, build_dir):
    return run([a.cmake, "--build", build_dir, "-j2"])


def compile_checks(a):
    need(a.tiny, a.encdec)
    gen = os.path.join(a.scratch, "gen")
    shutil.rmtree(a.scratch, ignore_errors=True)
    cli = os.path.join(a.prefix, "bin", "etproof")
    for cmd in ([cli, "gen", a.tiny, "--out", gen, "--no-namespace"],
                [cli, "gen", a.encdec, "--out", gen]):
        if run(cmd).returncode != 0:
            return 1
    p = configure(a, os.path.join(SRC, "tests", "gen", "compile_checks"),
                  os.path.join(a.scratch, "build"), {"GEN_DIR": gen})
    fails = p.stdout.count("does not compile, as it must")
    oks = p.stdout.count("compiles, as it must")
    if p.returncode != 0 or fails < 6 or oks < 1:
        print(f"FAIL: configure rc {p.returncode}; {fails} fail_ cases refused, {oks} ok_ compiled")
        return 1
    print(f"ok: {fails} wrong calls do not compile, {oks} right one compiles")
    return 0


def api(a):
    need(a.tiny, a.tiny_portable, a.encdec, a.efficientnet, a.photos)
    b = os.path.join(a.scratch, "build")
    if configure(a, os.path.join(SRC, "tests", "gen", "api"), b,
                 {"TINY": a.tiny, "TINY_PORTABLE": a.tiny_portable, "ENCDEC": a.encdec,
                  "EFFICIENTNET": a.efficientnet, "PHOTOS": a.photos}).returncode != 0:
        return 1
    if build(a, b).returncode != 0:
        return 1
    return run([os.path.join(b, "generated_api_test")]).returncode


def app(a):
    need(a.efficientnet, a.photos, a.cli)
    b = os.path.join(a.scratch, "build")
    if configure(a, os.path.join(SRC, "examples", "app"), b,
                 {"BUNDLE": a.efficientnet}).returncode != 0:
        return 1
    if build(a, b).returncode != 0:
        return 1
    # The built directory alone: the binary, ExecuTorch's libraries (etproof_copy_runtime) and
    # the bundle (etproof_add_model), copied where nothing else is.
    deployed = os.path.join(a.scratch, "deployed")
    shutil.rmtree(deployed, ignore_errors=True)
    os.makedirs(deployed)
    for name in os.listdir(b):
        p = os.path.join(b, name)
        if name == "classify" or ".so" in name or name.endswith(".dylib"):
            shutil.copy2(p, deployed)
    shutil.copytree(os.path.join(b, "etproof-bundles"), os.path.join(deployed, "etproof-bundles"))
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    bundles = os.path.dirname(a.efficientnet)
    manifest = [f for f in os.listdir(a.efficientnet) if f.endswith(".etproof.json")][0]
    name = manifest[: -len(".etproof.json")]
    backend, recipe = name.split("-", 2)[1], name.split("-", 2)[2]
    photos = sorted(os.listdir(a.photos))
    bad = 0
    for photo in photos:
        path = os.path.join(a.photos, photo)
        want = run([a.cli, "classify", path, "--backend", backend, "--recipe", recipe,
                    "--bundles", bundles])
        got = run([os.path.join(b, "classify"), path])
        alone = run([os.path.join(deployed, "classify"), path], env=env)
        for label, p in (("built", got), ("deployed", alone)):
            if p.returncode != 0 or p.stdout != want.stdout:
                print(f"FAIL: {photo}: the {label} app's output differs from etproof classify's")
                bad += 1
    if want.returncode != 0:
        return 1
    print(f"ok: the app equals etproof classify on {len(photos) - bad // 2} of {len(photos)} photos")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["compile-checks", "api", "app"])
    for opt in ("cmake", "prefix", "generator", "make", "cxx", "build-type", "scratch"):
        ap.add_argument("--" + opt, required=True)
    for opt in ("cli", "tiny", "tiny-portable", "encdec", "efficientnet", "photos"):
        ap.add_argument("--" + opt, default="")
    a = ap.parse_args()
    return {"compile-checks": compile_checks, "api": api, "app": app}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
