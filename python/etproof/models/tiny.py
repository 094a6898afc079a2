"""The tiny model of the C++ tests: Conv2d -> Hardswish -> AdaptiveAvgPool2d -> Linear."""

from __future__ import annotations

from etproof.models.synthetic import randn_cases

INPUT_SHAPE = (1, 3, 16, 16)
CASE_SEEDS = (100, 101, 102)


def build_model():
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.Hardswish(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 4),
    ).eval()


def golden_inputs():
    """Three synthetic cases: torch.randn from a fixed seed, times 2 (a wider range than N(0,1))."""
    return randn_cases(INPUT_SHAPE, CASE_SEEDS)


def spec() -> dict:
    """export_model keyword arguments (the MODULE:FUNCTION contract of ``etproof export``)."""
    cases = golden_inputs()
    return {
        "model": build_model(),
        "example_inputs": cases[0][3],
        "input_names": ["x"],
        "output_names": ["y"],
        "golden_inputs": cases,
        "layouts": {"x": "nchw"},
        "model_name": "tiny",
    }
