"""``python -m etproof.probe --child KEY | --server``: the probe's own processes (etproof.probe.probe)."""

import sys

from etproof.probe.probe import main

sys.exit(main(sys.argv[1:]))
