"""The typed errors, and the whole error named where an export fails.

Here, the tests that export (torch.export, an export or probe child process, a built binary;
they may skip); the checks that export nothing: unit/test_errors.py."""

import json
import os
import sys

import pytest
import torch
from torch import nn

from etproof.cli.main import main
from etproof.errors import ExportError, InvalidArgument


# ---- the whole error, named (issue 10) ----------------------------------------------------------

class RfftAbs(nn.Module):
    """|rfft(x)|: aten.abs on a complex64 tensor, which ExecuTorch's edge verifier refuses."""

    def forward(self, x):
        return torch.fft.rfft(x).abs()


class Spectrum(nn.Module):
    """forward doubles x; spectrum(x) is RfftAbs's |rfft(x)|, refused by ExecuTorch."""

    def forward(self, x):
        return x * 2

    def spectrum(self, x):
        return torch.fft.rfft(x).abs()


class TwoCond(nn.Module):
    """Two torch.cond calls, the second on the first's result."""

    def forward(self, x):
        y = torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))
        return torch.cond(y.mean() > 0, lambda t: t * 2, lambda t: t * 3, (y,))


def _spec_file(tmp_path, cls_name: str) -> str:
    """A FILE.py:FUNCTION model spec for the CLI, using this file's model class."""
    f = tmp_path / "spec_model.py"
    f.write_text(
        "import sys, torch\n"
        f"sys.path.insert(0, {str(os.path.dirname(__file__))!r})\n"
        f"from test_errors import {cls_name}\n"
        "def build():\n"
        "    torch.manual_seed(0)\n"
        "    x = torch.randn(1, 16)\n"
        f"    return {{'model': {cls_name}(), 'example_inputs': (x,), 'input_names': ['x'],\n"
        "            'output_names': ['y'], 'golden_inputs': [('c0', 'synthetic', "
        "'torch.randn seed 0', (x,))]}\n")
    return f"{f}:build"


def test_an_error_in_a_named_method_points_at_the_users_line(tmp_path):
    """With several methods etproof wraps each (etproof.contract.program.MethodModule): the
    error's model_source is still the user's line, not the wrapper's."""
    from etproof.export.pipeline import export_model

    x = torch.randn(1, 16)
    model = Spectrum()
    entry = {"example_inputs": (x,), "input_names": ["x"], "output_names": ["y"],
             "golden_inputs": [("c0", "synthetic", "torch.randn", (x,))]}
    with pytest.raises(ExportError) as e:
        export_model(model, name="rfft2", out_dir=tmp_path, backend="portable", recipe="fp32",
                     methods={"forward": dict(entry), "spectrum": dict(entry)})
    where = e.value.detail["model_source"]
    assert "test_errors.py" in where and "program.py" not in where, where


def _fds():
    return [(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (1, 2)]


def test_complex_abs_is_named_whole_at_export(tmp_path, capsys):
    """torch.fft.rfft(x).abs() (portable fp32: ExecuTorch's edge verifier; XNNPACK's compile
    config skips that check): the error names aten.abs.default on complex64 on the terminal and
    in the report, keeps ExecuTorch's whole message, and its remedy is a rewrite, not the fp32
    recipe the export already uses."""
    out = tmp_path / "out"
    fds, streams = _fds(), (sys.stdout, sys.stderr)
    assert main(["export", _spec_file(tmp_path, "RfftAbs"), "--backend", "portable",
                 "--recipe", "fp32", "--out", str(out)]) == 2
    # the library output redirect was undone on the failure
    assert _fds() == fds and (sys.stdout, sys.stderr) == streams
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("error [lower]: lower failed: SpecViolationError: "), err
    assert "aten.abs.default" in first and "complex64" in first, first
    assert not first.endswith(":"), first
    # ExecuTorch's whole message, every line, under the error line
    assert "with args: {'self': torch.complex64, '__ret_0': torch.float32}" in err
    assert "Please make sure the dtypes of the Tensor inputs are the same" in err
    remedy = [ln for ln in err.splitlines() if ln.startswith("remedy: ")]
    assert len(remedy) == 1 and "fp32 recipe" not in remedy[0], err
    assert "aten.abs.default" in remedy[0] and "view_as_real" in remedy[0], remedy
    (entry,) = json.loads((out / "export-report.json").read_text())["results"]
    assert entry["status"] == "export-failed" and entry["stage"] == "lower"
    assert "aten.abs.default" in entry["reason"] and "fp32 recipe" not in entry["reason"]
    e = entry["error"]
    assert e["type"] == "torch._export.verifier.SpecViolationError"
    assert e["operators"] == ["aten.abs.default"]
    assert e["dtypes"] == {"aten.abs.default": "self: complex64 -> float32"}
    assert e["message"].startswith("These operators are taking Tensor inputs with mismatched "
                                   "dtypes:\n") and "Please make sure" in e["message"]
    assert e["model_source"].endswith("in forward") and "test_errors.py" in e["model_source"]
    assert ".py:" in e["where"]
    # the traceback went to the log beside the report, not the terminal
    assert "Traceback" not in err
    assert "SpecViolationError" in (out / "export-log.txt").read_text()


def test_two_torch_cond_on_coreml_names_the_frame(tmp_path):
    """The user's case: Core ML fp32 lowering of a model with two torch.cond calls fails with a
    bare AssertionError inside ExecuTorch; the error names the frame and the cond node."""
    pytest.importorskip("coremltools", reason="coremltools not installed: Core ML lowering "
                        "cannot run here")
    from etproof.export.pipeline import export_model
    from etproof.export.lower import check_export_needs

    try:
        check_export_needs("coreml")
    except InvalidArgument as e:
        pytest.skip(f"Core ML export refused here: {e}")
    torch.manual_seed(0)
    x = torch.randn(1, 8)
    try:
        export_model(TwoCond(), (x,), "two-cond", tmp_path, "coreml", "fp32", ["x"], ["y"],
                     [("c0", "synthetic", "torch.randn seed 0", (x,))], verify=False)
    except ExportError as e:
        if e.detail is None or e.detail["message"]:
            raise
        assert e.stage == "lower"
        assert e.cause.startswith("lower failed: AssertionError: (no message) raised at "), e.cause
        assert ".py:" in e.cause and e.detail["where"].split(":")[0].endswith(".py")
        assert os.path.isfile(e.detail["where"].rsplit(":", 1)[0])
        assert "torch.ops.higher_order.cond" in e.detail["node"], e.detail
        assert "test_errors.py" in e.detail["node"]  # the model's own line
        assert "fp32 recipe" not in e.remedy and e.detail["where"].split(" in ")[1] in e.remedy
    else:
        pytest.skip("this ExecuTorch lowers two torch.cond calls for Core ML now: no bare "
                    "AssertionError to name (test_an_empty_message_names_its_frame_and_node "
                    "covers the formatting)")


class Bucketize(nn.Module):
    """torch.bucketize: XNNPACK takes nothing of it, and ExecuTorch's Python runtime has no
    portable kernel for it, so the written program fails to load (0x14, OperatorMissing)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("bounds", torch.tensor([-1.0, 0.0, 1.0]))

    def forward(self, x):
        return torch.bucketize(x, self.bounds).to(torch.float32) + x


def test_a_program_that_does_not_load_names_the_operator_not_a_code(tmp_path, capsys):
    """The user's bucketize case through the CLI: the written program calls an operator that
    ExecuTorch's Python runtime has no kernel for; the export is refused before running it,
    naming the operator (not "error: 0x14") in the report and on the terminal."""
    out = tmp_path / "out"
    assert main(["export", _spec_file(tmp_path, "Bucketize"), "--backend", "xnnpack",
                 "--recipe", "fp32", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    (entry,) = json.loads((out / "export-report.json").read_text())["results"]
    assert entry["status"] == "export-failed" and entry["stage"] == "lower"
    assert "aten::bucketize.Tensor_out" in entry["reason"], entry
    assert "aten::bucketize.Tensor_out" in err
    assert "0x14" not in entry["reason"] and "0x:14" not in entry["reason"]
    assert "fp32 recipe" not in entry["reason"]


# ---- causes kept whole (issue 35) ---------------------------------------------------------------

def _channels_last_c1_spec(tmp_path) -> str:
    """The user's model: Conv2d(1, 4, 3) whose example input is channels-last with C=1."""
    f = tmp_path / "cl_model.py"
    f.write_text(
        "import torch\n"
        "def make_model():\n"
        "    torch.manual_seed(0)\n"
        "    x = torch.randn(1, 1, 8, 8).to(memory_format=torch.channels_last)\n"
        "    return {'model': torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3)).eval(),\n"
        "            'example_inputs': (x,), 'input_names': ['x'], 'output_names': ['y'],\n"
        "            'golden_inputs': [('seed0', 'synthetic', 'torch.randn, seed 0', (x,))],\n"
        "            'name': 'clconv'}\n")
    return f"{f}:make_model"


def test_a_run_failure_at_export_names_executorchs_cause(tmp_path, capsys):
    """The export-stage run of a channels-last C=1 input fails on portable (0x12) and XNNPACK
    (0x1): the cause in export-report.json (and on the terminal) carries what ExecuTorch logged
    (the dim order, the kernel that failed, XNNPACK's status) and names the input's dim order;
    the remedy names the layout to give, not a version."""
    out = tmp_path / "out"
    assert main(["export", _channels_last_c1_spec(tmp_path), "--backend", "portable,xnnpack",
                 "--recipe", "fp32", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    entries = {e["backend"]: e for e in
               json.loads((out / "export-report.json").read_text())["results"]}
    odd = ("input x (1x1x8x8, strides (64, 1, 8, 1)) has dim order 0,2,1,3, neither contiguous "
           "(0,1,2,3) nor channels-last (0,2,3,1)")
    portable, xnnpack = entries["portable"]["reason"], entries["xnnpack"]["reason"]
    assert ("failed with error 0x12 (InvalidArgument): ExecuTorch said: Expected tensor to have "
            "default or channels last dim order, but got dim_order 0,2,1,3; ") in portable, portable
    assert "operator aten::convolution.out: 0x12" in portable
    assert "failed with error 0x1 (Internal): ExecuTorch said: " in xnnpack, xnnpack
    assert "xnn_status_invalid_parameter" in xnnpack
    for reason in (portable, xnnpack):
        assert odd in reason and "cpuinfo" not in reason and "type id" not in reason
        remedy = reason.split("(remedy: ", 1)[1]
        assert "x.to(memory_format=torch.contiguous_format)" in remedy and "C > 1" in remedy
        assert "version" not in remedy and "ExecuTorch 1." not in remedy, remedy
        assert reason in err  # the terminal line says the same
    log = (out / "export-log.txt").read_text()  # still all in the log, in order
    assert "dim_order(3): 3" in log and "xnn_status_invalid_parameter" in log


def test_one_pair_that_fails_to_run_writes_its_report(tmp_path, capsys):
    """One pair: the report is written with the same cause (the log lines the error keeps are
    shown under it on the terminal, and are no field of the report's schema)."""
    out = tmp_path / "out"
    assert main(["export", _channels_last_c1_spec(tmp_path), "--backend", "portable",
                 "--recipe", "fp32", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    (entry,) = json.loads((out / "export-report.json").read_text())["results"]
    assert "but got dim_order 0,2,1,3" in entry["reason"] and "log" not in entry["error"]
    assert "ExecuTorch's log about it:" in err
    assert "[tensor_util_portable.cpp:64] Expected tensor to have default or channels last" in err
