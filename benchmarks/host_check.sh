#!/usr/bin/env bash
# host_check.sh - the estimator on a host it was not fitted on, for
# customized CNNs outside the sweep's grid (benchmarks/host_models: 5x5 and
# 7x7 kernels, stride 2, average pooling, one-channel input, 100 classes;
# none of them in any fit): step-time MAPE of `hetpool predict --device
# cpu` without calibration and after `hetpool calibrate`, beside the noise
# floor (the same configurations measured again, minutes later).
#
# usage: benchmarks/host_check.sh [BUILD_DIR]
#   HOST_THREADS  threads (default 1: half of a 2-CPU host)
#   HOST_GAP      seconds between the two measurement rounds beyond the
#                 calibration run between them (default 60)
#   HOST_BATCHES  batches (default "16 64")
#   HOST_OUT      folder for the CSVs and state (default: a temporary one)
#   HOST_CAL_S    calibrate's budget, seconds (default 150)
#   HOST_PEER     another build's hetpool (an older version): it calibrates
#                 too, in its own state, right after, and its calibrated
#                 MAPE against the same rounds is printed beside
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
bin=$build/bin/hetpool
threads=${HOST_THREADS:-1}
gap=${HOST_GAP:-60}
batches=${HOST_BATCHES:-16 64}
cal_s=${HOST_CAL_S:-150}
out=${HOST_OUT:-$(mktemp -d /tmp/host_check.XXXXXX)}
mkdir -p "$out"
models=(benchmarks/host_models/*.json)

measure() { # round
	rm -f "$out/round$1"-*.csv
	for m in "${models[@]}"; do
		for b in $batches; do
			"$bin" profile --spec "$m" --batch "$b" --threads "$threads" \
				--max-seconds 4 --retries 1 \
				--out "$out/round$1-$(basename "$m" .json)-b$b.csv" >/dev/null ||
				{ echo "host_check: profile $m failed" >&2; exit 1; }
		done
	done
}

predict() { # state-dir out-file [binary]
	: >"$2"
	for m in "${models[@]}"; do
		for b in $batches; do
			HETPOOL_STATE_DIR=$1 "${3:-$bin}" predict "$m" --device cpu \
				--batch "$b" --threads "$threads" --json |
				python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], sys.argv[2], d["step_time_s"], json.dumps(d["basis"]["step_time"]))' \
					"$(basename "$m" .json)" "$b" >>"$2"
		done
	done
}

echo "== host check: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $threads thread(s), $(date -u +%FT%TZ)"
echo "-- round 1: measuring ${#models[@]} models x batches $batches"
measure 1
# uncalibrated: this host's measured peaks only
mkdir -p "$out/uncal" "$out/cal"
HETPOOL_STATE_DIR=$out/uncal "$bin" host --measure --threads "$threads" --seconds 2 >/dev/null
predict "$out/uncal" "$out/pred_uncal.txt"
echo "-- calibrate (budget $cal_s s)"
HETPOOL_STATE_DIR=$out/cal "$bin" calibrate --threads "$threads" --seconds "$cal_s" | sed 's/^/   /'
predict "$out/cal" "$out/pred_cal.txt"
if [ -n "${HOST_PEER:-}" ]; then
	echo "-- calibrate with $HOST_PEER (budget $cal_s s)"
	mkdir -p "$out/peer"
	HETPOOL_STATE_DIR=$out/peer "$HOST_PEER" calibrate --threads "$threads" --seconds "$cal_s" | sed 's/^/   /'
	predict "$out/peer" "$out/pred_peer.txt" "$HOST_PEER"
fi
echo "-- waiting $gap s"
sleep "$gap"
echo "-- round 2"
measure 2
python3 - "$out" <<'PY'
import csv, glob, json, statistics as st, sys
out = sys.argv[1]
def rows(pattern):
    r = {}
    for x in (x for f in sorted(glob.glob(pattern)) for x in csv.DictReader(open(f))):
        name = json.loads(x["spec_json"])["name"]
        r[(name, int(x["batch"]))] = float(x["step_time_s"])
        pr = x.get("cpu_pressure") or "nan"
        # one thread: the time it ran (wall less its wait for a CPU)
        pv = float(pr) if pr != "nan" else 0.0
        run[(pattern[-12:-6], name, int(x["batch"]))] = float(x["step_time_s"]) * (
            1 - pv if int(x["threads"]) == 1 and 0 < pv < 1 else 1)
        busy[(name, int(x["batch"]))] = max(busy.get((name, int(x["batch"])), 0), float(pr))
        ref[(pattern[-12:-6], name, int(x["batch"]))] = float(x.get("ref_time_s") or "nan")
    return r
busy = {}
run = {}
ref = {}
r1, r2 = rows(out + "/round1-*.csv"), rows(out + "/round2-*.csv")
def preds(f):
    p = {}
    for line in open(f):
        m, b, t, basis = line.split(" ", 3)
        p[(m, int(b))] = (float(t), json.loads(basis))
    return p
pu, pc = preds(out + "/pred_uncal.txt"), preds(out + "/pred_cal.txt")
keys = sorted(set(r1) & set(r2) & set(pu) & set(pc))
print("%-14s %5s %10s %10s %10s %8s %10s %8s %5s" % ("model", "batch", "meas1 s", "meas2 s",
      "uncal s", "err %", "cal s", "err %", "busy"))
eu, ec, noise, eu1, ec1 = [], [], [], [], []
for k in keys:
    m = (r1[k] + r2[k]) / 2
    u, c = pu[k][0], pc[k][0]
    eu.append(abs(u - m) / m * 100); ec.append(abs(c - m) / m * 100)
    eu1 += [abs(u - r1[k]) / r1[k] * 100, abs(u - r2[k]) / r2[k] * 100]
    ec1 += [abs(c - r1[k]) / r1[k] * 100, abs(c - r2[k]) / r2[k] * 100]
    noise.append(abs(r1[k] - r2[k]) / m * 100)
    print("%-14s %5d %10.5f %10.5f %10.5f %8.1f %10.5f %8.1f %5.2f" % (k[0], k[1], r1[k], r2[k],
          u, eu[-1], c, ec[-1], busy.get(k, float("nan"))))
print()
print("configurations: %d" % len(keys))
print("noise floor (|round1 - round2| / mean): median %.1f%%, mean %.1f%%, max %.1f%%" %
      (st.median(noise), st.mean(noise), max(noise)))
print("MAPE without calibration: %.1f%% against the mean of the rounds (%.1f%% against each round)" %
      (st.mean(eu), st.mean(eu1)))
print("MAPE after calibrate:     %.1f%% against the mean of the rounds (%.1f%% against each round)" %
      (st.mean(ec), st.mean(ec1)))
quiet = [i for i, k in enumerate(keys) if busy.get(k, 1) <= 0.10]
if quiet:
    print("on the %d configurations whose threads waited for a CPU at most 10%% of the time in both rounds:" % len(quiet))
    print("  noise floor median %.1f%%; MAPE without calibration %.1f%%, after calibrate %.1f%%" %
          (st.median([noise[i] for i in quiet]), st.mean([eu[i] for i in quiet]), st.mean([ec[i] for i in quiet])))
else:
    print("no configuration was measured on a quiet host (threads waited for a CPU over 10% of the time)")
# the same against the time the thread ran (1 thread): what the host
# does when it is not shared
rr1 = {k: run[("round1", k[0], k[1])] for k in keys}
rr2 = {k: run[("round2", k[0], k[1])] for k in keys}
ru, rc, rn = [], [], []
for k in keys:
    m = (rr1[k] + rr2[k]) / 2
    ru.append(abs(pu[k][0] - m) / m * 100); rc.append(abs(pc[k][0] - m) / m * 100)
    rn.append(abs(rr1[k] - rr2[k]) / m * 100)
print("against the time the thread ran (wall x (1 - cpu_pressure)): noise floor median %.1f%% (mean %.1f%%);"
      " MAPE without calibration %.1f%%, after calibrate %.1f%%" %
      (st.median(rn), st.mean(rn), st.mean(ru), st.mean(rc)))
# the same at the calibration's speed: each round's time relative to the
# yardstick timed between its steps, times the yardstick's median at
# calibration (the host file's calibration.ref_time_s): what the rounds
# would have taken had the host run as fast as while it calibrated
import math, os
cref = float("nan")
for f in glob.glob(out + "/cal/hosts/*.json"):
    c = json.load(open(f)).get("calibration") or {}
    cref = float(c.get("ref_time_s") or "nan")
def at_cal(rnd, r, k):
    y = ref.get((rnd, k[0], k[1]), float("nan"))
    return r[k] * cref / y if y > 0 and cref > 0 else float("nan")
sk = [k for k in keys if not math.isnan(at_cal("round1", r1, k)) and not math.isnan(at_cal("round2", r2, k))]
if sk:
    sn, sc, su = [], [], []
    for k in sk:
        a, b = at_cal("round1", r1, k), at_cal("round2", r2, k)
        m = (a + b) / 2
        sn.append(abs(a - b) / m * 100)
        sc.append(abs(pc[k][0] - m) / m * 100)
        su.append(abs(pu[k][0] - m) / m * 100)
    print("at the calibration's speed (each round's time x %.3f ms / its yardstick), %d configurations: noise floor median %.1f%% (mean %.1f%%);"
          " MAPE without calibration %.1f%%, after calibrate %.1f%%" %
          (cref * 1e3, len(sk), st.median(sn), st.mean(sn), st.mean(su), st.mean(sc)))
else:
    print("at the calibration's speed: not measured (no yardstick in the calibration or the rounds)")
if os.path.exists(out + "/pred_peer.txt"):
    pp = preds(out + "/pred_peer.txt")
    ep = [abs(pp[k][0] - (r1[k] + r2[k]) / 2) / ((r1[k] + r2[k]) / 2) * 100 for k in keys if k in pp]
    print("peer (%s) after its calibrate: MAPE %.1f%% against the mean of the rounds, the same rounds" %
          (os.environ.get("HOST_PEER"), st.mean(ep)))
print("basis (uncalibrated): " + pu[keys[0]][1])
print("basis (calibrated):   " + pc[keys[0]][1])
PY
echo "(files in $out)"
