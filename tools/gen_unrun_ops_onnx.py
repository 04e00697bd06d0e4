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
which must be refused rather than trained as some other conv.  Also
three the engine's messages are checked on: concat_neg_axis.onnx (two
convs joined by a Concat on axis -3, which is the channels, as ONNX counts
from the end), flat_input.onnx (an MLP on a flat N x 192 input) and
reshape_3d.onnx (a conv's output reshaped to N x 4 x 64, then flattened);
and seg_map.onnx, a conv whose 4x8x8 output is a map, not class scores.

    /usr/bin/python3 tools/gen_unrun_ops_onnx.py --out tests/data/onnx

Needs python3-onnx (Debian).  The weights are zeros: only the architecture
is read.  The output is deterministic (no producer version, fixed names).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(nodes, name, weights, out, check=True, shape=(3, 8, 8),
         out_shape=(3,)):
    """The graph of nodes on an input of SHAPE with outputs of OUT_SHAPE
    (3 logits), as OUT/NAME.onnx."""
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", *shape])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", *out_shape])],
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
    fw8 = numpy_helper.from_array(np.zeros((3, 8), np.float32), "fw")
    w2 = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w2")
    save([conv,
          helper.make_node("Conv", ["input", "w2"], ["c2"],
                           kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          helper.make_node("Concat", ["c", "c2"], ["k"], axis=-3),
          helper.make_node("GlobalAveragePool", ["k"], ["g"])] + head,
         "concat_neg_axis", [w, w2, fw8, fb], a.out)
    fw192 = numpy_helper.from_array(np.zeros((3, 192), np.float32), "fw")
    save([helper.make_node("Gemm", ["input", "fw", "fb"], ["logits"],
                           transB=1)],
         "flat_input", [fw192, fb], a.out, shape=(192,))
    fw256 = numpy_helper.from_array(np.zeros((3, 256), np.float32), "fw")
    to3 = numpy_helper.from_array(np.array([0, 4, 64], np.int64), "to3")
    save([conv,
          helper.make_node("Reshape", ["c", "to3"], ["g"])] + head,
         "reshape_3d", [w, to3, fw256, fb], a.out)
    save([helper.make_node("Conv", ["input", "w"], ["logits"],
                           kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
         "seg_map", [w], a.out, out_shape=(4, 8, 8))


if __name__ == "__main__":
    main()
