#!/usr/bin/env python3
"""Write tests/data/onnx/lrn_selu.onnx: a small CNN with two ops the
engine does not run (LRN, as the original AlexNet normalised, and SELU),
so that tests can check that every such op is named at once; and
tests/data/onnx/cycle.onnx: the same CNN with an Add that reads its own
output (a graph with a cycle, which no exporter writes: a file damaged or
written by hand), which the trainer must refuse as bad input; and three
files whose Conv contradicts its own weight (also hand-made, never
exported): conv_kernel_mismatch.onnx (kernel_shape 5x5, a 3x3 weight),
conv_channels_mismatch.onnx (a 3-channel input, a weight for 7) and
conv_group_mismatch.onnx (group 2 on a weight that takes all 3 channels),
which must be refused rather than trained as some other conv.

    /usr/bin/python3 tools/gen_unrun_ops_onnx.py --out tests/data/onnx

Needs python3-onnx (Debian).  The weights are zeros: only the architecture
is read.  The output is deterministic (no producer version, fixed names).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(nodes, name, weights, out, check=True):
    """The graph of nodes on a 3x8x8 input with 3 logits, as OUT/NAME.onnx."""
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", 3])],
        weights)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.producer_name = "hetpool tools/gen_unrun_ops_onnx.py"
    if check:
        onnx.checker.check_model(m)
    os.makedirs(out, exist_ok=True)
    onnx.save(m, os.path.join(out, name + ".onnx"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    w = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
    fw = numpy_helper.from_array(np.zeros((3, 4), np.float32), "fw")
    fb = numpy_helper.from_array(np.zeros((3,), np.float32), "fb")
    conv = helper.make_node("Conv", ["input", "w"], ["c"],
                            kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    head = [
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], transB=1),
    ]
    save([conv,
          helper.make_node("LRN", ["c"], ["n"], size=3),
          helper.make_node("Selu", ["n"], ["s"]),
          helper.make_node("GlobalAveragePool", ["s"], ["g"])] + head,
         "lrn_selu", [w, fw, fb], a.out)
    # no onnx.checker here: the cycle is the point
    save([conv,
          helper.make_node("Add", ["c", "h"], ["h"], name="Add_h"),
          helper.make_node("GlobalAveragePool", ["h"], ["g"])] + head,
         "cycle", [w, fw, fb], a.out, check=False)
    # a Conv that its weight contradicts (the checker does not look at
    # shapes: onnx.shape_inference would refuse them)
    for name, shape, attrs in (
            ("conv_kernel_mismatch", (4, 3, 3, 3),
             dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2])),
            ("conv_channels_mismatch", (4, 7, 3, 3),
             dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
            ("conv_group_mismatch", (4, 3, 3, 3),
             dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2))):
        bw = numpy_helper.from_array(np.zeros(shape, np.float32), "w")
        save([helper.make_node("Conv", ["input", "w"], ["c"],
                               name="Conv_c", **attrs),
              helper.make_node("Relu", ["c"], ["r"]),
              helper.make_node("GlobalAveragePool", ["r"], ["g"])] + head,
             name, [bw, fw, fb], a.out)


if __name__ == "__main__":
    main()
