"""etproof, the export half: PyTorch model -> ExecuTorch bundle (program, manifest, goldens)."""

__version__ = "0.1.0"

from etproof.errors import (  # noqa: E402
    EtproofError,
    ExportError,
    InvalidArgument,
    ManifestError,
    NothingToQuantize,
    QuantizationError,
)

__all__ = [
    "__version__",
    "EtproofError",
    "ExportError",
    "InvalidArgument",
    "ManifestError",
    "NothingToQuantize",
    "QuantizationError",
]
