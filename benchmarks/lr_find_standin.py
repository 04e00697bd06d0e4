#!/usr/bin/python3
"""lr_find_standin.py - a NumPy stand-in for hetpool-train, for trying
`hetpool lr-find` and benchmarks/lr_find_check.sh before the real trainer
is in the build.  It is NOT hetpool-train: it trains only specs made of
fc / relu / dropout layers (an MLP, on the flattened image), on one CPU
process, with SGD and momentum, and says so in its results.  It follows
the trainer's command line and files (issue 11's contract):

  lr_find_standin.py --model SPEC --data fashion-mnist --batch B
      (--steps N | --epochs E) (--lr X | --lr-schedule exp-ramp --lr-min X
      --lr-max Y) [--stop-on-divergence F] [--seed S] [--momentum M]
      [--threads N] --out DIR

writes DIR/metrics.jsonl (one JSON object per step: step, epoch, loss,
accuracy, lr, local_batches, rank_step_s, samples_per_s) and
DIR/results.json (test_accuracy, test_loss, steps, wall_s, stopped_early).
Fashion-MNIST is read from the Debian package dataset-fashion-mnist
(found with dpkg -L).  Every step draws one global batch from a seeded
shuffle, as the trainer does.
"""
import argparse
import gzip
import json
import math
import os
import struct
import subprocess
import sys
import time

import numpy as np


def fail(msg):
    print(f"lr_find_standin: {msg}", file=sys.stderr)
    sys.exit(2)


def dataset_dir():
    try:
        files = subprocess.run(["dpkg", "-L", "dataset-fashion-mnist"], check=True,
                               capture_output=True, text=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        fail("the Debian package dataset-fashion-mnist is not installed")
    for f in files:
        if f.endswith("train-images-idx3-ubyte.gz"):
            return os.path.dirname(f)
    fail("dataset-fashion-mnist holds no train-images-idx3-ubyte.gz")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(folder, part):
    x = read_idx(os.path.join(folder, f"{part}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(folder, f"{part}-labels-idx1-ubyte.gz"))
    x = (x.reshape(len(x), -1).astype(np.float32) / 255.0 - 0.2860) / 0.3530
    return x, y.astype(np.int64)


def build(spec, rng):
    c, h, w = spec["input"]
    width = c * h * w
    layers = []
    for layer in spec["layers"]:
        t = layer["type"]
        if t == "fc":
            n = layer["units"]
            layers.append(["fc", (rng.standard_normal((width, n)) * math.sqrt(2.0 / width)).astype(np.float32),
                           np.zeros(n, np.float32)])
            width = n
        elif t == "relu":
            layers.append(["relu"])
        elif t == "dropout":
            layers.append(["dropout", float(layer["p"])])
        else:
            fail(f"the stand-in trains fc, relu and dropout layers only, not '{t}'")
    if width != spec["classes"]:
        fail(f"the last layer has {width} units for {spec['classes']} classes")
    return layers


def forward(layers, x, rng, train):
    acts = [x]
    for layer in layers:
        if layer[0] == "fc":
            x = x @ layer[1] + layer[2]
        elif layer[0] == "relu":
            x = np.maximum(x, 0)
        elif train:
            keep = (rng.random(x.shape) >= layer[1]).astype(np.float32) / (1 - layer[1])
            layer.append(keep)
            x = x * keep
        acts.append(x)
    return acts


def softmax_ce(logits, y):
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.log(np.maximum(p[np.arange(len(y)), y], 1e-30)).mean()
    return float(loss), p


def train_step(layers, vel, x, y, lr, momentum, rng):
    acts = forward(layers, x, rng, True)
    loss, p = softmax_ce(acts[-1], y)
    acc = float((p.argmax(axis=1) == y).mean())
    g = p
    g[np.arange(len(y)), y] -= 1
    g /= len(y)
    for i in range(len(layers) - 1, -1, -1):
        layer = layers[i]
        if layer[0] == "fc":
            gw = acts[i].T @ g
            gb = g.sum(axis=0)
            g = g @ layer[1].T
            for k, grad in ((0, gw), (1, gb)):
                vel[i][k] = momentum * vel[i][k] + grad
                layer[1 + k] -= lr * vel[i][k]
        elif layer[0] == "relu":
            g = g * (acts[i] > 0)
        else:
            g = g * layer.pop()
    return loss, acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", default="fashion-mnist")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--epochs", type=float)
    ap.add_argument("--lr", type=float)
    ap.add_argument("--lr-schedule", default="constant")
    ap.add_argument("--lr-min", type=float)
    ap.add_argument("--lr-max", type=float)
    ap.add_argument("--stop-on-divergence", type=float, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.data != "fashion-mnist":
        fail("the stand-in reads --data fashion-mnist only")
    if a.lr_schedule == "exp-ramp":
        if not (a.lr_min and a.lr_max and a.lr_max > a.lr_min > 0):
            fail("exp-ramp needs 0 < --lr-min < --lr-max")
    elif a.lr_schedule != "constant" or not a.lr or a.lr <= 0:
        fail("give --lr X (constant) or --lr-schedule exp-ramp")
    with open(a.model) as f:
        spec = json.load(f)
    folder = dataset_dir()
    xtr, ytr = load(folder, "train")
    xte, yte = load(folder, "t10k")
    steps = a.steps or int(math.ceil(a.epochs * len(xtr) / a.batch))
    rng = np.random.default_rng(a.seed)
    layers = build(spec, rng)
    vel = [[np.zeros_like(l[1]), np.zeros_like(l[2])] if l[0] == "fc" else None for l in layers]
    os.makedirs(a.out, exist_ok=True)
    order = rng.permutation(len(xtr))
    pos, epoch = 0, 0
    ewma, beta_pow, best = 0.0, 1.0, math.inf
    stopped = False
    t0 = time.monotonic()
    with open(os.path.join(a.out, "metrics.jsonl"), "w") as metrics:
        for step in range(1, steps + 1):
            if a.lr_schedule == "exp-ramp":
                lr = a.lr_min * (a.lr_max / a.lr_min) ** ((step - 1) / max(1, steps - 1))
            else:
                lr = a.lr
            if pos + a.batch > len(order):
                order, pos, epoch = rng.permutation(len(xtr)), 0, epoch + 1
            idx = order[pos:pos + a.batch]
            pos += a.batch
            ts = time.monotonic()
            with np.errstate(all="ignore"):
                loss, acc = train_step(layers, vel, xtr[idx], ytr[idx], lr, a.momentum, rng)
            dt = time.monotonic() - ts
            finite = math.isfinite(loss)
            metrics.write(json.dumps({
                "step": step, "epoch": epoch, "loss": loss if finite else None,
                "accuracy": acc, "lr": lr, "local_batches": [a.batch],
                "rank_step_s": [dt], "samples_per_s": a.batch / dt if dt > 0 else None}) + "\n")
            metrics.flush()
            if a.stop_on_divergence > 0:
                if not finite:
                    stopped = True
                    break
                ewma = 0.98 * ewma + 0.02 * loss
                beta_pow *= 0.98
                smooth = ewma / (1 - beta_pow)
                best = min(best, smooth)
                if smooth > a.stop_on_divergence * best:
                    stopped = True
                    break
    with np.errstate(all="ignore"):
        logits = forward(layers, xte, rng, False)[-1]
        test_loss, p = softmax_ce(logits, yte)
    test_acc = float((p.argmax(axis=1) == yte).mean())
    results = {"trainer": "lr_find_standin.py (NumPy stand-in, not hetpool-train)",
               "test_accuracy": test_acc if math.isfinite(test_loss) else None,
               "test_loss": test_loss if math.isfinite(test_loss) else None,
               "steps": step, "wall_s": time.monotonic() - t0, "stopped_early": stopped}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
