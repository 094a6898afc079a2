"""The image-classification demo (a product, not a test fixture): EfficientNet-Lite0 with its real
weights (``efficientnet_lite0``), the six real photos and their licences (``photos``), and its
export on every supported (backend, recipe) column (``demo``: ``python -m etproof demo``).

Layer 3 (python/tests/unit/test_layering.py): may import the export stages, the contract and the root
modules; never the probe, the golden set, the fixtures or the CLI.
"""
