"""The export stages: one PyTorch model to one bundle, and one model to several columns.

``pipeline.export_model`` runs the stages in order (arguments checked, goldens, torch.export,
``quantize``, ``references``, ``lower`` with ``delegation``, the tapped twin: ``taps``,
``taps_quantized``, ``twin``; serialize, ``targets``, ``toolchain``, ``bundle``, the manifest).
``runner.export_pairs`` exports one model for several (backend, recipe) columns, one failure
never stopping the next, reusing bundles by ``cache``'s stamps.

Layer 2 of the export half (python/tests/unit/test_layering.py): may import the model contract
(etproof.contract) and the root modules; never the probe, the products above it or the CLI.
Importing any module here imports no torch, ExecuTorch or torchao (they are imported inside the
functions that need them). This file imports nothing, so ``etproof.export.lower`` alone (the
probe's need) does not bring in the pipeline.
"""
