"""Typed errors. Each carries a cause and a remedy; str() is "cause (remedy: ...)"."""

from __future__ import annotations

EXPORT_STAGES = ("export", "quantize", "lower", "serialize", "goldens")


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


class ManifestError(EtproofError):
    """A manifest document is invalid; ``field`` names the offending field (dotted path)."""

    kind = "manifest-invalid"

    def __init__(self, cause: str, remedy: str = "", *, field: str | None = None):
        self.field = field
        super().__init__(cause, remedy)


class InvalidArgument(EtproofError):
    """A caller passed something etproof does not accept (unknown backend/recipe, bad name...)."""

    kind = "invalid-argument"
