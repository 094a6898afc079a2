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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli-tiny"]


def test_cli_module_function_spec(tmp_path, capsys):
    assert main(["export", "--model", "etproof.models.tiny:spec", "--backend", "portable",
                 "--recipe", "fp32", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "tiny-portable-fp32").is_dir()
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
