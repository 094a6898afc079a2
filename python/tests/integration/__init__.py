"""The export half's integration tests: real exports (the session's test bundles, their own), the
lowering probe's children and the built binaries; they skip where a backend is missing here."""
