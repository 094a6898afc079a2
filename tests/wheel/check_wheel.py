#!/usr/bin/env python3
"""CTest driver for the wheel (pyproject.toml; test wheel.install_and_use). Python 3 stdlib only.

  check_wheel.py --root ROOT --python PY --scratch SCRATCH

Installs etproof from the checkout ROOT, as `pip install ROOT` does, into a fresh virtual
environment SCRATCH/venv that reuses PY's installed packages (torch, executorch, … through a .pth
file: no second download; pip runs with --no-index, so nothing may be fetched), then, from
SCRATCH (outside the checkout) and with only the installed `etproof` command:

  1. `etproof --build-info` names the executorch it was built against, and `ldd` resolves the
     installed CLI's ExecuTorch libraries inside the package (etproof/sdk/lib/etproof-runtime);
  2. `etproof export my_model.py:make_model --backend xnnpack,portable --recipe fp32` (a user's
     own model file) writes both bundles and exits 0;
  3. `etproof matrix` on them: every cell agreed, exit 0; `etproof parity` on one: exit 0;
  4. examples/consumer configured with CMAKE_PREFIX_PATH from `etproof --cmake-prefix`, built,
     and its GoogleTest parity test passing on the exported bundle;
  5. the installation's recorded executorch changed to another release: `etproof backends` is
     refused with exit 2, `error [version-mismatch]` naming both releases (then restored).

Exit 0 when all of that held, 1 when not (the first failure says what and shows the output).
The build reuses ROOT/build/wheel (pyproject.toml's build-dir): a second run recompiles only what
changed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

MODEL = textwrap.dedent('''\
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.fc1 = torch.nn.Linear(8, 16)
            self.fc2 = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    def make_model():
        torch.manual_seed(1)
        x = torch.randn(2, 8)
        return {"model": Net().eval(), "example_inputs": (x,), "input_names": ["x"],
                "output_names": ["y"], "name": "net",
                "golden_inputs": [("randn", "synthetic", "torch.randn seed 1", (x,))]}
    ''')


class Failed(Exception):
    pass


def run(cmd, *, cwd, env=None, expect=0, timeout=3600):
    """Runs ``cmd``; returns (stdout, stderr). Raises Failed, with both, unless it exits ``expect``."""
    shown = " ".join(str(c) for c in cmd)
    print(f"$ {shown}", flush=True)
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode != expect:
        raise Failed(f"{shown}\nexited {p.returncode}, expected {expect}\n--- stdout\n{p.stdout}"
                     f"\n--- stderr\n{p.stderr}")
    return p.stdout, p.stderr


def site_packages(python: str) -> str:
    out = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout
    return out.strip()


def make_venv(python: str, venv: Path) -> Path:
    """A fresh venv (the base interpreter of PY) that sees PY's site-packages after its own.
    Without pip of its own (ensurepip's would bring Python's bundled setuptools, older than torch
    requires, ahead of PY's): pip, like everything else, comes from PY's packages."""
    if venv.exists():
        shutil.rmtree(venv)
    run([python, "-m", "venv", "--without-pip", venv], cwd=venv.parent)
    vpy = venv / "bin" / "python"
    (Path(site_packages(str(vpy))) / "_etproof_reuse.pth").write_text(site_packages(python) + "\n")
    return vpy


def check(root: Path, python: str, scratch: Path) -> None:
    scratch.mkdir(parents=True, exist_ok=True)
    vpy = make_venv(python, scratch / "venv")
    env = dict(os.environ)
    for k in ("ETPROOF_PYTHON", "ETPROOF_PROG", "ETPROOF_WORKER", "PYTHONPATH", "VIRTUAL_ENV"):
        env.pop(k, None)
    env["PATH"] = f"{vpy.parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    env["XDG_CACHE_HOME"] = str(scratch / "cache")
    # pip install ROOT: builds the wheel (scikit-build-core, from PY's packages: no build isolation,
    # so no download either) and installs it; every dependency must already be there (--no-index).
    run([vpy, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", root],
        cwd=scratch, env=env)
    etproof = vpy.parent / "etproof"
    if not etproof.is_file():
        raise Failed(f"pip installed no {etproof}")
    info = json.loads(run([etproof, "--build-info"], cwd=scratch, env=env)[0])
    here = run([vpy, "-c", "import importlib.metadata as m; print(m.version('executorch'))"],
               cwd=scratch, env=env)[0].strip()
    if info.get("executorch") != here:
        raise Failed(f"build-info says executorch {info.get('executorch')}, the venv has {here}")
    pkg = Path(run([vpy, "-c", "import etproof, os; print(os.path.dirname(etproof.__file__))"],
                   cwd=scratch, env=env)[0].strip())
    if (scratch / "venv") not in pkg.parents:
        raise Failed(f"the venv imports etproof from {pkg}, not from the wheel it installed")
    cli = pkg / "sdk" / "bin" / "etproof"
    ldd = run(["ldd", cli], cwd=scratch)[0]
    runtime = (pkg / "sdk" / "lib" / "etproof-runtime").resolve()
    resolved = [Path(ln.split("=>")[1].split("(")[0].strip()).resolve()
                for ln in ldd.splitlines() if "libexecutorch" in ln and "=>" in ln]
    if not resolved or any(r.parent != runtime for r in resolved):
        raise Failed(f"the installed CLI's ExecuTorch libraries resolve outside the package:\n{ldd}")

    (scratch / "my_model.py").write_text(MODEL)
    bundles = scratch / "bundles"
    shutil.rmtree(bundles, ignore_errors=True)
    run([etproof, "export", "my_model.py:make_model", "--backend", "xnnpack,portable", "--recipe",
         "fp32", "--out", bundles], cwd=scratch, env=env)
    for b in ("net-xnnpack-fp32", "net-portable-fp32"):
        if not (bundles / b / f"{b}.etproof.json").is_file():
            raise Failed(f"export wrote no {bundles / b}")
    out = run([etproof, "matrix", bundles, "--no-ledger"], cwd=scratch, env=env)[0]
    if "PASS" not in out or "2 cells measured: 2 agreed, 0 drifted" not in out:
        raise Failed(f"matrix did not agree on both cells:\n{out}")
    run([etproof, "parity", bundles / "net-xnnpack-fp32", "--no-ledger"], cwd=scratch, env=env)

    # The consumer example against the installed CMake package alone.
    prefix = run([etproof, "--cmake-prefix"], cwd=scratch, env=env)[0].strip()
    build = scratch / "consumer"
    shutil.rmtree(build, ignore_errors=True)
    # PY's CMake (requirements.txt pins one >= 3.28, as ExecuTorch's imported targets need)
    cmake = Path(python).parent / "cmake"
    if not cmake.is_file():
        cmake = shutil.which("cmake", path=env["PATH"]) or "cmake"
    run([cmake, "-S", root / "examples" / "consumer", "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}",
         "-DCMAKE_BUILD_TYPE=Release"], cwd=scratch, env=env)
    run([cmake, "--build", build], cwd=scratch, env=env)
    run([build / "parity_test"], cwd=scratch, env=dict(env, ETPROOF_BUNDLE=str(bundles / "net-xnnpack-fp32")))

    # Another executorch than the build's: refused by name at start.
    recorded = pkg / "sdk" / "share" / "etproof" / "build-info.json"
    saved = recorded.read_text()
    try:
        recorded.write_text(json.dumps(dict(info, executorch="1.4.0")))
        _, err = run([etproof, "backends"], cwd=scratch, env=env, expect=2)
        for needle in ("error [version-mismatch]", "executorch 1.4.0", f"executorch {here}", "remedy:"):
            if needle not in err:
                raise Failed(f"the version refusal lacks {needle!r}:\n{err}")
    finally:
        recorded.write_text(saved)
    print("wheel: installed into a fresh venv; export, matrix, parity, the consumer and the "
          "version refusal behaved", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--scratch", type=Path, required=True)
    a = ap.parse_args()
    try:
        check(a.root.resolve(), a.python, a.scratch.resolve())
    except (Failed, subprocess.TimeoutExpired) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
