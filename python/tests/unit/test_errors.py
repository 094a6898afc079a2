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
