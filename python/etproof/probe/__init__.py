"""The export probe (``python -m etproof probe``): does a backend lower here? Answered by doing it.

``probe`` lowers a one-operation model per backend in a child process (``python -m
etproof.probe``: ``__main__``), forked from one server that imported torch once, and caches the
answers.

Layer 3 (python/tests/unit/test_layering.py): may import the export stages (etproof.export.lower,
etproof.export.toolchain), the contract and the root modules; only the CLI imports it, and no
export reads it (etproof.export.cache.NOT_EXPORT_INPUTS).
"""
