#!/usr/bin/env python3
"""Write tests/fuzz/seeds/fuzz_onnx/convnext_block.onnx: torchvision's
ConvNeXt stem (a 2x2 stride-2 conv and LayerNorm2d), one CNBlock of 8
channels (depthwise 7x7, LayerNorm on channels-last data, Linear, GELU,
Linear, layer scale, residual) and a small classifier, exported as
torchvision's models are (opset 13, training mode), for the ONNX fuzzer to
start from ConvNeXt's forms.

    /usr/bin/python3 tools/gen_convnext_seed.py --out tests/fuzz/seeds/fuzz_onnx

Needs Debian's python3-torch, python3-torchvision and python3-onnx.
"""
import argparse
import io
import os

import onnx
import torch
from torch import nn
from torchvision.models.convnext import CNBlock, LayerNorm2d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 2, 2), LayerNorm2d(8, eps=1e-6),
        CNBlock(8, layer_scale=1e-6, stochastic_depth_prob=0.0),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3))
    model.train()
    buf = io.BytesIO()
    torch.onnx.export(model, torch.zeros(2, 3, 8, 8), buf, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    m = onnx.load_from_string(buf.getvalue())
    m.producer_version = ""
    onnx.save(m, os.path.join(a.out, "convnext_block.onnx"))


if __name__ == "__main__":
    main()
