#!/usr/bin/python3
"""Generate stripped ONNX test models of torchvision architectures for hetpool's model analyzer.

For each architecture below (all built with weights=None, so nothing is downloaded) this script
  * exports NAME.train.onnx (model.train(), TrainingMode.TRAINING: BatchNormalization and Dropout
    nodes kept) and NAME.eval.onnx (model.eval(), TrainingMode.EVAL: BN folded into Conv), opset 13
    (14 where 13 fails), input 'input' / output 'logits' with a dynamic batch axis named 'batch',
    do_constant_folding=True -- the same conventions as /work/shared/data/models (this script
    reproduces those files byte for byte). Training graphs of models with StochasticDepth
    (convnext_tiny, efficientnet_b0) are exported with drop-path p=0: torch 1.13 cannot export it;
  * runs onnx.shape_inference.infer_shapes (value_info kept);
  * clears tensor data (dims and data_type kept; doc_string set to "data stripped"): every floating-point initializer of rank >= 1
    (weights, biases, BN statistics -- whatever their size) and every initializer or Constant-node
    tensor with more than 64 elements. Scalars and small integer tensors (shape vectors, axes,
    indices for Reshape/Expand/Gather/Slice chains) keep their data so an importer can fold them;
  * counts, from the PyTorch module alone, the trainable parameters and the forward
    multiply-accumulates per sample of Conv/Linear/attention-MatMul (torchvision's "GFLOPS"
    convention) with forward hooks at batch 1 in eval mode;
  * writes REFERENCE.csv (same columns as the shared one) and OPS.csv (op-type counts per file).

Needs Debian's python3-torch, python3-torchvision and python3-onnx; run it with /usr/bin/python3:
    /usr/bin/python3 tools/gen_test_models.py --out tests/data/models
Optional: --only name1,name2 to regenerate a subset (REFERENCE.csv/OPS.csv rows of the other
models already in the folder are kept). --opset N exports at that opset alone, into
NAME.opsetN.train.onnx and NAME.opsetN.eval.onnx beside the opset 13 files (OPS.csv gets their
rows with that opset; REFERENCE.csv, the same model's counts, is left as it is). Newer opsets
export some layers as one op where opset 13 writes several (17: LayerNormalization; 14:
HardSwish); the tests check both forms convert to the same network:
    /usr/bin/python3 tools/gen_test_models.py --opset 17 --only convnext_tiny,mobilenet_v3_small
"""
import argparse
import csv
import io
import os
import sys
import time
import warnings
from collections import Counter

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision
import torchvision.models as tvm

# name, builder, kwargs, input size (C, H, W), torchvision's published GFLOPS (MACs, 1e9)
MODELS = [
    ("resnext50_32x4d", tvm.resnext50_32x4d, {}, (3, 224, 224), 4.23),
    ("mobilenet_v3_small", tvm.mobilenet_v3_small, {}, (3, 224, 224), 0.057),
    ("efficientnet_b0", tvm.efficientnet_b0, {}, (3, 224, 224), 0.386),
    ("densenet121", tvm.densenet121, {}, (3, 224, 224), 2.834),
    # 0.145 is torchvision's meta "_ops" (0.15+); the docs table rounds it to 0.14
    ("shufflenet_v2_x1_0", tvm.shufflenet_v2_x1_0, {}, (3, 224, 224), 0.145),
    ("squeezenet1_0", tvm.squeezenet1_0, {}, (3, 224, 224), 0.819),
    ("inception_v3", tvm.inception_v3, {"aux_logits": False, "init_weights": False}, (3, 299, 299), 5.713),
    ("googlenet", tvm.googlenet, {"aux_logits": False, "init_weights": False}, (3, 224, 224), 1.498),
    ("vit_b_16", tvm.vit_b_16, {}, (3, 224, 224), 17.564),
    ("convnext_tiny", tvm.convnext_tiny, {}, (3, 224, 224), 4.456),
    ("regnet_y_400mf", tvm.regnet_y_400mf, {}, (3, 224, 224), 0.402),
    ("mnasnet0_5", tvm.mnasnet0_5, {}, (3, 224, 224), 0.104),
]

OPSETS = (13, 14)
EXPORT_BATCH = 2          # >1 so that training-mode BatchNorm on 1x1 maps is legal while tracing
STRIP_ABOVE = 64          # tensors with more elements than this always lose their data
FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
               onnx.TensorProto.BFLOAT16}
DATA_FIELDS = ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
               "uint64_data", "string_data")


# ---------------------------------------------------------------------------------------------
# reference counts from PyTorch
# ---------------------------------------------------------------------------------------------
def count_macs(model, chw):
    """Forward MACs per sample of Conv / Linear / attention matmuls, via forward hooks (batch 1)."""
    total = [0]
    per_kind = Counter()
    hooks = []
    # Linear modules owned by a MultiheadAttention (out_proj) are counted by the MHA hook: the MHA
    # forward uses their weights functionally, so their own hook would not fire anyway.
    mha_children = set()
    for m in model.modules():
        if isinstance(m, nn.MultiheadAttention):
            for c in m.modules():
                if c is not m:
                    mha_children.add(id(c))

    def conv_hook(m, inp, out):
        kh_kw = int(np.prod(m.kernel_size))
        n = out.numel() * (m.in_channels // m.groups) * kh_kw
        total[0] += n
        per_kind["conv"] += n

    def convt_hook(m, inp, out):
        # each input element is multiplied into (out_channels/groups) * kh * kw outputs
        kh_kw = int(np.prod(m.kernel_size))
        n = inp[0].numel() * (m.out_channels // m.groups) * kh_kw
        total[0] += n
        per_kind["convtranspose"] += n

    def linear_hook(m, inp, out):
        rows = int(np.prod(out.shape[:-1]))
        n = rows * m.in_features * m.out_features
        total[0] += n
        per_kind["linear"] += n

    def mha_hook(m, inp, out):
        # torch 1.13 forward hooks do not see keyword arguments, and torchvision's ViT calls
        # self_attention(query=x, key=x, value=x): take the sizes from the output instead, which
        # is exact for self-attention (the only use in these models).
        if len(inp) >= 3:
            q, k, v = inp[0], inp[1], inp[2]
        else:
            q = k = v = out[0] if isinstance(out, tuple) else out
        if not m.batch_first:
            q, k, v = (t.transpose(0, 1) for t in (q, k, v))
        b, lq, e = q.shape
        lk = k.shape[1]
        kdim, vdim = k.shape[2], v.shape[2]
        hd = e // m.num_heads
        proj = b * (lq * e * e + lk * kdim * e + lk * vdim * e)   # in_proj Q, K, V
        outp = b * lq * e * e                                     # out_proj
        attn = b * m.num_heads * lq * lk * hd * 2                 # Q@K^T and attn@V
        total[0] += proj + outp + attn
        per_kind["linear"] += proj + outp
        per_kind["attn_matmul"] += attn

    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.ConvTranspose2d):
            hooks.append(m.register_forward_hook(convt_hook))
        elif isinstance(m, nn.Linear) and id(m) not in mha_children:
            hooks.append(m.register_forward_hook(linear_hook))
        elif isinstance(m, nn.MultiheadAttention):
            hooks.append(m.register_forward_hook(mha_hook))
    unknown = [type(m).__name__ for m in model.modules()
               if isinstance(m, (nn.Conv1d, nn.Conv3d, nn.Bilinear, nn.LSTM, nn.GRU, nn.RNN))]
    if unknown:
        raise RuntimeError("uncounted module types: %s" % sorted(set(unknown)))
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, *chw))
    for h in hooks:
        h.remove()
    return total[0], per_kind


# ---------------------------------------------------------------------------------------------
# ONNX export and stripping
# ---------------------------------------------------------------------------------------------
def export(model, chw, training, opsets=OPSETS):
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    model.train(training)
    x = torch.zeros(EXPORT_BATCH, *chw)
    last = None
    for opset in opsets:
        buf = io.BytesIO()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    model, x, buf, export_params=True, opset_version=opset,
                    training=mode, do_constant_folding=True,
                    input_names=["input"], output_names=["logits"],
                    dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
            return onnx.load_from_string(buf.getvalue()), opset
        except Exception as e:  # noqa: BLE001 -- try the next opset, report at the end
            last = e
    raise RuntimeError("export failed for opsets %s: %s" % (opsets, last))


def _numel(t):
    return int(np.prod(t.dims)) if len(t.dims) else 1


def _clear(t):
    for f in DATA_FIELDS:
        t.ClearField(f)
    t.doc_string = "data stripped"   # as in /work/shared/data/models


def strip(model):
    """Clear tensor data in place (dims/data_type kept). Returns (#stripped, #kept)."""
    stripped = kept = 0

    def visit_graph(g):
        nonlocal stripped, kept
        for t in g.initializer:
            if _numel(t) > STRIP_ABOVE or (t.data_type in FLOAT_TYPES and len(t.dims) >= 1):
                _clear(t)
                stripped += 1
            else:
                kept += 1
        for node in g.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    if _numel(a.t) > STRIP_ABOVE:
                        _clear(a.t)
                        stripped += 1
                    else:
                        kept += 1
                elif a.type == onnx.AttributeProto.GRAPH:
                    visit_graph(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        visit_graph(sg)

    visit_graph(model.graph)
    return stripped, kept


def op_counts(model):
    c = Counter()

    def visit(g):
        for n in g.node:
            c[n.op_type] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    visit(a.g)
    visit(model.graph)
    return c


# ---------------------------------------------------------------------------------------------
def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.reader(f))[1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/data/models")
    ap.add_argument("--only", default="", help="comma-separated subset of model names")
    ap.add_argument("--opset", type=int, default=0,
                    help="export at this opset alone, as NAME.opsetN.{train,eval}.onnx")
    args = ap.parse_args()
    opsets = (args.opset,) if args.opset else OPSETS
    infix = ".opset%d" % args.opset if args.opset else ""

    torch.set_num_threads(2)
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    known = {m[0] for m in MODELS}
    if only - known:
        sys.exit("unknown model(s): %s" % ", ".join(sorted(only - known)))

    ref_header = ["model", "input", "trainable_params", "forward_macs_per_sample",
                  "torchvision_published_gflops", "exports"]
    ops_header = ["model", "export", "opset", "op_type", "count"]
    ref_rows = {r[0]: r for r in read_csv(os.path.join(args.out, "REFERENCE.csv"))}
    ops_rows = [r for r in read_csv(os.path.join(args.out, "OPS.csv"))]
    failures = []
    notes = []

    print("torch %s, torchvision %s, onnx %s" % (torch.__version__, torchvision.__version__,
                                                onnx.__version__))
    for name, builder, kwargs, chw, published in MODELS:
        if only and name not in only:
            continue
        t0 = time.time()
        model = builder(weights=None, **kwargs)
        params = sum(p.numel() for p in model.parameters() if p.requires_grad)
        macs, kinds = count_macs(model, chw)
        ok = True
        # this model's rows of the files written now (another --opset's stay)
        ops_rows = [r for r in ops_rows if r[0] != name or int(r[2]) not in opsets]
        for tag, training in (("train", True), ("eval", False)):
            path = os.path.join(args.out, "%s%s.%s.onnx" % (name, infix, tag))
            try:
                # torch 1.13 cannot export the in-place bernoulli_ of torchvision's StochasticDepth
                # (convnext, efficientnet) at opset 13/14 ("ONNX export of operator Bernoulli, out
                # parameter is not supported"), and a failed attempt leaves the exporter in a state
                # where the next export of the same model fails too. So the training graph is
                # exported with drop-path off (p=0, which StochasticDepth turns into the identity):
                # parameters and MACs are unchanged; only the random residual mask is absent.
                sd = [mm for mm in model.modules()
                      if isinstance(mm, torchvision.ops.StochasticDepth) and mm.p > 0]
                if not training:
                    sd = []
                saved = [mm.p for mm in sd]
                for mm in sd:
                    mm.p = 0.0
                try:
                    m, opset = export(model, chw, training, opsets)
                finally:
                    for mm, p in zip(sd, saved):
                        mm.p = p
                if sd:
                    notes.append("%s.%s: exported with StochasticDepth p=0 (was %s)" % (
                        name, tag, sorted(set(saved))[-1]))
            except Exception as e:  # noqa: BLE001
                failures.append("%s.%s: %s" % (name, tag, str(e).splitlines()[0][:200]))
                ok = False
                if os.path.exists(path):
                    os.remove(path)
                continue
            m = onnx.shape_inference.infer_shapes(m)
            ns, nk = strip(m)
            onnx.save(m, path)
            for op, cnt in sorted(op_counts(m).items()):
                ops_rows.append([name, tag, str(opset), op, str(cnt)])
            print("  %-28s opset %d  %8d bytes  tensors stripped %d kept %d" % (
                os.path.basename(path), opset, os.path.getsize(path), ns, nk))
        rel = (macs / 1e9 - published) / published * 100
        print("%-20s params %10d  MACs %12d (%.4f G; published %.3f; %+.2f%%) %s  [%.1fs]" % (
            name, params, macs, macs / 1e9, published, rel, dict(kinds), time.time() - t0))
        if args.opset:
            pass  # the model's counts are the opset 13 files' row
        elif ok:
            ref_rows[name] = [name, "x".join(map(str, chw)), str(params), str(macs),
                              repr(published), "train+eval"]
        else:
            ref_rows.pop(name, None)

    order = [m[0] for m in MODELS]
    with open(os.path.join(args.out, "REFERENCE.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(ref_header)
        for n in order:
            if n in ref_rows:
                w.writerow(ref_rows[n])
    ops_rows.sort(key=lambda r: (order.index(r[0]), int(r[2]), r[1] != "train", r[3]))
    with open(os.path.join(args.out, "OPS.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(ops_header)
        w.writerows(ops_rows)
    if notes:
        print("NOTES:")
        for nt in notes:
            print("  " + nt)
    if failures:
        print("FAILED (skipped):")
        for fl in failures:
            print("  " + fl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
