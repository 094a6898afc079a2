"""The golden set (``python -m etproof golden-set``): every golden model on every demo column.

``golden_set`` (the run, its model keys and data/golden-xfail.json), and the golden models beside
the demo's EfficientNet-Lite0: ``minilm`` (all-MiniLM-L6-v2, real weights), ``mobilenet_v3_small``
(torchvision's architecture, seeded weights), ``ops`` (one tiny model per operator family) and
``llama`` (ExecuTorch's example Llama with its KV cache: sequence cases, the LLM recipes).

Layer 4 (python/tests/unit/test_layering.py): may import the demo, the export stages, the contract and
the root modules; never the fixtures, the probe or the CLI.
"""
