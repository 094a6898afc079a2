"""The export half's command line: ``python -m etproof {export,probe,demo,golden-set,test-bundles,
plot-attribution}`` (``main``: parser, commands, exit codes), ``quiet`` (the libraries' output
kept in a log file during an export) and ``plot`` (pictures of the runtime half's reports).

Layer 6, the top (python/tests/unit/test_layering.py), with etproof.__main__: may import every layer.
The commands that export import the exporter when they run, not at import, so that ``python -m
etproof probe`` answering from its cache stays under 0.1 s.
"""
