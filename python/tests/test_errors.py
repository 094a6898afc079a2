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
