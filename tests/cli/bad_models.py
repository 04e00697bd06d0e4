#!/usr/bin/env python3
"""bad_models.py - write the hostile model files that tests/cli/trust_model.sh
feeds to hetpool, one file per case, into OUTDIR.

The ONNX files are encoded here by hand (protobuf wire format, field numbers
from onnx.proto), so neither the onnx package nor committed binaries are
needed.  The same files are the fuzz seeds in tests/fuzz/seeds/fuzz_onnx and
tests/fuzz/seeds/fuzz_spec, made with

    python3 tests/cli/bad_models.py --seeds tests/fuzz/seeds

Usage: bad_models.py OUTDIR | --seeds SEEDDIR
"""
import os
import struct
import sys

# TensorProto.DataType
FLOAT, INT64 = 1, 7
# AttributeProto.AttributeType
A_FLOAT, A_INT, A_STRING, A_TENSOR, A_INTS = 1, 2, 3, 4, 7


def varint(v):
    v &= (1 << 64) - 1  # negative int64 as ten bytes, like protobuf
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(field, v):
    return varint(field << 3) + varint(v)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def f_float(field, v):
    return varint(field << 3 | 5) + struct.pack("<f", v)


def tensor(name, dtype, dims, int64_data=None):
    """TensorProto: dims 1, data_type 2, int64_data 7, name 8."""
    b = b"".join(f_varint(1, d) for d in dims) + f_varint(2, dtype)
    for v in int64_data or []:
        b += f_varint(7, v)
    return b + f_bytes(8, name)


def value_info(name, dtype, dims):
    """ValueInfoProto with a tensor type; a str dim is symbolic."""
    shape = b""
    for d in dims:
        dim = f_bytes(2, d) if isinstance(d, str) else f_varint(1, d)
        shape += f_bytes(1, dim)
    tt = f_varint(1, dtype) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tt))


def attr(name, value, kind=None):
    """AttributeProto: name 1, f 2, i 3, s 4, t 5, ints 8, type 20."""
    b = f_bytes(1, name)
    if kind == A_TENSOR:
        return b + f_bytes(5, value) + f_varint(20, A_TENSOR)
    if isinstance(value, float):
        return b + f_float(2, value) + f_varint(20, A_FLOAT)
    if isinstance(value, int):
        return b + f_varint(3, value) + f_varint(20, A_INT)
    if isinstance(value, str):
        return b + f_bytes(4, value) + f_varint(20, A_STRING)
    return b + b"".join(f_varint(8, v) for v in value) + f_varint(20, A_INTS)


def node(op, inputs, outputs, name, attrs=()):
    """NodeProto: input 1, output 2, name 3, op_type 4, attribute 5."""
    b = b"".join(f_bytes(1, i) for i in inputs)
    b += b"".join(f_bytes(2, o) for o in outputs)
    b += f_bytes(3, name) + f_bytes(4, op)
    return b + b"".join(f_bytes(5, a) for a in attrs)


def const_i64(out, values, name=None, scalar=False):
    t = tensor(out, INT64, [] if scalar else [len(values)], values)
    return node("Constant", [], [out], name or out, [attr("value", t, A_TENSOR)])


def model(nodes, inputs, outputs, inits=(), opset=13):
    """ModelProto: ir_version 1, graph 7, opset_import 8.  GraphProto:
    node 1, name 2, initializer 5, input 11, output 12."""
    g = b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "bad")
    g += b"".join(f_bytes(5, t) for t in inits)
    g += b"".join(f_bytes(11, v) for v in inputs)
    g += b"".join(f_bytes(12, f_bytes(1, o)) for o in outputs)
    opset_id = f_bytes(1, "") + f_varint(2, opset)
    return f_varint(1, 8) + f_bytes(7, g) + f_bytes(8, opset_id)


X = value_info("x", FLOAT, ["batch", 3, 4, 4])


def div_zero(div_name="div0"):
    """x.reshape(n, 48 + x.size(1) // 0): the Div folds a shape chain."""
    return model(
        [
            node("Shape", ["x"], ["s"], "shape"),
            const_i64("i0", [0], scalar=True),
            const_i64("i1", [1], scalar=True),
            const_i64("zero", [0], scalar=True),
            const_i64("k48", [48], scalar=True),
            const_i64("axes", [0]),
            node("Gather", ["s", "i0"], ["n"], "gather_n", [attr("axis", 0)]),
            node("Gather", ["s", "i1"], ["c"], "gather_c", [attr("axis", 0)]),
            node("Div", ["c", "zero"], ["q"], div_name),
            node("Add", ["q", "k48"], ["w"], "add"),
            node("Unsqueeze", ["n", "axes"], ["nu"], "unsq_n"),
            node("Unsqueeze", ["w", "axes"], ["wu"], "unsq_w"),
            node("Concat", ["nu", "wu"], ["shape2"], "concat", [attr("axis", 0)]),
            node("Reshape", ["x", "shape2"], ["y"], "reshape"),
        ],
        [X],
        ["y"],
    )


def split(outputs, opset, num_outputs=None, sizes=None):
    ins, inits, attrs = ["x"], [], [attr("axis", 1)]
    if num_outputs is not None:
        attrs.append(attr("num_outputs", num_outputs))
    if sizes is not None:
        ins.append("sizes")
        inits.append(tensor("sizes", INT64, [len(sizes)], sizes))
    outs = ["y%d" % i for i in range(outputs)]
    return model([node("Split", ins, outs, "split", attrs)], [X], outs, inits, opset)


def conv_auto_pad(value):
    w = tensor("w", FLOAT, [8, 3, 3, 3])
    n = node("Conv", ["x", "w"], ["y"], "conv", [attr("auto_pad", value)])
    return model([n], [X], ["y"], [w])


def pool_auto_pad(value):
    attrs = [attr("kernel_shape", [2, 2]), attr("auto_pad", value)]
    return model([node("MaxPool", ["x"], ["y"], "pool", attrs)], [X], ["y"])


def dup_attr():
    w = tensor("w", FLOAT, [8, 3, 3, 3])
    attrs = [attr("strides", [1, 1]), attr("strides", [2, 2])]
    return model([node("Conv", ["x", "w"], ["y"], "conv", attrs)], [X], ["y"], [w])


def loss_batch(op="SoftmaxCrossEntropyLoss"):
    """Logits for 8 samples, labels for 4."""
    w = tensor("w", FLOAT, [10, 16])
    nodes = [node("Gemm", ["f", "w"], ["logits"], "fc", [attr("transB", 1)])]
    if op == "NegativeLogLikelihoodLoss":
        nodes.append(node("LogSoftmax", ["logits"], ["lp"], "logsoftmax"))
        nodes.append(node(op, ["lp", "labels"], ["loss"], "loss"))
    else:
        nodes.append(node(op, ["logits", "labels"], ["loss"], "loss"))
    ins = [value_info("f", FLOAT, [8, 16]), value_info("labels", INT64, [4])]
    return model(nodes, ins, ["loss"], [w])


def no_nodes():
    return model([], [value_info("x", FLOAT, ["batch", 16])], ["x"])


SPEC = (
    b'{"name": "cnn", "input": [3, 8, 8], "classes": 10, "layers": ['
    b'{"type": "conv", "filters": 4, "kernel": 3, "pad": 1}, {"type": "relu"},'
    b' {"type": "fc", "units": 10}]}\n'
)

# name -> (bytes, expected outcome); outcome "ok" means analysed (exit 0),
# anything else is the text the one-line error must contain.
CASES = {
    "div_zero.onnx": (div_zero(), "node 'div0' (Div): integer division by zero"),
    "split_more_outputs.onnx": (split(5, 13), "split evenly"),
    "split_uneven.onnx": (split(2, 13), "split evenly"),
    "split_num_outputs.onnx": (split(5, 18, num_outputs=5), "num_outputs 5"),
    "split_num_outputs_mismatch.onnx": (split(3, 18, num_outputs=2), "num_outputs 2"),
    "split_num_outputs_uneven.onnx": (split(2, 18, num_outputs=2), "ok"),
    "split_sizes_sum.onnx": (split(2, 13, sizes=[2, 2]), "add up to 4, not axis 1's size 3"),
    "split_sizes_negative.onnx": (split(2, 13, sizes=[4, -1]), "negative split size"),
    "auto_pad_conv.onnx": (conv_auto_pad("SAME_MIDDLE"), "auto_pad 'SAME_MIDDLE'"),
    "auto_pad_pool.onnx": (pool_auto_pad("same_upper"), "auto_pad 'same_upper'"),
    "dup_attr.onnx": (dup_attr(), "attribute 'strides' is given twice"),
    "loss_batch.onnx": (loss_batch(), "labels have batch 4, scores 8"),
    "nll_batch.onnx": (loss_batch("NegativeLogLikelihoodLoss"), "labels have batch 4"),
    "no_nodes.onnx": (no_nodes(), "no nodes: nothing to train"),
    # ESC, a clear-screen sequence and a newline in a node's name: the
    # message must stay one line with the bytes escaped.
    "control_name.onnx": (div_zero("evil\x1b[2J\nname"), r"evil\x1b[2J\nname"),
    "bom.json": (b"\xef\xbb\xbf" + SPEC, "ok"),
    "bom_space.json": (b"\xef\xbb\xbf \n" + SPEC, "ok"),
    "array.json": (b"[" + SPEC.rstrip() + b"]\n", "the top level must be an object"),
    "bom_array.json": (b"\xef\xbb\xbf [1, 2]", "the top level must be an object"),
}


def main(argv):
    if len(argv) == 3 and argv[1] == "--seeds":
        for name, (data, _) in CASES.items():
            sub = "fuzz_spec" if name.endswith(".json") else "fuzz_onnx"
            os.makedirs(os.path.join(argv[2], sub), exist_ok=True)
            with open(os.path.join(argv[2], sub, "bad_" + name), "wb") as f:
                f.write(data)
        return 0
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    with open(os.path.join(argv[1], "CASES"), "w") as index:
        for name, (data, want) in CASES.items():
            with open(os.path.join(argv[1], name), "wb") as f:
                f.write(data)
            index.write("%s\t%s\n" % (name, want))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
