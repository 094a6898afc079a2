"""The installed ``etproof`` command (the wheel's console script; pyproject.toml at the root).

One entry point for both halves: it checks that this environment's executorch is the one the
runtime half was built against, then replaces itself with the C++ CLI installed inside the package
(``etproof/sdk/bin/etproof``), which runs the export half (``export``, ``demo``, …) as
``<this Python> -m etproof …``. Two queries answer here without the C++ CLI:

- ``etproof --cmake-prefix``: the CMAKE_PREFIX_PATH under which ``find_package(etproof)`` finds the
  installed CMake package and the executorch one it depends on (``;``-separated, as CMake reads it).
- ``etproof --build-info``: the JSON the build recorded (``etproof/sdk/share/etproof/build-info.json``).

Exit status: the C++ CLI's (docs/errors.md); 2 when the installation cannot run here (no runtime
half installed, or executorch of another version than the build's: ``version-mismatch``), with
``error [KIND]: CAUSE`` and ``remedy: REMEDY`` on stderr.

Layer 6 (the CLI). Imports no torch, numpy or ExecuTorch: a query costs one interpreter start.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
from pathlib import Path

SDK = Path(__file__).resolve().parents[1] / "sdk"
BUILD_INFO = SDK / "share" / "etproof" / "build-info.json"
CLI = SDK / "bin" / "etproof"


def _fail(kind: str, cause: str, remedy: str) -> int:
    print(f"error [{kind}]: {cause}\nremedy: {remedy}", file=sys.stderr)
    return 2


def build_info() -> dict:
    """What the build recorded: ``executorch`` (the distribution's version it compiled against),
    ``executorch_cmake_dir``, ``etproof`` (its version). Raises OSError / ValueError when missing
    or not JSON."""
    return json.loads(BUILD_INFO.read_text(encoding="utf-8"))


def version_problem(info: dict) -> str | None:
    """Why this environment cannot run the installed runtime half with the export half, or None.

    The runtime half carries the ExecuTorch libraries it was built with (etproof/sdk/lib/
    etproof-runtime); the export half imports this environment's executorch. A program written by
    one ExecuTorch version and loaded by another is refused by the loader or, worse, misread, so
    the two must be the same release."""
    built = info.get("executorch")
    try:
        here = importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        return (f"this environment has no executorch; etproof was built against executorch {built}")
    if here != built:
        return (f"this environment has executorch {here}; etproof's runtime half was built against "
                f"executorch {built} (its programs, loader and kernels are that release's)")
    return None


def _openvino_lib() -> str | None:
    """The OpenVINO C runtime of this environment's ``openvino`` package (its delegate dlopens it
    through OPENVINO_LIB_PATH), found without importing it; None when not installed."""
    spec = importlib.util.find_spec("openvino")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        libs = sorted((Path(root) / "libs").glob("libopenvino_c.so*"))
        if libs:
            return str(libs[0])
    return None


def cmake_prefix(info: dict) -> str:
    """``SDK;<executorch's package directory>``: the CMake package and its dependency."""
    return ";".join([str(SDK), str(Path(info.get("executorch_package_dir", "")))])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        info = build_info()
    except (OSError, ValueError) as e:
        return _fail("capability-unavailable",
                     f"this etproof package has no runtime half ({BUILD_INFO}: {e})",
                     "install etproof from its wheel (pip install PATH-TO-etproof), or use "
                     "build/etproof of a checkout built by ./setup.sh")
    if argv[:1] == ["--build-info"]:
        print(json.dumps(info, indent=2))
        return 0
    if argv[:1] == ["--cmake-prefix"]:
        print(cmake_prefix(info))
        return 0
    problem = version_problem(info)
    if problem:
        return _fail("version-mismatch", problem,
                     f"install executorch=={info.get('executorch')} into this environment, or "
                     "reinstall etproof here so that it builds against this environment's "
                     "executorch (pip install --force-reinstall --no-deps PATH-TO-etproof)")
    env = dict(os.environ)
    env.setdefault("ETPROOF_PYTHON", sys.executable)  # the export half: this environment's
    env.setdefault("ETPROOF_PROG", "etproof")  # remedies name the command the user typed
    if "OPENVINO_LIB_PATH" not in env and (lib := _openvino_lib()):
        env["OPENVINO_LIB_PATH"] = lib
    try:
        os.execve(CLI, [str(CLI), *argv], env)
    except OSError as e:
        return _fail("capability-unavailable", f"cannot run the runtime half {CLI}: {e}",
                     "reinstall etproof (pip install --force-reinstall --no-deps PATH-TO-etproof)")
    return 2  # not reached: execve replaced this process


if __name__ == "__main__":
    sys.exit(main())
