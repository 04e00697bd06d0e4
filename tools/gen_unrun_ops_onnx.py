#!/usr/bin/env python3
"""Write tests/data/onnx/lrn_selu.onnx: a small CNN with two ops the
engine does not run (LRN, as the original AlexNet normalised, and SELU),
so that tests can check that every such op is named at once; and
tests/data/onnx/cycle.onnx: the same CNN with an Add that reads its own
output (a graph with a cycle, which no exporter writes: a file damaged or
written by hand), which the trainer must refuse as bad input.

    /usr/bin/python3 tools/gen_unrun_ops_onnx.py --out tests/data/onnx

Needs python3-onnx (Debian).  The weights are zeros: only the architecture
is read.  The output is deterministic (no producer version, fixed names).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    w = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
    fw = numpy_helper.from_array(np.zeros((3, 4), np.float32), "fw")
    fb = numpy_helper.from_array(np.zeros((3,), np.float32), "fb")
    nodes = [
        helper.make_node("Conv", ["input", "w"], ["c"], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("LRN", ["c"], ["n"], size=3),
        helper.make_node("Selu", ["n"], ["s"]),
        helper.make_node("GlobalAveragePool", ["s"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], transB=1),
    ]
    g = helper.make_graph(
        nodes, "lrn_selu",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", 3])],
        [w, fw, fb])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.producer_name = "hetpool tools/gen_unrun_ops_onnx.py"
    onnx.checker.check_model(m)
    os.makedirs(a.out, exist_ok=True)
    onnx.save(m, os.path.join(a.out, "lrn_selu.onnx"))

    nodes = [
        nodes[0],
        helper.make_node("Add", ["c", "h"], ["h"], name="Add_h"),
        helper.make_node("GlobalAveragePool", ["h"], ["g"]),
        nodes[4], nodes[5],
    ]
    g = helper.make_graph(
        nodes, "cycle",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", 3])],
        [w, fw, fb])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.producer_name = "hetpool tools/gen_unrun_ops_onnx.py"
    # no onnx.checker: the cycle is the point
    onnx.save(m, os.path.join(a.out, "cycle.onnx"))


if __name__ == "__main__":
    main()
