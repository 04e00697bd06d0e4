#!/usr/bin/env python3
"""bench_loader.py - one core's input pipeline: hetpool's measured figures
(`hetpool host --measure`, engine/loader.c: libjpeg-turbo and a C crop)
against torchvision's (PIL decode, RandomResizedCrop(224),
RandomHorizontalFlip, ToTensor, Normalize), the pipeline a PyTorch
DataLoader worker runs, side by side in one run.

Both decode the same image: engine/loader.c's test image (the same
arithmetic in NumPy), encoded at quality 90 (hetpool by libjpeg, here by
PIL, which uses libjpeg-turbo too).  Rounds alternate the two; each figure
is the thread's CPU time per sample, best batch of a round; the report is
the median over the rounds and the spread.

usage: benchmarks/bench_loader.py BUILD_DIR [ROUNDS]
"""
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

W, H, Q, OUT = 500, 375, 90, 224
M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix(x):
    """splitmix64's finalizer, as loader.c's mix()."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def lattice(xs, ys, cell, seed):
    cx, cy = xs // cell, ys // cell
    fx, fy = (xs % cell) / cell, (ys % cell) / cell
    v = []
    for k in range(4):
        h = mix(np.uint64(seed) ^ ((cx + (k & 1)).astype(np.uint64) << np.uint64(32))
                ^ (cy + (k >> 1)).astype(np.uint64))
        v.append((h >> np.uint64(11)).astype(np.float64) / 9007199254740992.0)
    return (v[0] * (1 - fx) + v[1] * fx) * (1 - fy) + (v[2] * (1 - fx) + v[3] * fx) * fy


def synth_image():
    ys, xs = np.mgrid[0:H, 0:W].astype(np.int64)
    img = np.zeros((H, W, 3), np.uint8)
    with np.errstate(over="ignore"):
        for c in range(3):
            s = (0x9E3779B97F4A7C15 * (c + 1)) & 0xFFFFFFFFFFFFFFFF
            v = (60.0 * xs / W + 50.0 * ys / H + 70 * lattice(xs, ys, 64, s)
                 + 50 * lattice(xs, ys, 16, s + 1) + 45 * lattice(xs, ys, 4, s + 2)
                 + 84 * lattice(xs, ys, 1, s + 3))
            img[:, :, c] = np.minimum(v, 255).astype(np.uint8)
    return img


def torchvision_round(jpg, batches=30, per=8):
    import torch
    from PIL import Image
    from torchvision import transforms as T

    torch.set_num_threads(1)
    crop = T.Compose([T.RandomResizedCrop(OUT), T.RandomHorizontalFlip()])
    tens = T.Compose([T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    best = [float("inf")] * 3
    for _ in range(batches):
        t = [0.0] * 3
        for _ in range(per):
            t0 = time.thread_time()
            im = Image.open(io.BytesIO(jpg)).convert("RGB")
            im.load()
            t1 = time.thread_time()
            im = crop(im)
            t2 = time.thread_time()
            x = tens(im)
            t3 = time.thread_time()
            t[0] += t1 - t0
            t[1] += t2 - t1
            t[2] += t3 - t2
        assert x.shape == (3, OUT, OUT)
        best = [min(b, v / per) for b, v in zip(best, t)]
    return best  # decode, crop+flip, to tensor + normalize: s a sample


def hetpool_round(build, state):
    env = dict(os.environ, HETPOOL_STATE_DIR=state)
    out = subprocess.run([os.path.join(build, "bin", "hetpool"), "host", "--measure",
                          "--threads", "1", "--seconds", "1", "--json"],
                         env=env, check=True, capture_output=True, text=True).stdout
    l = json.loads(out)["peaks"]["loader"]
    return l["decode_s_per_px"] * W * H, l["augment_s_per_px"] * OUT * OUT, l


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    try:
        from PIL import Image
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"bench_loader: SKIP: {e} (Debian python3-torchvision)")
        return
    buf = io.BytesIO()
    Image.fromarray(synth_image()).save(buf, "JPEG", quality=Q)
    jpg = buf.getvalue()
    rows = []
    with tempfile.TemporaryDirectory() as state:
        for r in range(rounds):
            hd, ha, l = hetpool_round(build, state)
            tv = torchvision_round(jpg)
            rows.append((hd, ha, tv))
            print(f"round {r + 1}: hetpool decode {hd * 1e3:.3f} ms, crop+normalize "
                  f"{ha * 1e3:.3f} ms ({l['jpeg_bits_per_px']:.2f} bits/px); torchvision "
                  f"decode {tv[0] * 1e3:.3f} ms, crop+flip {tv[1] * 1e3:.3f} ms, "
                  f"to tensor+normalize {tv[2] * 1e3:.3f} ms", flush=True)

    def med(xs):
        return statistics.median(xs), min(xs), max(xs)

    hetpool_total = [hd + ha for hd, ha, _ in rows]
    tv_total = [sum(tv) for _, _, tv in rows]
    ratio = [t / h for t, h in zip(tv_total, hetpool_total)]
    dec_ratio = [tv[0] / hd for hd, _, tv in rows]
    print(f"image: {W}x{H} at quality {Q}, PIL's encoding {8 * len(jpg) / (W * H):.2f} bits/px")
    for name, xs, unit in (("hetpool (C) samples/s a core", [1 / x for x in hetpool_total], ""),
                           ("torchvision samples/s a core", [1 / x for x in tv_total], ""),
                           ("torchvision time / hetpool time", ratio, "x"),
                           ("  of which decode", dec_ratio, "x")):
        m, lo, hi = med(xs)
        print(f"{name:34s} median {m:8.2f}{unit}  (min {lo:.2f}, max {hi:.2f}, {len(xs)} rounds)")


if __name__ == "__main__":
    main()
