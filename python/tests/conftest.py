"""Shared, session-scoped exports (real ExecuTorch, no mocks): export once, test many times."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn
import torch.nn.functional as F

warnings.filterwarnings("ignore", category=FutureWarning)

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "manifest_v1.json"
FIXTURE_V2 = REPO / "tests" / "fixtures" / "manifest_v2.json"


class PaddedConvNet(nn.Module):
    """F.pad -> conv (EfficientNet's static "same" padding in miniature) -> pool -> linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = F.pad(x, [0, 1, 0, 1])
        x = self.stem(x)
        return self.head(x.mean((2, 3)))


@pytest.fixture(scope="session")
def test_bundles(tmp_path_factory):
    """The tiny bundles (one per TEST_PAIRS entry), exported as `python -m etproof test-bundles`
    does (but for EfficientNet-Lite0's OpenVINO twin). Starts from a copy of build/test-bundles
    where test.sh (setup.sh) has exported them: the export's own stamps then decide, and a bundle
    whose sources, toolchain or inputs changed since is exported again here; the tests never write
    into build/."""
    from etproof.fixtures.testbundles import (
        ATTRIBUTION_BUNDLES,
        ATTRIBUTION_DIR,
        ATTRIBUTION_INT8_BUNDLES,
        ATTRIBUTION_INT8_DIR,
        ATTRIBUTION_SPACED_DIR,
        METHOD_BUNDLES,
        METHODS_DIR,
        PTD_BUNDLES,
        PTD_DIR,
        QUANTIZER_BUNDLES,
        QUANTIZER_DIR,
        SHAPE_BUNDLES,
        SHAPES_DIR,
        STATE_BUNDLES,
        STATE_DIR,
        TEST_PAIRS,
        export_test_bundles,
    )

    out = tmp_path_factory.mktemp("test-bundles")
    built = REPO / "build" / "test-bundles"
    if built.is_dir():
        subdirs = {SHAPES_DIR, PTD_DIR, QUANTIZER_DIR, METHODS_DIR, STATE_DIR, ATTRIBUTION_DIR,
                   ATTRIBUTION_SPACED_DIR, ATTRIBUTION_INT8_DIR}

        def not_exported_here(d, names):  # the OpenVINO twin, the verdict models, logs
            if Path(d) != built:
                return []
            return [n for n in names if n not in subdirs and not n.startswith("tiny-")
                    and n != ".etproof-stamps.json"]

        shutil.copytree(built, out, symlinks=True, ignore=not_exported_here, dirs_exist_ok=True)
    results = export_test_bundles(out, log=lambda _m: None, openvino_twin=False,
                                  bundled_programs=False)
    want = [("tiny", b, r) for b, r in TEST_PAIRS] + [
        (key, b, r) for key, _, pairs in SHAPE_BUNDLES + PTD_BUNDLES + QUANTIZER_BUNDLES
        + METHOD_BUNDLES
        + STATE_BUNDLES + ATTRIBUTION_BUNDLES for b, r in pairs] + [("gelu_mlp", "xnnpack", "fp32")] + [
        (key, b, r) for key, _, pairs in ATTRIBUTION_INT8_BUNDLES for b, r in pairs]
    assert [(r["model"], r["backend"], r["recipe"]) for r in results] == want, results
    assert [r["status"] for r in results] == ["exported"] * len(want), results
    return out


@pytest.fixture(scope="session")
def padded_int8_bundle(tmp_path_factory):
    from etproof.export.pipeline import export_model

    torch.manual_seed(1)
    model = PaddedConvNet().eval()
    x = torch.randn(1, 3, 16, 16)
    out = tmp_path_factory.mktemp("padded")
    path = export_model(model, (x,), "padded-int8", out, "xnnpack", "int8-dynamic-per-channel",
                        ["x"], ["y"], [("c0", "synthetic", "torch.randn seed 1", (x,))],
                        model_name="padded")
    return path


# ---- the MODULE:FUNCTION contract (unit/ and integration/ test_userspec.py) ----------------------

# The user's model file the MODULE:FUNCTION tests load (fixture ``mod``): a spec function per case.
MODULE = '''\
import torch

class Untraceable(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.export refuses it
            return x * 2
        return x - 1

def _spec(model):
    x = torch.ones(1, 4)
    return {"model": model, "example_inputs": (x,), "input_names": ["x"],
            "output_names": ["y"], "golden_inputs": [("ones", "synthetic", "torch.ones", (x,))]}

def make_model():
    return _spec(torch.nn.Linear(4, 2).eval())

def named():
    return dict(_spec(torch.nn.Linear(4, 2).eval()), name="lin")

def untraceable():
    return _spec(Untraceable())

def wrong():
    x = torch.ones(1, 4)
    return {"model": torch.nn.Linear(4, 2), "example_input": (x,), "input_names": ["x"],
            "golden_inputs": [("a", "random", "", (torch.ones(1, 5),))], "layouts": {"x": "nhcw"}}

def wrong_shapes():
    d = _spec(torch.nn.Linear(4, 2))
    d["golden_inputs"] = [("a", "real", "photo.png", (torch.ones(1, 5),)),
                          ("b c", "synthetic", "zeros", (torch.zeros(1, 4),))]
    return d

def boom():
    raise RuntimeError("kaput")

class Scale(torch.nn.Module):
    def forward(self, x):  # no linear, no conv: every int8 recipe quantizes nothing
        return torch.sin(x).flip(-1)

def no_linear():
    return _spec(Scale())

class Two(torch.nn.Module):
    def forward(self, x):
        return x * 2, x - 1

def wrong_outputs():  # one output name for two outputs, and an empty origin: two problems
    d = _spec(Two())
    d["golden_inputs"] = [("ones", "synthetic", "", (torch.ones(1, 4),))]
    return d
'''


@pytest.fixture
def mod(tmp_path):
    f = tmp_path / "user_model.py"
    f.write_text(MODULE)
    return f
