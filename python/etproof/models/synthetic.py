"""Synthetic golden cases the small test models share."""

from __future__ import annotations


def randn_cases(shape, seeds, scale: float = 2.0) -> list:
    """One case per seed, ``(f"case{i}", "synthetic", origin, (x,))``: x = torch.randn(shape) from
    a generator seeded with that seed, times ``scale`` (2: a wider range than N(0, 1))."""
    import torch

    cases = []
    for i, seed in enumerate(seeds):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(shape, generator=g) * scale
        cases.append((f"case{i}", "synthetic", f"torch.randn seed {seed} ×{scale:g}", (x,)))
    return cases
