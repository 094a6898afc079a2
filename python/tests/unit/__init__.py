"""The export half's unit tests: no torch.export, no lowering probe, no built binary; never skip."""
