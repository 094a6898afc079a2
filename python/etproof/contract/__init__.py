"""The model contract: what a caller may hand the exporter, checked before anything runs.

``recipes`` (the supported (backend, recipe) pairs, from the backend table), ``arguments``
(export_model's arguments checked and normalized; the manifest's tensor specs), ``program`` (a
program's methods: the ``methods`` entry of a spec, one Method per method) and ``userspec`` (the
MODULE:FUNCTION contract of ``python -m etproof export``: loaded and checked in one place).

Layer 1 of the export half (python/tests/unit/test_layering.py): may import the package's root
modules (errors, status, backends, manifest) and nothing of the stages above; torch only inside
functions.
"""
