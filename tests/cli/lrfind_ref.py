#!/usr/bin/env python3
"""An independent re-analysis of a range test, written from docs/lr-find.md
(not from lib/lrfind/), to check `hetpool lr-find`'s numbers against.

  lrfind_ref.py OUT SRC [MAX_DEGREE]

reads SRC/metrics.jsonl (the steps' lr and loss) and OUT/lr-find.json (what
hetpool made of it, with its smoothing options), re-does every step in plain
Python (fastai's bias-corrected EWMA and divergence rule, the centred median
then mean, the noise, the fit region, the polynomial by Householder-QR least
squares with blocked 5-fold cross-validation and the one-standard-error rule,
the log fit, the interval, the knee), prints each figure beside hetpool's,
and exits 1 when one differs by more than 1e-6 (relative) or a count
differs.  Sums are taken whole, never as running sums.
"""
import json, math, os, sys


def lstsq(X, y):
    """Householder QR least squares (pure Python)."""
    m, n = len(X), len(X[0]); A = [row[:] + [yy] for row, yy in zip(X, y)]
    for k in range(n):
        norm = math.sqrt(sum(A[i][k] ** 2 for i in range(k, m)))
        if norm == 0: continue
        alpha = -norm if A[k][k] >= 0 else norm
        v = [0.0] * m
        for i in range(k, m): v[i] = A[i][k]
        v[k] -= alpha
        vn = sum(v[i] ** 2 for i in range(k, m))
        if vn == 0: continue
        for j in range(k, n + 1):
            s = sum(v[i] * A[i][j] for i in range(k, m)) * 2 / vn
            for i in range(k, m): A[i][j] -= s * v[i]
    c = [0.0] * n
    for k in range(n - 1, -1, -1):
        c[k] = (A[k][n] - sum(A[k][j] * c[j] for j in range(k + 1, n))) / A[k][k]
    rss = sum(A[i][n] ** 2 for i in range(n, m))
    return c, rss

def polyval(c, t): return sum(ck * t ** k for k, ck in enumerate(c))
def dpoly(c, t): return sum(k * ck * t ** (k - 1) for k, ck in enumerate(c) if k)
def median_low(v): v = sorted(v); return v[(len(v) - 1) // 2]
def median_hi(v): v = sorted(v); return v[len(v) // 2]

def analyse(pts, F=4.0, beta=0.98, folds=5, maxdeg=8, window=None, smoother='median'):
    y = [p["loss"] for p in pts]; lr = [p["lr"] for p in pts]; n = len(y)
    # 1. EWMA and divergence
    ew = []; v = 0; best = math.inf; div = -1
    for i, l in enumerate(y):
        if l is None or not math.isfinite(l): div = i; break
        v = beta * v + (1 - beta) * l; s = v / (1 - beta ** (i + 1)); ew.append(s)
        best = min(best, s)
        if s > F * best: div = i; break
    m = div if div >= 0 else n
    y = y[:m]; lr = lr[:m]
    # 2. smoothing
    w = window or min(51, max(5, round(m / 25)));  w += (w % 2 == 0)
    if w > m: w = m if m % 2 else m - 1
    h = w // 2
    med = [median_low(y[max(0, i - h):min(m, i + h + 1)]) for i in range(m)]
    sm = []
    for i in range(m):
        k = min(h, i, m - 1 - i); sm.append(sum(med[i - k:i + k + 1]) / (2 * k + 1))
    # noise
    noise = 1.4826 * median_hi([abs(a - b) for a, b in zip(y, sm)])
    d2 = [abs(y[i - 1] - 2 * y[i] + y[i + 1]) for i in range(1, m - 1)]
    noise = max(noise, 1.4826 * median_hi(d2) / math.sqrt(6))
    if smoother == 'ewma': sm = ew[:m]
    # 3. region
    imin = min(range(m), key=lambda i: (sm[i], i))
    top = max(sm[(h if imin > h else 0):imin + 1]); drop = top - sm[imin]
    ia = imin
    while ia > 0 and sm[ia - 1] < top - 0.1 * drop: ia -= 1
    rise = max(2 * noise, 0.1 * drop) + 1e-9 * drop; j = ia
    for i in range(ia, m):
        if sm[i] < sm[j]: j = i
        elif sm[i] > sm[j] + rise: break
    rise2 = 2 * noise + 1e-9 * drop
    ridx = next((i for i in range(j + 1, m) if sm[i] > sm[j] + rise2), -1)
    fs = ia
    while fs > 0 and math.log10(lr[fs - 1]) >= math.log10(lr[ia]) - 1: fs -= 1
    fe = m
    for i in range(j + 1, m):
        if sm[i] > sm[j] + 0.25 * (top - sm[j]) or (ridx >= 0 and i > ridx and sm[i] < sm[i - 1]): fe = i; break
    while fe - fs < 10 and fs > 0: fs -= 1
    while fe - fs < 10 and fe < m: fe += 1
    # 4. polynomial with CV
    nf = fe - fs; L = [math.log10(x) for x in lr[fs:fe]]
    center = (L[0] + L[-1]) / 2; scale = (L[-1] - L[0]) / 2
    t = [(x - center) / scale for x in L]; ys = sm[fs:fe]
    block = min(round(1 / (1 - beta)) if smoother == 'ewma' else w, nf // (folds + 2)) or 1
    nb = (nf + block - 1) // block
    fold = [-1 if (i // block in (0, nb - 1)) else (i // block - 1) % folds for i in range(nf)]
    dmax = max(1, min(maxdeg, nf // 3 - 1))
    mse = {}; se = {}
    for d in range(1, dmax + 1):
        fm = []
        for f in range(folds):
            tr = [i for i in range(nf) if fold[i] != f]; te = [i for i in range(nf) if fold[i] == f]
            c, _ = lstsq([[t[i] ** k for k in range(d + 1)] for i in tr], [ys[i] for i in tr])
            fm.append(sum((polyval(c, t[i]) - ys[i]) ** 2 for i in te) / len(te))
        mu = sum(fm) / folds; mse[d] = mu
        se[d] = math.sqrt(sum((x - mu) ** 2 for x in fm) / (folds - 1) / folds)
    bestd = min(mse, key=lambda d: (mse[d], d))
    my = sum(ys) / nf; var = sum((q - my) ** 2 for q in ys) / nf
    thr = mse[bestd] + se[bestd] + 1e-12 * var
    deg = next(d for d in sorted(mse) if mse[d] <= thr)
    coef, rss = lstsq([[tt ** k for k in range(deg + 1)] for tt in t], ys)
    # 5/6. read the polynomial on a fine grid, from half a window before the descent
    G = 2001; grid = [-1 + 2 * g / (G - 1) for g in range(G)]
    val = [polyval(coef, q) for q in grid]; slope = [dpoly(coef, q) / scale for q in grid]
    i0 = max(fs, ia - h)
    g0 = min(G - 1, max(0, round((math.log10(lr[i0]) - (center - scale)) / (2 * scale) * (G - 1))))
    gm = min(range(g0, G), key=lambda g: (val[g], g))
    gs = min(range(g0, gm + 1), key=lambda g: (slope[g], g))
    gp = max(range(g0, gs + 1), key=lambda g: (val[g], -g))
    pdrop = val[gp] - val[gm]
    glr = lambda g: 10 ** (center + scale * grid[g])
    ga = gp
    while ga < gs and val[ga] > val[gp] - 0.05 * pdrop: ga += 1
    lrmin, lrdesc = glr(gm), glr(ga)
    a0 = fs
    while a0 < fe - 1 and lr[a0] < lrdesc: a0 += 1
    a1 = a0
    while a1 < fe - 1 and lr[a1 + 1] <= lrmin: a1 += 1
    while a1 - a0 + 1 < 3:
        if a0 > fs: a0 -= 1
        if a1 - a0 + 1 < 3 and a1 < fe - 1: a1 += 1
    (a, b), lrss = lstsq([[1.0, math.log(lr[i])] for i in range(a0, a1 + 1)], sm[a0:a1 + 1])
    yy = sm[a0:a1 + 1]; my2 = sum(yy) / len(yy); tss = sum((q - my2) ** 2 for q in yy)
    floor = val[gm]; high = lrmin; low = max(lrmin / 10, lr[fs])
    knee = math.exp((floor - a) / b) if b < 0 else math.nan
    sug = math.sqrt(low * high) if not math.isfinite(knee) else min(max(knee, low), high)
    return dict(analysed=m, diverged_at=div, window=w, noise=noise, fit=(fs, fe), deg=deg, center=center, scale=scale,
                coef=coef, mse=mse, se=se, rmse=math.sqrt(rss / nf), a=a, b=b, r2=1 - lrss / tss, points=a1 - a0 + 1,
                lr_fit_min=lrmin, floor=floor, low=low, high=high, knee=knee, suggested=sug, steepest=glr(gs),
                lr_descent=lrdesc, lr_first_min=lr[j], lr_smooth_min=lr[imin], ew=ew)

def rel(a, b): return abs(a - b) / max(abs(b), 1e-300)

if __name__ == "__main__":
    d, src = sys.argv[1], sys.argv[2]
    maxdeg = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    pts = []
    for l in open(src + "/metrics.jsonl"):
        o = json.loads(l)
        if "step" in o and "event" not in o:
            lo = o["loss"]; lo = float(lo) if lo is not None else math.nan
            pts.append({"lr": o["lr"], "loss": lo})
    J = json.load(open(d + "/lr-find.json"))
    sm = J["smoothing"]
    R = analyse(pts, F=sm["divergence_factor"], window=sm["window"], smoother=sm["method"], maxdeg=maxdeg)
    P = J["polynomial"]
    rows = [("window", R["window"], sm["window"]), ("steps_analysed", R["analysed"], J["steps_analysed"]),
            ("steps_fitted", R["fit"][1] - R["fit"][0], J["steps_fitted"]), ("degree", R["deg"], P["degree"]),
            ("center", R["center"], P["center"]), ("scale", R["scale"], P["scale"]), ("rmse", R["rmse"], P["rmse"]),
            ("noise", R["noise"], J["loss_noise"]), ("log a", R["a"], J["log_fit"]["a"]), ("log b", R["b"], J["log_fit"]["b"]),
            ("log r2", R["r2"], J["log_fit"]["r2"]), ("log points", R["points"], J["log_fit"]["points"]),
            ("lr_fit_minimum", R["lr_fit_min"], J["lr_fit_minimum"]), ("loss_floor", R["floor"], J["loss_floor"]),
            ("lr_descent_begins", R["lr_descent"], J["lr_descent_begins"]),
            ("lr_first_minimum", R["lr_first_min"], J.get("lr_first_minimum")),
            ("interval low", R["low"], J["interval"][0]), ("interval high", R["high"], J["interval"][1]),
            ("steepest", R["steepest"], J["candidates"]["steepest"]["lr"]),
            ("suggested", R["suggested"], J["suggested_lr"])]
    rows += [(f"coef[{k}]", c, P["coefficients"][k]) for k, c in enumerate(R["coef"]) if k < len(P["coefficients"])]
    rows += [(f"cv_mse[{dd}]", R["mse"][dd], P["cv_mse_by_degree"][dd]) for dd in R["mse"] if dd < len(P["cv_mse_by_degree"])]
    bad = 0
    for name, r, g in rows:
        e = rel(g, r) if isinstance(r, float) and g is not None else (0 if r == g else 1)
        flag = "" if e < 1e-6 else "  <-- differs"
        bad += e >= 1e-6
        print(f"{name:20s} ref {r!r:>24} hetpool {g!r:>24} rel {e:.1e}{flag}")
    sys.exit(1 if bad else 0)
