#!/usr/bin/python3
"""bench_engine_torch.py - the PyTorch side of bench_engine: builds the same
network from a hetpool spec file, times training steps (zero_grad, forward,
cross-entropy, backward, SGD-momentum or Adam step) on the CPU with the same
thread count and batch, and prints the same line as bench_engine.

A model may also be a torchvision ONNX export, NAME.train.onnx[:BATCH] at
-s CxHxW: torchvision's NAME (weights=None) is built, with the changes that
make it the network the engine runs from the file: an adaptive average pool
whose output is larger than what reaches it (AlexNet's and VGG's 6x6 / 7x7,
exported at 224 as a fixed pool) passes its input on, and the first Linear
reads what comes.

Run with Debian's python (torch 1.13):
  /usr/bin/python3 benchmarks/bench_engine_torch.py -t 2 specs/a.json:64 ...
  /usr/bin/python3 benchmarks/bench_engine_torch.py -t 2 -s 3x64x64 \
      data/models/resnet18.train.onnx:16
"""
import os
import argparse
import json
import statistics
import sys
import time

import torch
from torch import nn


def build(spec):
    """nn.Sequential for the spec, with the engine's semantics: fc after
    conv layers flattens; a last softmax with "classes" is the loss's own;
    avg pool counts padding (PyTorch's default, as the engine)."""
    c, h, w = spec["input"]
    classes = spec.get("classes", 0)
    layers = spec["layers"]
    mods, flat = [], False
    for i, L in enumerate(layers):
        t = L["type"]
        if t == "conv":
            k, s, p = L["kernel"], L.get("stride", 1), L.get("pad", 0)
            mods.append(nn.Conv2d(c, L["filters"], k, s, p))
            c = L["filters"]
            h, w = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        elif t == "pool":
            k = L["kernel"]
            s, p = L.get("stride", k), L.get("pad", 0)
            if L.get("op", "max") == "max":
                mods.append(nn.MaxPool2d(k, s, p))
            else:
                mods.append(nn.AvgPool2d(k, s, p))
            h, w = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        elif t == "bn":
            mods.append(nn.BatchNorm1d(c) if flat else nn.BatchNorm2d(c))
        elif t == "relu":
            mods.append(nn.ReLU(inplace=True))
        elif t == "dropout":
            mods.append(nn.Dropout(L.get("p", 0.5)))
        elif t == "fc":
            if not flat:
                mods.append(nn.Flatten())
                c, h, w, flat = c * h * w, 1, 1, True
            mods.append(nn.Linear(c, L["units"]))
            c = L["units"]
        elif t == "softmax":
            if not (i == len(layers) - 1 and classes > 0):
                mods.append(nn.Softmax(dim=1))
        else:
            raise ValueError("unknown layer type %r" % t)
    return nn.Sequential(*mods), classes


def build_torchvision(path, shape):
    """torchvision's model named by the file, as the engine runs it."""
    import torchvision
    name = os.path.basename(path).split(".")[0]
    kw = {}
    if name in ("googlenet", "inception_v3"):
        # as tools/gen_test_models.py exported them: no auxiliary heads
        kw = {"aux_logits": False, "init_weights": False}
    model = getattr(torchvision.models, name)(weights=None, **kw)
    c, h, w = shape
    if hasattr(model, "avgpool") and hasattr(model, "features") and \
            isinstance(model.avgpool, nn.AdaptiveAvgPool2d):
        with torch.no_grad():
            f = model.features(torch.zeros(1, c, h, w))
        osz = model.avgpool.output_size
        osz = (osz, osz) if isinstance(osz, int) else osz
        if f.shape[2] <= osz[0] and f.shape[3] <= osz[1]:
            model.avgpool = nn.Identity()
            for i, m in enumerate(model.classifier):
                if isinstance(m, nn.Linear):
                    model.classifier[i] = nn.Linear(f[0].numel(),
                                                    m.out_features)
                    break
    if c != 3:
        # the stem reads c channels, as the engine's conversion
        for mod in model.modules():
            if isinstance(mod, nn.Conv2d) and mod.in_channels == 3:
                mod.__init__(c, mod.out_channels, mod.kernel_size,
                             mod.stride, mod.padding, bias=mod.bias is not None)
                break
    out = model(torch.zeros(2, c, h, w))
    return model, out.shape[1], {"name": name, "input": [c, h, w]}


def blas_name():
    """The BLAS this process loaded (Debian's torch does its Linear layers'
    and MatMuls' products through the system libblas.so.3: the reference
    implementation unless an optimized one, e.g. libopenblas0-pthread, is
    installed), from /proc/self/maps; "unknown" elsewhere."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f
                    if os.path.basename(line.split()[-1]).startswith(
                        "libblas.so")}
    except OSError:
        return "unknown"
    for lib in sorted(libs):
        # Debian's alternatives: .../blas/ is the reference, the others
        # are named by their folder (openblas-pthread, blis-openmp, ...)
        d = os.path.basename(os.path.dirname(os.path.realpath(lib)))
        return "reference" if d == "blas" else d
    return "unknown"


def bench(path, batch, args):
    torch.manual_seed(1)
    if path.endswith(".onnx"):
        model, classes, spec = build_torchvision(path, args.s)
    else:
        with open(path) as f:
            spec = json.load(f)
        model, classes = build(spec)
    model.train()
    x = torch.randn(batch, *spec["input"])
    y = torch.randint(0, max(classes, 1), (batch,))
    if args.adam:
        opt = torch.optim.Adam(model.parameters(), lr=0.001)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    ce = nn.CrossEntropyLoss()
    times, loss = [], None
    x = x.contiguous()
    for i in range(args.w + args.n):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = model(x)
        if classes > 0:
            loss = ce(out, y)
        else:
            loss = 0.5 * out.pow(2).sum() / batch
        loss.backward()
        opt.step()
        if i >= args.w:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print("impl=torch spec=%s batch=%d threads=%d steps=%d median_ms=%.3f "
          "min_ms=%.3f loss=%.4f blas=%s device=\"torch %s, %d threads\"" %
          (spec.get("name", "spec"), batch, torch.get_num_threads(), args.n,
           times[len(times) // 2], times[0], loss.item(), blas_name(),
           torch.__version__, torch.get_num_threads()), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", type=int, default=32, help="batch (default 32)")
    ap.add_argument("-t", type=int, default=0, help="threads (0: all)")
    ap.add_argument("-n", type=int, default=20, help="timed steps")
    ap.add_argument("-w", type=int, default=5, help="warm-up steps")
    ap.add_argument("--adam", action="store_true")
    ap.add_argument("-s", default="3x224x224",
                    help="input CxHxW of ONNX models (default 3x224x224)")
    ap.add_argument("specs", nargs="+", help="SPEC.json[:BATCH]")
    args = ap.parse_args()
    args.s = [int(v) for v in args.s.split("x")]
    if args.t > 0:
        torch.set_num_threads(args.t)
    else:
        import os
        torch.set_num_threads(os.cpu_count())
    for s in args.specs:
        path, batch = s, args.b
        if ":" in s and not s.rsplit(":", 1)[1].endswith((".json", ".onnx")):
            path, b = s.rsplit(":", 1)
            batch = int(b)
        bench(path, batch, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
