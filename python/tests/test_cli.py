import json
import os
import subprocess
import sys

from etproof.cli import main
from etproof.testbundles import export_test_bundles

from conftest import REPO


def test_test_bundles_are_reused_when_nothing_changed(test_bundles):
    lines = []
    results = export_test_bundles(test_bundles, log=lines.append)
    assert [r["status"] for r in results] == ["exported"] * 3
    assert sum("up to date" in line for line in lines) == 3


def test_cli_export_and_error(tmp_path, capsys):
    assert main(["export", "--model", "tiny", "--backend", "portable", "--recipe", "fp32",
                 "--out", str(tmp_path), "--name", "cli-tiny"]) == 0
    assert (tmp_path / "cli-tiny" / "cli-tiny.pte").is_file()
    capsys.readouterr()
    assert main(["export", "--model", "tiny", "--backend", "xnnpack", "--recipe", "int2",
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error [export]: unsupported recipe 'int2' for backend 'xnnpack'\n")
    assert "remedy: supported (backend/recipe) pairs: portable/fp32, xnnpack/fp32" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli-tiny", "export-report.json"]
    report = json.loads((tmp_path / "export-report.json").read_text())["results"]
    assert report == [
        {"backend": "portable", "recipe": "fp32", "bundle": "cli-tiny", "status": "exported"},
        {"backend": "xnnpack", "recipe": "int2", "status": "export-refused", "stage": "export",
         "reason": report[1]["reason"]}]
    assert "unsupported recipe" in report[1]["reason"]


def test_cli_module_function_spec(tmp_path, capsys):
    assert main(["export", "--model", "etproof.models.tiny:spec", "--backend", "portable",
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
