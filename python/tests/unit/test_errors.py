"""The typed errors, and the whole error named where an export fails.

Here, the checks that export nothing (no torch.export, no export or probe child process, no
built binary) and never skip; the rest: integration/test_errors.py."""

import pytest

from etproof.errors import (EtproofError, ExportError, InvalidArgument, ManifestError,
                            QuantizationError)


def test_error_shape():
    e = ExportError("lowering broke", "try fp32", stage="lower")
    assert isinstance(e, EtproofError)
    assert (e.cause, e.remedy, e.stage) == ("lowering broke", "try fp32", "lower")
    assert str(e) == "lowering broke (remedy: try fp32)"
    q = QuantizationError("nothing quantized", "use fp32")
    assert isinstance(q, ExportError) and q.stage == "quantize"
    assert issubclass(ManifestError, EtproofError) and issubclass(InvalidArgument, EtproofError)
    with pytest.raises(ValueError):
        ExportError("x", "y", stage="nope")


# ---- the whole error, named (issue 10) ----------------------------------------------------------

import torch
from torch import nn

from etproof.errors import in_stage


def _assert_node_op(node):
    # what `assert node.op == "get_attr"` raises outside pytest (which rewrites asserts here)
    if node.op != "get_attr":
        raise AssertionError


def test_an_empty_message_names_its_frame_and_node():
    """A bare AssertionError (a real one, raised on a real torch.fx node) becomes a cause that
    says where it was raised (file:line, function, the failing line) and the node being handled;
    the remedy names that frame and offers the fp32 recipe only to a recipe that is not fp32."""
    gm = torch.fx.symbolic_trace(nn.ReLU())
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    for recipe in ("fp32", "int8-static-per-channel"):
        with pytest.raises(ExportError) as ei:
            with in_stage("lower", recipe):
                _assert_node_op(node)
        e = ei.value
        line = _assert_node_op.__code__.co_firstlineno + 3
        assert e.cause == (f"lower failed: AssertionError: (no message) raised at {__file__}:"
                           f"{line} in _assert_node_op: raise AssertionError; while handling node "
                           f"{node.name} (torch.nn.functional.relu)"), e.cause
        assert e.detail["where"] == f"{__file__}:{line} in _assert_node_op"
        assert e.detail["message"] == "" and e.detail["type"] == "AssertionError"
        assert f"{__file__}:{line} in _assert_node_op" in e.remedy
        assert ("fp32 recipe" in e.remedy) == (recipe != "fp32"), e.remedy


# ---- causes kept whole (issue 35) ---------------------------------------------------------------

from etproof.errors import (error_line, executorch_said, first_line, lead_line, name_error_codes,
                            runtime_log_lines, summary_line)


class GeneralFailure(Exception):
    """Stands for openvino._pyopenvino.GeneralFailure (OpenVINO is not installed everywhere)."""


# OpenVINO 2026.4's message, verbatim, for a model object its PyTorch frontend does not take.
GENERAL_FAILURE = ("Check 'variants[0].is<std::shared_ptr<IDecoder>>()' failed at "
                   "src/frontends/pytorch/src/frontend.cpp:360:\n"
                   "FrontEnd API failed with GeneralFailure:\n"
                   "PyTorch Frontend doesn't support provided model type. Please provide "
                   "supported model object using Python API.\n")


def test_a_one_line_reason_is_never_cut_before_its_informative_part():
    """A message whose first lines are headers ending in ":" (OpenVINO's "Check ... failed at
    FILE:LINE:" / "FrontEnd API failed with GeneralFailure:") keeps the line after them, in
    every one-line form: first_line, error_line, summary_line and an ExportError's cause; where
    it is too long, the headers are shortened, never the informative line."""
    e = GeneralFailure(GENERAL_FAILURE)
    informative = "PyTorch Frontend doesn't support provided model type."
    for text in (first_line(e), error_line(e), summary_line(e)):
        assert "FrontEnd API failed with GeneralFailure: " + informative in text, text
        assert not text.endswith(":"), text
    with pytest.raises(ExportError) as ei:
        with in_stage("lower", "fp32"):
            raise e
    assert ei.value.cause.startswith("lower failed: GeneralFailure: Check 'variants[0]")
    assert informative in ei.value.cause, ei.value.cause
    long_head = "Check 'x' failed at " + "a/" * 300 + "frontend.cpp:1:"
    cut = lead_line([long_head, "FrontEnd API failed with GeneralFailure:", "the real reason"])
    assert len(cut) <= 500 and cut.endswith("… the real reason"), cut
    # a first line that says it all is kept alone
    assert lead_line(["it failed", "more: detail"]) == "it failed"


# ExecuTorch 1.5.1's log of a channels-last 1x1x8x8 input to a Conv2d on portable, then on
# XNNPACK, with the startup chatter between (export-log.txt, verbatim).
DIM_ORDER_LOG = """\
clconv-portable-fp32: lowering for portable
[tensor_util_portable.cpp:64] Expected tensor to have default or channels last dim order, but got
[tensor_util_portable.cpp:68]     dim_order(0): 0
[tensor_util_portable.cpp:68]     dim_order(1): 2
[tensor_util_portable.cpp:68]     dim_order(2): 1
[tensor_util_portable.cpp:68]     dim_order(3): 3
[kernel_ops_util.cpp:384] Check failed (tensor_is_default_or_channels_last_dim_order(in)): 
[op_convolution.cpp:363] Check failed (check_convolution_args( in, weight, bias, stride, padding, dilation, transposed, output_padding, groups, out)): 
[method.cpp:1483] KernelCall failed at instruction 0:0 in operator aten::convolution.out: 0x12
[method.cpp:1493] arg 0 with type id 1
[method.cpp:1493] arg 1 with type id 1
[cpuinfo_utils.cpp:87] Failed to open midr file /sys/devices/soc0/image_version
[cpuinfo_utils.cpp:125] CPU info and manual query on # of cpus dont match.
[XNNExecutor.cpp:169] Internal Error: Propagating input shapes failed with code: xnn_status_invalid_parameter
[method.cpp:1528] CALL_DELEGATE execute failed at instruction 0: 0x1
[method.cpp:1528] CALL_DELEGATE execute failed at instruction 0: 0x1
"""


def test_executorch_log_lines_that_explain_a_failure():
    """The lines kept: the failed check with what it got (its list folded in), each check, the
    kernel and the delegate's status, in order and once; left out: the chatter (cpuinfo), the
    kernel's argument list, etproof's own progress."""
    assert runtime_log_lines(DIM_ORDER_LOG) == [
        "[tensor_util_portable.cpp:64] Expected tensor to have default or channels last dim "
        "order, but got dim_order 0,2,1,3",
        "[kernel_ops_util.cpp:384] Check failed (tensor_is_default_or_channels_last_dim_order(in))",
        "[op_convolution.cpp:363] Check failed (check_convolution_args( in, weight, bias, stride, "
        "padding, dilation, transposed, output_padding, groups, out))",
        "[method.cpp:1483] KernelCall failed at instruction 0:0 in operator "
        "aten::convolution.out: 0x12",
        "[XNNExecutor.cpp:169] Internal Error: Propagating input shapes failed with code: "
        "xnn_status_invalid_parameter",
        "[method.cpp:1528] CALL_DELEGATE execute failed at instruction 0: 0x1"]
    # C output that ran on without a newline is split at each [FILE:LINE]
    assert runtime_log_lines("[a.cpp:1] Missing operator: x[b.cpp:2] fine") == [
        "[a.cpp:1] Missing operator: x"]


def test_what_executorch_said_is_short_in_order_and_says_where_the_rest_is():
    lines = runtime_log_lines(DIM_ORDER_LOG)
    said = executorch_said(lines)
    assert said.startswith("ExecuTorch said: Expected tensor to have default or channels last "
                           "dim order, but got dim_order 0,2,1,3; Check failed ("), said
    assert "[method.cpp" not in said and len(said) <= 620
    short = executorch_said(lines, limit=200)
    assert short == ("ExecuTorch said: Expected tensor to have default or channels last dim "
                     "order, but got dim_order 0,2,1,3; (4 more lines in export-log.txt); "
                     "CALL_DELEGATE execute failed at instruction 0: 0x1"), short
    assert executorch_said([]) == ""
    assert name_error_codes("method->execute() failed with error 0x12") == (
        "method->execute() failed with error 0x12 (InvalidArgument)")
    assert name_error_codes("error: 0x14; error 0x99") == "error: 0x14 (OperatorMissing); error 0x99"


def test_capture_picks_the_same_lines_from_the_log(tmp_path):
    from etproof.cli.quiet import Capture

    log = tmp_path / "export-log.txt"
    log.write_text("=== before\n[method.cpp:1] Missing operator: old\n" + DIM_ORDER_LOG)
    start = len("=== before\n[method.cpp:1] Missing operator: old\n")
    assert Capture(log, start).runtime_errors() == runtime_log_lines(DIM_ORDER_LOG)
    assert Capture(log, start).runtime_errors(limit=2) == runtime_log_lines(DIM_ORDER_LOG)[-2:]


def test_an_input_of_no_single_dim_order_is_named():
    """A channels-last tensor with C=1 reads as dim order 0,2,1,3 (ExecuTorch orders by stride,
    ties in index order); contiguous and channels-last with C>1 are not named."""
    from etproof.export.lower import unusual_dim_orders

    odd = torch.randn(1, 1, 8, 8).to(memory_format=torch.channels_last)
    fine = [torch.randn(1, 1, 8, 8).to(memory_format=torch.contiguous_format),
            torch.randn(1, 3, 8, 8).to(memory_format=torch.channels_last), torch.randn(2, 5)]
    assert unusual_dim_orders([fine + [odd]], ["a", "b", "c", "x"]) == [(
        "x", "input x (1x1x8x8, strides (64, 1, 8, 1)) has dim order 0,2,1,3, neither "
             "contiguous (0,1,2,3) nor channels-last (0,2,3,1)")]
    assert unusual_dim_orders([fine]) == []
    assert unusual_dim_orders([[odd]])[0][0] == "input 0"
    assert unusual_dim_orders([[torch.randn(4, 3).t()]], ["t"]) == [(
        "t", "input t (3x4, strides (1, 3)) has dim order 1,0, not contiguous (0,1)")]


def test_executorch_log_passes_its_output_on_and_keeps_the_lines(capfd):
    """ExecutorchLog reads what is written inside it to Python's sys.stderr (where ExecuTorch's
    Python runtime logs) and to file descriptor 2 (where C++ code may log), once each, and
    writes both on unchanged."""
    import os
    import sys

    from etproof.export.lower import ExecutorchLog

    stderr = sys.stderr
    log = ExecutorchLog()
    with log:
        print("[method.cpp:9] Missing operator: [0] aten::x.out", file=sys.stderr)
        os.write(2, b"[op_x.cpp:3] Check failed (a == b): \n[cpuinfo_utils.cpp:1] Failed x\n")
    assert sys.stderr is stderr
    assert log.lines == ["[method.cpp:9] Missing operator: [0] aten::x.out",
                         "[op_x.cpp:3] Check failed (a == b)"]
    err = capfd.readouterr().err
    assert "[method.cpp:9] Missing operator: [0] aten::x.out\n" in err
    assert ("[op_x.cpp:3] Check failed (a == b): \n[cpuinfo_utils.cpp:1] Failed x\n") in err
