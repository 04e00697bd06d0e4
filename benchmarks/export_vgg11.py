#!/usr/bin/python3
"""export_vgg11.py OUT.onnx - torchvision's VGG-11 as the shared model files
were made (../shared/data/README.md): torch 1.13 / torchvision 0.14 (Debian
python3-torch), weights=None, training mode (Dropout kept), opset 13, a
dynamic batch axis, shape inference run, the tensors' data cleared (dims and
types kept).  data/models/vgg11.train.onnx was written by this script; it is
the VGG of benchmarks/arch_check.sh (the shared files have VGG-16 only)."""
import sys

import onnx
import torch
import torchvision

m = torchvision.models.vgg11(weights=None)
m.train()
tmp = sys.argv[1] + ".full"
torch.onnx.export(m, torch.randn(1, 3, 224, 224), tmp, opset_version=13,
                  training=torch.onnx.TrainingMode.TRAINING,
                  do_constant_folding=False, input_names=["input"],
                  output_names=["output"],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
mo = onnx.shape_inference.infer_shapes(onnx.load(tmp))
for t in mo.graph.initializer:
    t.ClearField("raw_data")
    t.ClearField("float_data")
onnx.save(mo, sys.argv[1])
import os
os.remove(tmp)
