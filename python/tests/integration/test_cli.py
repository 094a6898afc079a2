"""python -m etproof's command line: export through it, its usage errors and exit codes.

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_cli.py."""

import json
import os
import subprocess
import sys

from etproof.cli.main import main
from etproof.export.pipeline import supported_pairs
from etproof.fixtures.testbundles import (
    ATTRIBUTION_BUNDLES,
    ATTRIBUTION_INT8_BUNDLES,
    METHOD_BUNDLES,
    PTD_BUNDLES,
    QUANTIZER_BUNDLES,
    SHAPE_BUNDLES,
    STATE_BUNDLES,
    TEST_PAIRS,
    export_test_bundles,
)

from conftest import REPO


def test_test_bundles_are_reused_when_nothing_changed(test_bundles):
    lines = []
    results = export_test_bundles(test_bundles, log=lines.append, openvino_twin=False)
    n = len(TEST_PAIRS) + sum(len(pairs) for _, _, pairs in SHAPE_BUNDLES + PTD_BUNDLES
                                 + QUANTIZER_BUNDLES + METHOD_BUNDLES + STATE_BUNDLES + ATTRIBUTION_BUNDLES
                                 + ATTRIBUTION_INT8_BUNDLES) + 1  # + the spaced twin
    assert [r["status"] for r in results] == ["exported"] * n
    assert sum("up to date" in line for line in lines) == n


def test_cli_export_and_error(tmp_path, capsys):
    assert main(["export", "--model", "tiny", "--backend", "portable", "--recipe", "fp32",
                 "--out", str(tmp_path), "--name", "cli-tiny"]) == 0
    assert (tmp_path / "cli-tiny" / "cli-tiny.pte").is_file()
    capsys.readouterr()
    # A real column etproof does not export (a known recipe on a known backend, or a backend
    # ExecuTorch has) is refused and recorded, so the matrix lists it with why.
    for backend, recipe in (("portable", "int8-dynamic-per-channel"), ("qnn", "fp16")):
        assert main(["export", "--model", "tiny", "--backend", backend, "--recipe", recipe,
                     "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error [export]: unsupported "), err
        # the remedy lists every pair this export half supports (the backend table's recipes)
        assert ("remedy: supported (backend/recipe) pairs: "
                + ", ".join(f"{b}/{r}" for b, r in supported_pairs())) in err
    # the libraries' output of the export went to the log beside the report (etproof.cli.quiet)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli-tiny", "export-log.txt",
                                                          "export-report.json"]
    report = json.loads((tmp_path / "export-report.json").read_text())["results"]
    assert [(r["backend"], r["recipe"], r["status"]) for r in report] == [
        ("portable", "fp32", "exported"),
        ("portable", "int8-dynamic-per-channel", "export-refused"),
        ("qnn", "fp16", "export-refused")]
    assert "unsupported recipe" in report[1]["reason"]
    assert "unsupported backend 'qnn'" in report[2]["reason"]


def test_cli_module_function_spec(tmp_path, capsys):
    assert main(["export", "--model", "etproof.fixtures.tiny:spec", "--backend", "portable",
                 "--recipe", "fp32", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "tiny-portable-fp32").is_dir()
    model_file = tmp_path / "my_model.py"
    model_file.write_text(
        "import torch\n"
        "def build():\n"
        "    x = torch.ones(1, 4)\n"
        "    return {'model': torch.nn.Linear(4, 2), 'example_inputs': (x,),\n"
        "            'input_names': ['x'], 'output_names': ['y'],\n"
        "            'golden_inputs': [('ones', 'synthetic', 'torch.ones', (x,))]}\n")
    out = tmp_path / "out"
    assert main(["export", f"{model_file}:build", "--backend", "xnnpack", "--recipe", "fp32",
                 "--out", str(out)]) == 0
    doc = json.loads((out / "build-xnnpack-fp32" / "build-xnnpack-fp32.etproof.json").read_text())
    assert doc["model"] == "build" and doc["delegates"] == ["XnnpackBackend"]
    assert "layout" not in doc["inputs"][0]  # not given, so unknown, so absent
    assert main(["export", "--model", "no_such_module:f", "--backend", "portable",
                 "--recipe", "fp32", "--out", str(tmp_path)]) == 2
    assert "error [export]: cannot load no_such_module:f" in capsys.readouterr().err


def test_python_m_etproof_exit_code(tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-m", "etproof", "export", "--model", "nope",
                        "--backend", "portable", "--recipe", "fp32", "--out", str(tmp_path)],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert r.returncode == 2
    assert "error [export]: unknown model 'nope'" in r.stderr
    assert "remedy: " in r.stderr


def _library_noise_backend() -> tuple[str, str | None]:
    """Core ML when it lowers here (coremltools' progress bars and warnings: Python-level
    output), else XNNPACK (ExecuTorch's C++ log lines); with the marker the library prints."""
    try:
        from etproof.export.lower import check_export_needs

        check_export_needs("coreml")
        return "coreml", "Converting PyTorch Frontend ==> MIL Ops"
    except Exception:  # noqa: BLE001 - no Core ML here: the C++ side's log still speaks
        return "xnnpack", None


def test_export_keeps_library_output_in_a_log_unless_verbose(tmp_path):
    """An export's terminal carries etproof's own lines only; ExecuTorch's and the backend's
    logs and progress bars are in OUT/export-log.txt (said in one line); --verbose brings them
    back to the terminal and writes no log."""
    backend, marker = _library_noise_backend()
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    env.pop("PYTHONWARNINGS", None)

    def export(out, *extra):
        r = subprocess.run([sys.executable, "-m", "etproof", "export", "tiny", "--backend",
                            backend, "--recipe", "fp32", "--out", str(out), *extra],
                           capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        return r

    name = f"tiny-{backend}-fp32"
    quiet_out = tmp_path / "quiet"
    r = export(quiet_out)
    log = quiet_out / "export-log.txt"
    lines = r.stdout.splitlines()
    assert lines[0] == (f"ExecuTorch's and the backends' output (logs, progress): {log} "
                        "(--verbose shows it here)"), r.stdout
    own = [ln for ln in lines[1:] if ln.startswith(f"{name}: ") or ln == str(quiet_out / name)
           or ln.startswith(("export: ", "next: "))]
    assert own == lines[1:], r.stdout  # nothing but etproof's own lines and the bundle
    # one line for the bundle, then the closing summary and the next command (issue 16 §2)
    assert [ln for ln in lines if ln.startswith(f"{name}: ")] == [
        ln for ln in lines if ln.startswith(f"{name}: exported in ")], r.stdout
    assert lines[-2].startswith("export: 1 bundle written, 0 refused, 0 failed ("), r.stdout
    assert lines[-1].startswith(f"next: build/etproof matrix {quiet_out}"), r.stdout
    assert r.stderr == "", r.stderr
    logged = log.read_text()
    assert f"{name}: torch.export" in logged  # the per-step progress went to the log
    assert logged.startswith("=== ") and f"export tiny --backend {backend}" in logged
    library = [ln for ln in logged.splitlines()[1:] if ln.strip()]
    assert library, "the export's library output should be in the log"
    if marker:
        assert marker in logged
    verbose = export(tmp_path / "verbose", "--verbose")
    assert not (tmp_path / "verbose" / "export-log.txt").exists()
    shown = verbose.stdout + verbose.stderr
    assert "export-log.txt" not in shown
    if marker:
        assert marker in shown
    else:  # some line the libraries printed is back on the terminal
        foreign = [ln for ln in shown.splitlines() if not ln.startswith(f"{name}: ")
                   and ln != str(tmp_path / "verbose" / name)
                   and not ln.startswith(("export: ", "next: "))]
        assert foreign, shown
