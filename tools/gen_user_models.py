#!/usr/bin/python3
"""Export small CNNs as users write and export them, for the engine's converter tests.

torchvision's models (tools/gen_test_models.py) are one exporter's forms of one
library's code. Users' own models and exports differ: they end in log_softmax, scale
their input in forward(), use tanh, LeakyReLU, PReLU and ELU, adaptive max pooling, group
and instance norm, export at an old opset or without their parameters. Each model here is
one of those forms; every one runs in hetpool's engine, and tests/cli/onnx_engine.sh
checks that each converts, which layers its spec has, and that the analysis counts
PyTorch's parameters.

Writes into --out (default tests/data/onnx):
  user_*.onnx   training-mode exports (torch.onnx.export, TrainingMode.TRAINING), input
                'input' [batch, C, H, W] with a dynamic batch axis; tensor data stripped as
                tools/gen_test_models.py strips it (dims kept);
  USER.csv      file, input (CxHxW), trainable parameters (sum of p.numel() over
                requires_grad parameters), opset, what the file shows.

Needs Debian's python3-torch, python3-onnx; run with /usr/bin/python3:
    /usr/bin/python3 tools/gen_user_models.py --out tests/data/onnx
"""
import argparse
import csv
import io
import os
import sys
import warnings

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_test_models import strip  # noqa: E402  (same stripping as the other test models)


class MnistExample(nn.Module):
    """pytorch/examples' mnist/main.py Net: log_softmax output for its NLL loss."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


class LeNetTanh(nn.Module):
    """LeNet-5 as textbooks draw it: tanh and average pooling."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.Tanh(), nn.AvgPool2d(2),
            nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2), nn.Flatten(),
            nn.Linear(400, 120), nn.Tanh(), nn.Linear(120, 84), nn.Tanh(), nn.Linear(84, 10))

    def forward(self, x):
        return self.f(x)


class AtariDQN(nn.Module):
    """The Nature DQN network: scales its uint8 frames by 1/255 in forward()."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv2d(4, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, 1), nn.ReLU(), nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(),
            nn.Linear(512, 6))

    def forward(self, x):
        return self.f(x / 255.0)


class LeakyEluNet(nn.Module):
    """A small residual CNN with normalized input, LeakyReLU, ELU, a scaled residual
    branch and adaptive max pooling."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                                  nn.LeakyReLU(0.1))
        self.branch = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ELU())
        self.head = nn.Sequential(nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x):
        x = self.stem((x - 0.5) / 0.25)
        return self.head(x + 0.2 * self.branch(x))


class DilatedMishNet(nn.Module):
    """Dilated convs (a wider receptive field at the same cost) and Mish, as
    YOLOv4's backbone uses it; GELU on the classifier's hidden layer."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.Mish(), nn.Conv2d(16, 16, 3, padding=2, dilation=2),
            nn.BatchNorm2d(16), nn.Mish(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=4, dilation=4),
            nn.Softplus(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 64), nn.GELU(),
            nn.Linear(64, 10))

    def forward(self, x):
        return self.f(x)


class GroupNormResNet(nn.Module):
    """Group norm in place of batch norm, as small-batch training (detection,
    segmentation, data-parallel ranks with few samples each) uses it: 8 groups
    of the channels, a residual block."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.GroupNorm(8, 32),
                                  nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.GroupNorm(8, 32),
                                   nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1, bias=False),
                                   nn.GroupNorm(8, 32))
        self.head = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1, bias=False),
                                  nn.GroupNorm(32, 64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                  nn.Flatten(), nn.Linear(64, 10))

    def forward(self, x):
        x = self.stem(x)
        return self.head(F.relu(x + self.block(x)))


class InstanceNormNet(nn.Module):
    """Instance norm (style-transfer and GAN discriminators' habit): one
    with a learned scale and shift, one without; a group norm without."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.InstanceNorm2d(16, affine=True), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.InstanceNorm2d(16), nn.LeakyReLU(0.2),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.GroupNorm(4, 32, affine=False), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x):
        return self.f(x)


class PReluNet(nn.Module):
    """PReLU as face-recognition backbones (ArcFace's IR blocks) and ENet use
    it: a learned slope per channel after conv and batch norm, and
    nn.PReLU()'s single shared slope on the embedding."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.PReLU(16),
            nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.PReLU(32),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 64), nn.PReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.f(x)


class ZeroPadNet(nn.Module):
    """Explicit zero padding before convs, as Keras ports and TensorFlow's
    "same" emulation write it: nn.ZeroPad2d(1), and (0, 1, 0, 1) before a
    stride-2 conv (PyTorch computes F.pad's pads with ConstantOfShape,
    Concat, Reshape, a reversing Slice, Transpose and Cast), then
    x.amax((2, 3)) as the global pooling."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.ZeroPad2d(1), nn.Conv2d(3, 16, 3), nn.ReLU(), nn.ZeroPad2d((0, 1, 0, 1)),
            nn.Conv2d(16, 32, 3, stride=2), nn.ReLU())
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(self.f(x).amax((2, 3)))


class PoolFormsNet(nn.Module):
    """Global pooling as older and hand-written code spells it, three
    branches concatenated: adaptive_avg_pool2d(x, 1).squeeze(-1).squeeze(-1),
    x.mean(3).mean(2) and x.sum((2, 3))."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 16, 3, padding=1)
        self.fc = nn.Linear(48, 10)

    def forward(self, x):
        x = F.relu(self.c(x))
        a = F.adaptive_avg_pool2d(x, 1).squeeze(-1).squeeze(-1)
        return self.fc(torch.cat([a, x.mean(3).mean(2), x.sum((2, 3)) / 1024], 1))


class InputNormNet(nn.Module):
    """torchvision's input normalization inside the model, (x - mean) / std
    with ImageNet's mean and std per channel as buffers (timm's and Keras's
    Normalization layers do the same)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
        self.f = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                               nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x):
        return self.f((x - self.mean) / self.std)


# models whose small stored constants (at most 16 values: a mean and std per
# channel) keep their data, which the conversion reads
KEEP_SMALL = {"user_input_norm"}


def params(m):
    return sum(p.numel() for p in m.parameters() if p.requires_grad)


# file, module builder, input C, H, W, opset, export_params, what it shows
MODELS = [
    ("user_mnist_example", MnistExample, (1, 28, 28), 13, True,
     "ends in log_softmax (pytorch/examples mnist)"),
    ("user_lenet_tanh", LeNetTanh, (1, 28, 28), 13, True, "tanh and average pools"),
    ("user_dqn", AtariDQN, (4, 84, 84), 13, True, "x / 255 in forward()"),
    ("user_leaky_elu", LeakyEluNet, (3, 32, 32), 13, True,
     "input normalization, LeakyReLU, ELU, a residual branch * 0.2, AdaptiveMaxPool2d(1)"),
    ("user_dilated_mish", DilatedMishNet, (3, 32, 32), 13, True,
     "dilated convs, Mish (Softplus, Tanh, Mul), Softplus, GELU on flat data"),
    ("user_googlenet_opset9", lambda: torchvision.models.googlenet(
        weights=None, aux_logits=False, init_weights=False), (3, 224, 224), 9, True,
     "opset 9: ceil-mode max pools written as longer end pads"),
    ("user_resnet18_noparams", lambda: torchvision.models.resnet18(weights=None), (3, 64, 64),
     13, False, "export_params=False: the parameters are graph inputs"),
    ("user_groupnorm", GroupNormResNet, (3, 32, 32), 13, True,
     "GroupNorm (Reshape, InstanceNormalization, Reshape, Mul, Add) in a residual net"),
    ("user_instancenorm", InstanceNormNet, (3, 32, 32), 13, True,
     "InstanceNorm2d with and without affine, GroupNorm without affine"),
    ("user_prelu", PReluNet, (3, 32, 32), 13, True,
     "PReLU with a slope per channel and nn.PReLU()'s one shared slope"),
    ("user_zeropad", ZeroPadNet, (3, 32, 32), 13, True,
     "nn.ZeroPad2d before convs (even and one-sided), x.amax((2, 3))"),
    ("user_pool_forms", PoolFormsNet, (3, 32, 32), 13, True,
     "global pooling as squeeze(-1).squeeze(-1), mean(3).mean(2) and sum((2, 3))"),
    ("user_input_norm", InputNormNet, (3, 32, 32), 13, True,
     "(x - mean) / std per channel inside the model (buffers of 3 values)"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/data/onnx")
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    for name, build, chw, opset, with_params, what in MODELS:
        m = build()
        m.train()
        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(m, torch.zeros(2, *chw), buf, opset_version=opset,
                              training=torch.onnx.TrainingMode.TRAINING,
                              export_params=with_params, do_constant_folding=True,
                              input_names=["input"], output_names=["output"],
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        model = onnx.load_from_string(buf.getvalue())
        small = {t.name: onnx.TensorProto.FromString(t.SerializeToString())
                 for t in model.graph.initializer
                 if name in KEEP_SMALL and 0 < len(t.raw_data) <= 64}
        strip(model)
        for t in model.graph.initializer:
            if t.name in small:
                t.CopyFrom(small[t.name])
        path = os.path.join(args.out, name + ".onnx")
        onnx.save(model, path)
        rows.append([name + ".onnx", "x".join(map(str, chw)), str(params(m)), str(opset), what])
        print("%-32s %8d bytes  params %9d  opset %d  %s" % (
            name + ".onnx", os.path.getsize(path), params(m), opset, what))
    with open(os.path.join(args.out, "USER.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["file", "input", "trainable_params", "opset", "shows"])
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
