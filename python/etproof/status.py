"""The export half's status words, each spelled once (docs/errors.md, "The other status words").

export-report.json (``OUT/export-report.json``, written by etproof.export.runner.write_report,
canonical JSON) is ``{"results": [ENTRY, ...]}``, one ENTRY per (model, backend, recipe) column
asked for, where ENTRY is an object with:

    backend, recipe   str: the column
    status            one of EXPORT_STATUSES
    model             str: the model key (NAME in NAME-BACKEND-RECIPE); absent when the column
                      was refused before the model was loaded (it then stands for every model)
    bundle            str, EXPORTED only: the bundle's directory name, relative to OUT
    stage             str, not EXPORTED: where it stopped (etproof.errors.EXPORT_STAGES)
    reason            str, not EXPORTED: the error, one line (the matrix shows it)
    error             object, not EXPORTED, where a library failed: etproof.errors.error_detail

The runtime half reads it (the matrix's not-run lines: an EXPORT_REFUSED column is listed, an
EXPORT_FAILED one fails the run; docs/errors.md, "Status words of the matrix"); an xfail record's
export half matches entries by model, backend and recipe (docs/xfail.md).

Imports nothing: every module may use it.
"""

from __future__ import annotations

# An export-report entry's "status".
EXPORTED = "exported"
# Not exported, and not a failure: a prerequisite (package, SDK, OS) is missing or the recipe
# does not apply (etproof.errors.InvalidArgument, NothingToQuantize).
EXPORT_REFUSED = "export-refused"
# A stage failed (etproof.errors.ExportError and any exception that is not an EtproofError).
EXPORT_FAILED = "export-failed"
EXPORT_STATUSES = (EXPORTED, EXPORT_REFUSED, EXPORT_FAILED)
# The statuses that leave a command's exit code at 0 where a column may be refused (test-bundles'
# verdict models, golden-set's models with at least one exported column).
NOT_FAILED = (EXPORTED, EXPORT_REFUSED)

# The export probe's answer per backend (``python -m etproof probe``, etproof.probe.probe;
# docs/backends.md): it lowered a one-operation model to the backend's delegate here; it did not
# (the reason and what it needs are named); the backend was removed from ExecuTorch.
AVAILABLE = "available"
REFUSED = "refused"
REMOVED_UPSTREAM = "removed-upstream"
PROBE_STATUSES = (AVAILABLE, REFUSED, REMOVED_UPSTREAM)
