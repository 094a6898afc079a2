"""Typed errors. Each carries a cause and a remedy; str() is "cause (remedy: ...)".

Also the export stages' vocabulary (EXPORT_STAGES, STAGE_REMEDY, in_stage) and the one-line form
of any exception (first_line, error_line). Imports nothing from etproof: every module may use it.
"""

from __future__ import annotations

import contextlib
import traceback

EXPORT_STAGES = ("export", "quantize", "lower", "serialize", "goldens")

# The remedy of an ExportError at each stage where the failure itself says nothing better.
STAGE_REMEDY = {
    "goldens": "the model must run eagerly on every golden input and return the named outputs",
    "export": "make the model traceable by torch.export (no data-dependent Python control flow, "
              "no unsupported ops); see the torch.export error above",
    "quantize": "quantization failed for this model; try the fp32 recipe or another quantized "
                "recipe",
    "lower": "the backend could not lower or run this model; try another backend, or the fp32 "
             "recipe",
    "serialize": "ExecuTorch could not serialize the program or the bundle could not be written; "
                 "check disk space and permissions of the output directory",
}


class EtproofError(Exception):
    """Base error: ``cause`` (what happened) and ``remedy`` (what to do about it).

    ``stage`` is None except where an export stage applies (ExportError, and InvalidArgument
    raised by export_model, which reports stage "export").
    """

    kind = "error"

    def __init__(self, cause: str, remedy: str = "", *, stage: str | None = None):
        self.cause = str(cause)
        self.remedy = str(remedy)
        self.stage = stage
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.cause} (remedy: {self.remedy})" if self.remedy else self.cause


class ExportError(EtproofError):
    """An export failed at ``stage``: "export" | "quantize" | "lower" | "serialize" | "goldens"."""

    kind = "export-failed"

    def __init__(self, cause: str, remedy: str = "", *, stage: str = "export"):
        if stage not in EXPORT_STAGES:
            raise ValueError(f"unknown export stage {stage!r}")
        super().__init__(cause, remedy, stage=stage)


class QuantizationError(ExportError):
    """Quantization failed or had no effect (stage "quantize")."""

    def __init__(self, cause: str, remedy: str = ""):
        super().__init__(cause, remedy, stage="quantize")


class NothingToQuantize(QuantizationError):
    """A quantized recipe that quantized nothing: the quantizer annotates no operator of the
    model (no quantize/dequantize op after convert). Not a failure of the toolchain but a recipe
    that does not apply, so it is a refusal: recorded as ``export-refused``, like a backend whose
    toolchain is absent, and it never fails a matrix by itself."""

    kind = "export-refused"


class ManifestError(EtproofError):
    """A manifest document is invalid; ``field`` names the offending field (dotted path)."""

    kind = "manifest-invalid"

    def __init__(self, cause: str, remedy: str = "", *, field: str | None = None):
        self.field = field
        super().__init__(cause, remedy)


class InvalidArgument(EtproofError):
    """A caller passed something etproof does not accept (unknown backend/recipe, bad name...)."""

    kind = "invalid-argument"


def first_line(e: BaseException) -> str:
    """The first non-blank line of ``str(e)``, at most 500 characters; where the text is empty,
    the exception's own one-line form (traceback.format_exception_only), else its type name."""
    text = str(e).strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:500]
    return "".join(traceback.format_exception_only(type(e), e)).strip()[:500] or type(e).__name__


def error_line(e: BaseException) -> str:
    """``TYPE: FIRST LINE`` (first_line) of an exception that is not an EtproofError."""
    return f"{type(e).__name__}: {first_line(e)}"


@contextlib.contextmanager
def in_stage(stage: str):
    """Re-raises anything but an EtproofError as ExportError(stage) with STAGE_REMEDY[stage]:
    ``STAGE failed: TYPE: FIRST LINE``. Interrupts (BaseException) pass through unchanged."""
    try:
        yield
    except EtproofError:
        raise
    except Exception as e:  # noqa: BLE001 - every failure becomes a typed, staged error
        raise ExportError(f"{stage} failed: {error_line(e)}", STAGE_REMEDY[stage],
                          stage=stage) from e
