"""MobileNetV3-Small, torchvision's architecture, with seeded weights.

The architecture (layer configuration, module names and weight init) follows
torchvision.models.mobilenet_v3_small (torchvision/models/mobilenetv3.py), written out here
because torchvision cannot be imported beside torch 2.13.0 on these machines ("operator
torchvision::nms does not exist"). Module names match torchvision's, so its state dicts load.

  torchvision: BSD 3-Clause License
  Copyright (c) Soumith Chintala 2016, All rights reserved.
  Redistribution and use in source and binary forms, with or without modification, are permitted
  provided that the following conditions are met: (1) redistributions of source code must retain
  the above copyright notice, this list of conditions and the following disclaimer;
  (2) redistributions in binary form must reproduce the above copyright notice, this list of
  conditions and the following disclaimer in the documentation and/or other materials provided
  with the distribution; (3) neither the name of the copyright holder nor the names of its
  contributors may be used to endorse or promote products derived from this software without
  specific prior written permission. THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND
  CONTRIBUTORS "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
  IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO
  EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT,
  INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO,
  PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
  INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT
  LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF
  THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.

Weights: seeded (torch.manual_seed(0), then torchvision's init: kaiming-normal fan-out convs,
BatchNorm weight 1 / bias 0, Linear N(0, 0.01)); not trained, so the logits are not ImageNet
predictions and the manifest says ``weights.kind = "seeded"`` and carries no labels. With
BatchNorm's initial running statistics (mean 0, var 1) the activations vanish through the
network (fan-out init of the depthwise convs: the logits are ~1e-9, where any absolute bound
passes anything), so ``spec`` re-estimates the BatchNorm running statistics on the golden inputs
(one train-mode pass over all of them as one batch, cumulative average) and the manifest's
``weights.source`` says so. Golden
inputs: the six real photos (etproof.demo.photos) with torchvision's ImageNet preprocessing, plus one
synthetic image.
"""

from __future__ import annotations

from etproof.demo import efficientnet_lite0
from etproof.demo.photos import golden_photos

MODEL_NAME = "mobilenet_v3_small"
INPUT = "image"
OUTPUT = "logits"
WEIGHTS = {"kind": "seeded", "source": "torch.manual_seed(0), torchvision's init; BatchNorm "
                                       "running statistics re-estimated on the golden inputs"}
# torchvision's ImageNet transform (resize 256, centre crop 224, mean/std on [0, 1]), on 0..255:
# EfficientNet-Lite0's resize, crop, input name and value range, with torchvision's mean and std.
PREPROCESSING = dict(efficientnet_lite0.PREPROCESSING,
                     mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                     std=[0.229 * 255, 0.224 * 255, 0.225 * 255])
SYNTHETIC_SEED = 0

# torchvision's mobilenet_v3_small setting: input, kernel, expanded, out, SE, activation, stride
SETTING = (
    (16, 3, 16, 16, True, "RE", 2),
    (16, 3, 72, 24, False, "RE", 2),
    (24, 3, 88, 24, False, "RE", 1),
    (24, 5, 96, 40, True, "HS", 2),
    (40, 5, 240, 40, True, "HS", 1),
    (40, 5, 240, 40, True, "HS", 1),
    (40, 5, 120, 48, True, "HS", 1),
    (48, 5, 144, 48, True, "HS", 1),
    (48, 5, 288, 96, True, "HS", 2),
    (96, 5, 576, 96, True, "HS", 1),
    (96, 5, 576, 96, True, "HS", 1),
)
LAST_CHANNEL = 1024


def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def build_model(num_classes: int = 1000):
    import torch
    from torch import nn

    def norm(c):
        return nn.BatchNorm2d(c, eps=0.001, momentum=0.01)

    def conv_bn_act(cin, cout, k, stride=1, groups=1, act=None):
        layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                  norm(cout)]
        if act is not None:
            layers.append(act(inplace=True))
        return nn.Sequential(*layers)  # torchvision's Conv2dNormActivation: 0 conv, 1 bn, 2 act

    class SqueezeExcitation(nn.Module):
        def __init__(self, cin, csq):
            super().__init__()
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(cin, csq, 1)
            self.fc2 = nn.Conv2d(csq, cin, 1)
            self.activation = nn.ReLU()
            self.scale_activation = nn.Hardsigmoid()

        def forward(self, x):
            s = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
            return s * x

    class InvertedResidual(nn.Module):
        def __init__(self, cin, k, cexp, cout, se, act, stride):
            super().__init__()
            self.use_res_connect = stride == 1 and cin == cout
            a = nn.Hardswish if act == "HS" else nn.ReLU
            layers = []
            if cexp != cin:
                layers.append(conv_bn_act(cin, cexp, 1, act=a))
            layers.append(conv_bn_act(cexp, cexp, k, stride, groups=cexp, act=a))
            if se:
                layers.append(SqueezeExcitation(cexp, _make_divisible(cexp // 4, 8)))
            layers.append(conv_bn_act(cexp, cout, 1))
            self.block = nn.Sequential(*layers)

        def forward(self, x):
            y = self.block(x)
            return y + x if self.use_res_connect else y

    class MobileNetV3(nn.Module):
        def __init__(self):
            super().__init__()
            layers = [conv_bn_act(3, SETTING[0][0], 3, 2, act=nn.Hardswish)]
            layers += [InvertedResidual(*c) for c in SETTING]
            last_in = SETTING[-1][3]
            layers.append(conv_bn_act(last_in, 6 * last_in, 1, act=nn.Hardswish))
            self.features = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Sequential(
                nn.Linear(6 * last_in, LAST_CHANNEL), nn.Hardswish(inplace=True),
                nn.Dropout(p=0.2, inplace=True), nn.Linear(LAST_CHANNEL, num_classes))
            for m in self.modules():  # torchvision's init
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out")
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.avgpool(self.features(x))
            return self.classifier(torch.flatten(x, 1))

    torch.manual_seed(0)
    return MobileNetV3().eval()


def recalibrate_batchnorm(model, inputs) -> None:
    """BatchNorm running statistics := the statistics of ``inputs`` (one batch, train mode)."""
    import torch
    from torch import nn

    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average: one pass sets the batch's statistics
    model.train()
    with torch.no_grad():
        model(inputs)
    for bn in bns:
        bn.momentum = 0.01
    model.eval()


def golden_inputs(photos=None) -> list:
    import torch

    photos = photos if photos is not None else golden_photos()
    cases = [(p.id, "real", p.origin,
              (torch.from_numpy(efficientnet_lite0.preprocess(p.path, PREPROCESSING)),))
             for p in photos]
    g = torch.Generator().manual_seed(SYNTHETIC_SEED)
    cases.append((f"seed{SYNTHETIC_SEED}", "synthetic",
                  f"torch.randn seed {SYNTHETIC_SEED} [1, 3, 224, 224] (the normalized range)",
                  (torch.randn(1, 3, 224, 224, generator=g),)))
    return cases


def spec(photos=None) -> dict:
    """export_model keyword arguments: real photos (torchvision preprocessing) + one synthetic."""
    import torch

    cases = golden_inputs(photos)
    model = build_model()
    recalibrate_batchnorm(model, torch.cat([c[3][0] for c in cases]))
    return {
        "model": model,
        "example_inputs": cases[0][3],
        "input_names": [INPUT],
        "output_names": [OUTPUT],
        "golden_inputs": cases,
        "preprocessing": PREPROCESSING,
        "layouts": {INPUT: "nchw"},
        "model_name": MODEL_NAME,
        "weights": dict(WEIGHTS),
    }
